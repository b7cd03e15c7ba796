//! The I/O shell around Linux `perf`: is it there and allowed, a recording attached to running
//! processes with exact edges, and `perf script` of what it recorded.
//!
//! A recording starts `perf record -D -1 --control fifo:CTL,ACK ... -p PIDS`: perf attaches with
//! its events disabled, and the window's edges are the `enable` and `disable` commands written
//! to its control fifo, each answered by `ack` once done. So the start-up of perf itself is
//! outside the window, and the recording covers what happened between the two acks.

use crate::Error;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long perf gets to attach, to answer a control command, and to write its file.
const PERF_WAIT: Duration = Duration::from_secs(20);

/// `perf script` fields of a CPU profile.
pub const CPU_FIELDS: &str = "comm,tid,time,event,ip,sym,dso";
/// `perf script` fields of an off-CPU recording (the tracepoint's fields too).
pub const SWITCH_FIELDS: &str = "comm,tid,time,event,trace,ip,sym,dso";

/// How perf unwinds stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallGraph {
    /// Frame pointers (`--call-graph fp`): cheap, whole where the code keeps frame pointers.
    FramePointers,
    /// DWARF unwinding of a copy of the stack (`--call-graph dwarf`): needs debug information.
    Dwarf,
}

impl CallGraph {
    /// perf's name for it.
    pub fn perf_name(self) -> &'static str {
        match self {
            CallGraph::FramePointers => "fp",
            CallGraph::Dwarf => "dwarf",
        }
    }
}

/// Says whether perf can record here: installed (else: which package), and allowed (else: the
/// sysctl and its value). Records `true` for a few milliseconds with `event` into `scratch`.
pub fn check(event: &str, scratch: &Path) -> Result<(), Error> {
    let data = scratch.join("perf-check.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-e", event, "-o"])
        .arg(&data)
        .args(["--", "true"])
        .stdin(Stdio::null())
        .output();
    let _ = std::fs::remove_file(&data);
    let out = match out {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::Missing(e.to_string()));
        }
        Err(e) => return Err(io("starting perf", e)),
    };
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| format!("unreadable ({e})"));
    if said.contains("paranoid") || said.contains("ermission") || said.contains("EACCES") {
        return Err(Error::Forbidden {
            event: event.to_string(),
            paranoid,
            said,
        });
    }
    Err(Error::Perf {
        what: format!("record -e {event} -- true"),
        said,
    })
}

/// What to record.
#[derive(Debug, Clone)]
pub struct RecordSpec {
    /// Processes to attach to.
    pub pids: Vec<u32>,
    /// Where perf writes (`perf.data`).
    pub data: PathBuf,
    /// perf's own messages go here.
    pub log: PathBuf,
    /// The event and its arguments: `-e cpu-clock -F 999 --call-graph dwarf`.
    pub event_args: Vec<String>,
}

/// A running `perf record`, disabled until [`Recording::enable`]; killed if dropped running.
pub struct Recording {
    child: Child,
    ctl: File,
    ack: File,
    fifos: [PathBuf; 2],
    log: PathBuf,
}

impl Recording {
    /// Starts perf attached to `spec.pids` with its events disabled, and waits until it listens.
    pub fn start(spec: &RecordSpec) -> Result<Recording, Error> {
        let dir = spec.data.parent().unwrap_or(Path::new("."));
        let stem = spec.data.file_name().unwrap_or_default().to_string_lossy();
        let fifos = [
            dir.join(format!(".{stem}.ctl")),
            dir.join(format!(".{stem}.ack")),
        ];
        for fifo in &fifos {
            let _ = std::fs::remove_file(fifo);
            nix::unistd::mkfifo(fifo, nix::sys::stat::Mode::S_IRWXU)
                .map_err(|e| io(&format!("creating {}", fifo.display()), e.into()))?;
        }
        let pids: Vec<String> = spec.pids.iter().map(u32::to_string).collect();
        let log = File::create(&spec.log).map_err(|e| io("creating perf's log", e))?;
        let child = Command::new("perf")
            .args(["record", "-q", "-D", "-1", "--control"])
            .arg(format!(
                "fifo:{},{}",
                fifos[0].display(),
                fifos[1].display()
            ))
            .args(&spec.event_args)
            .arg("-o")
            .arg(&spec.data)
            .args(["-p", &pids.join(",")])
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| io("perf's log", e))?)
            .stderr(log)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => Error::Missing(e.to_string()),
                _ => io("starting perf record", e),
            })?;
        let mut child = KillOnDrop(Some(child));
        let ack = OpenOptions::new()
            .read(true)
            .custom_flags(libc_nonblock())
            .open(&fifos[1])
            .map_err(|e| io("opening perf's ack fifo", e))?;
        let ctl = open_writer(&fifos[0], child.get(), &spec.log)?;
        Ok(Recording {
            child: child.take(),
            ctl,
            ack,
            fifos,
            log: spec.log.clone(),
        })
    }

    /// Turns the events on; returns once perf says they are.
    pub fn enable(&mut self) -> Result<(), Error> {
        self.command("enable")
    }

    /// Turns the events off, then ends perf (SIGINT) and waits for it to write its file.
    pub fn finish(mut self) -> Result<(), Error> {
        self.command("disable")?;
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let deadline = Instant::now() + PERF_WAIT;
        loop {
            match self.child.try_wait() {
                // perf writes its file, then re-raises the SIGINT it was ended with
                Ok(Some(status))
                    if status.success() || status.signal() == Some(nix::libc::SIGINT) =>
                {
                    return Ok(());
                }
                Ok(Some(status)) => {
                    return Err(Error::Perf {
                        what: format!("record ended with {status}"),
                        said: log_tail(&self.log),
                    });
                }
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(None) | Err(_) => {
                    return Err(Error::Perf {
                        what: "record did not end within 20 s of SIGINT".into(),
                        said: log_tail(&self.log),
                    });
                }
            }
        }
    }

    /// Writes `command` to perf's control fifo and waits for its `ack`.
    fn command(&mut self, command: &str) -> Result<(), Error> {
        if let Ok(Some(status)) = self.child.try_wait() {
            return Err(Error::Ended(format!(
                "perf record ended ({status}) before `{command}`: the profiled process exited; perf said: {}",
                log_tail(&self.log)
            )));
        }
        writeln!(self.ctl, "{command}").map_err(|e| io("writing to perf's control fifo", e))?;
        let deadline = Instant::now() + PERF_WAIT;
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        while !got.windows(3).any(|w| w == b"ack") {
            match self.ack.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(io("reading perf's ack fifo", e)),
            }
            if Instant::now() > deadline || matches!(self.child.try_wait(), Ok(Some(_))) {
                return Err(Error::Perf {
                    what: format!("record did not acknowledge `{command}`"),
                    said: log_tail(&self.log),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(())
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for fifo in &self.fifos {
            let _ = std::fs::remove_file(fifo);
        }
    }
}

/// A child killed and reaped if dropped before it is taken (a start-up that failed half-way).
struct KillOnDrop(Option<Child>);

impl KillOnDrop {
    fn get(&mut self) -> &mut Child {
        self.0.as_mut().expect("taken only once, at the end")
    }
    fn take(&mut self) -> Child {
        self.0.take().expect("taken only once")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Opens the control fifo for writing once perf has opened it for reading.
fn open_writer(fifo: &Path, child: &mut Child, log: &Path) -> Result<File, Error> {
    let deadline = Instant::now() + PERF_WAIT;
    loop {
        match OpenOptions::new()
            .write(true)
            .custom_flags(libc_nonblock())
            .open(fifo)
        {
            Ok(file) => return Ok(file),
            Err(e) if e.raw_os_error() == Some(nix::libc::ENXIO) => {}
            Err(e) => return Err(io("opening perf's control fifo", e)),
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(Error::Perf {
                what: format!("record ended ({status}) while attaching"),
                said: log_tail(log),
            });
        }
        if Instant::now() > deadline {
            return Err(Error::Perf {
                what: "record did not open its control fifo within 20 s".into(),
                said: log_tail(log),
            });
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn libc_nonblock() -> i32 {
    nix::libc::O_NONBLOCK
}

/// `perf script` of `data` with `fields`, and switch events when asked.
pub fn script(data: &Path, fields: &str, switch_events: bool) -> Result<Vec<u8>, Error> {
    let mut command = Command::new("perf");
    command
        .args(["script", "-i"])
        .arg(data)
        .args(["-F", fields]);
    if switch_events {
        command.arg("--show-switch-events");
    }
    let out = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io("running perf script", e))?;
    if !out.status.success() {
        return Err(Error::Perf {
            what: format!("script -i {}", data.display()),
            said: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// The last lines perf wrote to its log.
fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(5)..].join(" / ");
    if tail.is_empty() {
        "(nothing)".into()
    } else {
        tail
    }
}

fn io(what: &str, source: std::io::Error) -> Error {
    Error::Io {
        what: what.to_string(),
        source,
    }
}

/// The processes of the group led by `pgid` (the leader first): a peer and whatever it started
/// (a wrapper's child), read from `/proc/*/stat`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut pids = vec![pgid];
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return pids;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses
        let group = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|g| g.parse::<u32>().ok());
        if group == Some(pgid) && pid != pgid {
            pids.push(pid);
        }
    }
    pids
}
