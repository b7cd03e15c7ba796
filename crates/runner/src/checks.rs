//! Pure checks of a client's report against what the sample asked for, and the derived metrics.

use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{ClientResult, Metrics};
use rpcarena_protocol::histogram::{self, LatencySummary};

/// Problems with a report; empty when it adds up. Also returns the metrics when the histogram
/// could be read.
pub fn check_report(
    config: &SampleConfig,
    window_asked_ns: u64,
    result: &ClientResult,
) -> (Vec<String>, Option<Metrics>) {
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
    let expect = |what: &str, got: u64, want: u64, problems: &mut Vec<String>| {
        if got != want {
            problems.push(format!(
                "{what} is {got} but {want} was expected for {} completed {} operations",
                result.completed, config.shape
            ));
        }
    };
    if let (Some(sent), Some(received)) = (result.sent, result.received)
        && received > sent
    {
        problems.push(format!(
            "the server counted {received} messages but only {sent} were sent"
        ));
    }
    if !config.load.whole_operations() {
        // Send-saturation counts messages, not whole RPCs: the per-operation message checks
        // below do not apply (docs/peer-protocol.md, send-saturation accounting).
        let metrics = histogram_metrics(result, &mut problems);
        return (problems, metrics);
    }
    expect(
        "requests",
        result.requests,
        result.completed.saturating_mul(config.requests_per_op()),
        &mut problems,
    );
    expect(
        "responses",
        result.responses,
        result.completed.saturating_mul(config.responses_per_op()),
        &mut problems,
    );
    expect(
        "request_bytes",
        result.request_bytes,
        result
            .requests
            .saturating_mul(u64::from(config.request_size)),
        &mut problems,
    );
    expect(
        "response_bytes",
        result.response_bytes,
        result
            .responses
            .saturating_mul(u64::from(config.response_size)),
        &mut problems,
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
    let metrics = histogram_metrics(result, &mut problems);
    (problems, metrics)
}

/// Rates and percentiles from the report's histograms; a histogram that does not decode or
/// does not hold `completed` values is a problem.
fn histogram_metrics(result: &ClientResult, problems: &mut Vec<String>) -> Option<Metrics> {
    let h = match histogram::decode(&result.histogram) {
        Ok(h) => h,
        Err(e) => {
            problems.push(format!("{e}"));
            return None;
        }
    };
    if h.len() != result.completed {
        problems.push(format!(
            "histogram holds {} values but {} operations completed",
            h.len(),
            result.completed
        ));
    }
    let optional = |text: &Option<String>, what: &str, problems: &mut Vec<String>| {
        text.as_ref().and_then(|t| match histogram::decode(t) {
            Ok(h) => Some(LatencySummary::of(&h)),
            Err(e) => {
                problems.push(format!("{what}: {e}"));
                None
            }
        })
    };
    let uncorrected = optional(
        &result.uncorrected_histogram,
        "uncorrected_histogram",
        problems,
    );
    let lag = optional(&result.send_lag_histogram, "send_lag_histogram", problems);
    let latency = LatencySummary::of(&h);
    let seconds = result.window_ns.max(1) as f64 / 1e9;
    Some(Metrics {
        ops_per_s: result.completed as f64 / seconds,
        requests_per_s: result.requests as f64 / seconds,
        responses_per_s: result.responses as f64 / seconds,
        mean_ns: latency.mean_ns,
        p50_ns: latency.p50_ns,
        p90_ns: latency.p90_ns,
        p99_ns: latency.p99_ns,
        p999_ns: latency.p999_ns,
        max_ns: latency.max_ns,
        uncorrected_p50_ns: uncorrected.map(|l| l.p50_ns),
        uncorrected_p99_ns: uncorrected.map(|l| l.p99_ns),
        send_lag_p50_ns: lag.map(|l| l.p50_ns),
        send_lag_p99_ns: lag.map(|l| l.p99_ns),
        received_per_s: result.received.map(|r| r as f64 / seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_model::load::PayloadKind;
    use rpcarena_protocol::workload::Shape;

    fn config(shape: Shape) -> SampleConfig {
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
            payload: PayloadKind::Zeros,
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

    #[test]
    fn a_consistent_bidi_report_passes_and_gives_rates() {
        let (problems, metrics) =
            check_report(&config(Shape::Bidi), 2_000_000_000, &result(100, 800, 800));
        assert!(problems.is_empty(), "{problems:?}");
        let m = metrics.unwrap();
        assert_eq!(m.ops_per_s, 50.0);
        assert_eq!(m.requests_per_s, 400.0);
        assert!(m.p50_ns >= 1_000_000 && m.p50_ns < 1_002_000);
    }

    #[test]
    fn counts_that_do_not_add_up_are_named() {
        // a client stream sends 8 requests and gets one summary per operation
        let (problems, _) = check_report(
            &config(Shape::ClientStream),
            2_000_000_000,
            &result(100, 800, 800),
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("responses is 800 but 100 was expected"));

        let mut r = result(100, 100, 100);
        r.completed = 101;
        r.failed = 2;
        r.failures.insert("timeout".into(), 2);
        let (problems, _) = check_report(&config(Shape::Unary), 2_000_000_000, &r);
        let text = problems.join("\n");
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
        let (problems, metrics) = check_report(&config(Shape::Unary), 2_000_000_000, &r);
        assert!(metrics.is_none());
        let text = problems.join("\n");
        assert!(text.contains("1000.0 ms window but 2000.0 ms"), "{text}");
        assert!(text.contains("not valid base64"), "{text}");
    }
}
