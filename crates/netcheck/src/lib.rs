//! netcheck: measures an emulated path on this host and compares every figure with what the
//! profile implies, so that a run's network can be trusted (or its limits stated).
//!
//! Phases, each on fresh topologies of the requested backend:
//!
//! 1. **RTT** from paced UDP echoes with send times in the payload and kernel receive
//!    timestamps. With a rate, netem's `max()` rule couples packets that meet in the queue, so
//!    probes are spaced by the spread of both delays plus serialization, which keeps the
//!    distribution the unloaded one the profile describes; several links run side by side to
//!    collect 20,000 echoes in about 20 s.
//! 2. **Loss** from 10^6 one-way probes on the profile's loss model (delay and rate removed, the
//!    queue unbounded, so that only the loss decision acts), judged against the 99 % interval.
//! 3. **UDP rate** with loss off, the sender 2 % above the link rate: payload rate at the
//!    receiver and reordering.
//! 4. **TCP goodput** over the profile as is (informative; judged only against the line rate).
//! 5. **Overfilled queue**: 1.5x the link rate; one-way delay settles at `limit` packets of
//!    serialization and the excess is dropped.
//! 6. **Release lateness** of the userspace emulator during phases 1, 3 and 5.
//! 7. **Plain forwarding**: TCP goodput through the emulator with no delay, rate or loss.
//!
//! With loss granularity `offload` the one-way UDP phases (2, 3, 5) send UDP GSO bundles, the
//! way quinn and quiche send, and receive them with `UDP_GRO`; the figures they are judged
//! against follow from the emulator's rules for bundles (`bundle`). The RTT echoes stay single
//! small datagrams (a bundle of one) and the TCP phases go through TSO bundles either way.
//!
//! Layout: [`options`] (what to run), [`report`] (what came out), `context` (the topologies
//! and the prologue every phase shares), one module per phase under `phases`, `probes` (the
//! traffic) and `expect` (what a profile implies).

mod bundle;
mod context;
pub mod error;
mod expect;
mod figures;
pub mod options;
mod phases;
mod probes;
pub mod report;

use std::time::Instant;

use rpcarena_netem::resolve_emulator;
use rpcarena_netem_core::{EmulatorInfo, LinkProfile};

use context::Context;
use figures::{Figures, pass_if};

pub use error::NetcheckError;
pub use expect::{RttExpectation, rtt_expectation, wilson_interval};
pub use options::{NetcheckOptions, Phase};
pub use report::{Figure, Judgement, NetcheckReport};

/// Runs netcheck for `profile`. Fails only when no topology can be built at all; a phase that
/// fails becomes a failed figure.
pub fn netcheck(
    profile: &LinkProfile,
    options: &NetcheckOptions,
) -> Result<NetcheckReport, NetcheckError> {
    profile.validate()?;
    let backend = resolve_emulator(options.emulator)?;
    let started = Instant::now();
    let load_before = context::load_average();
    let mut ctx = Context::new(options, backend);
    let mut figures = Figures::default();

    // Prove a topology can be built before spending a minute on phases.
    let probe = ctx.topology(profile)?;
    drop(probe);

    for (phase, name, run) in phases::BEFORE_LATENESS {
        if options.phases.contains(&phase)
            && let Err(e) = run(&mut ctx, profile, &mut figures)
        {
            figures.failed_phase(name, &e);
        }
    }
    if ctx.saw_lateness() {
        phases::lateness::figures(&ctx, backend, &mut figures);
    }
    if options.phases.contains(&Phase::Forwarding)
        && let Err(e) = phases::forwarding::run(&mut ctx, profile, &mut figures)
    {
        figures.failed_phase("plain forwarding", &e);
    }
    let device_problems = ctx.device_problems();
    figures.push(
        "device drops outside the model",
        "phases",
        (Some(0.0), Some(device_problems.len() as f64)),
        ("= 0".to_string(), pass_if(device_problems.is_empty())),
        device_problems.join("; "),
    );

    Ok(NetcheckReport {
        profile: profile.clone(),
        backend,
        emulator: ctx.emulator_info().unwrap_or(EmulatorInfo {
            kind: backend.to_string(),
            version: String::new(),
        }),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_default(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        quick: options.quick,
        seed: options.seed,
        seconds: started.elapsed().as_secs_f64(),
        load_average: (load_before, context::load_average()),
        udp_probes: bundle::describe_udp_probes(profile.granularity),
        figures: figures.into_inner(),
    })
}
