//! Every load model and payload kind end to end on loopback, on every stack, through the built
//! binary exactly as the controller drives it, with the accounting docs/peer-protocol.md promises
//! checked on every sample; and the diagnostic stall, which must show in corrected open-loop
//! latency and not in uncorrected latency.
//!
//! Windows are short (300 ms) so that the whole file runs in seconds; every wait is bounded.

// Tests may be long (the house rule): a stack's scenarios read top to bottom against one server.
#![allow(clippy::too_many_lines)]

mod common;

use common::{
    Peer, Pki, armed_then_sample, assert_sound, shut_down_client, start_server, start_server_with,
    strings,
};
use rpcarena_protocol::event::{Event, SampleReport};
use rpcarena_protocol::histogram;
use rpcarena_protocol::workload::Shape;

const REQUEST_SIZE: u64 = 100;
const RESPONSE_SIZE: u64 = 200;
const MESSAGES: u64 = 4;
const WINDOW_MS: u64 = 300;

/// A client run: shape, the model's arguments and its payload kind.
struct Run {
    shape: Shape,
    concurrency: u32,
    model: Vec<&'static str>,
    payload: &'static str,
    window_ms: u64,
}

impl Run {
    fn new(shape: Shape, model: &[&'static str]) -> Run {
        Run {
            shape,
            concurrency: 4,
            model: model.to_vec(),
            payload: "zeros",
            window_ms: WINDOW_MS,
        }
    }
}

fn client_args(pki: &Pki, stack: &str, address: &str, run: &Run) -> Vec<String> {
    let shape_and_payload: [(&str, &dyn std::fmt::Display); 2] =
        [("--shape", &run.shape), ("--payload", &run.payload)];
    let mut args = common::client_args(pki, stack, address, "ca.pem", &shape_and_payload);
    args.extend(strings(&run.model));
    for (name, value) in [
        ("--concurrency", u64::from(run.concurrency)),
        ("--request-size", REQUEST_SIZE),
        ("--response-size", RESPONSE_SIZE),
        ("--messages-per-stream", MESSAGES),
        ("--warmup-ms", 50),
        ("--window-ms", run.window_ms),
        ("--drain-ms", 5000),
    ] {
        args.push(name.to_string());
        args.push(value.to_string());
    }
    args
}

/// Runs one client through a sample and returns its `sample`, after the checks every model
/// shares: no failure, histogram and interval counts equal `completed`, the model named.
fn sample(pki: &Pki, stack: &str, address: &str, run: &Run) -> (SampleReport, String) {
    let args = client_args(pki, stack, address, run);
    let label = format!("{stack} {} {:?} {}", run.shape, run.model, run.payload);
    let stderr = pki.path(&format!(
        "{}.stderr",
        label.replace([' ', '"', '[', ']', ','], "_")
    ));
    let mut client = Peer::spawn(&args, &stderr);
    let (_, sample) = armed_then_sample(&mut client, &label);
    let context = format!("{label}: {sample:?}\n{}", client.stderr_text());
    assert_sound(&sample, &context);
    assert_eq!(sample.window_ns, run.window_ms * 1_000_000, "{context}");
    // one interval per second of the window, the last partial, adding up to `completed`
    assert_eq!(
        sample.intervals.len() as u64,
        run.window_ms.div_ceil(1000),
        "{context}"
    );
    let in_intervals: u64 = sample.intervals.iter().map(|i| i.completed).sum();
    assert_eq!(in_intervals, sample.completed, "{context}");
    for (k, interval) in sample.intervals.iter().enumerate() {
        assert_eq!(interval.offset_ns, k as u64 * 1_000_000_000, "{context}");
        let h = histogram::decode(&interval.histogram).expect("valid interval histogram");
        assert_eq!(h.len(), interval.completed, "{context}");
    }
    let model = run.model[1];
    assert_eq!(sample.load.as_deref(), Some(model), "{context}");
    shut_down_client(&mut client, &context);
    (sample, context)
}

/// Messages and bytes per completed operation, as for the closed model.
fn assert_operation_counts(sample: &SampleReport, shape: Shape, context: &str) {
    let sizes = (REQUEST_SIZE, RESPONSE_SIZE);
    common::assert_operation_counts(sample, shape, MESSAGES, sizes, context);
}

/// One server, then a client per load model and payload kind against it.
fn every_model_on(stack: &str) {
    let pki = Pki::new();
    let (mut server, address) = start_server(&pki, stack);

    // window: N always in flight, whatever --concurrency says
    let (s, context) = sample(
        &pki,
        stack,
        &address,
        &Run::new(Shape::Unary, &["--load", "window", "--in-flight", "6"]),
    );
    assert_eq!(s.max_in_flight, Some(6), "{context}");
    assert_operation_counts(&s, Shape::Unary, &context);

    // backpressure: the depth the transport allowed, at most the cap
    let (s, context) = sample(
        &pki,
        stack,
        &address,
        &Run::new(
            Shape::ServerStream,
            &["--load", "backpressure", "--max-in-flight", "64"],
        ),
    );
    let depth = s.max_in_flight.expect("depth reported");
    assert!((1..=64).contains(&depth), "{context}");
    if stack == "tcp" {
        // tcp's transport is its pool of --concurrency connections
        assert!(depth <= 4, "{context}");
    }
    assert_operation_counts(&s, Shape::ServerStream, &context);

    // send-saturation: one operation per message, confirmed by the summaries
    let (s, context) = sample(
        &pki,
        stack,
        &address,
        &Run::new(
            Shape::ClientStream,
            &[
                "--load",
                "send-saturation",
                "--streams",
                "3",
                "--settle-ms",
                "3000",
            ],
        ),
    );
    assert_eq!(s.max_in_flight, Some(3), "{context}");
    assert_eq!(s.sent, Some(s.completed), "{context}");
    assert_eq!(s.received, Some(s.completed), "{context}");
    assert_eq!(s.requests, s.completed, "{context}");
    assert_eq!(s.responses, 3, "{context}");
    assert_eq!(s.request_bytes, s.requests * REQUEST_SIZE, "{context}");
    assert_eq!(s.response_bytes, s.responses * RESPONSE_SIZE, "{context}");

    // open, constant and Poisson: offered starts, three histograms, the target echoed
    for arrival in ["constant", "poisson"] {
        let (s, context) = sample(
            &pki,
            stack,
            &address,
            &Run::new(
                Shape::Bidi,
                &[
                    "--load",
                    "open",
                    "--rate",
                    "400",
                    "--arrival",
                    arrival,
                    "--seed",
                    "9",
                ],
            ),
        );
        let offered = s.offered.expect("offered reported");
        if arrival == "constant" {
            // 400/s for 300 ms: starts at 0, 2.5, ..., 297.5 ms
            assert_eq!(offered, 120, "{context}");
        } else {
            assert!((60..=200).contains(&offered), "{context}");
        }
        assert!(s.completed + s.failed <= offered, "{context}");
        assert_eq!(s.target_rate, Some(400.0), "{context}");
        assert!(s.fell_behind.is_some(), "{context}");
        let depth = s.max_in_flight.expect("depth reported");
        assert!((1..=4).contains(&depth), "{context}");
        let uncorrected = histogram::decode(s.uncorrected_histogram.as_deref().expect("sent"))
            .expect("valid histogram");
        let lag = histogram::decode(s.send_lag_histogram.as_deref().expect("sent"))
            .expect("valid histogram");
        assert_eq!(uncorrected.len(), s.completed, "{context}");
        assert_eq!(lag.len(), s.completed + s.failed, "{context}");
        // corrected latency is never below uncorrected
        let corrected = histogram::decode(&s.histogram).expect("valid histogram");
        assert!(
            corrected.value_at_quantile(0.5) >= uncorrected.value_at_quantile(0.5),
            "{context}"
        );
        assert_operation_counts(&s, Shape::Bidi, &context);
    }

    // structured payloads on every shape: validated exactly, bytes as configured
    for shape in common::shapes(stack) {
        let mut run = Run::new(shape, &["--load", "closed"]);
        run.payload = "structured";
        run.window_ms = 200;
        let (s, context) = sample(&pki, stack, &address, &run);
        assert_operation_counts(&s, shape, &context);
    }

    server.send("SHUTDOWN");
    assert!(matches!(server.next_event(), Event::Stopped(_)));
    assert_eq!(server.exit_code(), 0, "{}", server.stderr_text());
}

#[test]
fn grpc_runs_every_load_model_and_payload() {
    every_model_on("grpc");
}

#[test]
fn quic_runs_every_load_model_and_payload() {
    every_model_on("quic");
}

#[test]
fn tcp_runs_every_load_model_and_payload() {
    every_model_on("tcp");
}

/// A server that stalls 150 ms every second, an open loop at 500/s with one operation in flight:
/// the operations meant to start during a stall wait for it, so corrected latency has a tail of
/// about 150 ms (about 15% of operations); uncorrected latency sees only the one operation in
/// flight when each stall began (well under 1%), so its p99 stays at the normal service time.
#[test]
fn a_stalling_server_shows_in_corrected_latency_and_not_in_uncorrected() {
    let pki = Pki::new();
    let (mut server, address) = start_server_with(
        &pki,
        "tcp",
        &["--stall-every-ms", "1000", "--stall-ms", "150"],
    );
    let mut run = Run::new(
        Shape::Unary,
        &["--load", "open", "--rate", "500", "--arrival", "constant"],
    );
    run.concurrency = 1;
    run.window_ms = 3000;
    let (s, context) = sample(&pki, "tcp", &address, &run);
    let corrected = histogram::decode(&s.histogram).expect("valid histogram");
    let uncorrected = histogram::decode(s.uncorrected_histogram.as_deref().expect("sent"))
        .expect("valid histogram");
    let (c99, u99) = (
        corrected.value_at_quantile(0.99),
        uncorrected.value_at_quantile(0.99),
    );
    assert!(c99 > 50_000_000, "corrected p99 {c99} ns: {context}");
    assert!(u99 < 20_000_000, "uncorrected p99 {u99} ns: {context}");
    assert!(
        c99 > 4 * u99,
        "corrected {c99} vs uncorrected {u99}: {context}"
    );
    // the stalls held starts back beyond 1 ms at p99: the generator fell behind its schedule
    assert_eq!(s.fell_behind, Some(true), "{context}");
    assert_eq!(s.max_in_flight, Some(1), "{context}");
    server.send("SHUTDOWN");
    assert!(matches!(server.next_event(), Event::Stopped(_)));
    assert_eq!(server.exit_code(), 0);
}

#[test]
fn capabilities_offer_every_load_model_and_payload_kind() {
    let pki = Pki::new();
    let mut peer = Peer::spawn(&strings(&["capabilities"]), &pki.path("caps.stderr"));
    let Event::Capabilities(caps) = peer.next_event() else {
        panic!("expected capabilities");
    };
    for client in &caps.roles.client {
        assert_eq!(
            client.load_models,
            vec![
                "closed",
                "window",
                "backpressure",
                "send-saturation",
                "open"
            ],
            "{client:?}"
        );
        assert_eq!(client.payloads, vec!["zeros", "structured"], "{client:?}");
    }
    for server in &caps.roles.server {
        assert!(server.load_models.is_empty(), "{server:?}");
        assert_eq!(server.payloads, vec!["zeros", "structured"], "{server:?}");
    }
    assert_eq!(peer.exit_code(), 0);
}
