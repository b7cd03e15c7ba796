//! Phase 2, one-way loss: 10^6 probes through the profile's loss model alone (delay and rate
//! removed, the queue unbounded), judged against the 99 % interval.
//!
//! In offload granularity a probe is a UDP GSO bundle of 44 small segments: the emulator
//! decides once per bundle, so a bundle arrives whole or not at all, and the loss and its
//! interval are computed on bundles (10^6 of them), not on segments, whose losses come in
//! blocks of 44 and are not independent. Two more figures check that premise: the emulator
//! saw exactly one unit per bundle sent (the kernel did not segment them before it), and no
//! bundle arrived in part.

use rpcarena_netem::Side;
use rpcarena_netem_core::{DirectionSpec, LinkProfile, LossModel};

use crate::bundle::Unit;
use crate::context::Context;
use crate::error::NetcheckError;
use crate::expect::{self, wilson_interval};
use crate::figures::{Figures, pass_if};
use crate::probes::StreamConfig;

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let model = profile.client_to_server.loss;
    // Only the loss decision acts: no delay, rate or reordering, and a queue that never fills.
    let mut probe_profile = LinkProfile::symmetric(
        Some("loss-probe"),
        profile.mtu,
        DirectionSpec::passthrough(),
    );
    probe_profile.client_to_server.loss = model;
    probe_profile.client_to_server.limit_packets = 1_000_000;
    probe_profile.granularity = profile.granularity;
    let probe = Unit::of(profile.granularity, crate::context::ECHO_PAYLOAD);
    let segments = probe.segments as u64;
    let config = StreamConfig {
        from: Side::Client,
        count: ctx.options.loss_probes * segments,
        pps: ctx.options.loss_pps * segments as f64,
        unit: probe,
        record: false,
        max_delay_ns: 200_000_000,
    };
    let (outcome, stats) = ctx.udp_stream("loss", &probe_profile, config, false)?;
    // Units: datagrams, or bundles. A bundle counts as arrived if any segment did (partial
    // arrivals are judged separately below).
    let sent = outcome.units_sent;
    let lost = sent.saturating_sub(outcome.tally.complete + outcome.tally.partial);
    let measured = lost as f64 / sent.max(1) as f64;
    let expected = model.mean_loss();
    let (lo, hi) = match model {
        LossModel::GilbertElliott { .. } => {
            // Losses come in bursts: widen by the chain's variance, not the binomial one.
            let half = expect::Z99 * (model.asymptotic_variance() / sent.max(1) as f64).sqrt();
            ((measured - half).max(0.0), (measured + half).min(1.0))
        }
        _ => wilson_interval(lost, sent, expect::Z99),
    };
    figures.push(
        "one-way loss",
        "%",
        (Some(expected * 100.0), Some(measured * 100.0)),
        (
            format!("99% CI [{:.4}, {:.4}]", lo * 100.0, hi * 100.0),
            pass_if(lo <= expected && expected <= hi),
        ),
        format!(
            "{lost} of {sent} {} lost client->server ({} model{})",
            if probe.is_bundle() {
                format!(
                    "probes ({}; loss and interval on bundles)",
                    probe.describe()
                )
            } else {
                "probes".to_string()
            },
            match model {
                LossModel::None => "no loss",
                LossModel::Random { .. } => "random",
                LossModel::GilbertElliott { .. } => "Gilbert-Elliott",
            },
            if matches!(model, LossModel::GilbertElliott { .. }) {
                ", interval widened for burst correlation"
            } else {
                ", Wilson interval"
            }
        ),
    );
    let counters = stats.map(|s| s.client_to_server.counters);
    if probe.is_bundle() {
        bundle_figures(figures, &outcome, counters);
    }
    if let Some(c) = counters {
        let elsewhere = lost.saturating_sub(c.lost + c.queue_dropped);
        figures.push(
            "probes lost outside the emulator",
            "count",
            (Some(0.0), Some(elsewhere as f64)),
            ("= 0".to_string(), pass_if(elsewhere == 0)),
            format!(
                "emulator saw {} probes, lost {}, queue-dropped {}, released {}",
                c.arrived, c.lost, c.queue_dropped, c.released
            ),
        );
    }
    Ok(())
}

/// Offload granularity: the emulator saw one unit per bundle sent, and bundles arrived whole.
fn bundle_figures(
    figures: &mut Figures,
    outcome: &crate::probes::StreamOutcome,
    counters: Option<rpcarena_netem_core::Counters>,
) {
    let sent = outcome.units_sent;
    if let Some(c) = counters {
        let per_bundle = c.arrived as f64 / sent.max(1) as f64;
        figures.push(
            "emulator units per udp gso bundle",
            "count",
            (Some(1.0), Some(per_bundle)),
            ("= 1".to_string(), pass_if(c.arrived == sent)),
            format!(
                "{sent} bundles sent, the emulator decided on {} units: each bundle reached it \
                 as one GSO packet",
                c.arrived
            ),
        );
    }
    let t = outcome.tally;
    figures.push(
        "udp gso bundles received in part",
        "bundles",
        (Some(0.0), Some(t.partial as f64)),
        ("= 0".to_string(), pass_if(t.partial == 0)),
        format!(
            "{} whole, {} in part, {} lost; {} datagrams received with UDP_GRO for {} segments",
            t.complete, t.partial, t.lost, outcome.datagrams, outcome.received
        ),
    );
}
