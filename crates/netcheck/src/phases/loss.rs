//! Phase 2, one-way loss: 10^6 probes through the profile's loss model alone (delay and rate
//! removed, the queue unbounded), judged against the 99 % interval.

use rpcarena_netem::Side;
use rpcarena_netem_core::{DirectionSpec, LinkProfile, LossModel};

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
    let config = StreamConfig {
        from: Side::Client,
        count: ctx.options.loss_probes,
        pps: ctx.options.loss_pps,
        payload: 32,
        record: false,
        max_delay_ns: 200_000_000,
    };
    let (outcome, stats) = ctx.udp_stream("loss", &probe_profile, config, false)?;
    let sent = outcome.sent;
    let lost = sent.saturating_sub(outcome.received);
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
            "{lost} of {sent} probes lost client->server ({} model{})",
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
    if let Some(c) = stats.map(|s| s.client_to_server.counters) {
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
