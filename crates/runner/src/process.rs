//! Peer processes: spawned as process-group leaders, stdout parsed into events by a reader
//! thread (and copied verbatim to `raw/`), stderr written straight to `raw/`, the whole group
//! killed and reaped on any anomaly.

use anyhow::{Context, Result};
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use rpcarena_model::files;
use rpcarena_protocol::event::{Command, Event, Role, parse_event};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One line of a peer's stdout, or its end.
// A handful of lines per sample: boxing the large event would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Line {
    /// A valid v1 event.
    Event(Event),
    /// A line that is not one.
    Malformed {
        /// The line (truncated to 300 characters).
        text: String,
        /// Why it was refused.
        error: String,
    },
    /// stdout closed: the peer exited (or closed it).
    Closed,
}

/// A line and who printed it.
#[derive(Debug, Clone)]
pub struct Message {
    /// Which peer.
    pub role: Role,
    /// What it printed.
    pub line: Line,
}

/// Process groups alive right now, so that a signal handler can kill them all.
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// Kills every live peer process group (on SIGINT, SIGTERM and SIGHUP, see `stop`).
pub(crate) fn kill_all_groups() {
    let groups = LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default();
    for pgid in groups {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    }
}

/// A running peer.
pub struct PeerProcess {
    /// Its role in the sample.
    pub role: Role,
    /// Process id, which is also the process-group id.
    pub pid: u32,
    child: Child,
    stdin: Option<ChildStdin>,
    reader: Option<JoinHandle<()>>,
    exit: Option<ExitStatus>,
    reaped: bool,
}

impl PeerProcess {
    /// Spawns `argv` as a new process-group leader; stdout lines go to `events` (and verbatim to
    /// `raw_dir/<role>.stdout`), stderr to `raw_dir/<role>.stderr`.
    pub fn spawn(
        role: Role,
        argv: &[String],
        raw_dir: &Path,
        events: Sender<Message>,
    ) -> Result<PeerProcess> {
        let (program, args) = argv.split_first().context("peer command is empty")?;
        let stderr_path = raw_dir.join(files::peer_log(role, "stderr"));
        let stdout_path = raw_dir.join(files::peer_log(role, "stdout"));
        let stderr = File::create(&stderr_path)
            .with_context(|| format!("creating {}", stderr_path.display()))?;
        let stdout_copy = File::create(&stdout_path)
            .with_context(|| format!("creating {}", stdout_path.display()))?;
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting {role} peer {}", argv.join(" ")))?;
        let pid = child.id();
        if let Ok(mut groups) = LIVE_GROUPS.lock() {
            groups.push(pid as i32);
        }
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .context("peer stdout was not captured")?;
        let reader = std::thread::Builder::new()
            .name(format!("{role}-stdout"))
            .spawn(move || read_lines(role, stdout, stdout_copy, events))
            .context("starting a stdout reader thread")?;
        Ok(PeerProcess {
            role,
            pid,
            child,
            stdin,
            reader: Some(reader),
            exit: None,
            reaped: false,
        })
    }

    /// Writes a command line to the peer's stdin.
    pub fn send(&mut self, command: Command) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .with_context(|| format!("{} stdin is already closed", self.role))?;
        writeln!(stdin, "{}", command.as_str())
            .and_then(|_| stdin.flush())
            .with_context(|| format!("sending {} to the {} peer", command.as_str(), self.role))
    }

    /// Writes any line to the peer's stdin (the conformance kit's unknown commands).
    pub fn send_text(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .with_context(|| format!("{} stdin is already closed", self.role))?;
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .with_context(|| format!("sending {line:?} to the {} peer", self.role))
    }

    /// Closes stdin (end of stdin means SHUTDOWN to a peer).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The exit status, if the leader has exited.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none()
            && let Ok(Some(status)) = self.child.try_wait()
        {
            self.exit = Some(status);
        }
        self.exit
    }

    /// Waits up to `timeout` for the leader to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_exit() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Kills the whole process group and waits until no process of it remains.
    ///
    /// Returns `false` if some process of the group was still alive after `timeout`
    /// (for instance stuck in uninterruptible sleep).
    pub fn kill_and_reap(&mut self, timeout: Duration) -> bool {
        if self.reaped {
            return true;
        }
        let pgid = Pid::from_raw(self.pid as i32);
        let _ = killpg(pgid, Signal::SIGKILL);
        self.close_stdin();
        let deadline = Instant::now() + timeout;
        let _ = self.wait_exit(timeout);
        // Other members of the group may have been re-parented to us (we are a child
        // subreaper) and must be reaped, or they linger as zombies.
        let gone = loop {
            loop {
                match waitpid(
                    Pid::from_raw(-(self.pid as i32)),
                    Some(WaitPidFlag::WNOHANG),
                ) {
                    Ok(nix::sys::wait::WaitStatus::StillAlive) | Err(_) => break,
                    Ok(_) => continue,
                }
            }
            match kill(Pid::from_raw(-(self.pid as i32)), None) {
                Err(Errno::ESRCH) => break true,
                _ if Instant::now() >= deadline => break false,
                _ => {
                    let _ = killpg(pgid, Signal::SIGKILL);
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        };
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
        if gone {
            self.reaped = true;
            if let Ok(mut groups) = LIVE_GROUPS.lock() {
                groups.retain(|&g| g != self.pid as i32);
            }
        }
        gone
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // Never leave a process behind, whatever path got us here.
        self.kill_and_reap(Duration::from_secs(5));
    }
}

fn read_lines(role: Role, stdout: impl std::io::Read, mut copy: File, events: Sender<Message>) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                let _ = copy.write_all(&buf);
                let text = String::from_utf8_lossy(&buf);
                let text = text.trim_end_matches(['\n', '\r']);
                let line = match parse_event(text) {
                    Ok(event) => Line::Event(event),
                    Err(e) => Line::Malformed {
                        text: text.chars().take(300).collect(),
                        error: e.to_string(),
                    },
                };
                if events.send(Message { role, line }).is_err() {
                    break;
                }
            }
        }
    }
    let _ = copy.flush();
    let _ = events.send(Message {
        role,
        line: Line::Closed,
    });
}

/// "exit status 3", "killed by signal 9 (SIGKILL)".
pub fn describe_exit(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        format!("exit status {code}")
    } else if let Some(signal) = status.signal() {
        let name = Signal::try_from(signal).map_or("?", |s| s.as_str());
        format!("killed by signal {signal} ({name})")
    } else {
        format!("{status}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::channel;

    #[test]
    fn parses_events_and_kills_the_whole_group() {
        // The binary makes itself a subreaper; the test does so too, to reap the orphans.
        let _ = nix::sys::prctl::set_child_subreaper(true);
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = channel();
        let script = r#"echo '{"protocol":1,"event":"ready","role":"server","address":"x:1","pid":1}'; echo 'junk'; sleep 30 & sleep 30"#;
        let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
        let mut peer = PeerProcess::spawn(Role::Server, &argv, dir.path(), tx).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(matches!(first.line, Line::Event(Event::Ready(_))));
        let second = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        assert!(matches!(second.line, Line::Malformed { ref text, .. } if text == "junk"));
        let pgid = peer.pid as i32;
        assert!(peer.kill_and_reap(Duration::from_secs(5)));
        assert_eq!(kill(Pid::from_raw(-pgid), None), Err(Errno::ESRCH));
        let stdout = std::fs::read_to_string(dir.path().join("server.stdout")).unwrap();
        assert!(stdout.ends_with("junk\n"), "{stdout}");
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(5)).unwrap().line,
            Line::Closed
        ));
    }

    #[test]
    fn describes_exits() {
        use std::process::Command;
        let status = Command::new("sh").args(["-c", "exit 3"]).status().unwrap();
        assert_eq!(describe_exit(status), "exit status 3");
        let status = Command::new("sh")
            .args(["-c", "kill -9 $$"])
            .status()
            .unwrap();
        assert_eq!(describe_exit(status), "killed by signal 9 (SIGKILL)");
    }
}
