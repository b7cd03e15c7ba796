//! Pure checks of a client's report against what the sample asked for: every count must add
//! up, the window must be the one asked for, the histogram must hold every completed operation.
//! The figures themselves are computed by `rpcarena_model::metrics`.

use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::metrics::Measured;
use rpcarena_model::record::ClientResult;
use rpcarena_protocol::histogram::HistogramError;

/// Problems with a report, in the order the reason lists them; empty when it adds up.
pub(crate) fn check_report(
    config: &SampleConfig,
    window_asked_ns: u64,
    result: &ClientResult,
    measured: &Result<Measured, HistogramError>,
) -> Vec<String> {
    let mut problems = check_outcome(config, result);
    if config.load.whole_operations() {
        problems.extend(check_counts(config, window_asked_ns, result));
    }
    // Send-saturation counts messages, not whole RPCs: the per-operation message checks do not
    // apply (docs/peer-protocol.md, send-saturation accounting).
    match measured {
        Err(e) => problems.push(format!("{e}")),
        Ok(m) => {
            if m.latency.len() != result.completed {
                problems.push(format!(
                    "histogram holds {} values but {} operations completed",
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
    if result.completed == 0 {
        problems.push("no operation completed in the window".to_string());
    }
    let fixed_lanes = matches!(config.load, LoadSpec::Closed | LoadSpec::Window { .. });
    if fixed_lanes && result.lanes != config.concurrency {
        problems.push(format!(
            "client armed {} lanes but concurrency {} was asked",
            result.lanes, config.concurrency
        ));
    }
    if !result.intervals.is_empty() {
        let want = result.window_ns.div_ceil(1_000_000_000);
        if result.intervals.len() as u64 != want {
            problems.push(format!(
                "{} intervals for a {:.1} ms window; ceil(window_ns / 1e9) = {want} were expected",
                result.intervals.len(),
                result.window_ns as f64 / 1e6
            ));
        }
        let sum = result
            .intervals
            .iter()
            .fold(0u64, |sum, i| sum.saturating_add(i.completed));
        if sum != result.completed {
            problems.push(format!(
                "the intervals' completed add up to {sum} but completed is {}",
                result.completed
            ));
        }
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

/// Whole operations: messages and bytes are `completed` times the shape's, and the window is
/// the one asked for.
fn check_counts(config: &SampleConfig, window_asked_ns: u64, result: &ClientResult) -> Vec<String> {
    let mut problems = Vec::new();
    let mut expect = |what: &str, got: u64, want: u64| {
        if got != want {
            problems.push(format!(
                "{what} is {got} but {want} was expected for {} completed {} operations",
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
    // The window is the client's to run; a large deviation means it did not follow the protocol.
    let tolerance = window_asked_ns / 20 + 20_000_000;
    if result.window_ns.abs_diff(window_asked_ns) > tolerance {
        problems.push(format!(
            "client ran a {:.1} ms window but {:.1} ms was asked",
            result.window_ns as f64 / 1e6,
            window_asked_ns as f64 / 1e6
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
            2_000_000_000,
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
        assert!(problems[0].starts_with("responses is 800 but 100 was expected"));

        let mut r = result(100, 100, 100);
        r.completed = 101;
        r.failed = 2;
        r.failures.insert("timeout".into(), 2);
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(text.contains("2 operations failed (timeout: 2)"), "{text}");
        assert!(
            text.contains("histogram holds 100 values but 101 operations completed"),
            "{text}"
        );
    }

    #[test]
    fn a_wrong_window_and_garbage_histogram_are_caught() {
        let mut r = result(10, 10, 10);
        r.window_ns = 1_000_000_000;
        r.histogram = "no!".into();
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(text.contains("1000.0 ms window but 2000.0 ms"), "{text}");
        assert!(text.contains("not valid base64"), "{text}");
    }

    #[test]
    fn intervals_must_add_up_to_completed_and_cover_the_window() {
        use rpcarena_model::record::IntervalRecord;
        let interval = |offset_ns, completed| IntervalRecord {
            offset_ns,
            completed,
            histogram: String::new(),
        };
        let mut r = result(10, 10, 10);
        r.intervals = vec![interval(0, 4), interval(1_000_000_000, 6)];
        assert!(check(&config(Shape::Unary), &r).is_empty());
        // Before the fix: 115367 against 15367 was accepted.
        r.intervals[1].completed = 100_006;
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(
            text.contains("the intervals' completed add up to 100010 but completed is 10"),
            "{text}"
        );
        r.intervals = vec![interval(0, 10)];
        let text = check(&config(Shape::Unary), &r).join("\n");
        assert!(
            text.contains("1 intervals for a 2000.0 ms window"),
            "{text}"
        );
    }
}
