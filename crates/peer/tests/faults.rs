//! The hidden conformance faults (crate::fault, `--conformance-fault MODE`) against the Rust peer
//! itself, on every stack: a fault server makes the Rust client fail its validation operation
//! with the code docs/peer-protocol.md ("Error codes") gives, and a fault client's malformed call
//! is refused by the (validating) Rust server, which keeps serving and counts it as `rejected`.
//! A server that skips validation (`skip-validation`, the broken variant the kit must catch)
//! lets the malformed calls through, and the fault client reports that as a failure.

mod common;

use common::{Peer, Pki, start_server, start_server_with, strings};
use rpcarena_protocol::event::Event;
use rpcarena_protocol::workload::Shape;

/// Every server mode, the payload kinds it is tried with, and the client's code for a shape.
const SERVER_FAULTS: &[(&str, &[&str])] = &[
    ("wrong-seq", &["zeros"]),
    ("short-payload", &["zeros", "structured"]),
    ("nonzero-byte", &["zeros", "structured"]),
    ("wrong-summary", &["zeros"]),
    ("missing-message", &["zeros"]),
    ("extra-message", &["zeros"]),
    ("early-status", &["zeros"]),
    ("error-status", &["zeros"]),
    ("corrupt-structured", &["structured", "zeros"]),
];

/// Every client mode and the shapes it applies to.
const CLIENT_FAULTS: &[(&str, &[Shape])] = &[
    ("nonzero-byte", &Shape::EVERY),
    ("corrupt-structured", &Shape::EVERY),
    ("seq-order", STREAMS),
    ("length-change", STREAMS),
    ("response-size-too-large", &Shape::EVERY),
    ("response-messages-zero", &[Shape::ServerStream]),
    ("empty-stream", STREAMS),
];

/// The shapes whose client sends a stream of requests.
const STREAMS: &[Shape] = &[Shape::ClientStream, Shape::Bidi, Shape::Pingpong];

fn expected_code(fault: &str, shape: Shape) -> &'static str {
    match fault {
        "error-status" => "rpc",
        "wrong-summary" if shape != Shape::ClientStream => "rpc",
        _ => "invalid",
    }
}

fn client_args(
    pki: &Pki,
    stack: &str,
    address: &str,
    shape: Shape,
    payload: &str,
    fault: Option<&str>,
) -> Vec<String> {
    let mut args = common::client_args(
        pki,
        stack,
        address,
        "ca.pem",
        &[
            ("--shape", &shape),
            ("--load", &"closed"),
            ("--payload", &payload),
            ("--concurrency", &2),
            ("--request-size", &100),
            ("--response-size", &200),
            ("--messages-per-stream", &4),
            ("--warmup-ms", &100),
            ("--window-ms", &200),
            ("--drain-ms", &5000),
        ],
    );
    if let Some(fault) = fault {
        args.extend(strings(&["--conformance-fault", fault]));
    }
    args
}

fn stop(mut server: Peer) -> std::collections::BTreeMap<String, u64> {
    server.send("SHUTDOWN");
    let Event::Stopped(stopped) = server.next_event() else {
        panic!("expected stopped\n{}", server.stderr_text());
    };
    assert_eq!(server.exit_code(), 0, "{}", server.stderr_text());
    stopped.counters
}

fn server_faults_fail_the_clients_validation(stack: &str) {
    let pki = Pki::new();
    for (fault, payloads) in SERVER_FAULTS {
        let (server, address) = start_server_with(&pki, stack, &["--conformance-fault", fault]);
        let mut calls = 0;
        // pingpong too: a fault server answers a bidi call request by request, so a lock-step
        // client fails by the fault's check, not by a stall (EVENT_TIMEOUT would catch one)
        // (send on grpc: every mode but error-status acknowledges as usual; see
        // send_faults_on_grpc)
        for shape in common::shapes(stack)
            .into_iter()
            .filter(|s| !s.is_one_way())
        {
            for payload in *payloads {
                let args = client_args(&pki, stack, &address, shape, payload, None);
                let stderr = pki.path(&format!("{stack}-{fault}-{shape}-{payload}.stderr"));
                let mut client = Peer::spawn(&args, &stderr);
                let context = format!("{stack} server {fault}, {shape} {payload}");
                let Event::Error(error) = client.next_event() else {
                    panic!("{context}: expected an error\n{}", client.stderr_text());
                };
                assert_eq!(
                    (error.phase.as_str(), error.code.as_str()),
                    ("validate", expected_code(fault, shape)),
                    "{context}: {error:?}"
                );
                assert_eq!(client.exit_code(), 1, "{context}");
                calls += 1;
            }
        }
        let counters = stop(server);
        assert!(counters["rpcs"] >= calls, "{stack} {fault}: {counters:?}");
        if *fault == "error-status" {
            assert_eq!(counters["rejected"], calls, "{stack} {fault}: {counters:?}");
        }
    }
}

#[test]
fn grpc_server_faults_fail_the_clients_validation() {
    server_faults_fail_the_clients_validation("grpc");
}

#[test]
fn quic_server_faults_fail_the_clients_validation() {
    server_faults_fail_the_clients_validation("quic");
}

#[test]
fn tcp_server_faults_fail_the_clients_validation() {
    server_faults_fail_the_clients_validation("tcp");
}

/// A client of conformance fault `fault` on `shape`, with the payload kind the fault needs.
fn fault_client_args(
    pki: &Pki,
    stack: &str,
    address: &str,
    fault: &str,
    shape: Shape,
) -> Vec<String> {
    let payload = if fault == "corrupt-structured" {
        "structured"
    } else {
        "zeros"
    };
    client_args(pki, stack, address, shape, payload, Some(fault))
}

fn malformed_calls_are_refused_and_the_server_keeps_serving(stack: &str) {
    let pki = Pki::new();
    let (server, address) = start_server(&pki, stack);
    let mut refused = 0;
    for (fault, shapes) in CLIENT_FAULTS {
        let offered = common::shapes(stack);
        for &shape in shapes.iter().filter(|s| offered.contains(s)) {
            let args = fault_client_args(&pki, stack, &address, fault, shape);
            let stderr = pki.path(&format!("{stack}-{fault}-{shape}.stderr"));
            let mut client = Peer::spawn(&args, &stderr);
            let context = format!("{stack} client {fault}, {shape}");
            match client.next_event() {
                Event::Stopped(_) => {}
                other => panic!(
                    "{context}: expected stopped, got {other:?}\n{}",
                    client.stderr_text()
                ),
            }
            assert_eq!(client.exit_code(), 0, "{context}");
            let said = client.stderr_text();
            assert!(
                said.contains("refused the malformed call with INVALID_ARGUMENT"),
                "{context}: {said}"
            );
            refused += 1;
        }
    }
    let counters = stop(server);
    // every malformed call refused, every well-formed one after it served
    assert_eq!(counters["rejected"], refused, "{stack}: {counters:?}");
    assert_eq!(counters["rpcs"], 2 * refused, "{stack}: {counters:?}");
}

#[test]
fn grpc_servers_refuse_malformed_calls() {
    malformed_calls_are_refused_and_the_server_keeps_serving("grpc");
}

#[test]
fn quic_servers_refuse_malformed_calls() {
    malformed_calls_are_refused_and_the_server_keeps_serving("quic");
}

#[test]
fn tcp_servers_refuse_malformed_calls() {
    malformed_calls_are_refused_and_the_server_keeps_serving("tcp");
}

#[test]
fn a_server_that_skips_validation_fails_the_fault_client() {
    let pki = Pki::new();
    for stack in ["grpc", "quic", "tcp"] {
        let (server, address) =
            start_server_with(&pki, stack, &["--conformance-fault", "skip-validation"]);
        for (fault, shape) in [
            ("nonzero-byte", Shape::Unary),
            ("seq-order", Shape::Bidi),
            ("seq-order", Shape::Pingpong),
            ("length-change", Shape::ClientStream),
            ("corrupt-structured", Shape::ServerStream),
        ] {
            let args = fault_client_args(&pki, stack, &address, fault, shape);
            let mut client = Peer::spawn(&args, &pki.path(&format!("{stack}-skip-{fault}.stderr")));
            let context = format!("{stack} {fault} {shape} against skip-validation");
            let Event::Error(error) = client.next_event() else {
                panic!("{context}: expected an error\n{}", client.stderr_text());
            };
            assert_eq!(
                (error.phase.as_str(), error.code.as_str()),
                ("validate", "invalid"),
                "{context}: {error:?}"
            );
            assert!(
                error.message.contains("accepted a malformed call")
                    && error.message.contains(fault),
                "{context}: {error:?}"
            );
            assert_eq!(client.exit_code(), 1, "{context}");
        }
        let counters = stop(server);
        assert_eq!(counters["rejected"], 0, "{stack}: {counters:?}");
    }
}

/// Shape send on grpc (revision 1.3): a fault server's `error-status` answers the command with
/// INTERNAL (`rpc`); every other mode has nothing to corrupt in `Empty` and acknowledges, so the
/// client passes its validation and arms.
#[test]
fn send_faults_on_grpc() {
    let pki = Pki::new();
    for (fault, code) in [("error-status", Some("rpc")), ("wrong-seq", None)] {
        let (server, address) = start_server_with(&pki, "grpc", &["--conformance-fault", fault]);
        let args = client_args(&pki, "grpc", &address, Shape::Send, "zeros", None);
        let mut client = Peer::spawn(&args, &pki.path(&format!("send-{fault}.stderr")));
        let context = format!("grpc server {fault}, send");
        match (client.next_event(), code) {
            (Event::Error(error), Some(code)) => {
                assert_eq!(
                    (error.phase.as_str(), error.code.as_str()),
                    ("validate", code)
                );
                assert_eq!(client.exit_code(), 1, "{context}");
            }
            (Event::Armed(_), None) => client.send("SHUTDOWN"),
            (other, _) => panic!("{context}: {other:?}\n{}", client.stderr_text()),
        }
        drop(client);
        let counters = stop(server);
        assert!(
            counters["commands"] >= 1 || code.is_some(),
            "{context}: {counters:?}"
        );
    }
}

/// Conformance faults on zmq (docs/stacks.md, "Conformance faults on zmq"): the server modes on
/// unary fail the Rust client's validation with the stack's codes; the client modes are refused
/// with Status 3 on unary, and on send the malformed command is counted by the server, which the
/// kit reads with WINDOW END.
#[test]
fn zmq_faults_in_both_roles() {
    let pki = Pki::new();
    let unary = |address: &str, payload: &str, fault: Option<&str>, shape: Shape| {
        let mut args = common::plain_client_args(
            "zmq",
            address,
            &[
                ("--shape", &shape),
                ("--load", &"closed"),
                ("--payload", &payload),
                ("--concurrency", &1),
                ("--request-size", &64),
                ("--response-size", &64),
                ("--messages-per-stream", &1),
                ("--warmup-ms", &0),
                ("--window-ms", &100),
                ("--drain-ms", &2000),
            ],
        );
        if let Some(fault) = fault {
            args.extend(strings(&["--conformance-fault", fault]));
        }
        args
    };
    for (fault, code) in [
        ("wrong-seq", "invalid"),
        ("short-payload", "invalid"),
        ("missing-message", "invalid"),
        ("early-status", "invalid"),
        ("extra-message", "invalid"),
        ("error-status", "rpc"),
        ("wrong-summary", "rpc"),
    ] {
        let (server, address) =
            common::start_plain_server(&pki, "zmq", &["--conformance-fault", fault]);
        let args = unary(&address, "zeros", None, Shape::Unary);
        let mut client = Peer::spawn(&args, &pki.path(&format!("zmq-{fault}.stderr")));
        let Event::Error(error) = client.next_event() else {
            panic!("zmq {fault}: expected an error\n{}", client.stderr_text());
        };
        assert_eq!(
            (error.phase.as_str(), error.code.as_str()),
            ("validate", code),
            "{fault}: {error:?}"
        );
        if fault == "extra-message" {
            assert!(error.message.contains("a reply of 4 frames"), "{error:?}");
        }
        assert_eq!(client.exit_code(), 1);
        drop(client);
        stop(server);
    }
    let (mut server, address) = common::start_plain_server(&pki, "zmq", &[]);
    for shape in [Shape::Unary, Shape::Send] {
        for fault in ["nonzero-byte", "response-size-too-large"] {
            let args = unary(&address, "zeros", Some(fault), shape);
            let mut client =
                Peer::spawn(&args, &pki.path(&format!("zmq-c-{fault}-{shape}.stderr")));
            assert!(
                matches!(client.next_event(), Event::Stopped(_)),
                "zmq client {fault} {shape}\n{}",
                client.stderr_text()
            );
            assert_eq!(client.exit_code(), 0);
        }
    }
    server.send("WINDOW END");
    let Event::Window(window) = server.next_event() else {
        panic!("expected window");
    };
    // four malformed (two refused requests, two counted commands), four good ones
    assert_eq!(window.counters["rejected"], 4, "{window:?}");
    assert_eq!(window.counters["commands"], 2, "{window:?}");
    let first = window.first_rejection.expect("a first rejection");
    assert!(first.contains("payload byte"), "{first}");
    stop(server);
}
