//! Phase 5, overfilled queue: 1.5x the link rate; one-way delay settles at `limit` units of
//! serialization and the excess is dropped. A unit is a packet, or in offload granularity a
//! UDP GSO bundle, which takes one slot of `limit` (crate::bundle).

use rpcarena_netem::Side;
use rpcarena_netem_core::{DirectionSpec, LinkProfile};

use super::{full_size_units, percentile};
use crate::bundle::Unit;
use crate::context::{Context, MS, SECOND, max_one_way_ns};
use crate::error::NetcheckError;
use crate::expect;
use crate::figures::Figures;
use crate::probes::{StreamConfig, StreamOutcome};

/// The sender's rate relative to the link's.
const OVER: f64 = 1.5;

/// When the queue is full, s after the first send, for `offered` units/s into a link of
/// `link_pps`: the first units wait out their delay, then the queue fills at the excess rate.
fn queue_full_after_s(spec: &DirectionSpec, offered: f64, link_pps: f64) -> f64 {
    let delay_s = spec.delay_ns as f64 / SECOND;
    let limit = spec.limit_packets as f64;
    if offered * delay_s >= limit {
        limit / offered
    } else {
        delay_s + (limit - offered * delay_s) / (offered - link_pps)
    }
}

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let spec = &profile.client_to_server;
    let Some((send, link_pps)) = full_size_units(profile, figures, "overfilled queue delay", "ms")
    else {
        return Ok(());
    };
    let segments = send.segments as u64;
    let offered = OVER * link_pps;
    // Measure only what is sent once the queue is full (with a margin), and send long enough
    // for a second of that.
    let steady_from_s = queue_full_after_s(spec, offered, link_pps) * 1.2 + 0.1;
    let secs = ctx.options.overfill_secs.max(steady_from_s + 1.0);
    let steady_from_seq = (offered * steady_from_s) as u64 * segments;
    let config = StreamConfig {
        from: Side::Client,
        count: (offered * secs) as u64 * segments,
        pps: offered * segments as f64,
        unit: send,
        record: true,
        max_delay_ns: max_one_way_ns(spec, send.wire_len()) + 500_000_000,
    };
    let (outcome, _) = ctx.udp_stream("overfill", profile, config, true)?;
    let steady = Steady::of(&outcome, steady_from_seq, send)?;
    delay_figure(figures, spec, send, &steady, offered);
    drop_figure(figures, &outcome, &steady, send, (offered, link_pps));
    Ok(())
}

/// What arrived of the packets sent once the queue was full.
struct Steady {
    /// The first sequence number counted.
    from_seq: u64,
    /// One-way delays of those that arrived, ns.
    delays: Vec<f64>,
}

impl Steady {
    /// Steady state: packets sent once the queue was full (at the latest, the second half of
    /// what was sent). A queue of bundles takes most of the phase to fill (regional-wan: 1,000
    /// bundles of 5.3 ms, ~11 s at the 50 % excess), so there the window is what was sent after
    /// it filled, which the phase's length makes at least a second's worth.
    fn of(
        outcome: &StreamOutcome,
        steady_from_seq: u64,
        send: Unit,
    ) -> Result<Steady, NetcheckError> {
        let segments = send.segments as u64;
        let from_seq = if send.is_bundle() {
            steady_from_seq.min(outcome.sent.saturating_sub(segments))
        } else {
            steady_from_seq.min(outcome.sent / 2)
        };
        let delays: Vec<f64> = outcome
            .records
            .iter()
            .filter(|r| r.0 >= from_seq)
            .map(|r| r.2.saturating_sub(r.1) as f64)
            .collect();
        if delays.is_empty() {
            return Err(NetcheckError::Phase {
                phase: "overfill".to_string(),
                detail: "no packet sent after the queue filled arrived".to_string(),
            });
        }
        Ok(Steady { from_seq, delays })
    }
}

/// Mean one-way delay in the steady state against `limit` units of serialization.
fn delay_figure(
    figures: &mut Figures,
    spec: &DirectionSpec,
    send: Unit,
    steady: &Steady,
    offered: f64,
) {
    let delays = &steady.delays;
    let ser = send.serialization_ns(spec).unwrap_or(0) as f64;
    let expected_delay = spec.limit_packets as f64 * ser;
    let (mean, _, _) = expect::moments(delays);
    figures.within(
        "overfilled queue one-way delay",
        "ms",
        expected_delay / MS,
        mean / MS,
        0.02 * expected_delay / MS,
        format!(
            "{} at 150 % of the link rate; limit {} {} x {:.1} us; \
             p50 {:.2} ms, p99 {:.2} ms over packets sent after {:.2} s (queue full)",
            send.describe(),
            spec.limit_packets,
            if send.is_bundle() {
                "bundles (one slot each)"
            } else {
                "packets"
            },
            ser / 1e3,
            percentile(delays, 50.0) / MS,
            percentile(delays, 99.0) / MS,
            steady.from_seq as f64 / (offered * send.segments as f64)
        ),
    );
}

/// The steady state's drop fraction against the excess the sender actually offered;
/// `rates` is (scheduled sends/s, sends/s the link carries).
fn drop_figure(
    figures: &mut Figures,
    outcome: &StreamOutcome,
    steady: &Steady,
    send: Unit,
    (offered, link_pps): (f64, f64),
) {
    let send_secs = outcome.last_send_ns.saturating_sub(outcome.first_send_ns) as f64 / SECOND;
    let offered_actual = outcome.units_sent as f64 / send_secs.max(1e-9);
    let expected_drop = (1.0 - link_pps / offered_actual).max(0.0);
    let steady_sent = outcome.sent - steady.from_seq;
    let drop = 1.0 - steady.delays.len() as f64 / steady_sent.max(1) as f64;
    figures.within(
        "overfilled queue drop fraction",
        "%",
        expected_drop * 100.0,
        drop * 100.0,
        1.0,
        format!(
            "offered {:.0} {}/s against {:.0} the link carries{}",
            offered_actual,
            if send.is_bundle() {
                "bundles"
            } else {
                "packets"
            },
            link_pps,
            super::rate::sender_behind(outcome.units_sent, send_secs, offered, send)
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_fills_after_the_delay_at_the_excess_rate() {
        let spec = DirectionSpec {
            delay_ns: 10_000_000,
            limit_packets: 1000,
            ..DirectionSpec::default()
        };
        // 10,000 packets/s offered into 5,000: 100 in flight after 10 ms, then +5,000/s.
        let s = queue_full_after_s(&spec, 10_000.0, 5_000.0);
        assert!((s - (0.01 + 900.0 / 5_000.0)).abs() < 1e-12, "{s}");
        // A delay that alone holds the limit: full once `limit` packets were sent.
        let s = queue_full_after_s(&spec, 200_000.0, 5_000.0);
        assert!((s - 1000.0 / 200_000.0).abs() < 1e-12, "{s}");
    }
}
