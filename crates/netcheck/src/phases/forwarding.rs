//! Phase 7, plain forwarding: TCP goodput through the emulator with no delay, rate or loss.

use rpcarena_netem_core::{DirectionSpec, LinkProfile};

use crate::context::{Context, SECOND};
use crate::error::NetcheckError;
use crate::figures::{Figures, pass_if};

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let plain = LinkProfile::symmetric(
        Some("plain-forwarding"),
        profile.mtu,
        DirectionSpec::passthrough(),
    );
    let duration = (ctx.options.forwarding_secs * SECOND) as u64;
    let (outcome, stats) = ctx.tcp_bulk("plain forwarding", &plain, duration, duration / 10)?;
    let gbps = outcome.goodput_bps() / 1e9;
    figures.push(
        "plain forwarding tcp goodput",
        "Gbit/s",
        (Some(1.0), Some(gbps)),
        (">= 1".to_string(), pass_if(gbps >= 1.0)),
        format!(
            "no delay, rate or loss; MTU {}; {} packets forwarded client->server",
            profile.mtu,
            stats.map_or(0, |s| s.client_to_server.counters.released)
        ),
    );
    Ok(())
}
