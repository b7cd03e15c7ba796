//! Phase 3, UDP rate: loss off, the sender 2 % above the link rate; payload rate at the
//! receiver (kernel receive timestamps) and reordering. In offload granularity the sends are
//! UDP GSO bundles and the expected rate charges them as the emulator does (crate::bundle).

use rpcarena_netem::Side;
use rpcarena_netem_core::{Counters, DelaySampler, DirectionSpec, LinkProfile, LossModel};

use super::full_size_units;
use crate::bundle::{Unit, payload_rate_bps};
use crate::context::{Context, SECOND, max_one_way_ns};
use crate::error::NetcheckError;
use crate::figures::{Figures, pass_if};
use crate::probes::{StreamConfig, StreamOutcome};

/// The sender's rate relative to the link's.
const OVER: f64 = 1.02;

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let lossless = profile.map_directions(|d| d.loss = LossModel::None);
    let spec = &lossless.client_to_server;
    let Some((send, link_units)) =
        full_size_units(&lossless, figures, "udp payload rate", "Mbit/s")
    else {
        return Ok(());
    };
    let secs = send_secs(ctx.options.rate_secs, spec, link_units);
    let units = (link_units * OVER * secs) as u64;
    if units < 100 {
        figures.info(
            "udp payload rate",
            "Mbit/s",
            None,
            None,
            "queue limit too small to saturate without drops: skipped",
        );
        return Ok(());
    }
    let config = StreamConfig {
        from: Side::Client,
        count: units * send.segments as u64,
        pps: link_units * OVER * send.segments as f64,
        unit: send,
        record: true,
        max_delay_ns: max_one_way_ns(spec, send.wire_len()) + 500_000_000,
    };
    let (outcome, stats) = ctx.udp_stream("udp rate", &lossless, config, true)?;
    let counters = stats.map(|s| s.client_to_server.counters);
    let records = &outcome.records;
    // The first 30 % of packets build the backlog; after that the link never idles.
    let window = &records[records.len() * 3 / 10..];
    let expected = send.payload_rate_bps(spec).unwrap_or_default();
    let measured = payload_rate_bps(window, send).filter(|_| window.len() >= 10);
    let Some(measured) = measured else {
        return Err(NetcheckError::Phase {
            phase: "udp rate".to_string(),
            detail: format!("only {} packets received", records.len()),
        });
    };
    let sent = Sent {
        send,
        secs,
        scheduled: link_units * OVER,
    };
    figures.within(
        "udp payload rate (loss off)",
        "Mbit/s",
        expected / 1e6,
        measured / 1e6,
        0.01 * expected / 1e6,
        rate_detail(&sent, &outcome, window.len(), counters, spec),
    );
    figures.push(
        "udp reordering (with rate)",
        "packets",
        (Some(0.0), Some(outcome.reordered as f64)),
        ("= 0".to_string(), pass_if(outcome.reordered == 0)),
        "",
    );
    Ok(())
}

/// How long to send: the configured time, cut to what the queue (`limit` units: packets, or
/// bundles) can absorb of the 2 % excess without dropping.
fn send_secs(rate_secs: f64, spec: &DirectionSpec, link_units: f64) -> f64 {
    let (_, hi) = DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution).range();
    let in_flight = link_units * hi.max(0) as f64 / SECOND;
    let free = spec.limit_packets as f64 - in_flight;
    rate_secs.min(0.8 * free.max(0.0) / ((OVER - 1.0) * link_units))
}

/// What the sender was asked to do.
struct Sent {
    /// One send.
    send: Unit,
    /// For how long.
    secs: f64,
    /// Sends per second it was scheduled to make.
    scheduled: f64,
}

/// The rate figure's detail: what was sent, over which window, what arrived and what the
/// queue dropped; for bundles, how they were charged; a note when the sender fell behind.
fn rate_detail(
    sent: &Sent,
    outcome: &StreamOutcome,
    window: usize,
    counters: Option<Counters>,
    spec: &DirectionSpec,
) -> String {
    let send = sent.send;
    let send_secs = outcome.last_send_ns.saturating_sub(outcome.first_send_ns) as f64 / SECOND;
    let behind = sender_behind(outcome.units_sent, send_secs, sent.scheduled, send);
    let bundles = if send.is_bundle() {
        format!(
            "; {} bundles sent, {} datagrams received, the emulator saw {} units; expected \
             charges {} x {} + {} overhead bytes per bundle",
            outcome.units_sent,
            outcome.datagrams,
            counters.map_or("?".to_string(), |c| c.arrived.to_string()),
            send.segments,
            send.payload + crate::context::UDP_IP_HEADERS,
            spec.overhead_bytes,
        )
    } else {
        String::new()
    };
    format!(
        "{} at {:.0} % of the link rate for {:.1} s; rate over the last {} \
         arrivals (kernel receive timestamps); {} of {} received, {} queue drops{}{}",
        send.describe(),
        OVER * 100.0,
        sent.secs,
        window,
        outcome.received,
        outcome.sent,
        counters.map_or("?".to_string(), |c| c.queue_dropped.to_string()),
        bundles,
        behind,
    )
}

/// A note when the sender could not keep to its schedule (below 99 % of `scheduled` units/s):
/// the link then idles and the measured rate is the sender's, not the emulator's.
pub(crate) fn sender_behind(units_sent: u64, send_secs: f64, scheduled: f64, send: Unit) -> String {
    let achieved = units_sent as f64 / send_secs.max(1e-9);
    if achieved >= 0.99 * scheduled {
        return String::new();
    }
    format!(
        "; SENDER-LIMITED: the sender achieved {:.0} of {:.0} scheduled sends/s ({:.0} Mbit/s of \
         payload), so the link idled and this rate is the load generator's, not the emulator's",
        achieved,
        scheduled,
        achieved * (send.segments * send.payload) as f64 * 8.0 / 1e6
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sender_behind_schedule_is_named() {
        let unit = Unit {
            segments: 44,
            payload: 1472,
        };
        // 15,600 bundles in 1 s against 19,300 scheduled: 8,083 Mbit/s of payload.
        let note = sender_behind(15_600, 1.0, 19_300.0, unit);
        assert!(note.contains("SENDER-LIMITED"), "{note}");
        assert!(
            note.contains("15600 of 19300") && note.contains("8083 Mbit/s"),
            "{note}"
        );
        assert_eq!(sender_behind(19_200, 1.0, 19_300.0, unit), "");
    }
}
