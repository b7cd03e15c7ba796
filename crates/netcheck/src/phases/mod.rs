//! The phases, one job each. Every phase gets the run's [`Context`], the profile and the
//! figures, and turns one measurement into figures; an error becomes a failed figure.

pub(crate) mod forwarding;
pub(crate) mod lateness;
pub(crate) mod loss;
pub(crate) mod overfill;
pub(crate) mod rate;
pub(crate) mod rtt;
pub(crate) mod tcp;

use rpcarena_netem_core::LinkProfile;

use crate::bundle::Unit;
use crate::context::Context;
use crate::error::NetcheckError;
use crate::figures::Figures;
use crate::options::Phase;

/// One phase: measures through fresh topologies and adds figures.
pub(crate) type PhaseFn =
    fn(&mut Context<'_>, &LinkProfile, &mut Figures) -> Result<(), NetcheckError>;

/// The phases whose topologies' release lateness is reported, in the order they run; the
/// plain forwarding phase runs after the lateness figures.
pub(crate) const BEFORE_LATENESS: [(Phase, &str, PhaseFn); 5] = [
    (Phase::Rtt, "rtt", rtt::run),
    (Phase::Loss, "one-way loss", loss::run),
    (Phase::Rate, "udp rate", rate::run),
    (Phase::Tcp, "tcp goodput", tcp::run),
    (Phase::Overfill, "overfilled queue", overfill::run),
];

/// Full-MTU sends for a phase that loads the client-to-server link: (what one send carries,
/// sends per second the link carries). A send is a datagram in packet granularity and a UDP
/// GSO bundle of full-MTU segments in offload granularity. `None`, with an informative figure
/// saying the phase was skipped, when the direction has no rate to load.
pub(crate) fn full_size_units(
    profile: &LinkProfile,
    figures: &mut Figures,
    name: &str,
    unit: &str,
) -> Option<(Unit, f64)> {
    let spec = &profile.client_to_server;
    if spec.rate_bps.is_none() {
        figures.info(name, unit, None, None, "no rate configured: skipped");
        return None;
    }
    let mtu = profile.mtu as usize;
    let send = Unit::of(profile.granularity, mtu - crate::context::UDP_IP_HEADERS);
    let link_units = send.per_second(spec).unwrap_or(1.0);
    Some((send, link_units))
}

/// The nearest-rank percentile `p` (0 to 100) of measured values, 0 when there are none.
pub(crate) fn percentile(values: &[f64], p: f64) -> f64 {
    rpcarena_stats::percentile(values, p).unwrap_or(0.0)
}
