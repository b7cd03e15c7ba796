//! Helpers shared by the end-to-end tests: where the binaries are, what a run wrote, and which
//! of a test's processes are still alive.
#![allow(dead_code)] // each test binary uses its own subset

use rpcarena_fixtures::CampaignText;
use rpcarena_model::record::SampleRecord;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// The controller under test.
pub fn rpcarena() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_rpcarena"))
}

/// Runs the controller with `args` and returns what it printed; a failure shows its stdout and
/// stderr (`verify` says why on stdout, everything else on stderr).
pub fn rpcarena_ok<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let out = Command::new(rpcarena()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "rpcarena {:?} failed\nstdout:\n{}\nstderr:\n{}",
        args.iter().map(|a| a.as_ref()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `text` with the Rust peer and one same-language cell per stack (`rust-grpc`, `rust-quic`,
/// `rust-tcp`).
pub fn rust_peer_on_every_stack(text: CampaignText) -> CampaignText {
    text.peer("rust", &[&peer().display().to_string()])
        .cells("rust", &["grpc", "quic", "tcp"])
}

/// The Rust peer, built next to the controller by `cargo test --workspace`.
pub fn peer() -> PathBuf {
    let path = rpcarena().with_file_name("rpcarena-peer-rust");
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test --workspace` so the peer is built",
        path.display()
    );
    path
}

/// The records of a run directory's samples.jsonl (none if it does not exist yet).
pub fn records(dir: &Path) -> Vec<SampleRecord> {
    std::fs::read_to_string(dir.join("samples.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Processes whose command line mentions `marker` (a test's temporary directory, which every
/// peer of the test has in its arguments): none may survive a run.
pub fn survivors(marker: &Path) -> Vec<String> {
    let marker = marker.display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            (pid != std::process::id() && cmdline.contains(&marker))
                .then(|| format!("{pid}: {cmdline}"))
        })
        .collect()
}

/// Polls `done` until it holds or `limit` passes.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}
