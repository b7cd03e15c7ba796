//! Phase 6, release lateness: how late the userspace emulator released packets during the
//! rtt, udp rate and overfill phases (kernel netem's is not observable).

use rpcarena_netem_core::BackendKind;

use crate::context::Context;
use crate::figures::{Figures, pass_if};

pub(crate) fn figures(ctx: &Context<'_>, backend: BackendKind, figures: &mut Figures) {
    if backend == BackendKind::Kernel {
        figures.info(
            "release lateness",
            "us",
            None,
            None,
            "kernel netem: not observable from userspace",
        );
        return;
    }
    let s = ctx.lateness();
    let note = format!(
        "actual minus scheduled send time over {} releases (rtt, udp rate and overfill phases); \
         p90 {:.1} us, p99.9 {:.1} us, max {:.1} us",
        s.count,
        s.p90_ns as f64 / 1e3,
        s.p999_ns as f64 / 1e3,
        s.max_ns as f64 / 1e3
    );
    figures.info(
        "release lateness p50",
        "us",
        None,
        Some(s.p50_ns as f64 / 1e3),
        note,
    );
    let per_phase = ctx
        .lateness_by_phase()
        .iter()
        .map(|(phase, s)| {
            format!(
                "{phase}: p50 {:.1} p99 {:.1} max {:.1}",
                s.p50_ns as f64 / 1e3,
                s.p99_ns as f64 / 1e3,
                s.max_ns as f64 / 1e3
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    figures.push(
        "release lateness p99",
        "us",
        (Some(100.0), Some(s.p99_ns as f64 / 1e3)),
        (
            "<= 100".to_string(),
            pass_if(s.count > 0 && s.p99_ns <= 100_000),
        ),
        format!("per phase (us): {per_phase}"),
    );
}
