//! Faults around the measuring core (issue 9): closed pipes, signals, full disks, hostile peers,
//! absurd campaigns. Each test here failed before its fix; docs/faults.md lists them.
//!
//! The tests that run campaigns use the real Rust peer on loopback (`cargo test --workspace`
//! builds it), with short windows, one at a time.

mod common;

use common::{peer, records, rpcarena, rpcarena_ok, survivors, wait_until};
use rpcarena_model::record::SampleStatus;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// A campaign of `repetitions` unary samples of the Rust peer (or `command`) on gRPC.
fn campaign(command: &str, repetitions: u32, extra: &str) -> String {
    rpcarena_fixtures::campaign("faults", 5)
        .key(&format!(
            "repetitions = {repetitions}\nnetwork = \"loopback\""
        ))
        .peer("p", &[command])
        .cells("p", &["grpc"])
        .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [1]")
        .section(rpcarena_fixtures::SHORT_TIMING)
        .section(
            "[timeouts]\nready = \"10s\"\narmed = \"10s\"\nsample = \"10s\"\nshutdown = \"3s\"",
        )
        .section(extra)
        .build()
}

fn rust_peer() -> String {
    peer().display().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A campaign of one sample whose server runs `server_first` (shell) before the Rust peer;
/// returns the campaign file.
fn with_server_wrapper(tmp: &Path, server_first: &str) -> PathBuf {
    let wrapper = tmp.join("peer.sh");
    write_script(
        &wrapper,
        &format!(
            "if [ \"$1\" = server ]; then\n{server_first}\nfi\nexec {} \"$@\"",
            rust_peer()
        ),
    );
    write(
        tmp,
        "c.toml",
        &campaign(&wrapper.display().to_string(), 1, ""),
    )
}

/// Starts `rpcarena run FILE --out DIR` with stdout and stderr discarded.
fn start(file: &Path, dir: &Path) -> std::process::Child {
    Command::new(rpcarena())
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// The write end of a pipe whose read end is already closed: every write gets EPIPE.
fn broken_pipe() -> OwnedFd {
    let (read, write) = nix::unistd::pipe().unwrap();
    drop(read);
    write
}

#[test]
fn a_closed_stdout_and_stderr_neither_kill_the_run_nor_lose_its_reports() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let file = write(tmp.path(), "c.toml", &campaign(&rust_peer(), 2, ""));
    let dir = tmp.path().join("run");
    let pipe = broken_pipe();
    let status = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&dir)
        .stdout(Stdio::from(pipe.try_clone().unwrap()))
        .stderr(Stdio::from(pipe))
        .status()
        .unwrap();
    // Before the fix: exit 101 (a panic in `eprintln!`) after the first sample.
    assert_ne!(status.code(), Some(101), "the controller panicked");
    assert!(status.success(), "{status}");
    assert_eq!(records(&dir).len(), 2);
    assert!(dir.join("report.md").is_file());
    let manifest = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("\"samples.jsonl\""),
        "not sealed: {manifest}"
    );
    assert!(survivors(tmp.path()).is_empty());
}

#[test]
fn sighup_with_a_hung_up_stderr_stops_the_sample_in_progress() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let text = campaign(&rust_peer(), 1, "").replace("window = \"300ms\"", "window = \"4s\"");
    let file = write(tmp.path(), "c.toml", &text);
    let dir = tmp.path().join("run");
    let mut child = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::from(broken_pipe()))
        .spawn()
        .unwrap();
    // Wait until the client measures (its stdout copy exists), then hang up.
    assert!(measuring(&dir), "the sample never started");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_ne!(status.code(), Some(101), "the controller panicked");
    let records = records(&dir);
    assert_eq!(records.len(), 1);
    // Before the fix the handler panicked before setting the flag: the sample was `ok`.
    assert_eq!(records[0].status, SampleStatus::Failed);
    let reason = records[0].reason.as_deref().unwrap_or("");
    assert!(reason.contains("interrupted"), "{reason}");
    assert!(survivors(tmp.path()).is_empty());
}

/// Waits (90 s at most) until a client of the run in `dir` is armed: the sample measures.
fn measuring(dir: &Path) -> bool {
    wait_until(Duration::from_secs(90), || {
        std::fs::read_dir(dir.join("raw"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|d| {
                std::fs::read_to_string(d.path().join("client.stdout"))
                    .is_ok_and(|s| s.contains("\"armed\""))
            })
    })
}

#[test]
fn sigterm_to_the_controller_is_the_reason_of_the_sample_in_progress_not_the_peers() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let text = campaign(&rust_peer(), 2, "").replace("window = \"300ms\"", "window = \"4s\"");
    let file = write(tmp.path(), "c.toml", &text);
    let dir = tmp.path().join("run");
    let child = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(measuring(&dir), "the sample never started");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    let records = records(&dir);
    assert_eq!(records.len(), 1, "{stderr}");
    assert_eq!(records[0].status, SampleStatus::Failed);
    // Before the fix: "interrupted by a signal; the run stopped; client exited unexpectedly
    // during measure (killed by signal 9 (SIGKILL)); see client.stderr" (or the server's).
    let reason = records[0].reason.as_deref().unwrap_or("");
    assert!(
        reason.starts_with("interrupted: the controller received SIGTERM"),
        "{reason}"
    );
    assert!(
        !reason.contains("unexpectedly") && !reason.contains(".stderr"),
        "the peers are blamed: {reason}"
    );
    assert!(
        stdout.contains("(1 not run: stopped early by SIGTERM)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("the run was interrupted by SIGTERM"),
        "{stderr}"
    );
    assert!(survivors(tmp.path()).is_empty());
}

/// Runs `rpcarena run FILE --out DIR`; returns the exit status, stderr and the elapsed time.
fn run(file: &Path, dir: &Path) -> (std::process::ExitStatus, String, Duration) {
    let started = std::time::Instant::now();
    let out = Command::new(rpcarena())
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(dir)
        .output()
        .unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

#[test]
fn a_helper_that_escaped_the_group_is_killed_and_named() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    // The server starts a helper in its own session that keeps the server's stdout open.
    let file = with_server_wrapper(tmp.path(), "setsid sleep 147.5 &");
    let dir = tmp.path().join("run");
    let (status, stderr, elapsed) = run(&file, &dir);
    assert!(!status.success(), "{stderr}");
    // Before the fix: the teardown waited for the helper (147.5 s), and the reason was only
    // "did not print `end of output`".
    assert!(elapsed < Duration::from_secs(100), "{elapsed:?}\n{stderr}");
    let records = records(&dir);
    let reason = records[0].reason.as_deref().unwrap_or("");
    assert!(
        reason.contains("(sleep) left the server peer's process group, holding its output"),
        "{reason}"
    );
    let alive = Command::new("pgrep")
        .args(["-f", "sleep 147.5"])
        .output()
        .unwrap();
    assert!(alive.stdout.is_empty(), "the helper survived");
}

#[test]
fn a_peer_printing_an_endless_line_fails_its_sample_and_the_controller_stays_small() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    // 512 MiB without a newline: before the fix the controller allocated it all (2 GiB
    // aborted it).
    let file = with_server_wrapper(
        tmp.path(),
        "head -c 536870912 /dev/zero | tr '\\0' a; sleep 30",
    );
    let dir = tmp.path().join("run");
    let mut child = start(&file, &dir);
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Some(hwm) = std::fs::read_to_string(&status_path).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        }) {
            peak_kib = peak_kib.max(hwm);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_ne!(status.code(), Some(134), "the controller aborted");
    let records = records(&dir);
    assert_eq!(records.len(), 1);
    let reason = records[0].reason.as_deref().unwrap_or("");
    assert!(
        reason.contains("line longer than 1048576 bytes"),
        "{reason}"
    );
    assert!(
        reason.contains("aaaaaaaaaa"),
        "the first bytes are quoted: {reason}"
    );
    // The documented bound (docs/faults.md): 64 MiB whatever a peer prints.
    println!("controller peak RSS under a 512 MiB line: {peak_kib} KiB");
    assert!(peak_kib < 64 * 1024, "peak RSS {peak_kib} KiB");
    let raw = std::fs::metadata(dir.join(&records[0].raw).join("server.stdout"))
        .unwrap()
        .len();
    assert!(raw <= (16 << 20) + 200, "raw log of {raw} bytes");
    assert!(survivors(tmp.path()).is_empty());
}

#[test]
fn a_signal_during_the_load_gate_starts_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    // A load average of 0.001 is never reached: the gate holds the first sample.
    let text = campaign(
        &rust_peer(),
        1,
        "[noise]\nmax_load = 0.001\ngate_timeout = \"60s\"\n",
    );
    let file = write(tmp.path(), "c.toml", &text);
    let dir = tmp.path().join("run");
    let mut child = start(&file, &dir);
    assert!(wait_until(Duration::from_secs(20), || dir
        .join("samples.jsonl")
        .exists()));
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success());
    // Before the fix the peers started after the gate gave way, and a sample ran.
    assert_eq!(records(&dir).len(), 0);
    let started = std::fs::read_dir(dir.join("raw")).unwrap().count();
    assert_eq!(started, 0, "a sample started");
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("0 ok, 0 failed"), "{report}");
}

/// A tmpfs of `kib` KiB mounted on `dir` (root only), unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, kib: u64) -> Option<Tmpfs> {
        Tmpfs::mount_with(dir, &format!("size={kib}k"))
    }

    /// With mount `options` (`size=...`, `nr_inodes=...`).
    fn mount_with(dir: &Path, options: &str) -> Option<Tmpfs> {
        if !nix::unistd::geteuid().is_root() {
            return None;
        }
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_stops_the_run_with_every_record_whole() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let Some(disk) = Tmpfs::mount(&tmp.path().join("disk"), 512) else {
        assert!(
            std::env::var("CI").is_err(),
            "CI runs as root: mounting a tmpfs must work"
        );
        println!("SKIP: mounting a tmpfs needs root");
        return;
    };
    // Leave about 40 KiB: room for the manifest, certificates and a few samples, not six.
    let free = 40 * 1024;
    let filler = disk.0.join("filler");
    std::fs::write(&filler, vec![0u8; 512 * 1024 - free]).ok();
    let file = write(tmp.path(), "c.toml", &campaign(&rust_peer(), 6, ""));
    let dir = disk.0.join("run");
    let (status, stderr, _) = run(&file, &dir);
    assert!(!status.success(), "{stderr}");
    assert_ne!(
        status.code(),
        Some(101),
        "the controller panicked: {stderr}"
    );
    // Before the fix: a torn last line, and `rpcarena report` refused the whole file.
    assert!(stderr.contains("disk full: sample"), "{stderr}");
    let text = std::fs::read_to_string(dir.join("samples.jsonl")).unwrap_or_default();
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a torn line: {text}"
    );
    let whole = records(&dir).len();
    assert!(whole < 6, "the disk never filled up ({whole} records)");
    assert!(!dir.join("manifest.json.tmp").exists());
    // With room again, the report of the samples that fitted is made.
    std::fs::remove_file(&filler).unwrap();
    rpcarena_ok(&[OsStr::new("report"), dir.as_os_str()]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("6 planned"), "{report}");
    drop(disk);
    assert!(survivors(tmp.path()).is_empty());
}

/// Inodes in use on the file system of `path`.
fn inodes_used(path: &Path) -> u64 {
    let stat = nix::sys::statvfs::statvfs(path).unwrap();
    (stat.files() - stat.files_free()) as u64
}

/// Runs `file` (two samples) into `run/` on a tmpfs of `inodes` inodes; returns the run's
/// directory, exit status, stdout and stderr, and the mount (unmounted when dropped).
fn run_on_inodes(
    tmp: &Path,
    name: &str,
    file: &Path,
    inodes: u64,
) -> (PathBuf, std::process::Output, Tmpfs) {
    let disk = Tmpfs::mount_with(&tmp.join(name), &format!("size=64m,nr_inodes={inodes}"))
        .expect("mounting a tmpfs");
    let dir = disk.0.join("run");
    let out = Command::new(rpcarena())
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    (dir, out, disk)
}

#[test]
fn a_disk_that_fills_while_the_reports_and_interval_logs_are_written_is_told_not_sealed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    if !nix::unistd::geteuid().is_root() {
        assert!(
            std::env::var("CI").is_err(),
            "CI runs as root: mounting a tmpfs must work"
        );
        println!("SKIP: mounting a tmpfs needs root");
        return;
    }
    // A tmpfs whose inodes run out fills at a chosen file, whatever the files' sizes: a first
    // run counts the inodes a whole run takes, the next ones have fewer.
    let file = write(tmp.path(), "c.toml", &campaign(&rust_peer(), 2, ""));
    let (dir, out, disk) = run_on_inodes(tmp.path(), "whole", &file, 10_000);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = inodes_used(&dir);
    let logs = records(&dir).len() as u64;
    assert_eq!(logs, 2);
    full_disk_report(tmp.path(), &dir);
    drop(disk);
    // Before the end: all but the three reports and the two interval logs.
    let before_end = whole - 3 - logs;

    // Room for the reports and one interval log: the second log and the seal fail.
    let (dir, out, disk) = run_on_inodes(tmp.path(), "logs", &file, before_end + 4);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    // Before the fix: "writing interval logs in ...: ...: No space left on device (os error 28):
    // No space left on device (os error 28)", nothing on stdout, the manifest complete.
    let enospc = "No space left on device (os error 28)";
    let failed: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("was not written"))
        .collect();
    assert_eq!(failed.len(), 1, "{stderr}");
    assert!(
        failed[0].contains("latency.hlog was not written"),
        "{stderr}"
    );
    assert_eq!(failed[0].matches(enospc).count(), 1, "{stderr}");
    assert!(stderr.contains("sealing the manifest"), "{stderr}");
    assert!(stderr.contains("kept in"), "{stderr}");
    assert!(stdout.contains("report: "), "{stdout}");
    assert!(
        !stdout.contains("SHA-256"),
        "a manifest to publish: {stdout}"
    );
    let hlogs: Vec<u64> = std::fs::read_dir(dir.join("raw"))
        .unwrap()
        .flatten()
        .filter_map(|d| std::fs::metadata(d.path().join("latency.hlog")).ok())
        .map(|m| m.len())
        .collect();
    assert_eq!(hlogs.len(), 1, "{hlogs:?}");
    assert!(hlogs[0] > 0, "an empty interval log");
    drop(disk);

    // Room for one report only: report.md is not written and not announced.
    let (dir, out, disk) = run_on_inodes(tmp.path(), "reports", &file, before_end + 1);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(!dir.join("report.md").exists());
    assert!(
        stderr.contains(&format!("report.md was not written: {enospc}")),
        "{stderr}"
    );
    assert!(!stdout.contains("report: "), "{stdout}");
    assert!(!stdout.contains("report.md"), "{stdout}");
    assert!(!stdout.contains("SHA-256"), "{stdout}");
    assert_eq!(records(&dir).len(), 2, "the samples are kept");
    drop(disk);
    assert!(survivors(tmp.path()).is_empty());
}

/// `rpcarena report` of the run in `dir`, copied to a tmpfs then filled up: the reports' files
/// are created, their bytes do not fit; nothing of them is left and nothing says "wrote".
fn full_disk_report(tmp: &Path, dir: &Path) {
    let disk = Tmpfs::mount_with(&tmp.join("full"), "size=1m").expect("mounting a tmpfs");
    let copy = disk.0.join("run");
    std::fs::create_dir(&copy).unwrap();
    for name in ["manifest.json", "samples.jsonl"] {
        std::fs::copy(dir.join(name), copy.join(name)).unwrap();
    }
    let mut filler = std::fs::File::create(disk.0.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    drop(filler);
    let out = Command::new(rpcarena())
        .arg("report")
        .arg(&copy)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    // Before the fix: an empty aggregate.csv stayed behind.
    for name in ["aggregate.csv", "report.md", "report.html"] {
        assert!(!copy.join(name).exists(), "{name} left behind");
        assert!(
            stderr.contains(&format!("{name} was not written: No space left on device")),
            "{stderr}"
        );
    }
    assert!(!stdout.contains("wrote"), "{stdout}");
}
