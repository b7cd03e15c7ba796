//! The lifecycle of docs/peer-protocol.md ("Lifecycle") that the sample tests do not reach: a
//! command out of place in every role, the server's window commands (revision 1.2), and the
//! warmup's bound.

mod common;

use common::{Peer, Pki, armed_then_sample, shut_down_client, start_server, strings};
use rpcarena_peer_rust::stacks::ServerState;
use rpcarena_peer_rust::stacks::native::{self, CallEnd};
use rpcarena_peer_rust::tls;
use rpcarena_protocol::event::{Edge, Event, PeerError, WindowReport};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn client_args(pki: &Pki, stack: &str, address: &str, timing: [(&str, &str); 3]) -> Vec<String> {
    let shape_and_load: [(&str, &dyn std::fmt::Display); 2] =
        [("--shape", &"unary"), ("--load", &"closed")];
    let mut args = common::client_args(pki, stack, address, "ca.pem", &shape_and_load);
    for (name, value) in [
        ("--concurrency", "1"),
        ("--request-size", "16"),
        ("--response-size", "16"),
        ("--messages-per-stream", "1"),
    ]
    .into_iter()
    .chain(timing)
    {
        args.extend(strings(&[name, value]));
    }
    args
}

const SHORT: [(&str, &str); 3] = [
    ("--warmup-ms", "50"),
    ("--window-ms", "100"),
    ("--drain-ms", "2000"),
];

fn error(peer: &Peer) -> PeerError {
    match peer.next_event() {
        Event::Error(error) => error,
        other => panic!("expected an error, got {other:?}\n{}", peer.stderr_text()),
    }
}

#[test]
fn a_second_start_after_the_sample_is_a_protocol_error() {
    let pki = Pki::new();
    let (server, address) = start_server(&pki, "tcp");
    let mut client = Peer::spawn(
        &client_args(&pki, "tcp", &address, SHORT),
        &pki.path("second-start.stderr"),
    );
    assert!(matches!(client.next_event(), Event::Armed(_)));
    client.send("START");
    assert!(matches!(client.next_event(), Event::Sample(_)));
    client.send("START");
    let error = error(&client);
    assert_eq!(
        (error.phase.as_str(), error.code.as_str()),
        ("shutdown", "protocol")
    );
    assert!(error.message.contains("second START"), "{error:?}");
    assert_eq!(client.exit_code(), 1);
    drop(server);
}

#[test]
fn start_or_an_unknown_line_to_a_server_is_a_protocol_error() {
    let pki = Pki::new();
    for line in ["START", "HELLO"] {
        let (mut server, _) = start_server(&pki, "quic");
        server.send(line);
        let error = error(&server);
        assert_eq!(
            (error.phase.as_str(), error.code.as_str()),
            ("serve", "protocol"),
            "{line}"
        );
        assert!(error.message.contains("SHUTDOWN"), "{error:?}");
        assert_eq!(server.exit_code(), 1, "{line}");
    }
}

/// Sends a window command and reads its answer, which must come at once with that edge.
fn window(server: &mut Peer, edge: Edge) -> WindowReport {
    let sent = Instant::now();
    server.send(edge.command().as_str());
    let Event::Window(report) = server.next_event() else {
        panic!("expected a window event\n{}", server.stderr_text());
    };
    // the page asks for 100 ms; a loaded test machine gets some slack
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(report.edge, edge);
    report
}

/// Every figure of `later` at least the one of `earlier`, with the allocation counters present.
fn not_backwards(earlier: &WindowReport, later: &WindowReport, context: &str) {
    for (name, value) in &earlier.counters {
        assert!(later.counters[name] >= *value, "{context}: {name}");
    }
    for (before, after) in [
        (earlier.allocations, later.allocations),
        (earlier.allocated_bytes, later.allocated_bytes),
    ] {
        let (before, after) = (before.expect("declared"), after.expect("declared"));
        assert!(after >= before, "{context}: {before} then {after}");
    }
}

#[test]
fn a_server_answers_window_commands_with_its_counters_and_allocations() {
    let pki = Pki::new();
    for stack in ["grpc", "quic", "tcp"] {
        let (mut server, address) = start_server(&pki, stack);
        let start = window(&mut server, Edge::Start);
        assert_eq!(start.counters["rpcs"], 0, "{stack}");
        let mut client = Peer::spawn(
            &client_args(&pki, stack, &address, SHORT),
            &pki.path(&format!("{stack}-window.stderr")),
        );
        let (armed, sample) = armed_then_sample(&mut client, stack);
        let end = window(&mut server, Edge::End);
        not_backwards(&start, &end, stack);
        // the validation operation, the warmup and the window all came after WINDOW START
        let served = end.counters["rpcs"] - start.counters["rpcs"];
        assert!(
            served > sample.completed + armed.warmup_completed,
            "{stack}: {served} calls, {sample:?}"
        );
        // serving them allocated: at least once per call, and at least a byte per allocation
        let allocated = end.allocations.unwrap() - start.allocations.unwrap();
        let bytes = end.allocated_bytes.unwrap() - start.allocated_bytes.unwrap();
        assert!(
            allocated >= served && bytes >= allocated,
            "{stack}: {allocated} {bytes}"
        );
        shut_down_client(&mut client, stack);
        // any number, in any order
        let again = window(&mut server, Edge::End);
        let restart = window(&mut server, Edge::Start);
        not_backwards(&end, &again, stack);
        not_backwards(&again, &restart, stack);
        server.send("SHUTDOWN");
        let Event::Stopped(stopped) = server.next_event() else {
            panic!("{stack}: expected stopped\n{}", server.stderr_text());
        };
        assert_eq!(stopped.counters, restart.counters, "{stack}");
        assert!(stopped.allocations >= restart.allocations, "{stack}");
        assert_eq!(server.exit_code(), 0, "{stack}");
    }
}

#[test]
fn window_commands_to_a_client_are_protocol_errors() {
    let pki = Pki::new();
    let (server, address) = start_server(&pki, "tcp");
    for (edge, after_sample, phase) in
        [(Edge::Start, false, "armed"), (Edge::End, true, "shutdown")]
    {
        let mut client = Peer::spawn(
            &client_args(&pki, "tcp", &address, SHORT),
            &pki.path(&format!("window-to-client-{edge}.stderr")),
        );
        assert!(matches!(client.next_event(), Event::Armed(_)));
        if after_sample {
            client.send("START");
            assert!(matches!(client.next_event(), Event::Sample(_)));
        }
        client.send(edge.command().as_str());
        let error = error(&client);
        assert_eq!(
            (error.phase.as_str(), error.code.as_str()),
            (phase, "protocol"),
            "{edge}"
        );
        assert!(
            error.message.contains(edge.command().as_str())
                && error.message.contains("server command"),
            "{error:?}"
        );
        assert_eq!(client.exit_code(), 1, "{edge}");
    }
    drop(server);
}

#[test]
fn start_while_connecting_is_a_protocol_error_of_that_phase() {
    // A listener that accepts TCP and never answers the TLS handshake keeps the client connecting.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = silent.local_addr().expect("address").to_string();
    let pki = Pki::new();
    let mut client = Peer::spawn(
        &client_args(&pki, "tcp", &address, SHORT),
        &pki.path("start-connecting.stderr"),
    );
    std::thread::sleep(Duration::from_millis(300));
    client.send("START");
    let error = error(&client);
    assert_eq!(
        (error.phase.as_str(), error.code.as_str()),
        ("connect", "protocol")
    );
    assert_eq!(client.exit_code(), 1);
    drop(silent);
}

/// A native tcp server in this process that answers the first call (the validation operation)
/// and then reads the next one and never answers it.
async fn answer_once_then_hang(pki: &Pki) -> (String, tokio::task::JoinHandle<()>) {
    let config = tls::server_config(
        &pki.path("server.pem"),
        &pki.path("server.key"),
        tls::ALPN_NATIVE,
    )
    .expect("server TLS config");
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address").to_string();
    let task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.expect("accept");
        let stream = acceptor.accept(tcp).await.expect("handshake");
        let (read, write) = tokio::io::split(stream);
        let (mut reader, mut writer) = (native::reader(read), native::writer(write));
        let state = Arc::new(ServerState::default());
        let first = native::serve_call(&mut reader, &mut writer, &state).await;
        assert_eq!(first, CallEnd::Next);
        tokio::time::sleep(Duration::from_secs(60)).await;
        drop((reader, writer));
    });
    (address, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warmup_operations_in_flight_are_bounded_by_the_drain() {
    let pki = Pki::new();
    let (address, server) = answer_once_then_hang(&pki).await;
    let args = client_args(
        &pki,
        "tcp",
        &address,
        [
            ("--warmup-ms", "200"),
            ("--window-ms", "100"),
            ("--drain-ms", "300"),
        ],
    );
    let stderr = pki.path("warmup-bound.stderr");
    let began = Instant::now();
    let (error, exit) = tokio::task::spawn_blocking(move || {
        let mut client = Peer::spawn(&args, &stderr);
        let error = error(&client);
        (error, client.exit_code())
    })
    .await
    .expect("the client thread");
    server.abort();
    assert_eq!(
        (error.phase.as_str(), error.code.as_str()),
        ("warmup", "timeout"),
        "{error:?}"
    );
    assert!(error.message.contains("--drain-ms"), "{error:?}");
    assert_eq!(exit, 1);
    // 200 ms of warmup and 300 ms of drain, not a fixed bound of minutes
    assert!(
        began.elapsed() < Duration::from_secs(10),
        "{:?}",
        began.elapsed()
    );
}
