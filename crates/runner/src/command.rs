//! One run of a `[[commands]]` entry: its set-up (untimed), then the command itself, each a
//! process-group leader pinned like a server (`taskset -c`), stdout and stderr to `raw/<sample>/`,
//! bounded by the entry's `timeout` (past it the whole group is killed), timed by a monotonic
//! clock around spawn and `wait4`, with `wait4`'s rusage: user and system CPU of the process and
//! of every descendant it waited for, and `ru_maxrss`, the peak resident set of the largest of
//! them. [`judge`] (pure) turns what happened into the record's status, reason and figures.

use crate::launcher::Launcher;
use crate::process::{self, describe_exit};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rpcarena_model::command::{self, CommandRecord, CommandSpec, Measured, RecordKind};
use rpcarena_model::record::SampleStatus;
use rpcarena_model::schedule::Slot;
use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How many bytes of a command's output a reason quotes.
const QUOTED: usize = 200;
/// Most bytes of stdout read back for the parser (the file itself is kept whole).
const PARSED_LIMIT: u64 = 16 << 20;
/// How long the group may take to go once killed.
const REAP: Duration = Duration::from_secs(5);

/// One command run to do.
pub(crate) struct CommandRun<'a> {
    /// The entry.
    pub spec: &'a CommandSpec,
    /// Sample id.
    pub id: String,
    /// Its slot (a warm-up shares the slot of the run it precedes).
    pub slot: Slot,
    /// The untimed first run.
    pub warmup: bool,
    /// CPUs to pin it to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Working directory.
    pub dir: PathBuf,
    /// `raw/<sample>/`, absolute and relative to the run directory.
    pub raw_dir: PathBuf,
    /// The same, relative.
    pub raw_rel: String,
    /// UTC start time.
    pub started_at: String,
}

/// How one process ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ended {
    /// `exit status 0`, `killed by signal 9`, as [`describe_exit`] says it.
    pub exit: String,
    /// Whether it exited with status 0.
    pub success: bool,
    /// It ran past its bound and its group was killed.
    pub timed_out: bool,
    /// Something of its group was still there after the group was killed.
    pub left_behind: bool,
    /// What the controller measured.
    pub measured: Measured,
}

/// What a run produced, for [`judge`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// A process could not be started or waited for: which one and why.
    NotRun(String),
    /// The set-up ended badly (and the command did not run).
    SetupFailed(Ended, String),
    /// The command ended, with its stdout and stderr (stdout read back up to 16 MiB).
    Ran(Ended, String, String),
}

/// Runs one command sample and gives its record (also when it fails).
pub(crate) fn run(run: &CommandRun) -> CommandRecord {
    let outcome = execute(run);
    let (status, reason, figures) = judge(run.spec, &outcome);
    let measured = match &outcome {
        Outcome::Ran(ended, _, _) => Some(ended.measured),
        _ => None,
    };
    CommandRecord {
        kind: RecordKind::Command,
        sample: run.id.clone(),
        round: run.slot.round,
        position: run.slot.position,
        command: run.spec.id.clone(),
        warmup: run.warmup,
        status,
        reason,
        started_at: run.started_at.clone(),
        cpus: run.cpus.clone(),
        measured,
        figures,
        raw: run.raw_rel.clone(),
    }
}

/// The set-up (when there is one), then the command.
fn execute(run: &CommandRun) -> Outcome {
    if let Err(e) = std::fs::create_dir_all(&run.raw_dir) {
        return Outcome::NotRun(format!("creating {}: {e}", run.raw_dir.display()));
    }
    let launcher = Launcher::Local {
        cpus: run.cpus.clone(),
    };
    if !run.spec.setup.is_empty() {
        let argv = launcher.argv(&run.spec.setup, Vec::new());
        match spawn_and_wait(&argv, run, "setup") {
            Err(e) => return Outcome::NotRun(format!("set-up {:?}: {e}", run.spec.setup)),
            Ok(ended) if !ended.success || ended.left_behind => {
                let stderr = read_capped(&run.raw_dir.join("setup.stderr"));
                return Outcome::SetupFailed(ended, stderr);
            }
            Ok(_) => {}
        }
    }
    let argv = launcher.argv(&run.spec.command, Vec::new());
    match spawn_and_wait(&argv, run, "command") {
        Err(e) => Outcome::NotRun(format!("{:?}: {e}", run.spec.command)),
        Ok(ended) => Outcome::Ran(
            ended,
            read_capped(&run.raw_dir.join("command.stdout")),
            read_capped(&run.raw_dir.join("command.stderr")),
        ),
    }
}

/// Spawns `argv` as a process-group leader with its output in `raw_dir/<name>.stdout` and
/// `.stderr`, waits for it within the bound (killing the group past it), then makes sure
/// nothing of the group is left.
fn spawn_and_wait(argv: &[String], run: &CommandRun, name: &str) -> std::io::Result<Ended> {
    let stdout = File::create(run.raw_dir.join(format!("{name}.stdout")))?;
    let stderr = File::create(run.raw_dir.join(format!("{name}.stderr")))?;
    let mut command = std::process::Command::new(&argv[0]);
    command
        .args(&argv[1..])
        .current_dir(&run.dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr);
    let start = Instant::now();
    let child = process::spawn_group(&mut command)?;
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let waited = wait4(pid);
        let _ = tx.send((waited, Instant::now()));
    });
    let (waited, end, timed_out) = match rx.recv_timeout(run.spec.timeout) {
        Ok((waited, end)) => (waited, end, false),
        Err(_) => {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
            match rx.recv() {
                Ok((waited, end)) => (waited, end, true),
                Err(_) => (
                    Err(std::io::Error::other("the waiter stopped")),
                    start,
                    true,
                ),
            }
        }
    };
    let _ = waiter.join();
    let gone = process::kill_group_until_gone(pid, process::deadline_after(REAP));
    process::untrack_group(pid);
    let (status, usage) = waited?;
    Ok(ended(status, &usage, end - start, timed_out, !gone))
}

/// The figures of a reaped process.
fn ended(
    status: ExitStatus,
    usage: &Usage,
    wall: Duration,
    timed_out: bool,
    left_behind: bool,
) -> Ended {
    Ended {
        exit: describe_exit(status),
        success: status.success(),
        timed_out,
        left_behind,
        measured: Measured {
            wall_us: wall.as_micros() as u64,
            user_us: usage.user_us,
            sys_us: usage.sys_us,
            max_rss_kib: usage.max_rss_kib,
        },
    }
}

/// At most [`PARSED_LIMIT`] bytes of a file, as text (invalid UTF-8 replaced); empty if absent.
fn read_capped(path: &Path) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    if let Ok(file) = File::open(path) {
        let _ = file.take(PARSED_LIMIT).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The status, reason and figures of a run, from what happened (pure).
pub(crate) fn judge(
    spec: &CommandSpec,
    outcome: &Outcome,
) -> (SampleStatus, Option<String>, BTreeMap<String, f64>) {
    let failed = |reason: String| (SampleStatus::Failed, Some(reason), BTreeMap::new());
    let bound = rpcarena_model::duration::format(&spec.timeout);
    let (ended, stdout, stderr) = match outcome {
        Outcome::NotRun(why) => {
            return failed(format!(
                "command {:?}: could not run {why} (is the program installed, on PATH or at a path relative to the command's dir?)",
                spec.id
            ));
        }
        Outcome::SetupFailed(ended, stderr) => {
            return failed(format!(
                "command {:?}: its set-up {:?} {}; stderr {}",
                spec.id,
                spec.setup,
                how_it_ended(ended, &bound),
                command::quote(stderr, QUOTED)
            ));
        }
        Outcome::Ran(ended, stdout, stderr) => (ended, stdout, stderr),
    };
    if ended.timed_out || !ended.success || ended.left_behind {
        let output = if stderr.trim().is_empty() {
            stdout
        } else {
            stderr
        };
        return failed(format!(
            "command {:?} {}; {} {}",
            spec.id,
            how_it_ended(ended, &bound),
            if stderr.trim().is_empty() {
                "stdout"
            } else {
                "stderr"
            },
            command::quote(output, QUOTED)
        ));
    }
    let Some(parser) = spec.parser else {
        return (SampleStatus::Ok, None, BTreeMap::new());
    };
    match parser.parse(stdout) {
        Ok(figures) => (SampleStatus::Ok, None, figures),
        Err(missing) => failed(format!(
            "command {:?}: figure{} {} not found in its stdout (parser {}); stdout {}",
            spec.id,
            if missing.len() == 1 { "" } else { "s" },
            missing.join(", "),
            serde_json::to_value(parser)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            command::quote(stdout, QUOTED)
        )),
    }
}

/// `ran past its bound of 2s and its process group was killed`, `exited with exit status 3`.
fn how_it_ended(ended: &Ended, bound: &str) -> String {
    if ended.timed_out {
        format!("ran past its bound of {bound}: its whole process group was killed")
    } else if !ended.success {
        format!("failed: {}", ended.exit)
    } else {
        "left processes of its group running after it exited (they were killed)".to_string()
    }
}

/// The rusage figures kept.
struct Usage {
    user_us: u64,
    sys_us: u64,
    max_rss_kib: u64,
}

/// Waits for the child `pid` (blocking) and gives its status and rusage: `wait4(2)`, which
/// counts the child and every descendant it waited for (timeval: microseconds).
#[allow(unsafe_code)]
fn wait4(pid: i32) -> std::io::Result<(ExitStatus, Usage)> {
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero bytes are a valid value of it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `usage` are valid for writes for the duration of the call,
        // which only writes those two.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok((
        ExitStatus::from_raw(status),
        Usage {
            user_us: micros(usage.ru_utime),
            sys_us: micros(usage.ru_stime),
            max_rss_kib: usage.ru_maxrss.max(0) as u64,
        },
    ))
}

#[cfg(test)]
mod tests;
