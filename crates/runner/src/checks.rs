//! Pure checks of a client's report against what the sample asked for: every count must add
//! up, the window must be the one asked for, the histogram must hold every completed operation.
//! The figures themselves are computed by `rpcarena_model::metrics`.

use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::metrics::Measured;
use rpcarena_model::record::ClientResult;
use rpcarena_protocol::histogram::HistogramError;

/// The window and the drain bound the client was given.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asked {
    /// `--window-ms` x 1e6.
    pub window_ns: u64,
    /// `--drain-ms` x 1e6 (send-saturation: `min(--settle-ms, --drain-ms)` x 1e6).
    pub drain_ns: u64,
}

/// Problems with a report, in the order the reason lists them; empty when it adds up. Every
/// mismatch names the value expected and the value received.
pub(crate) fn check_report(
    config: &SampleConfig,
    asked: Asked,
    result: &ClientResult,
    measured: &Result<Measured, HistogramError>,
) -> Vec<String> {
    let mut problems = check_outcome(config, result);
    problems.extend(check_window(asked, result));
    if config.shape.is_one_way() {
        // One command per operation in every model, send-saturation included.
        problems.extend(check_commands(config, result));
    } else if config.load.whole_operations() {
        problems.extend(check_counts(config, result));
    }
    problems.extend(check_intervals(asked.window_ns, result));
    // Send-saturation counts messages, not whole RPCs: the per-operation message checks do not
    // apply (docs/peer-protocol.md, send-saturation accounting).
    match measured {
        Err(e) => problems.push(format!("{e}")),
        Ok(m) => {
            if m.latency.len() != result.completed {
                problems.push(format!(
                    "histogram holds {} values but {} expected (completed)",
                    m.latency.len(),
                    result.completed
                ));
            }
            problems.extend(m.problems.iter().cloned());
        }
    }
    problems
}

/// Failed operations, nothing completed, lanes other than asked, more received than sent.
fn check_outcome(config: &SampleConfig, result: &ClientResult) -> Vec<String> {
    let mut problems = Vec::new();
    if result.failed > 0 {
        let codes: Vec<String> = result
            .failures
            .iter()
            .map(|(code, n)| format!("{code}: {n}"))
            .collect();
        problems.push(format!(
            "{} operations failed ({}){}",
            result.failed,
            if codes.is_empty() {
                "no codes given".to_string()
            } else {
                codes.join(", ")
            },
            result
                .first_failure
                .as_ref()
                .map(|m| format!("; first failure: {m}"))
                .unwrap_or_default()
        ));
    }
    let coded: u64 = result.failures.values().sum();
    if coded != result.failed {
        problems.push(format!(
            "failures add up to {coded} but {} expected (failed)",
            result.failed
        ));
    }
    if result.completed == 0 {
        problems.push("no operation completed in the window".to_string());
    }
    let fixed_lanes = matches!(config.load, LoadSpec::Closed | LoadSpec::Window { .. });
    if fixed_lanes && result.lanes != config.concurrency {
        problems.push(format!(
            "client armed {} lanes but {} expected (concurrency)",
            result.lanes, config.concurrency
        ));
    }
    if let (Some(sent), Some(received)) = (result.sent, result.received)
        && received > sent
    {
        problems.push(format!(
            "the server counted {received} messages but only {sent} were sent"
        ));
    }
    problems
}

/// One-way commands (shape `send`, revision 1.3): one request each, acknowledged by an empty
/// reply (gRPC's `Empty`) or by nothing (zmq), so `responses` is `completed` or 0 and no
/// response byte exists.
fn check_commands(config: &SampleConfig, result: &ClientResult) -> Vec<String> {
    let mut problems = Vec::new();
    let n = result.completed;
    if result.requests != n {
        problems.push(format!(
            "requests is {} but {n} expected for {n} completed send operations (one command each)",
            result.requests
        ));
    }
    if result.responses != n && result.responses != 0 {
        problems.push(format!(
            "responses is {} but {n} (acknowledged commands) or 0 (no reply) expected for {n} completed send operations",
            result.responses
        ));
    }
    if result.response_bytes != 0 {
        problems.push(format!(
            "response_bytes is {} but 0 expected: a command's acknowledgement carries no payload",
            result.response_bytes
        ));
    }
    let bytes = result
        .requests
        .saturating_mul(u64::from(config.request_size));
    if result.request_bytes != bytes {
        problems.push(format!(
            "request_bytes is {} but {bytes} expected for {} commands of {} bytes",
            result.request_bytes, result.requests, config.request_size
        ));
    }
    problems
}

/// Whole operations: messages and bytes are `completed` times the shape's.
fn check_counts(config: &SampleConfig, result: &ClientResult) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            problems.push(format!(
                "{what} is {got} but {want} expected for {} completed {} operations",
                result.completed, config.shape
            ));
        }
    };
    expect(
        "requests",
        result.requests,
        result.completed.saturating_mul(config.requests_per_op()),
    );
    expect(
        "responses",
        result.responses,
        result.completed.saturating_mul(config.responses_per_op()),
    );
    expect(
        "request_bytes",
        result.request_bytes,
        result
            .requests
            .saturating_mul(u64::from(config.request_size)),
    );
    expect(
        "response_bytes",
        result.response_bytes,
        result
            .responses
            .saturating_mul(u64::from(config.response_size)),
    );
    problems
}

/// `window_ns` is exactly the configured window, `drain_ns` at most the drain bound
/// (docs/peer-protocol.md, "sample").
fn check_window(asked: Asked, result: &ClientResult) -> Vec<String> {
    let mut problems = Vec::new();
    if result.window_ns != asked.window_ns {
        problems.push(format!(
            "window_ns is {} but {} expected (--window-ms x 1000000)",
            result.window_ns, asked.window_ns
        ));
    }
    if result.drain_ns > asked.drain_ns {
        problems.push(format!(
            "drain_ns is {} but at most {} expected (the drain bound)",
            result.drain_ns, asked.drain_ns
        ));
    }
    problems
}

/// Intervals, when present: `ceil(window_ns / 1e9)` entries, offsets 0, 1e9, ..., each
/// histogram holding its `completed`, and the entries adding up to the sample's `completed`.
fn check_intervals(window_ns: u64, result: &ClientResult) -> Vec<String> {
    let intervals = &result.intervals;
    if intervals.is_empty() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let want = window_ns.div_ceil(1_000_000_000);
    if intervals.len() as u64 != want {
        problems.push(format!(
            "intervals has {} entries but {want} expected (ceil(window_ns / 1e9))",
            intervals.len()
        ));
    }
    for (k, interval) in intervals.iter().enumerate() {
        let offset = k as u64 * 1_000_000_000;
        if interval.offset_ns != offset {
            problems.push(format!(
                "intervals[{k}].offset_ns is {} but {offset} expected",
                interval.offset_ns
            ));
        }
        match rpcarena_protocol::histogram::decode(&interval.histogram) {
            Ok(h) if h.len() != interval.completed => problems.push(format!(
                "intervals[{k}].histogram holds {} values but {} expected (its completed)",
                h.len(),
                interval.completed
            )),
            Ok(_) => {}
            Err(e) => problems.push(format!("intervals[{k}].{e}")),
        }
    }
    // Saturating: a hostile peer's counts must not overflow (and panic) the controller.
    let total = intervals
        .iter()
        .fold(0u64, |sum, i| sum.saturating_add(i.completed));
    if total != result.completed {
        problems.push(format!(
            "intervals add up to {total} completed but {} expected (completed)",
            result.completed
        ));
    }
    problems
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rpcarena_model::load::Payload;
    use rpcarena_model::metrics::{Detail, measure};
    use rpcarena_protocol::histogram;
    use rpcarena_protocol::workload::Shape;

    /// A configuration of `shape`: cell `c`, grpc, concurrency 4, 10 B requests, 20 B responses.
    pub(crate) fn config(shape: Shape) -> SampleConfig {
        SampleConfig {
            key: "k".into(),
            cell: "c".into(),
            client: "p".into(),
            server: "p".into(),
            stack: "grpc".into(),
            shape,
            concurrency: 4,
            request_size: 10,
            response_size: 20,
            messages_per_stream: 8,
            payload: Payload::Zeros,
            load: LoadSpec::Closed,
            tls: true,
            client_mode: Default::default(),
        }
    }

    fn result(completed: u64, requests: u64, responses: u64) -> ClientResult {
        let mut h = histogram::new_latency_histogram();
        for i in 0..completed {
            h.record(1_000_000 + i).unwrap();
        }
        ClientResult {
            lanes: 4,
            connections: 1,
            completed,
            requests,
            responses,
            request_bytes: requests * 10,
            response_bytes: responses * 20,
            window_ns: 2_000_000_000,
            histogram: histogram::encode(&h).unwrap(),
            ..ClientResult::default()
        }
    }

    fn check(config: &SampleConfig, result: &ClientResult) -> Vec<String> {
        check_report(
            config,
            Asked {
                window_ns: 2_000_000_000,
                drain_ns: 1_000_000_000,
            },
            result,
            &measure(result, Detail::Record),
        )
    }

    #[test]
    fn a_consistent_bidi_report_passes() {
        let r = result(100, 800, 800);
        assert!(check(&config(Shape::Bidi), &r).is_empty());
        let m = measure(&r, Detail::Record).unwrap().metrics;
        assert_eq!(m.ops_per_s, 50.0);
        assert_eq!(m.requests_per_s, 400.0);
        assert!(m.p50_ns >= 1_000_000 && m.p50_ns < 1_002_000);
    }

    #[test]
    fn counts_that_do_not_add_up_are_named() {
        // a client stream sends 8 requests and gets one summary per operation
        let problems = check(&config(Shape::ClientStream), &result(100, 800, 800));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("responses is 800 but 100 expected"));

        let mut r = result(100, 100, 100);
        r.completed = 101;
        r.failed = 2;
        r.failures.insert("timeout".into(), 2);
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(text.contains("2 operations failed (timeout: 2)"), "{text}");
        assert!(
            text.contains("histogram holds 100 values but 101 expected (completed)"),
            "{text}"
        );
    }

    #[test]
    fn a_wrong_window_and_garbage_histogram_are_caught() {
        let mut r = result(10, 10, 10);
        r.window_ns = 1_000_000_000;
        r.histogram = "no!".into();
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(
            text.contains("window_ns is 1000000000 but 2000000000 expected"),
            "{text}"
        );
        assert!(text.contains("not valid base64"), "{text}");
    }

    fn interval(offset_ns: u64, completed: u64) -> rpcarena_model::record::IntervalRecord {
        let mut h = histogram::new_latency_histogram();
        for i in 0..completed {
            h.record(1_000 + i).unwrap();
        }
        rpcarena_model::record::IntervalRecord {
            offset_ns,
            completed,
            histogram: histogram::encode(&h).unwrap(),
        }
    }

    #[test]
    fn intervals_are_counted_and_added_up() {
        let mut r = result(10, 10, 10);
        r.intervals = vec![interval(0, 6), interval(1_000_000_000, 4)];
        assert!(check(&config(Shape::Unary), &r).is_empty());
        // one entry too many (a 2 s window has 2)
        r.intervals.push(interval(2_000_000_000, 0));
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(
            text.contains("intervals has 3 entries but 2 expected"),
            "{text}"
        );
        // wrong offsets, a histogram that does not hold its count, a wrong total
        r.intervals = vec![interval(0, 6), interval(999, 3)];
        r.intervals[1].completed = 5;
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(
            text.contains("intervals[1].offset_ns is 999 but 1000000000 expected"),
            "{text}"
        );
        assert!(
            text.contains("intervals[1].histogram holds 3 values but 5 expected"),
            "{text}"
        );
        assert!(
            text.contains("intervals add up to 11 completed but 10 expected"),
            "{text}"
        );
    }

    #[test]
    fn drain_failures_and_lanes_name_both_values() {
        let mut r = result(10, 10, 10);
        r.drain_ns = 1_000_000_001;
        r.failed = 3;
        r.failures.insert("timeout".into(), 2);
        r.lanes = 3;
        let text = check(&config(Shape::Unary), &r).join("\n");
        for part in [
            "drain_ns is 1000000001 but at most 1000000000 expected",
            "failures add up to 2 but 3 expected (failed)",
            "client armed 3 lanes but 4 expected (concurrency)",
        ] {
            assert!(text.contains(part), "{part} missing in {text}");
        }
    }
}
