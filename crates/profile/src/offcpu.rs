//! Off-CPU time from the scheduler: each `sched:sched_switch` event of a profiled thread is the
//! moment it left the CPU, with its stack; the thread's next switch-in (perf's
//! `PERF_RECORD_SWITCH` of the same thread, `--switch-events`) ends that time. The time between
//! is attributed to the stack at switch-out, under a root frame that says whether the thread
//! blocked (`prev_state` S, D, ...) or was preempted while runnable (`R`). Pure.

use crate::script::Sample;
use std::collections::BTreeMap;

/// A thread coming back onto a CPU: its id and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchIn {
    /// The thread.
    pub tid: u32,
    /// When, in nanoseconds of perf's clock.
    pub time_ns: u64,
}

/// Switch-ins of a `perf script --show-switch-events` text: lines such as
/// `peer  4242 81234.5: PERF_RECORD_SWITCH IN` (`SWITCH_CPU_WIDE IN` with `-a`).
pub fn switch_ins(text: &str) -> Vec<SwitchIn> {
    text.lines()
        .filter(|l| l.contains("PERF_RECORD_SWITCH") && l.contains(" IN"))
        .filter_map(|l| {
            let (head, _) = l.split_once("PERF_RECORD_SWITCH")?;
            let words: Vec<&str> = head.split_whitespace().collect();
            let time = words.iter().rev().find(|w| w.ends_with(':'))?;
            let time = time.trim_end_matches(':');
            let at = words.iter().position(|w| w.ends_with(':'))?;
            let tid = words.get(at.checked_sub(1)?)?.split('/').next_back()?;
            Some(SwitchIn {
                tid: tid.parse().ok()?,
                time_ns: crate::script::seconds_to_ns(time)?,
            })
        })
        .collect()
}

/// Folded off-CPU stacks, weighted in microseconds, and the total blocked time in
/// microseconds. Time is counted up to `end_ns`, the window's end: a switch-out whose thread
/// comes back later (switch events are recorded outside the window too) or never counts up to
/// it.
pub fn fold(switches: &[Sample], ins: &[SwitchIn], end_ns: u64) -> (String, u64) {
    let mut by_thread: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for i in ins {
        by_thread.entry(i.tid).or_default().push(i.time_ns);
    }
    for times in by_thread.values_mut() {
        times.sort_unstable();
    }
    let mut stacks: BTreeMap<String, u64> = BTreeMap::new();
    for out in switches.iter().filter(|s| s.event == "sched:sched_switch") {
        let back = by_thread
            .get(&out.tid)
            .and_then(|t| t.iter().find(|&&t| t > out.time_ns).copied())
            .unwrap_or(end_ns)
            .min(end_ns);
        let micros = back.saturating_sub(out.time_ns) / 1_000;
        if micros == 0 {
            continue;
        }
        *stacks.entry(folded_stack(out)).or_insert(0) += micros;
    }
    let total = stacks.values().sum();
    let text = stacks
        .into_iter()
        .map(|(stack, us)| format!("{stack} {us}\n"))
        .collect();
    (text, total)
}

/// `comm;[blocked S];outer;...;leaf` for one switch-out.
fn folded_stack(out: &Sample) -> String {
    let state = out
        .detail
        .split_whitespace()
        .find_map(|w| w.strip_prefix("prev_state="))
        .unwrap_or("?");
    let why = if state.starts_with('R') {
        "[preempted, runnable]".to_string()
    } else {
        format!("[blocked {state}]")
    };
    let mut parts = vec![out.comm.replace(';', ":"), why];
    parts.extend(out.frames.iter().rev().map(|f| f.symbol.replace(';', ":")));
    parts.join(";").replace(' ', "_")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::parse;

    #[test]
    fn blocked_time_goes_to_the_stack_at_switch_out() {
        let text = "\
peer 7 1.000000: sched:sched_switch: prev_comm=peer prev_pid=7 prev_state=S ==> next_comm=x
\t 1 schedule ([kernel.kallsyms])
\t 2 recv (/lib/libc.so.6)
\t 3 serve (/x/peer)

peer 7 1.002000: PERF_RECORD_SWITCH IN
peer 8 1.003000: sched:sched_switch: prev_comm=peer prev_pid=8 prev_state=R ==> next_comm=x
\t 1 schedule ([kernel.kallsyms])
";
        let samples = parse(text);
        let ins = switch_ins(text);
        assert_eq!(
            ins,
            vec![SwitchIn {
                tid: 7,
                time_ns: 1_002_000_000
            }]
        );
        let (folded, total) = fold(&samples, &ins, 1_004_000_000);
        assert_eq!(total, 2_000 + 1_000);
        assert!(
            folded.contains("peer;[blocked_S];serve;recv;schedule 2000"),
            "{folded}"
        );
        assert!(
            folded.contains("peer;[preempted,_runnable];schedule 1000"),
            "{folded}"
        );
    }
}
