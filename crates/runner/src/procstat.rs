//! CPU time and resident memory of peer process groups, sampled from /proc.
//!
//! A sampler thread reads every group every 10 ms between `start` and `stop`. CPU is
//! user + system time of every live member plus what members already reaped from their
//! children (`cutime` + `cstime`), so helpers that exit during the window still count. The group's
//! membership is rescanned every 100 ms (new helpers), and known members are read every tick.
//! Resolution is the kernel's clock tick (usually 10 ms of CPU), which is why CPU is reported per
//! operation over a whole window rather than per tick.

use procfs::CurrentSI;
use procfs::process::{Process, all_processes};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// What the sampler found for one group.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GroupUsage {
    /// CPU used between the first and the last reading, microseconds.
    pub cpu_us: f64,
    /// Largest sum of resident set sizes over the group, bytes.
    pub peak_rss_bytes: u64,
    /// Readings taken.
    pub readings: u32,
    /// Most processes seen at once.
    pub processes: u32,
    /// CPU of the group's busiest thread between the first and the last reading, microseconds.
    pub busiest_thread_cpu_us: f64,
}

/// What the sampler found over the whole window.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WindowUsage {
    /// Wall time between the first and the last reading, seconds.
    pub elapsed_s: f64,
    /// Share of all CPUs' time stolen by the hypervisor in that time, percent.
    pub steal_pct: f64,
    /// One entry per group, in the order given to [`Sampler::start`].
    pub groups: Vec<GroupUsage>,
}

/// One reading of one group.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    cpu_ticks: u64,
    rss_bytes: u64,
    processes: u32,
}

/// A running sampler over some process groups.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    /// The sampling thread, or why it could not start.
    handle: Result<JoinHandle<WindowUsage>, String>,
}

impl Sampler {
    /// Takes a first reading of every group now, then samples every `interval` until `stop`.
    pub fn start(pgids: Vec<i32>, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("proc-sampler".into())
            .spawn(move || sample_loop(&pgids, interval, &flag))
            .map_err(|e| format!("the /proc sampler thread could not start: {e}"));
        Sampler { stop, handle }
    }

    /// Takes a last reading and returns the usage of each group, in the order given to `start`;
    /// or why there is none (the thread did not start or panicked).
    pub fn stop(mut self) -> Result<WindowUsage, String> {
        self.stop.store(true, Ordering::Release);
        std::mem::replace(&mut self.handle, Err(String::new()))?
            .join()
            .map_err(|_| "the /proc sampler thread panicked".to_string())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// One clock tick of process CPU time, microseconds: the resolution of a process's CPU reading.
pub fn tick_us() -> f64 {
    1e6 / procfs::ticks_per_second().max(1) as f64
}

fn sample_loop(pgids: &[i32], interval: Duration, stop: &AtomicBool) -> WindowUsage {
    let ticks_per_second = procfs::ticks_per_second().max(1) as f64;
    let page_size = procfs::page_size();
    let mut members: Vec<BTreeSet<i32>> = pgids.iter().map(|&g| scan_group(g)).collect();
    let first_threads: Vec<BTreeMap<i32, u64>> = members.iter().map(thread_ticks).collect();
    let first_stat = cpu_times();
    let started = std::time::Instant::now();
    let first: Vec<Reading> = members
        .iter_mut()
        .map(|m| read_group(m, page_size))
        .collect();
    let mut usage: Vec<GroupUsage> = first
        .iter()
        .map(|r| GroupUsage {
            cpu_us: 0.0,
            peak_rss_bytes: r.rss_bytes,
            readings: 1,
            processes: r.processes,
            busiest_thread_cpu_us: 0.0,
        })
        .collect();
    let mut last = first.clone();
    let mut tick: u64 = 0;
    let start = std::time::Instant::now();
    loop {
        let finished = stop.load(Ordering::Acquire);
        if !finished {
            // Sleep to the next multiple of the interval, so that a slow reading never shifts
            // the rest of the schedule.
            tick += 1;
            let next = start + interval * tick as u32;
            let now = std::time::Instant::now();
            if next > now {
                std::thread::sleep(next - now);
            }
            if tick.is_multiple_of(10) {
                for (set, &pgid) in members.iter_mut().zip(pgids) {
                    set.extend(scan_group(pgid));
                }
            }
        }
        for (i, set) in members.iter_mut().enumerate() {
            let reading = read_group(set, page_size);
            // CPU counters of a group only grow; a member that vanished between readings takes
            // its time away until its parent reaps it, so keep the largest total seen.
            if reading.cpu_ticks > last[i].cpu_ticks {
                last[i].cpu_ticks = reading.cpu_ticks;
            }
            let u = &mut usage[i];
            u.peak_rss_bytes = u.peak_rss_bytes.max(reading.rss_bytes);
            u.processes = u.processes.max(reading.processes);
            u.readings += 1;
        }
        if finished {
            break;
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    for (i, u) in usage.iter_mut().enumerate() {
        u.cpu_us = (last[i].cpu_ticks - first[i].cpu_ticks) as f64 * 1e6 / ticks_per_second;
        let now = thread_ticks(&members[i]);
        let busiest = now
            .iter()
            .map(|(tid, ticks)| {
                ticks.saturating_sub(first_threads[i].get(tid).copied().unwrap_or(0))
            })
            .max()
            .unwrap_or(0);
        u.busiest_thread_cpu_us = busiest as f64 * 1e6 / ticks_per_second;
    }
    let steal_pct = match (first_stat, cpu_times()) {
        (Some((steal0, total0)), Some((steal1, total1))) if total1 > total0 => {
            (steal1.saturating_sub(steal0)) as f64 * 100.0 / (total1 - total0) as f64
        }
        _ => 0.0,
    };
    WindowUsage {
        elapsed_s,
        steal_pct,
        groups: usage,
    }
}

/// CPU ticks of every thread of every member, by thread id. A thread born during the window
/// counts from zero, which is right: all its time is in the window.
fn thread_ticks(members: &BTreeSet<i32>) -> BTreeMap<i32, u64> {
    let mut ticks = BTreeMap::new();
    for &pid in members {
        let Ok(process) = Process::new(pid) else {
            continue;
        };
        let Ok(tasks) = process.tasks() else { continue };
        for task in tasks.flatten() {
            if let Ok(stat) = task.stat() {
                ticks.insert(task.tid, stat.utime + stat.stime);
            }
        }
    }
    ticks
}

/// (steal, total) ticks of all CPUs from /proc/stat.
fn cpu_times() -> Option<(u64, u64)> {
    let stat = procfs::KernelStats::current().ok()?;
    let t = stat.total;
    let steal = t.steal.unwrap_or(0);
    let total = t.user
        + t.nice
        + t.system
        + t.idle
        + t.iowait.unwrap_or(0)
        + t.irq.unwrap_or(0)
        + t.softirq.unwrap_or(0)
        + steal;
    Some((steal, total))
}

/// Pids whose process group is `pgid`.
fn scan_group(pgid: i32) -> BTreeSet<i32> {
    let mut set = BTreeSet::new();
    set.insert(pgid);
    if let Ok(all) = all_processes() {
        for process in all.flatten() {
            if let Ok(stat) = process.stat()
                && stat.pgrp == pgid
            {
                set.insert(stat.pid);
            }
        }
    }
    set
}

fn read_group(members: &mut BTreeSet<i32>, page_size: u64) -> Reading {
    let mut reading = Reading::default();
    members.retain(|&pid| {
        let Ok(process) = Process::new(pid) else {
            return false;
        };
        let Ok(stat) = process.stat() else {
            return false;
        };
        reading.cpu_ticks += stat.utime + stat.stime;
        reading.cpu_ticks += (stat.cutime.max(0) + stat.cstime.max(0)) as u64;
        reading.rss_bytes += stat.rss * page_size;
        reading.processes += 1;
        true
    });
    reading
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_cpu_and_memory_of_a_busy_group() {
        // A shell whose child (same process group) burns CPU until the group is killed.
        // A group of its own that no PeerProcess tracks: known, so that a concurrent test's
        // teardown does not take it for an escaped helper.
        let mut child = crate::process::spawn_group(
            std::process::Command::new("sh").args(["-c", "sh -c 'while :; do :; done' & sleep 5"]),
        )
        .unwrap();
        let sampler = Sampler::start(vec![child.id() as i32], Duration::from_millis(10));
        std::thread::sleep(Duration::from_millis(600));
        let window = sampler.stop().unwrap();
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        child.wait().unwrap();
        crate::process::untrack_group(child.id() as i32);
        assert_eq!(window.groups.len(), 1);
        assert!(window.elapsed_s >= 0.5, "{window:?}");
        assert!((0.0..=100.0).contains(&window.steal_pct), "{window:?}");
        let u = window.groups[0];
        assert!(u.busiest_thread_cpu_us >= 100_000.0, "{u:?}");
        assert!(u.cpu_us >= 100_000.0, "{u:?}");
        assert!(u.peak_rss_bytes > 0, "{u:?}");
        assert!(u.readings >= 20, "{u:?}");
        assert!(u.processes >= 2, "{u:?}");
    }
}
