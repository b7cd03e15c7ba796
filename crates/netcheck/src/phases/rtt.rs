//! Phase 1, RTT: paced UDP echoes on several links side by side, against the distribution the
//! profile implies; then the path's own cost on the base delays alone.

use rpcarena_netem::Topology;
use rpcarena_netem_core::{DirectionSpec, LinkProfile};

use super::percentile;
use crate::context::{Context, ECHO_PAYLOAD, MS, SECOND, UDP_IP_HEADERS, max_one_way_ns};
use crate::error::NetcheckError;
use crate::expect::{self, RttExpectation, rtt_expectation};
use crate::figures::{Figures, pass_if};
use crate::probes::{self, EchoOutcome};

/// How the echoes are spread over links so that probes never meet in a queue.
struct Plan {
    expected: RttExpectation,
    /// Time between echoes on one link, ns.
    spacing: u64,
    links: u64,
    per_link: u64,
    max_rtt: u64,
}

fn plan(ctx: &Context<'_>, profile: &LinkProfile) -> Plan {
    let opts = ctx.options;
    let (there, back) = (&profile.client_to_server, &profile.server_to_client);
    let ip_len = ECHO_PAYLOAD + UDP_IP_HEADERS;
    let spacing = expect::non_interacting_spacing_ns(there, back, ip_len);
    let survive = (1.0 - there.loss.mean_loss()) * (1.0 - back.loss.mean_loss());
    let to_send = ((opts.rtt_echoes as f64 / survive.max(0.01)) * 1.003).ceil() as u64 + 5;
    let links = ((to_send as f64 * spacing as f64) / (opts.rtt_target_secs * SECOND))
        .ceil()
        .clamp(1.0, opts.max_parallel_links.max(1) as f64) as u64;
    Plan {
        expected: rtt_expectation(there, back, ip_len),
        spacing,
        links,
        per_link: to_send.div_ceil(links),
        max_rtt: max_one_way_ns(there, ip_len) + max_one_way_ns(back, ip_len) + 500_000_000,
    }
}

/// Runs every link's echoes at once; returns the RTTs (ns) and how many echoes were sent.
fn collect(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    plan: &Plan,
) -> Result<(Vec<f64>, u64), NetcheckError> {
    let topologies = (0..plan.links)
        .map(|_| ctx.topology(profile))
        .collect::<Result<Vec<_>, _>>()?;
    let (run, rt) = (ctx.run, ctx.probe_priority());
    let echo = |topo: &Topology| {
        probes::udp_echo(
            topo,
            plan.per_link,
            plan.spacing,
            ECHO_PAYLOAD,
            plan.max_rtt,
            run,
            rt,
        )
    };
    let outcomes: Vec<Result<EchoOutcome, NetcheckError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = topologies
            .iter()
            .map(|topo| scope.spawn(move || echo(topo)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(NetcheckError::ThreadPanicked {
                        what: "running UDP echoes".to_string(),
                    })
                })
            })
            .collect()
    });
    for topo in topologies {
        ctx.finish("rtt", topo, true);
    }
    let mut rtts = Vec::new();
    let mut sent = 0;
    for outcome in outcomes {
        let outcome = outcome?;
        sent += outcome.sent;
        rtts.extend(outcome.rtts_ns);
    }
    if rtts.is_empty() {
        return Err(NetcheckError::Phase {
            phase: "rtt".to_string(),
            detail: format!("none of {sent} echoes came back"),
        });
    }
    Ok((rtts, sent))
}

pub(crate) fn run(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let plan = plan(ctx, profile);
    let (rtts, sent) = collect(ctx, profile, &plan)?;
    if let Some(dir) = &ctx.options.dump_dir {
        let text: String = rtts.iter().map(|r| format!("{r}\n")).collect();
        if let Err(e) = std::fs::write(dir.join("rtt_ns.txt"), text) {
            eprintln!("rpcarena-netcheck: writing rtt_ns.txt: {e}");
        }
    }
    judge(figures, &rtts, sent, &plan);
    path_overhead(ctx, profile, plan.max_rtt, figures)?;
    let wanted = ctx.options.rtt_echoes;
    figures.push(
        "rtt echoes received",
        "count",
        (Some(wanted as f64), Some(rtts.len() as f64)),
        (format!(">= {wanted}"), pass_if(rtts.len() as u64 >= wanted)),
        "",
    );
    Ok(())
}

/// Mean and sd against the profile within the stated tolerances (0.1 ms, 5 %, widened to 4
/// standard errors for small samples); percentiles for information.
fn judge(figures: &mut Figures, rtts: &[f64], sent: u64, plan: &Plan) {
    let expected = &plan.expected;
    let (mean, sd, kurtosis) = expect::moments(rtts);
    let n = rtts.len() as f64;
    let mean_tol = (0.1 * MS).max(4.0 * sd / n.sqrt());
    let sd_rel_se = ((kurtosis - 1.0).max(0.0) / (4.0 * n)).sqrt();
    // Without jitter the expected sd is 0 and 5 % of it means nothing: the path's own noise
    // (wake-ups, a few tens of microseconds) is then allowed up to 0.05 ms.
    let sd_tol = (0.05 * expected.sd_ns)
        .max(4.0 * sd_rel_se * expected.sd_ns)
        .max(0.05 * MS);
    let note = format!(
        "{} echoes received of {sent} sent over {} parallel link(s), {:.2} ms apart per link \
         (unloaded: probes never meet in the queue); echo server turnaround subtracted",
        rtts.len(),
        plan.links,
        plan.spacing as f64 / MS
    );
    figures.within(
        "rtt mean",
        "ms",
        expected.mean_ns / MS,
        mean / MS,
        mean_tol / MS,
        note,
    );
    figures.within(
        "rtt sd",
        "ms",
        expected.sd_ns / MS,
        sd / MS,
        sd_tol / MS,
        "",
    );
    for (name, p, e) in [
        ("rtt p1", 1.0, expected.p1_ns),
        ("rtt p50", 50.0, expected.p50_ns),
        ("rtt p99", 99.0, expected.p99_ns),
    ] {
        figures.info(name, "ms", Some(e / MS), Some(percentile(rtts, p) / MS), "");
    }
}

/// The path's own cost (TUN hops, forwarder wake-ups, socket paths): the same base delays
/// without jitter, rate or loss, where every echo should take exactly their sum. The
/// forwarders sleep between packets as in the main test, so the wake-ups cost the same.
fn path_overhead(
    ctx: &mut Context<'_>,
    profile: &LinkProfile,
    max_rtt: u64,
    figures: &mut Figures,
) -> Result<(), NetcheckError> {
    let (there, back) = (&profile.client_to_server, &profile.server_to_client);
    let fixed = |d: &DirectionSpec| DirectionSpec {
        delay_ns: d.delay_ns,
        ..DirectionSpec::passthrough()
    };
    let floor_profile = LinkProfile {
        name: Some("fixed-delay".to_string()),
        mtu: profile.mtu,
        client_to_server: fixed(there),
        server_to_client: fixed(back),
        granularity: profile.granularity,
    };
    let floor_topo = ctx.topology(&floor_profile)?;
    let floor_count = (ctx.options.rtt_echoes / 10).clamp(100, 2000);
    let floor = probes::udp_echo(
        &floor_topo,
        floor_count,
        2_000_000,
        ECHO_PAYLOAD,
        max_rtt,
        ctx.run,
        ctx.probe_priority(),
    );
    ctx.finish("rtt", floor_topo, false);
    let base = (there.delay_ns + back.delay_ns) as f64;
    let excess: Vec<f64> = floor?.rtts_ns.iter().map(|r| r - base).collect();
    figures.info(
        "rtt path overhead (fixed delay) p50",
        "ms",
        Some(0.0),
        Some(percentile(&excess, 50.0) / MS),
        format!(
            "{} echoes with the base delays only: measured minus {:.3} ms, p1 {:.3} ms, p99 \
             {:.3} ms; the TUN path's own cost, included in every RTT above",
            excess.len(),
            base / MS,
            percentile(&excess, 1.0) / MS,
            percentile(&excess, 99.0) / MS
        ),
    );
    Ok(())
}
