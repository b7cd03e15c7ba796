//! Peer processes: spawned as process-group leaders, stdout parsed into events by a reader
//! thread (and copied verbatim to `raw/`), stderr written straight to `raw/`, the whole group
//! killed and reaped on any anomaly.

use crate::error::{Error, FileContext, Result};
use crate::sample::machine::{Line, Message};
use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;
use rpcarena_model::files;
use rpcarena_protocol::event::{Command, Role, parse_event};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest line a peer may print, before its `\n` (docs/peer-protocol.md, "Rules").
pub const MAX_LINE: usize = 1 << 20;
/// Most bytes of a peer's stdout or stderr kept in `raw/` (the rest is cut off with a marker).
pub const RAW_LOG_LIMIT: u64 = 16 << 20;
/// How many bytes of a refused line a reason quotes.
const QUOTED: usize = 200;
/// How long the teardown waits for a reader thread once the peer's group is gone.
const READER_JOIN: Duration = Duration::from_secs(2);

/// Process groups alive right now, so that a signal handler can kill them all.
static LIVE_GROUPS: Mutex<Vec<i32>> = Mutex::new(Vec::new());

/// The stdout and stderr pipe inodes of live peers, by process group.
static LIVE_PIPES: Mutex<Vec<(i32, Vec<u64>)>> = Mutex::new(Vec::new());

/// The pipes of every live peer but the group `pgid`.
fn other_pipes(pgid: i32) -> Vec<u64> {
    LIVE_PIPES
        .lock()
        .map(|p| {
            p.iter()
                .filter(|(g, _)| *g != pgid)
                .flat_map(|(_, i)| i.iter().copied())
                .collect()
        })
        .unwrap_or_default()
}

/// The process groups of live peers (and capability queries), which are no escapees.
pub(crate) fn tracked_groups() -> Vec<i32> {
    LIVE_GROUPS.lock().map(|g| g.clone()).unwrap_or_default()
}

/// Held while a process group is started and tracked, and while escapees are looked for. A
/// child is in its own new group from before `spawn` returns; without this lock a concurrent
/// escape scan (another sample's teardown, a capabilities query) could see it before it is
/// tracked and kill it as an escaped helper.
static SPAWNING: Mutex<()> = Mutex::new(());

/// Names what failed with a peer process, as [`Error::Peer`].
fn peer_failed(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Peer {
        what,
        source: Some(source),
    }
}

/// Starts `command` as the leader of a new process group and tracks that group before anyone
/// can look for escapees.
pub(crate) fn spawn_group(command: &mut std::process::Command) -> std::io::Result<Child> {
    let _spawning = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    let child = command.process_group(0).spawn()?;
    if let Ok(mut groups) = LIVE_GROUPS.lock() {
        groups.push(child.id() as i32);
    }
    Ok(child)
}

/// Runs `scan` with no process group half-started (see [`SPAWNING`]).
pub(crate) fn while_no_spawn<T>(scan: impl FnOnce() -> T) -> T {
    let _spawning = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
    scan()
}

/// Stops tracking `pgid`.
pub(crate) fn untrack_group(pgid: i32) {
    if let Ok(mut groups) = LIVE_GROUPS.lock() {
        groups.retain(|&g| g != pgid);
    }
}

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
    /// The stdout reader and the stderr copier.
    readers: Vec<JoinHandle<()>>,
    /// Tells the readers nobody listens any more.
    abandon: Arc<AtomicBool>,
    /// What the teardown found besides the group (escaped processes, a stuck reader).
    pub findings: Vec<String>,
    /// Inodes of its stdout and stderr pipes (a helper holding one is this peer's).
    pipes: Vec<u64>,
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
        events: SyncSender<Message>,
    ) -> Result<PeerProcess> {
        let (program, args) = argv.split_first().ok_or_else(|| Error::Peer {
            what: format!("the {role} peer's command is empty"),
            source: None,
        })?;
        let stderr_path = raw_dir.join(files::peer_log(role, "stderr"));
        let stdout_path = raw_dir.join(files::peer_log(role, "stdout"));
        let stderr_copy = File::create(&stderr_path).file("creating", &stderr_path)?;
        let stdout_copy = File::create(&stdout_path).file("creating", &stdout_path)?;
        let mut child = spawn_group(
            std::process::Command::new(program)
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .map_err(peer_failed(format!(
            "starting {role} peer {}",
            argv.join(" ")
        )))?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            unreachable!("spawned with piped stdout and stderr");
        };
        let abandon = Arc::new(AtomicBool::new(false));
        let pipes: Vec<u64> = [
            crate::escape::pipe_inode(&stdout),
            crate::escape::pipe_inode(&stderr),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Ok(mut live) = LIVE_PIPES.lock() {
            live.push((pid as i32, pipes.clone()));
        }
        let mut peer = PeerProcess {
            role,
            pid,
            child,
            stdin,
            readers: Vec::new(),
            abandon: abandon.clone(),
            findings: Vec::new(),
            pipes,
            exit: None,
            reaped: false,
        };
        // On an error below, dropping `peer` kills the group.
        let stdout_copy = CappedLog::new(stdout_copy, RAW_LOG_LIMIT);
        peer.readers.push(
            std::thread::Builder::new()
                .name(format!("{role}-stdout"))
                .spawn(move || read_lines(role, stdout, stdout_copy, events, abandon))
                .map_err(peer_failed(format!(
                    "starting the {role} peer's stdout reader thread"
                )))?,
        );
        let stderr_copy = CappedLog::new(stderr_copy, RAW_LOG_LIMIT);
        peer.readers.push(
            std::thread::Builder::new()
                .name(format!("{role}-stderr"))
                .spawn(move || copy_stderr(stderr, stderr_copy))
                .map_err(peer_failed(format!(
                    "starting the {role} peer's stderr copy thread"
                )))?,
        );
        Ok(peer)
    }

    /// Writes a command line to the peer's stdin.
    pub fn send(&mut self, command: Command) -> Result<()> {
        self.send_text(command.as_str())
    }

    /// Writes any line to the peer's stdin (the conformance kit's unknown commands).
    pub fn send_text(&mut self, line: &str) -> Result<()> {
        let role = self.role;
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Error::Peer {
                what: format!("sending {line:?} to the {role} peer: its stdin is already closed"),
                source: None,
            });
        };
        writeln!(stdin, "{line}")
            .and_then(|_| stdin.flush())
            .map_err(peer_failed(format!("sending {line:?} to the {role} peer")))
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
        let deadline = deadline_after(timeout);
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
        let deadline = deadline_after(timeout);
        let _ = self.wait_exit(timeout);
        let gone = kill_group_until_gone(self.pid as i32, deadline);
        self.abandon.store(true, Ordering::SeqCst);
        if gone {
            self.findings.extend(crate::escape::kill_escaped(
                &format!("the {} peer", self.role),
                &self.pipes,
                &other_pipes(self.pid as i32),
            ));
        }
        let readers = std::mem::take(&mut self.readers);
        if !join_within(readers, READER_JOIN) {
            self.findings.push(format!(
                "the {} peer's stdout or stderr stayed open {} after its process group was \
                 killed (a process outside the group holds it); its reader was left behind",
                self.role,
                rpcarena_model::duration::format(&READER_JOIN)
            ));
        }
        if gone {
            self.reaped = true;
            if let Ok(mut groups) = LIVE_GROUPS.lock() {
                groups.retain(|&g| g != self.pid as i32);
            }
            if let Ok(mut live) = LIVE_PIPES.lock() {
                live.retain(|(g, _)| *g != self.pid as i32);
            }
        }
        gone
    }
}

/// Kills the process group `pgid` until none of it is left, reaping the members that were
/// re-parented to us (we are a child subreaper; unreaped, they linger as zombies). `false`: some
/// process of it was still there at `deadline` (uninterruptible sleep).
pub(crate) fn kill_group_until_gone(pgid: i32, deadline: Instant) -> bool {
    let group = Pid::from_raw(-pgid);
    loop {
        let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        loop {
            match waitpid(group, Some(WaitPidFlag::WNOHANG)) {
                Ok(nix::sys::wait::WaitStatus::StillAlive) | Err(_) => break,
                Ok(_) => continue,
            }
        }
        match kill(group, None) {
            Err(Errno::ESRCH) => return true,
            _ if Instant::now() >= deadline => return false,
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

/// `timeout` from now, or far in the future if that does not fit in an `Instant`.
pub(crate) fn deadline_after(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86_400))
}

/// Joins `threads`, waiting at most `limit` in all; `false` if some are still running (they
/// are detached: a thread blocked in `read` cannot be cancelled).
fn join_within(threads: Vec<JoinHandle<()>>, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while threads.iter().any(|t| !t.is_finished()) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    for thread in threads {
        let _ = thread.join();
    }
    true
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // Never leave a process behind, whatever path got us here.
        self.kill_and_reap(Duration::from_secs(5));
    }
}

/// A peer's output kept in `raw/`, cut off with a marker past [`RAW_LOG_LIMIT`], so a peer
/// that prints without end cannot fill the disk.
pub(crate) struct CappedLog {
    file: File,
    written: u64,
    limit: u64,
    cut: bool,
}

impl CappedLog {
    pub(crate) fn new(file: File, limit: u64) -> CappedLog {
        CappedLog {
            file,
            written: 0,
            limit,
            cut: false,
        }
    }

    /// Appends what fits; errors are ignored (a raw log is evidence, not a measurement).
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        if self.cut {
            return;
        }
        let room = self.limit.saturating_sub(self.written);
        let take = bytes.len().min(room as usize);
        let _ = self.file.write_all(&bytes[..take]);
        self.written += take as u64;
        if take < bytes.len() {
            self.cut = true;
            let _ = write!(
                self.file,
                "\n[rpcarena: output truncated here: raw logs keep at most {} bytes]\n",
                self.limit
            );
        }
    }
}

/// Sends `message` on a bounded channel without blocking forever: once `abandon` is set
/// (the peer's group was killed and nobody reads any more) the message is dropped.
fn send_bounded(events: &SyncSender<Message>, mut message: Message, abandon: &AtomicBool) -> bool {
    loop {
        match events.try_send(message) {
            Ok(()) => return true,
            Err(TrySendError::Disconnected(_)) => return false,
            Err(TrySendError::Full(back)) => {
                if abandon.load(Ordering::SeqCst) {
                    return false;
                }
                message = back;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// What a line of stdout is, as the machine sees it.
fn classify(bytes: &[u8]) -> Line {
    let quoted = |bytes: &[u8]| -> String {
        String::from_utf8_lossy(&bytes[..bytes.len().min(QUOTED)]).into_owned()
    };
    if bytes.len() > MAX_LINE {
        return Line::Malformed {
            text: quoted(bytes),
            error: format!(
                "line longer than {MAX_LINE} bytes (1 MiB, the limit of docs/peer-protocol.md); \
                 its first bytes follow"
            ),
        };
    }
    // The line terminator (`\n`, `\r\n`) is no part of the line, whether it is UTF-8 or not.
    let end = bytes
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    let bytes = &bytes[..end];
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            return Line::Malformed {
                text: quoted(bytes),
                error: format!(
                    "the line is not UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ),
            };
        }
    };
    match parse_event(text) {
        Ok(event) => Line::Event(event),
        Err(e) => Line::Malformed {
            text: text.chars().take(QUOTED).collect(),
            error: e.to_string(),
        },
    }
}

/// Reads a peer's stdout into lines of at most [`MAX_LINE`] bytes: a longer line is reported
/// once (its first bytes quoted) and the rest of it skipped without being kept in memory.
fn read_lines(
    role: Role,
    stdout: impl std::io::Read,
    mut copy: CappedLog,
    events: SyncSender<Message>,
    abandon: Arc<AtomicBool>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    // Whether the current line passed the limit (and was reported); its rest is skipped.
    let mut skipping = false;
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) | Err(_) => break,
            Ok(chunk) => chunk,
        };
        let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (&chunk[..=i], true),
            None => (chunk, false),
        };
        copy.write(part);
        let used = part.len();
        if !skipping {
            let room = (MAX_LINE + 1).saturating_sub(line.len());
            line.extend_from_slice(&part[..part.len().min(room)]);
        }
        reader.consume(used);
        let over = !skipping && line.len() > MAX_LINE;
        if over || (ends && !skipping) {
            let message = Message {
                role,
                line: classify(&line),
            };
            line.clear();
            if !send_bounded(&events, message, &abandon) {
                break;
            }
        }
        if over {
            skipping = true;
        }
        if ends {
            skipping = false;
        }
    }
    if !line.is_empty() && !skipping {
        // A last line without its newline is still a line.
        let message = Message {
            role,
            line: classify(&line),
        };
        let _ = send_bounded(&events, message, &abandon);
    }
    let _ = copy.file.flush();
    let _ = send_bounded(
        &events,
        Message {
            role,
            line: Line::Closed,
        },
        &abandon,
    );
}

/// Copies a peer's stderr to `raw/` up to the limit, and drains the rest.
fn copy_stderr(stderr: impl std::io::Read, mut copy: CappedLog) {
    let mut reader = stderr;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match std::io::Read::read(&mut reader, &mut buf) {
            Ok(0) => break,
            Ok(n) => copy.write(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
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
    use rpcarena_protocol::event::Event;
    use std::sync::mpsc::sync_channel;

    #[test]
    fn parses_events_and_kills_the_whole_group() {
        // The binary makes itself a subreaper; the test does so too, to reap the orphans.
        let _ = nix::sys::prctl::set_child_subreaper(true);
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = sync_channel(8);
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

    #[test]
    fn invalid_utf8_is_refused_not_converted() {
        let mut line = br#"{"protocol":1,"event":"ready","role":"server","address":"x"#.to_vec();
        line.push(0xff);
        line.extend_from_slice(br#":1","pid":1}"#);
        // Before the fix a lossy conversion made this a valid `ready` at address "x\u{fffd}:1".
        match classify(&line) {
            Line::Malformed { error, .. } => assert!(error.contains("not UTF-8"), "{error}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_non_utf8_line_is_quoted_without_its_terminator() {
        // Before the fix the quote kept the `\n` (or `\r\n`) the UTF-8 path strips.
        for ending in [&b"\n"[..], b"\r\n", b""] {
            let mut line = b"junk \xff here".to_vec();
            line.extend_from_slice(ending);
            match classify(&line) {
                Line::Malformed { text, error } => {
                    assert_eq!(text, "junk \u{fffd} here", "ending {ending:?}");
                    assert!(error.contains("offset 5"), "{error}");
                }
                other => panic!("{other:?}"),
            }
        }
        // The UTF-8 path, for comparison.
        match classify(b"junk here\r\n") {
            Line::Malformed { text, .. } => assert_eq!(text, "junk here"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_long_line_is_refused_at_1_mib_and_raw_logs_are_capped() {
        let _ = nix::sys::prctl::set_child_subreaper(true);
        let dir = tempfile::tempdir().unwrap();
        let (tx, rx) = sync_channel(8);
        // 64 MiB without a newline, then a valid event; stderr floods too. (The controller's
        // peak RSS under an endless line is measured in crates/cli/tests/faults.rs, in a
        // process of its own.)
        let script = "head -c 67108864 /dev/zero | tr '\\0' a; head -c 67108864 /dev/zero >&2; \
                      echo; echo '{\"protocol\":1,\"event\":\"ready\",\"role\":\"server\",\"address\":\"x:1\",\"pid\":1}'";
        let argv: Vec<String> = ["sh", "-c", script].iter().map(|s| s.to_string()).collect();
        let mut peer = PeerProcess::spawn(Role::Server, &argv, dir.path(), tx).unwrap();
        let first = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        match first.line {
            Line::Malformed { text, error } => {
                assert!(error.contains("longer than 1048576 bytes"), "{error}");
                assert_eq!(text, "a".repeat(QUOTED));
            }
            other => panic!("{other:?}"),
        }
        // The rest of the long line is skipped; the next line is read as usual.
        let second = rx.recv_timeout(Duration::from_secs(60)).unwrap();
        assert!(
            matches!(second.line, Line::Event(Event::Ready(_))),
            "{second:?}"
        );
        assert!(matches!(
            rx.recv_timeout(Duration::from_secs(60)).unwrap().line,
            Line::Closed
        ));
        assert!(peer.kill_and_reap(Duration::from_secs(5)));
        // Before the fix the whole line was copied to raw/.
        for name in ["server.stdout", "server.stderr"] {
            let text = std::fs::read(dir.path().join(name)).unwrap();
            assert!(
                text.len() as u64 <= RAW_LOG_LIMIT + 200,
                "{name}: {}",
                text.len()
            );
            let tail = String::from_utf8_lossy(&text[text.len() - 120..]).into_owned();
            assert!(
                tail.contains("[rpcarena: output truncated here"),
                "{name}: {tail}"
            );
        }
    }
}
