//! Phase 3, UDP rate: loss off, the sender 2 % above the link rate; payload rate at the
//! receiver (kernel receive timestamps) and reordering.

use rpcarena_netem::Side;
use rpcarena_netem_core::{DelaySampler, LinkProfile, LossModel};

use super::full_size_datagrams;
use crate::context::{Context, SECOND, max_one_way_ns};
use crate::error::NetcheckError;
use crate::figures::{Figures, pass_if};
use crate::probes::StreamConfig;

/// The sender's rate relative to the link's.
const OVER: f64 = 1.02;

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let lossless = profile.map_directions(|d| d.loss = LossModel::None);
    let spec = &lossless.client_to_server;
    let Some((payload, link_pps)) =
        full_size_datagrams(&lossless, figures, "udp payload rate", "Mbit/s")
    else {
        return Ok(());
    };
    let rate = spec.rate_bps.unwrap_or_default();
    let mtu = profile.mtu as usize;
    // Send only as long as the queue can absorb the 2 % excess without dropping.
    let (_, hi) = DelaySampler::new(spec.delay_ns, spec.jitter_ns, spec.distribution).range();
    let in_flight = link_pps * hi.max(0) as f64 / SECOND;
    let free = spec.limit_packets as f64 - in_flight;
    let secs = ctx
        .options
        .rate_secs
        .min(0.8 * free.max(0.0) / ((OVER - 1.0) * link_pps));
    let count = (link_pps * OVER * secs) as u64;
    if count < 100 {
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
        count,
        pps: link_pps * OVER,
        payload,
        record: true,
        max_delay_ns: max_one_way_ns(spec, mtu) + 500_000_000,
    };
    let (outcome, stats) = ctx.udp_stream("udp rate", &lossless, config, true)?;
    let queue_dropped = stats.map(|s| s.client_to_server.counters.queue_dropped);
    let records = &outcome.records;
    // The first 30 % of packets build the backlog; after that the link never idles.
    let window = &records[records.len() * 3 / 10..];
    let expected = rate as f64 * payload as f64 / (mtu as f64 + spec.overhead_bytes as f64);
    if window.len() < 10 {
        return Err(NetcheckError::Phase {
            phase: "udp rate".to_string(),
            detail: format!("only {} packets received", records.len()),
        });
    }
    let first = window.first().map_or(0, |r| r.2);
    let last = window.last().map_or(0, |r| r.2);
    let measured =
        (window.len() - 1) as f64 * payload as f64 * 8.0 / ((last - first) as f64 / SECOND);
    figures.within(
        "udp payload rate (loss off)",
        "Mbit/s",
        expected / 1e6,
        measured / 1e6,
        0.01 * expected / 1e6,
        format!(
            "{}-byte datagrams at {:.0} % of the link rate for {:.1} s; rate over the last {} \
             arrivals (kernel receive timestamps); {} of {} received, {} queue drops",
            payload,
            OVER * 100.0,
            secs,
            window.len(),
            outcome.received,
            outcome.sent,
            queue_dropped.map_or("?".to_string(), |q| q.to_string()),
        ),
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
