//! What an emulated link allows a closed loop: with `lanes` operations in flight, each taking
//! at least one round trip plus the time to serialise its streamed bytes at the link rate, no
//! stack can exceed `lanes / (RTT + serialisation)` operations per second, nor push more bytes
//! than the rate carries. A pure function of the configuration and the profile.

use rpcarena_model::load::LoadSpec;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_netem_core::LinkProfile;
use rpcarena_protocol::workload::Shape;

/// How the limit is computed, for the report.
pub const EXPLANATION: &str = "A closed loop with c lanes (a window: its operations in flight) cannot complete more than c / (RTT + serialisation) operations per second, nor more than either direction's rate carries. RTT is the sum of both directions' mean one-way delays (jitter averages out); serialisation is the time one operation's streamed payload bytes take at the link rate (client streams: requests; server streams: responses; bidi: the larger of the two, the directions run in parallel; unary: none). Payload bytes only: framing, headers, TLS and packet overheads make the true limit lower, so the share of the limit is an upper bound of how close a stack came.";

/// The limit of one configuration.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit {
    /// Operations in flight.
    pub lanes: u32,
    /// Mean round trip, milliseconds.
    pub rtt_ms: f64,
    /// Serialisation of one operation's streamed bytes, milliseconds.
    pub serialisation_ms: f64,
    /// The most operations per second the link allows.
    pub ops_per_s: f64,
}

/// The limit of `config` on `profile`; `None` for loads without a fixed number of operations
/// in flight (open loop, backpressure, send-saturation) or a link without delay.
pub fn limit(config: &SampleConfig, profile: &LinkProfile) -> Option<Limit> {
    let lanes = match config.load {
        LoadSpec::Closed => config.concurrency,
        LoadSpec::Window { in_flight } => in_flight,
        _ => return None,
    };
    let (up, down) = (&profile.client_to_server, &profile.server_to_client);
    let rtt_s = (up.delay_ns + down.delay_ns) as f64 / 1e9;
    if rtt_s <= 0.0 || lanes == 0 {
        return None;
    }
    let request_bits = config.requests_per_op() as f64 * f64::from(config.request_size) * 8.0;
    let response_bits = config.responses_per_op() as f64 * f64::from(config.response_size) * 8.0;
    let time = |bits: f64, rate: Option<u64>| rate.map_or(0.0, |r| bits / r as f64);
    let serialisation_s = match config.shape {
        // a command is one message one way; its acknowledgement (gRPC's Empty) carries no payload
        Shape::Unary | Shape::Send => 0.0,
        Shape::ClientStream => time(request_bits, up.rate_bps),
        Shape::ServerStream => time(response_bits, down.rate_bps),
        // pingpong (1.2) as bidi for now: a bound still, but it leaves out pingpong's N round trips
        Shape::Bidi | Shape::Pingpong => {
            time(request_bits, up.rate_bps).max(time(response_bits, down.rate_bps))
        }
    };
    let mut ops = f64::from(lanes) / (rtt_s + serialisation_s);
    for (bits, rate) in [(request_bits, up.rate_bps), (response_bits, down.rate_bps)] {
        if let Some(rate) = rate
            && bits > 0.0
        {
            ops = ops.min(rate as f64 / bits);
        }
    }
    Some(Limit {
        lanes,
        rtt_ms: rtt_s * 1e3,
        serialisation_ms: serialisation_s * 1e3,
        ops_per_s: ops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_model::campaign::Campaign;
    use rpcarena_model::matrix;

    fn config(shape: &str, concurrency: u32) -> SampleConfig {
        let text = rpcarena_fixtures::campaign("t", 1)
            .key("repetitions = 1")
            .peer("p", &["p"])
            .cell("a", "p", "p", "grpc")
            .section(&format!(
                "[workload]\nshapes = [\"{shape}\"]\nconcurrency = [{concurrency}]"
            ))
            .build();
        matrix::expand(&Campaign::parse(&text, "t.toml").unwrap())[0].clone()
    }

    #[test]
    fn unary_is_lanes_over_the_round_trip() {
        let p = rpcarena_netem_core::profile_by_name("regional-wan").unwrap();
        let l = limit(&config("unary", 4), &p).unwrap();
        assert!((l.rtt_ms - 30.0).abs() < 1e-9, "{l:?}");
        assert!((l.ops_per_s - 4.0 / 0.030).abs() < 1e-6, "{l:?}");
    }

    #[test]
    fn a_stream_adds_its_bytes_at_the_link_rate() {
        let p = rpcarena_netem_core::profile_by_name("regional-wan").unwrap();
        let l = limit(&config("client_stream", 1), &p).unwrap();
        // 128 x 256 B = 262,144 bits at 100 Mbit/s = 2.62144 ms
        assert!((l.serialisation_ms - 2.62144).abs() < 1e-9, "{l:?}");
        assert!((l.ops_per_s - 1.0 / 0.03262144).abs() < 1e-6, "{l:?}");
    }
}
