//! `rpcarena conformance`: checks a peer against docs/peer-protocol.md and prints a pass/fail
//! table, each failure with the expected and the received value.
//!
//! `check` holds the pure check definitions and judges (what each check expects, how a
//! transcript of events and exits is judged); `shell` starts processes with the runner's
//! process code; `kit` runs the groups of checks; `samples` runs short samples of every
//! advertised combination through the campaign runner itself. Everything runs on loopback,
//! pairing the peer under test with the Rust peer, in short windows (200 ms).

pub mod check;
mod kit;
mod samples;
mod shell;

use anyhow::{Context, Result};
pub use check::CheckResult;
use rpcarena_protocol::event::Role;
use std::path::PathBuf;

/// The groups of checks, in the order they run.
pub const GROUPS: [&str; 7] = [
    "capabilities",
    "arguments",
    "sample",
    "lifecycle",
    "tls",
    "client-validation",
    "server-validation",
];

/// What to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The peer under test's command (resolved).
    pub peer: Vec<String>,
    /// The Rust peer's command (resolved): the partner of every check.
    pub rust: Vec<String>,
    /// Only these stacks (empty: every stack the peer offers).
    pub stacks: Vec<String>,
    /// Only these groups (empty: all of [`GROUPS`]).
    pub groups: Vec<String>,
    /// Where the raw output goes (kept); default: a temporary directory, removed when every
    /// check passed.
    pub out: Option<PathBuf>,
}

/// The outcome: the rows, and where the raw output is (when kept).
#[derive(Debug)]
pub struct Outcome {
    /// One row per check.
    pub rows: Vec<CheckResult>,
    /// The raw output directory, when kept.
    pub kept: Option<PathBuf>,
}

/// Runs the checks.
pub fn run(options: &Options, log: &mut dyn FnMut(&str)) -> Result<Outcome> {
    let (dir, temp) = match &options.out {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
            (d.clone(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("rpcarena-conformance-")
                .tempdir()
                .context("creating a temporary directory")?;
            (t.path().to_path_buf(), Some(t))
        }
    };
    let wants = |g: &str| options.groups.is_empty() || options.groups.iter().any(|x| x == g);
    let mut rows = Vec::new();
    let caps = match rpcarena_runner::query_capabilities(
        "peer",
        &options.peer,
        std::time::Duration::from_secs(20),
    ) {
        Ok(c) => c,
        Err(e) => {
            rows.push(CheckResult::new(
                "capabilities",
                "one valid capabilities line, exit 0",
                "a capabilities event of protocol 1, exit 0",
                Err(e),
            ));
            return Ok(finish(rows, dir, temp));
        }
    };
    if wants("capabilities") {
        rows.push(CheckResult::new(
            "capabilities",
            "one valid capabilities line, exit 0",
            "a capabilities event of protocol 1, exit 0",
            Ok(format!(
                "{} {} ({})",
                caps.peer, caps.version, caps.language
            )),
        ));
        rows.extend(check::capabilities(&caps));
    }
    let rust_caps = rpcarena_runner::query_capabilities(
        "rust",
        &options.rust,
        std::time::Duration::from_secs(20),
    )
    .map_err(|e| anyhow::anyhow!("the Rust peer, the partner of every check: {e}"))?;
    let bench = shell::Bench::new(&dir, options.peer.clone(), options.rust.clone())?;
    if wants("arguments") {
        log("arguments");
        rows.extend(kit::arguments(&bench, &caps));
    }
    let mut stacks: Vec<String> = caps
        .roles
        .client
        .iter()
        .chain(&caps.roles.server)
        .map(|s| s.stack.clone())
        .filter(|s| options.stacks.is_empty() || options.stacks.contains(s))
        .collect();
    stacks.sort();
    stacks.dedup();
    for stack in &stacks {
        let client = caps.roles.stack(Role::Client, stack);
        let server = caps.roles.stack(Role::Server, stack);
        if wants("sample") {
            log(&format!("{stack}: samples"));
            rows.extend(samples::run(
                &dir,
                stack,
                (&options.peer, &caps),
                (&options.rust, &rust_caps),
                log,
            )?);
        }
        if wants("lifecycle") {
            log(&format!("{stack}: lifecycle"));
            if client.is_some() {
                rows.extend(kit::client_lifecycle(&bench, stack));
            }
            if server.is_some() {
                rows.extend(kit::server_lifecycle(&bench, stack));
            }
        }
        if wants("tls") && client.is_some() {
            log(&format!("{stack}: tls"));
            rows.extend(kit::tls(&bench, stack));
        }
        if let Some(c) = client
            && wants("client-validation")
        {
            log(&format!("{stack}: client validation"));
            let structured = c.payloads.iter().any(|p| p == "structured");
            rows.extend(kit::client_validation(&bench, stack, &c.shapes, structured));
        }
        if let Some(s) = server
            && wants("server-validation")
        {
            log(&format!("{stack}: server validation"));
            let structured = s.payloads.iter().any(|p| p == "structured");
            rows.extend(kit::server_validation(&bench, stack, &s.shapes, structured));
        }
    }
    Ok(finish(rows, dir, temp))
}

fn finish(rows: Vec<CheckResult>, dir: PathBuf, temp: Option<tempfile::TempDir>) -> Outcome {
    let failed = rows.iter().any(|r| !r.passed);
    let kept = match temp {
        Some(t) if failed => Some(t.keep()),
        Some(_) => None,
        None => Some(dir),
    };
    Outcome { rows, kept }
}
