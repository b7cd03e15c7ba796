//! Processes that escaped a peer's process group.
//!
//! A peer must keep its helpers in its process group (docs/peer-protocol.md), so that killing
//! the group kills them all. A helper that calls `setsid` (or `setpgid`) escapes that kill; if
//! it keeps the peer's stdout open, the reader waits for it forever. The `rpcarena` binary is a
//! child subreaper, so once the peer is gone such a helper is re-parented to the controller:
//! after a peer's group is reaped, every child of the controller that is in no process group
//! the controller knows (not its own, not a live peer's) is an escaped helper. It is killed
//! with its own group, reaped, and named in the sample's reason.

use crate::process::{tracked_groups, while_no_spawn};
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::waitpid;
use nix::unistd::{Pid, getpgrp, getpid};

/// A process as /proc shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProcEntry {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    pub command: String,
}

/// Which of `processes` are escaped helpers: children of `me` in a process group that is
/// neither `my_group` nor one of `known` (pure, so it is tested without processes).
pub(crate) fn escaped(
    processes: &[ProcEntry],
    me: i32,
    my_group: i32,
    known: &[i32],
) -> Vec<ProcEntry> {
    processes
        .iter()
        .filter(|p| p.ppid == me && p.pgid != my_group && !known.contains(&p.pgid))
        .cloned()
        .collect()
}

/// Parses `/proc/<pid>/stat`: pid, (comm), state, ppid, pgrp, ...
fn parse_stat(stat: &str) -> Option<ProcEntry> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let pid = stat[..open].trim().parse().ok()?;
    let command = stat.get(open + 1..close)?.to_string();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let _state = rest.next()?;
    let ppid = rest.next()?.parse().ok()?;
    let pgid = rest.next()?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        pgid,
        command,
    })
}

/// The processes of this host (those readable).
fn processes() -> Vec<ProcEntry> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|s| parse_stat(&s))
        .collect()
}

/// The inode of the pipe behind `fd`, to recognise who else holds it.
pub(crate) fn pipe_inode(fd: impl std::os::fd::AsFd) -> Option<u64> {
    nix::sys::stat::fstat(fd).ok().map(|s| s.st_ino)
}

/// Whether process `pid` holds one of the pipes `inodes` open.
fn holds(pid: i32, inodes: &[u64]) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|fd| {
        std::fs::read_link(fd.path()).is_ok_and(|target| {
            let target = target.to_string_lossy();
            inodes.iter().any(|i| target == format!("pipe:[{i}]"))
        })
    })
}

/// Kills and reaps the helpers that escaped a process group. `owner` ("the server peer", "the
/// capabilities query") is named for those that hold one of its pipes (`inodes`, its stdout
/// and stderr), which is how a helper stalls a run. A helper holding the pipes of another live
/// peer (`others`) is left for that peer's teardown, which names it; one holding none is killed
/// now and named as some peer's helper. Returns one sentence per helper for the reason.
pub(crate) fn kill_escaped(owner: &str, inodes: &[u64], others: &[u64]) -> Vec<String> {
    let me = getpid().as_raw();
    let found = while_no_spawn(|| escaped(&processes(), me, getpgrp().as_raw(), &tracked_groups()));
    found
        .into_iter()
        .filter_map(|p| {
            let whose = if holds(p.pid, inodes) {
                format!("left {owner}'s process group, holding its output,")
            } else if holds(p.pid, others) {
                return None;
            } else {
                "left a peer's process group".to_string()
            };
            let _ = killpg(Pid::from_raw(p.pgid), Signal::SIGKILL);
            let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
            let _ = waitpid(Pid::from_raw(p.pid), None);
            Some(format!(
                "process {} ({}) {whose} and outlived it; it was killed (a peer must keep its \
                 helpers in its process group)",
                p.pid, p.command
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pid: i32, ppid: i32, pgid: i32) -> ProcEntry {
        ProcEntry {
            pid,
            ppid,
            pgid,
            command: "x".into(),
        }
    }

    #[test]
    fn escaped_helpers_are_our_children_in_groups_we_do_not_know() {
        let all = [
            entry(10, 1, 10),  // not ours
            entry(20, 5, 5),   // ours, our own group (a command we ran)
            entry(30, 5, 30),  // ours, a live peer's group
            entry(40, 5, 40),  // ours, a group nobody knows: escaped
            entry(41, 40, 40), // its child: killed with its group, not ours
        ];
        let found = escaped(&all, 5, 5, &[30]);
        assert_eq!(found, vec![entry(40, 5, 40)]);
    }

    #[test]
    fn parses_stat_lines_with_odd_command_names() {
        let e = parse_stat("123 (a b) c)) S 7 123 123 0 -1 4194560").unwrap();
        assert_eq!((e.pid, e.ppid, e.pgid), (123, 7, 123));
        assert_eq!(e.command, "a b) c)");
    }
}
