//! Network namespaces: unique names, creation and removal, entering one from a thread, and
//! finding what killed runs left behind.
//!
//! Names are `rpa-<pid>-<start>-<n>-<role>`: the creating process id, its start time in clock
//! ticks since boot (so a recycled pid is not mistaken for the creator), a per-process counter
//! and `c`/`s` for client/server (`x` for doctor's scratch namespace). Parallel runs in
//! different processes differ in pid, runs in one process in the counter.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use nix::sched::{CloneFlags, setns};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::error::NetemError;

/// Prefix of every namespace this crate creates.
pub const PREFIX: &str = "rpa-";

const NETNS_DIR: &str = "/run/netns";

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Start time of `pid` in clock ticks since boot (field 22 of `/proc/PID/stat`).
pub(crate) fn process_start_ticks(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields resume after the last ')'.
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    // `rest` starts at field 3 (state); starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A fresh `rpa-<pid>-<start>-<n>` stem for this process.
pub(crate) fn unique_stem() -> String {
    let pid = std::process::id();
    let start = process_start_ticks(pid).unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{PREFIX}{pid}-{start}-{n}")
}

/// The creator (pid, start ticks) encoded in one of our namespace names.
pub(crate) fn parse_owner(name: &str) -> Option<(u32, u64)> {
    let mut parts = name.strip_prefix(PREFIX)?.split('-');
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((pid, start))
}

fn owner_alive(pid: u32, start: u64) -> bool {
    process_start_ticks(pid) == Some(start)
}

/// Moves the calling thread into namespace `name` for good. Only for threads that exist to
/// work there and end afterwards; see [`in_namespace`] for a scoped version.
pub fn enter_namespace(name: &str) -> Result<(), NetemError> {
    let path = Path::new(NETNS_DIR).join(name);
    let file = File::open(&path).map_err(|source| NetemError::EnterNamespace {
        namespace: name.to_string(),
        source,
    })?;
    setns(&file, CloneFlags::CLONE_NEWNET).map_err(|errno| NetemError::EnterNamespace {
        namespace: name.to_string(),
        source: std::io::Error::from(errno),
    })
}

/// Runs `f` on a short-lived thread that has entered namespace `name`, and returns its
/// result. Sockets and TUN devices created inside `f` stay in that namespace wherever they
/// are used afterwards, so this is how to open them.
pub fn in_namespace<F, R>(name: &str, f: F) -> Result<R, NetemError>
where
    F: FnOnce() -> R + Send,
    R: Send,
{
    std::thread::scope(|scope| {
        let handle = std::thread::Builder::new()
            .name("rpa-netns".to_string())
            .spawn_scoped(scope, || -> Result<R, NetemError> {
                enter_namespace(name)?;
                Ok(f())
            })
            .map_err(|e| {
                NetemError::io(format!("spawning a thread to enter namespace {name}"), e)
            })?;
        handle.join().map_err(|_| NetemError::ThreadPanicked {
            what: format!("working inside namespace {name}"),
        })?
    })
}

/// Process ids inside namespace `name`, other than our own.
pub(crate) fn namespace_pids(name: &str) -> Vec<u32> {
    let own = std::process::id();
    cmd::ip(&["netns", "pids", name])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .filter(|&p| p != own)
                .collect()
        })
        .unwrap_or_default()
}

/// Names of the links inside namespace `name`, loopback excluded.
pub(crate) fn namespace_links(name: &str) -> Vec<String> {
    cmd::ip(&["-n", name, "-o", "link", "show"])
        .map(|out| {
            out.lines()
                .filter_map(|line| {
                    // "3: rpa-tun: <POINTOPOINT,...> ..." or "2: rpa-c@if2: ..."
                    let name = line.split(": ").nth(1)?;
                    let name = name.split('@').next()?;
                    (name != "lo").then(|| name.to_string())
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Kills whatever still runs inside `name` and deletes it.
fn destroy(name: &str) -> Result<(), NetemError> {
    for pid in namespace_pids(name) {
        let _ = writeln!(
            std::io::stderr(),
            "rpcarena-netem: killing process {pid} left inside namespace {name}"
        );
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    cmd::ip(&["netns", "del", name]).map(drop)
}

/// A namespace we created; deleted (with anything still running in it) when dropped.
#[derive(Debug)]
pub(crate) struct Namespace {
    name: String,
    live: bool,
}

impl Namespace {
    /// `ip netns add NAME`, with loopback up.
    pub fn create(name: &str) -> Result<Self, NetemError> {
        cmd::ip(&["netns", "add", name])?;
        let ns = Namespace {
            name: name.to_string(),
            live: true,
        };
        cmd::ip(&["-n", name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Deletes it now; dropping afterwards does nothing.
    pub fn remove(&mut self) -> Result<(), NetemError> {
        if !self.live {
            return Ok(());
        }
        self.live = false;
        destroy(&self.name)
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        if let Err(e) = self.remove() {
            let _ = writeln!(
                std::io::stderr(),
                "rpcarena-netem: could not remove network namespace {}: {e}; \
                 `rpcarena doctor` lists and removes leftovers",
                self.name
            );
        }
    }
}

/// A namespace left behind by a process that no longer runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Leftover {
    /// Namespace name.
    pub namespace: String,
    /// The pid that created it (no longer running, or now another program).
    pub creator_pid: u32,
    /// Links inside it (TUN devices vanish with their process; veths stay).
    pub devices: Vec<String>,
    /// Processes still running inside it.
    pub processes: Vec<u32>,
}

/// Our namespaces (prefix `rpa-`) whose creating process is gone.
pub fn leftovers() -> Result<Vec<Leftover>, NetemError> {
    let entries = match fs::read_dir(NETNS_DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(NetemError::io(format!("listing {NETNS_DIR}"), e)),
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(PREFIX))
        .collect();
    names.sort();
    Ok(names
        .into_iter()
        .filter_map(|name| {
            let (pid, start) = parse_owner(&name)?;
            if owner_alive(pid, start) {
                return None;
            }
            Some(Leftover {
                devices: namespace_links(&name),
                processes: namespace_pids(&name),
                creator_pid: pid,
                namespace: name,
            })
        })
        .collect())
}

/// Removes every [`leftovers`] entry (killing processes still inside). Returns what was
/// removed; fails naming the namespaces it could not remove.
pub fn remove_leftovers() -> Result<Vec<Leftover>, NetemError> {
    let found = leftovers()?;
    let mut failures = Vec::new();
    let mut removed = Vec::new();
    for leftover in found {
        match destroy(&leftover.namespace) {
            Ok(()) => removed.push(leftover),
            Err(e) => failures.push(format!("{}: {e}", leftover.namespace)),
        }
    }
    if failures.is_empty() {
        Ok(removed)
    } else {
        Err(NetemError::Command {
            command: "ip netns del (leftovers)".to_string(),
            status: format!("{} namespaces not removed", failures.len()),
            stderr: failures.join("; "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_encode_a_live_owner() {
        let stem = unique_stem();
        let other = unique_stem();
        assert_ne!(stem, other);
        let (pid, start) = parse_owner(&format!("{stem}-c")).unwrap();
        assert_eq!(pid, std::process::id());
        assert!(owner_alive(pid, start));
        assert!(!owner_alive(pid, start + 1));
        assert_eq!(parse_owner("rpa-test"), None);
        assert_eq!(parse_owner("other-1-2-3-c"), None);
    }
}
