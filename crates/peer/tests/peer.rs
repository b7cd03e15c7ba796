//! Drives the built `rpcarena-peer-rust` binary over its stdin/stdout exactly as the controller
//! does (docs/peer-protocol.md): a server and clients on 127.0.0.1 for every stack and shape, with
//! a private CA and server certificate made here, plus the TLS and argument failure paths.
//!
//! Every wait is bounded (events are read through a channel with a timeout), so a hung peer fails
//! the test instead of hanging it, and every child is killed when its handle is dropped.

mod common;

use common::{
    Peer, Pki, armed_then_sample, assert_operation_counts, assert_sound, server_args,
    shut_down_client, start_server, strings,
};
use rpcarena_protocol::event::Event;
use rpcarena_protocol::workload::Shape;
use std::path::Path;

const CONCURRENCY: u64 = 4;
const REQUEST_SIZE: u64 = 100;
const RESPONSE_SIZE: u64 = 200;
const MESSAGES: u64 = 8;

fn client_args(pki: &Pki, stack: &str, address: &str, shape: Shape, ca: &str) -> Vec<String> {
    common::client_args(
        pki,
        stack,
        address,
        ca,
        &[
            ("--shape", &shape),
            ("--load", &"closed"),
            ("--concurrency", &CONCURRENCY),
            ("--request-size", &REQUEST_SIZE),
            ("--response-size", &RESPONSE_SIZE),
            ("--messages-per-stream", &MESSAGES),
            ("--warmup-ms", &100),
            ("--window-ms", &300),
            ("--drain-ms", &5000),
        ],
    )
}

/// One server, then one client per shape (pingpong included) against it, each checked as the
/// controller would, with the allocation counters of revision 1.2.
fn every_shape_on(stack: &str, connections: u32) {
    let pki = Pki::new();
    let (mut server, address) = start_server(&pki, stack);
    let mut completed_total = 0;
    for shape in common::shapes(stack) {
        let args = client_args(&pki, stack, &address, shape, "ca.pem");
        let stderr = pki.path(&format!("{stack}-{shape}-client.stderr"));
        let mut client = Peer::spawn(&args, &stderr);
        let (armed, sample) = armed_then_sample(&mut client, &format!("{stack} {shape}"));
        assert_eq!(armed.lanes, CONCURRENCY as u32);
        assert_eq!(armed.connections, connections, "{stack}");
        assert!(armed.connect_ns.is_some_and(|ns| ns > 0));
        assert!(
            armed.warmup_completed > 0,
            "{stack} {shape}: warmup ran no operation"
        );
        let context = format!("{stack} {shape}: {sample:?}\n{}", client.stderr_text());
        let latencies = assert_sound(&sample, &context);
        assert!(latencies.min() > 0, "{context}");
        let sizes = (REQUEST_SIZE, RESPONSE_SIZE);
        assert_operation_counts(&sample, shape, MESSAGES, sizes, &context);
        assert_eq!(sample.window_ns, 300_000_000, "{context}");
        assert!(sample.drain_ns < 5_000_000_000, "{context}");
        // every operation allocates (requests, responses, futures), and no allocation is empty
        let allocations = sample.allocations.expect("allocations declared");
        let bytes = sample.allocated_bytes.expect("allocated bytes declared");
        assert!(allocations >= sample.completed, "{context}");
        assert!(bytes >= allocations, "{context}");
        completed_total += sample.completed;
        shut_down_client(&mut client, &context);
    }
    server.send("SHUTDOWN");
    let Event::Stopped(stopped) = server.next_event() else {
        panic!("{stack}: expected stopped\n{}", server.stderr_text());
    };
    assert!(stopped.counters["rpcs"] >= completed_total, "{stopped:?}");
    assert!(
        stopped.counters["requests"] >= stopped.counters["rpcs"],
        "{stopped:?}"
    );
    assert!(
        stopped.counters["responses"] >= stopped.counters["rpcs"],
        "{stopped:?}"
    );
    // the Rust client's calls are well-formed, so the validating server refused none
    assert_eq!(stopped.counters["rejected"], 0, "{stopped:?}");
    // a server's `stopped` has its whole life's allocations, at least one per call it served
    let life = stopped.allocations.expect("allocations declared");
    assert!(life >= stopped.counters["rpcs"], "{stopped:?}");
    assert!(
        stopped.allocated_bytes.expect("declared") >= life,
        "{stopped:?}"
    );
    assert_eq!(server.exit_code(), 0, "{}", server.stderr_text());
}

#[test]
fn grpc_serves_every_shape() {
    every_shape_on("grpc", 1);
}

#[test]
fn quic_serves_every_shape() {
    every_shape_on("quic", 1);
}

#[test]
fn tcp_serves_every_shape() {
    every_shape_on("tcp", CONCURRENCY as u32);
}

#[test]
fn a_client_trusting_another_ca_reports_a_tls_error() {
    let pki = Pki::new();
    for stack in ["grpc", "quic", "tcp"] {
        let (mut server, address) = start_server(&pki, stack);
        let args = client_args(&pki, stack, &address, Shape::Unary, "other-ca.pem");
        let mut client = Peer::spawn(&args, &pki.path(&format!("{stack}-wrong-ca.stderr")));
        let Event::Error(error) = client.next_event() else {
            panic!("{stack}: expected an error event\n{}", client.stderr_text());
        };
        assert_eq!(error.code, "tls", "{stack}: {error:?}");
        assert_eq!(error.phase, "connect", "{stack}: {error:?}");
        assert!(
            error.message.contains("TLS certificate/handshake error"),
            "{error:?}"
        );
        assert!(error.message.contains("UnknownIssuer"), "{error:?}");
        assert_eq!(client.exit_code(), 1);
        // The server survives a bad handshake and shuts down cleanly.
        server.send("SHUTDOWN");
        assert!(matches!(server.next_event(), Event::Stopped(_)));
        assert_eq!(server.exit_code(), 0);
    }
}

#[test]
fn bad_arguments_give_a_config_error_naming_them_and_exit_2() {
    let pki = Pki::new();
    let mut args = client_args(&pki, "quic", "127.0.0.1:9", Shape::Bidi, "ca.pem");
    let pos = args
        .iter()
        .position(|a| a == "--concurrency")
        .expect("present");
    args[pos + 1] = "0".to_string();
    let mut repeated = client_args(&pki, "quic", "127.0.0.1:9", Shape::Bidi, "ca.pem");
    repeated.extend(strings(&["--window-ms", "10"]));
    std::fs::write(pki.path("garbage.pem"), "not PEM at all").expect("write");
    let garbage_ca = client_args(&pki, "tcp", "127.0.0.1:9", Shape::Unary, "garbage.pem");
    let garbage_key = server_args(
        "grpc",
        "127.0.0.1:0",
        &pki.path("server.pem"),
        &pki.path("garbage.pem"),
    );
    let missing = Path::new("/nonexistent.pem");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (args, "--concurrency"),
        (repeated, "--window-ms"),
        (garbage_ca, "--ca"),
        (garbage_key, "--key"),
        (strings(&["client", "--stack", "quic"]), "--server"),
        (
            strings(&[
                "server",
                "--stack",
                "grpc",
                "--listen",
                "127.0.0.1:0",
                "--bogus",
                "1",
            ]),
            "--bogus",
        ),
        (
            server_args("tcp", "127.0.0.1:0", missing, missing),
            "--cert",
        ),
    ];
    for (args, named) in cases {
        let mut peer = Peer::spawn(&args, &pki.path("bad-args.stderr"));
        let Event::Error(error) = peer.next_event() else {
            panic!("expected an error event for {args:?}");
        };
        assert_eq!(
            (error.phase.as_str(), error.code.as_str()),
            ("startup", "config")
        );
        assert!(
            error.message.contains(named),
            "{named} not named in {error:?}"
        );
        assert_eq!(peer.exit_code(), 2, "{args:?}");
    }
}

#[test]
fn capabilities_lists_every_stack_and_exits_0() {
    let pki = Pki::new();
    let mut peer = Peer::spawn(&strings(&["capabilities"]), &pki.path("caps.stderr"));
    let Event::Capabilities(caps) = peer.next_event() else {
        panic!("expected capabilities");
    };
    assert_eq!(caps.peer, "rpcarena-peer-rust");
    assert_eq!(caps.roles.client.len(), 4);
    assert_eq!(caps.roles.server.len(), 4);
    assert_eq!(caps.revision.as_deref(), Some("1.5"));
    assert!(caps.build["toolchain"].starts_with("rustc "), "{caps:?}");
    let counted = caps
        .allocations
        .as_ref()
        .expect("allocation counters declared");
    assert!(counted.counts && counted.bytes, "{counted:?}");
    // the file the controller hashes is the executable that answered
    let exe = std::fs::canonicalize(common::PEER).expect("the peer binary");
    assert_eq!(caps.files, vec![exe.display().to_string()]);
    for entry in caps.roles.client.iter().chain(&caps.roles.server) {
        assert_eq!(entry.deviations, Some(vec![]), "{entry:?}");
        assert!(entry.settings.contains_key("runtime"), "{entry:?}");
        assert!(entry.conformance_faults, "{entry:?}");
        // pingpong on every stack with streams; zmq says why it has none
        let pingpong = entry.shapes.iter().any(|s| s == "pingpong");
        assert_eq!(pingpong, entry.stack != "zmq", "{entry:?}");
        assert_eq!(
            entry.not_offered.contains_key("pingpong"),
            !pingpong,
            "{entry:?}"
        );
    }
    assert_eq!(peer.exit_code(), 0);
}

#[test]
fn end_of_stdin_stops_a_client_stuck_connecting_at_once() {
    // A loopback listener that accepts TCP and never answers the TLS handshake: without the
    // controller (stdin closed) the client must not wait out its 30 s connect bound.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = silent.local_addr().expect("address").to_string();
    let pki = Pki::new();
    let mut client = Peer::spawn(
        &client_args(&pki, "tcp", &address, Shape::Unary, "ca.pem"),
        &pki.path("stuck-client.stderr"),
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = std::time::Instant::now();
    client.close_stdin();
    assert!(matches!(client.next_event(), Event::Stopped(_)));
    assert_eq!(client.exit_code(), 0, "{}", client.stderr_text());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    drop(silent);
}

#[test]
fn servers_bind_exactly_the_listen_address() {
    // 127.0.0.2 is loopback too; a server bound to it must leave 127.0.0.1's same port free,
    // which it would not if it had bound every interface.
    let pki = Pki::new();
    for stack in ["grpc", "quic", "tcp"] {
        let (cert, key) = (pki.path("server.pem"), pki.path("server.key"));
        let args = server_args(stack, "127.0.0.2:0", &cert, &key);
        let mut server = Peer::spawn(&args, &pki.path(&format!("{stack}-127.0.0.2.stderr")));
        let Event::Ready(ready) = server.next_event() else {
            panic!("{stack}: expected ready\n{}", server.stderr_text());
        };
        let port = ready
            .address
            .strip_prefix("127.0.0.2:")
            .unwrap_or_else(|| panic!("{stack}: {ready:?}"));
        let elsewhere = format!("127.0.0.1:{port}");
        if stack == "quic" {
            assert!(std::net::UdpSocket::bind(&elsewhere).is_ok(), "{stack}");
        } else {
            assert!(std::net::TcpListener::bind(&elsewhere).is_ok(), "{stack}");
        }
        server.send("SHUTDOWN");
        assert!(matches!(server.next_event(), Event::Stopped(_)));
        assert_eq!(server.exit_code(), 0);
    }
}

/// `--tls off` (revision 1.3): grpc (h2c with prior knowledge) and tcp (frames straight on TCP)
/// serve a plaintext client, unary and (grpc) send, with the counts of a TLS run; and a
/// plaintext client cannot talk to a TLS server (the bytes are not a TLS record).
#[test]
fn plaintext_round_trips_on_grpc_and_tcp() {
    let pki = Pki::new();
    for stack in ["grpc", "tcp"] {
        let listen = [
            "server",
            "--stack",
            stack,
            "--listen",
            "127.0.0.1:0",
            "--tls",
            "off",
        ];
        let mut server = Peer::spawn(
            &strings(&listen),
            &pki.path(&format!("{stack}-plain-server.stderr")),
        );
        let Event::Ready(ready) = server.next_event() else {
            panic!("{stack}: expected ready\n{}", server.stderr_text());
        };
        let shapes = common::shapes(stack);
        let mut completed = 0;
        for shape in [Shape::Unary, Shape::Send] {
            if !shapes.contains(&shape) {
                continue;
            }
            let mut args = strings(&["client", "--stack", stack, "--server", &ready.address]);
            args.extend(strings(&["--tls", "off", "--shape", shape.as_str()]));
            args.extend(strings(&[
                "--load",
                "closed",
                "--concurrency",
                "2",
                "--request-size",
                "100",
                "--response-size",
                "0",
                "--messages-per-stream",
                "1",
                "--warmup-ms",
                "50",
                "--window-ms",
                "200",
                "--drain-ms",
                "5000",
            ]));
            let stderr = pki.path(&format!("{stack}-{shape}-plain.stderr"));
            let mut client = Peer::spawn(&args, &stderr);
            let context = format!("plaintext {stack} {shape}\n{}", client.stderr_text());
            let (_, sample) = armed_then_sample(&mut client, &context);
            assert_sound(&sample, &context);
            assert_operation_counts(&sample, shape, 1, (100, 0), &context);
            completed += sample.completed;
            shut_down_client(&mut client, &context);
        }
        server.send("WINDOW END");
        let Event::Window(window) = server.next_event() else {
            panic!("{stack}: expected window\n{}", server.stderr_text());
        };
        assert!(window.counters["rpcs"] >= completed, "{window:?}");
        assert_eq!(window.counters["rejected"], 0, "{window:?}");
        assert_eq!(window.first_rejection, None, "{window:?}");
        if stack == "grpc" {
            assert!(window.counters["commands"] > 0, "{window:?}");
        }
        server.send("SHUTDOWN");
        assert!(matches!(server.next_event(), Event::Stopped(_)));
        assert_eq!(server.exit_code(), 0);
    }
}

/// A plaintext client against a TLS server fails to connect or to validate, never hangs.
#[test]
fn a_plaintext_client_cannot_talk_to_a_tls_server() {
    let pki = Pki::new();
    let (_server, address) = start_server(&pki, "tcp");
    let mut args = strings(&[
        "client", "--stack", "tcp", "--server", &address, "--tls", "off",
    ]);
    args.extend(strings(&[
        "--shape",
        "unary",
        "--load",
        "closed",
        "--concurrency",
        "1",
        "--request-size",
        "1",
        "--response-size",
        "1",
        "--messages-per-stream",
        "1",
        "--warmup-ms",
        "0",
        "--window-ms",
        "100",
        "--drain-ms",
        "1000",
    ]));
    let mut client = Peer::spawn(&args, &pki.path("plain-vs-tls.stderr"));
    let Event::Error(error) = client.next_event() else {
        panic!("expected an error\n{}", client.stderr_text());
    };
    assert_ne!(error.code, "internal", "{error:?}");
    assert_eq!(client.exit_code(), 1);
}

/// The zmq stack (revision 1.3) on loopback: unary and send with every load model the stack
/// runs, the server's counters (commands, dropped), `submit_cpu_ns` of the socket thread, and
/// the shapes and TLS mode it refuses.
#[test]
fn zmq_serves_unary_and_send() {
    let pki = Pki::new();
    let (mut server, address) = common::start_plain_server(&pki, "zmq", &[]);
    let mut unary_completed = 0;
    let mut commands = 0;
    let models: [&[(&str, &dyn std::fmt::Display)]; 3] = [
        &[("--load", &"closed")],
        &[("--load", &"window"), ("--in-flight", &8)],
        &[("--load", &"open"), ("--rate", &2000)],
    ];
    for shape in [Shape::Unary, Shape::Send] {
        for model in models {
            let mut options: Vec<(&str, &dyn std::fmt::Display)> = vec![
                ("--shape", &shape),
                ("--concurrency", &4),
                ("--request-size", &REQUEST_SIZE),
                ("--response-size", &RESPONSE_SIZE),
                ("--messages-per-stream", &1),
                ("--warmup-ms", &100),
                ("--window-ms", &300),
                ("--drain-ms", &5000),
            ];
            options.extend_from_slice(model);
            let args = common::plain_client_args("zmq", &address, &options);
            let mut client = Peer::spawn(&args, &pki.path(&format!("zmq-{shape}.stderr")));
            let context = format!("zmq {shape} {}", args.join(" "));
            let (armed, sample) = armed_then_sample(&mut client, &context);
            assert_eq!(armed.connections, 2, "{context}");
            let context = format!("{context}: {sample:?}\n{}", client.stderr_text());
            assert_sound(&sample, &context);
            let response_size = if shape == Shape::Send {
                0
            } else {
                RESPONSE_SIZE
            };
            assert_eq!(sample.requests, sample.completed, "{context}");
            assert_eq!(sample.request_bytes, sample.completed * REQUEST_SIZE);
            // a zmq command has no acknowledgement
            let acks = if shape == Shape::Send {
                0
            } else {
                sample.completed
            };
            assert_eq!(sample.responses, acks, "{context}");
            assert_eq!(sample.response_bytes, acks * response_size, "{context}");
            assert!(sample.submit_cpu_ns.is_some_and(|ns| ns > 0), "{context}");
            match shape {
                Shape::Send => commands += sample.completed,
                _ => unary_completed += sample.completed,
            }
            shut_down_client(&mut client, &context);
        }
    }
    server.send("WINDOW END");
    let Event::Window(window) = server.next_event() else {
        panic!("expected window\n{}", server.stderr_text());
    };
    let counters = &window.counters;
    assert!(counters["commands"] >= commands, "{counters:?}");
    assert!(counters["responses"] >= unary_completed, "{counters:?}");
    assert_eq!(
        (counters["rejected"], counters["dropped"]),
        (0, 0),
        "{counters:?}"
    );
    assert_eq!(window.first_rejection, None);
    server.send("SHUTDOWN");
    assert!(matches!(server.next_event(), Event::Stopped(_)));
    assert_eq!(server.exit_code(), 0, "{}", server.stderr_text());
}

/// zmq's backpressure submits on the one socket while it takes them, not one call per lane: with
/// one lane, more than one request is in flight (the socket's high-water mark is what stops it).
#[test]
fn zmq_backpressure_is_not_bounded_by_the_lanes() {
    let pki = Pki::new();
    let (mut server, address) = common::start_plain_server(&pki, "zmq", &[]);
    let options: [(&str, &dyn std::fmt::Display); 10] = [
        ("--shape", &Shape::Unary),
        ("--concurrency", &1),
        ("--load", &"backpressure"),
        ("--max-in-flight", &64),
        ("--request-size", &REQUEST_SIZE),
        ("--response-size", &RESPONSE_SIZE),
        ("--messages-per-stream", &1),
        ("--warmup-ms", &100),
        ("--window-ms", &300),
        ("--drain-ms", &5000),
    ];
    let args = common::plain_client_args("zmq", &address, &options);
    let mut client = Peer::spawn(&args, &pki.path("zmq-backpressure.stderr"));
    let context = format!("zmq backpressure {}", args.join(" "));
    let (_, sample) = armed_then_sample(&mut client, &context);
    let context = format!("{context}: {sample:?}\n{}", client.stderr_text());
    assert_sound(&sample, &context);
    assert_eq!(sample.responses, sample.completed, "{context}");
    let depth = sample.max_in_flight.unwrap_or(0);
    assert!((2..=64).contains(&depth), "depth {depth}: {context}");
    shut_down_client(&mut client, &context);
    server.send("SHUTDOWN");
    assert!(matches!(server.next_event(), Event::Stopped(_)));
}

/// zmq refuses, before anything runs, a stream shape and TLS.
#[test]
fn zmq_refuses_streams_and_tls() {
    let pki = Pki::new();
    let refused = |args: Vec<String>, expected: &str| {
        let mut peer = Peer::spawn(&args, &pki.path("zmq-refused.stderr"));
        let Event::Error(error) = peer.next_event() else {
            panic!("expected an error for {args:?}");
        };
        assert!(error.message.contains(expected), "{error:?}");
        assert_eq!(peer.exit_code(), 2);
    };
    let bidi = common::plain_client_args(
        "zmq",
        "127.0.0.1:1",
        &[
            ("--shape", &"bidi"),
            ("--load", &"closed"),
            ("--concurrency", &1),
            ("--request-size", &1),
            ("--response-size", &1),
            ("--messages-per-stream", &1),
            ("--warmup-ms", &0),
            ("--window-ms", &10),
            ("--drain-ms", &10),
        ],
    );
    refused(bidi, "--stack zmq does not carry --shape bidi");
    let tls = strings(&[
        "server",
        "--stack",
        "zmq",
        "--listen",
        "127.0.0.1:0",
        "--cert",
        "c",
        "--key",
        "k",
    ]);
    refused(tls, "ZeroMQ has no TLS");
}
