//! Phase 4, TCP goodput over the profile as is: informative, judged only against the line rate.

use rpcarena_netem_core::LinkProfile;

use crate::context::{Context, SECOND, TCP_IP_HEADERS};
use crate::error::NetcheckError;
use crate::expect::{self, rtt_expectation};
use crate::figures::{Figures, pass_if};

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let secs = ctx.options.tcp_secs;
    let duration = (secs * SECOND) as u64;
    let (outcome, _) = ctx.tcp_bulk("tcp", profile, duration, duration / 4)?;
    let spec = &profile.client_to_server;
    let mtu = profile.mtu as f64;
    let ceiling = spec
        .rate_bps
        .map(|r| r as f64 * (mtu - TCP_IP_HEADERS as f64) / (mtu + spec.overhead_bytes as f64));
    let rtt = rtt_expectation(spec, &profile.server_to_client, 1500).mean_ns / SECOND;
    let mathis = expect::mathis_bps(mtu - TCP_IP_HEADERS as f64, rtt, spec.loss.mean_loss());
    let measured = outcome.goodput_bps();
    let note = format!(
        "client->server bulk for {:.1} s, measured after {:.1} s of slow start{}",
        secs,
        secs / 4.0,
        mathis.map_or(String::new(), |m| format!(
            "; Reno/Mathis loss model predicts ~{:.1} Mbit/s (CUBIC does better)",
            m / 1e6
        ))
    );
    match ceiling {
        Some(c) => figures.push(
            "tcp goodput",
            "Mbit/s",
            (Some(c / 1e6), Some(measured / 1e6)),
            ("<= line rate".to_string(), pass_if(measured <= c * 1.01)),
            note,
        ),
        None => figures.info("tcp goodput", "Mbit/s", None, Some(measured / 1e6), note),
    }
    Ok(())
}
