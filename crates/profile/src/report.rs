//! One peer's `summary.md` and `summary.json`: how it was recorded, the summary, off-CPU time,
//! and the profiled sample's ops/s beside an unprofiled sample's of the same configuration, so
//! the profiler's cost is in view. Pure: data in, text out.

use crate::summary::{FunctionShare, Place, Summary, percent};
use serde::Serialize;
use std::fmt::Write as _;

/// Off-CPU time over the window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OffCpu {
    /// Switch-outs recorded.
    pub switches: u64,
    /// Time off the CPU, summed over threads, in microseconds.
    pub total_us: u64,
    /// The heaviest folded stacks with their microseconds.
    pub top: Vec<(String, u64)>,
}

impl OffCpu {
    /// From folded off-CPU stacks.
    pub fn of(folded: &str, total_us: u64, switches: u64) -> OffCpu {
        let mut top: Vec<(String, u64)> = folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter_map(|(s, n)| Some((s.to_string(), n.parse().ok()?)))
            .collect();
        top.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        top.truncate(10);
        OffCpu {
            switches,
            total_us,
            top,
        }
    }
}

/// Operations per second of the two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Load {
    /// The sample with perf attached.
    pub profiled_ops_per_s: f64,
    /// The sample of the same configuration without it, run just before.
    pub unprofiled_ops_per_s: f64,
}

/// Everything `summary.md` and `summary.json` say about one peer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PeerReport {
    /// `client` or `server`.
    pub role: String,
    /// The peer's id in the campaign.
    pub peer: String,
    /// The configuration (`rust-tcp/unary/c4/256B-256B/zeros/closed`).
    pub config: String,
    /// How it was recorded: event, frequency, call graph.
    pub recording: String,
    /// Length of the recorded window, in milliseconds.
    pub window_ms: u64,
    /// folded-file count total (equals `summary.samples`).
    pub folded_samples: u64,
    /// The CPU profile.
    pub summary: Summary,
    /// Off-CPU time, with `--off-cpu`.
    pub off_cpu: Option<OffCpu>,
    /// ops/s with and without perf.
    pub load: Option<Load>,
}

impl PeerReport {
    /// `summary.md`.
    pub fn markdown(&self) -> String {
        let s = &self.summary;
        let mut md = format!(
            "# Profile of the {} ({})\n\nConfiguration `{}`; {}; window {} ms.\n\n",
            self.role, self.peer, self.config, self.recording, self.window_ms
        );
        if let Some(load) = self.load {
            let change = if load.unprofiled_ops_per_s > 0.0 {
                (load.profiled_ops_per_s / load.unprofiled_ops_per_s - 1.0) * 100.0
            } else {
                0.0
            };
            let _ = writeln!(
                md,
                "ops/s with perf attached: {:.0}; without (a sample of the same configuration just before): {:.0} ({change:+.1}%).\n",
                load.profiled_ops_per_s, load.unprofiled_ops_per_s
            );
        }
        let _ = writeln!(
            md,
            "{} samples (cpu.folded's counts sum to {}); threads: {}.\n",
            s.samples,
            self.folded_samples,
            threads(s)
        );
        md.push_str(&places(s));
        md.push_str(&unwinding(s));
        md.push_str(&table(
            "Top functions by self time (the leaf frame)",
            &s.top_self,
        ));
        md.push_str(&table(
            "Top functions by total time (anywhere on the stack)",
            &s.top_total,
        ));
        if let Some(off) = &self.off_cpu {
            md.push_str(&off_cpu(off));
        }
        md
    }
}

fn threads(s: &Summary) -> String {
    let mut t: Vec<(&String, &u64)> = s.threads.iter().collect();
    t.sort_by(|a, b| b.1.cmp(a.1));
    t.iter()
        .take(8)
        .map(|(name, n)| format!("{name} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn places(s: &Summary) -> String {
    let mut md = String::from(
        "## Where the CPU time is (the leaf frame's object)\n\n| where | samples | share |\n|---|--:|--:|\n",
    );
    for (place, name) in [
        (Place::Own, "the peer's own code"),
        (Place::Library, "libraries and runtime"),
        (Place::Kernel, "kernel"),
        (Place::Unknown, "unknown"),
    ] {
        let n = s.leaf_places.get(&place).copied().unwrap_or(0);
        let _ = writeln!(md, "| {name} | {n} | {:.1}% |", s.percent_at(place));
    }
    md.push('\n');
    md
}

fn unwinding(s: &Summary) -> String {
    let u = &s.unwinding;
    format!(
        "## How whole the stacks are\n\n\
         - unwound to the thread's start (`_start`, `clone3`, ...): {} of {} ({:.1}%)\n\
         - through the peer's own code: {} ({:.1}%)\n\
         - leaf in a library: {}; of those, unwound back into the peer's own code: {} ({:.1}%)\n\
         - frames per sample, on average: {:.1}\n\n",
        u.to_thread_start,
        s.samples,
        percent(u.to_thread_start, s.samples),
        u.through_own_code,
        percent(u.through_own_code, s.samples),
        u.library_leaf,
        u.library_leaf_reaching_own_code,
        percent(u.library_leaf_reaching_own_code, u.library_leaf),
        u.mean_depth
    )
}

fn table(title: &str, rows: &[FunctionShare]) -> String {
    let mut md =
        format!("## {title}\n\n| function | where | samples | share |\n|---|---|--:|--:|\n");
    for r in rows {
        let _ = writeln!(
            md,
            "| `{}` | {:?} | {} | {:.1}% |",
            r.function.replace('|', "\\|").replace('`', "'"),
            r.place,
            r.samples,
            r.percent
        );
    }
    md.push('\n');
    md
}

fn off_cpu(off: &OffCpu) -> String {
    let mut md = format!(
        "## Off-CPU time (sched:sched_switch)\n\n{} switch-outs, {:.1} ms off the CPU summed over threads. Heaviest stacks (offcpu.folded, offcpu.svg):\n\n| stack (outermost first) | ms |\n|---|--:|\n",
        off.switches,
        off.total_us as f64 / 1000.0
    );
    for (stack, us) in &off.top {
        let _ = writeln!(
            md,
            "| `{}` | {:.1} |",
            stack.replace('|', "\\|").replace('`', "'"),
            *us as f64 / 1000.0
        );
    }
    md.push('\n');
    md
}
