//! `rpcarena conformance`: checks a peer against docs/peer-protocol.md and prints a pass/fail
//! table, each failure with the expected and the received value.
//!
//! `check` holds the pure check definitions and judges (what each check expects, how a
//! transcript of events and exits is judged); `shell` starts processes with the runner's
//! process code; `kit` runs the groups of checks; `samples` runs short samples of every
//! advertised combination through the campaign runner itself; `partners` chooses whom the peer
//! under test is paired with, per stack, group and role (the Rust peer, else the peer itself,
//! else another built peer; a peer with conformance faults for the validation groups). A group
//! with no partner is reported as not checked. Everything runs on loopback, in short windows
//! (200 ms).

pub mod check;
mod error;
mod kit;
pub mod partners;
mod samples;
mod shell;

pub use check::{CheckResult, Counts, Status};
pub use error::{Error, Result};
use partners::{Candidate, Need};
use rpcarena_protocol::event::{Capabilities, Role, StackCapability};
use rpcarena_runner::FileContext;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

/// A peer the kit may pair the peer under test with.
#[derive(Debug, Clone)]
pub struct PeerCommand {
    /// Its id (`rust`, a folder of peers/), shown in the rows' names.
    pub id: String,
    /// Its command (resolved).
    pub command: Vec<String>,
}

/// What to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The peer under test: its id (shown where it is its own partner) and command.
    pub peer: PeerCommand,
    /// The candidate partners, the Rust peer first (the reference: preferred over the peer
    /// itself, which is preferred over the others); their capabilities are queried once.
    pub partners: Vec<PeerCommand>,
    /// Only these stacks (empty: every stack the peer offers).
    pub stacks: Vec<String>,
    /// Only these groups (empty: all of [`GROUPS`]).
    pub groups: Vec<String>,
    /// Where the raw output goes (kept); default: a temporary directory, removed when every
    /// check passed.
    pub out: Option<PathBuf>,
    /// How many stacks are checked at once (0 or 1: one after another). More than one only
    /// without the `sample` group: its short samples pin the peers to CPUs and time their
    /// windows, which checks running beside them would disturb. The other groups judge what a
    /// peer prints and how it exits, with timeouts of seconds, so two stacks at once on two
    /// CPUs change only how long the kit takes.
    pub jobs: usize,
}

impl Options {
    fn wants(&self, group: &str) -> bool {
        self.groups.is_empty() || self.groups.iter().any(|g| g == group)
    }
}

/// The outcome: the rows, and where the raw output is (when kept).
#[derive(Debug)]
pub struct Outcome {
    /// One row per check.
    pub rows: Vec<CheckResult>,
    /// The raw output directory, when kept.
    pub kept: Option<PathBuf>,
}

const CAPABILITIES_TIMEOUT: Duration = Duration::from_secs(20);

/// Runs the checks.
pub fn run(options: &Options, log: &mut dyn FnMut(&str)) -> Result<Outcome> {
    check_jobs(options)?;
    let (dir, temp) = output_dir(options.out.as_deref())?;
    let mut rows = Vec::new();
    let caps = match rpcarena_runner::query_capabilities(
        "peer",
        &options.peer.command,
        CAPABILITIES_TIMEOUT,
    ) {
        Ok(c) => c,
        Err(e) => {
            rows.push(capabilities_line(Err(e)));
            return Ok(finish(rows, dir, temp));
        }
    };
    if options.wants("capabilities") {
        rows.push(capabilities_line(Ok(format!(
            "{} {} ({})",
            caps.peer, caps.version, caps.language
        ))));
        rows.extend(check::capabilities(&caps));
    }
    let mut bench = shell::Bench::new(&dir, options.peer.command.clone())?;
    bench.plaintext = plaintext_only(&caps);
    let kit = Kit {
        options,
        bench,
        candidates: query_candidates(&options.partners, log)?,
        peer: Candidate {
            id: options.peer.id.clone(),
            command: options.peer.command.clone(),
            caps,
        },
    };
    if options.wants("arguments") {
        log("arguments");
        rows.extend(kit::arguments(&kit.bench, &kit.peer.caps));
        if check::follows(&kit.peer.caps, "1.3") {
            rows.extend(kit::tls_arguments(&kit.bench, &kit.peer.caps));
        }
        if check::follows(&kit.peer.caps, "1.4") {
            rows.extend(kit::client_arguments_1_4(&kit.bench, &kit.peer.caps));
        }
    }
    let stacks = stacks(&kit.peer.caps, &options.stacks);
    if options.jobs > 1 {
        rows.extend(kit.stacks_at_once(&dir, &stacks, log)?);
    } else {
        for stack in &stacks {
            rows.extend(kit.stack(&dir, stack, log)?);
        }
    }
    Ok(finish(rows, dir, temp))
}

/// Refuses `jobs` above 1 with the `sample` group (see [`Options::jobs`]).
fn check_jobs(options: &Options) -> Result<()> {
    if options.jobs > 1 && options.wants("sample") {
        return Err(Error::Jobs { jobs: options.jobs });
    }
    Ok(())
}

/// The stacks the peer runs only without TLS (a stack entry whose `tls` lacks `on`, in either
/// role): `zmq`.
fn plaintext_only(caps: &Capabilities) -> std::collections::BTreeSet<String> {
    let roles = &caps.roles;
    roles
        .client
        .iter()
        .chain(&roles.server)
        .filter(|entry| !entry.takes_tls(true))
        .map(|entry| entry.stack.clone())
        .collect()
}

/// The raw output directory: `out` (created), or a temporary one (kept only on failure).
fn output_dir(out: Option<&Path>) -> Result<(PathBuf, Option<tempfile::TempDir>)> {
    Ok(match out {
        Some(d) => {
            std::fs::create_dir_all(d).file("creating", d)?;
            (d.to_path_buf(), None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("rpcarena-conformance-")
                .tempdir()
                .file("creating a temporary directory in", &std::env::temp_dir())?;
            (t.path().to_path_buf(), Some(t))
        }
    })
}

/// The first capabilities row: the line parsed, or why not.
fn capabilities_line(received: std::result::Result<String, String>) -> CheckResult {
    CheckResult::new(
        "capabilities",
        "one valid capabilities line, exit 0",
        "a capabilities event of protocol 1, exit 0",
        received,
    )
}

/// The candidates' capabilities, each queried once. The first (the Rust peer, the reference)
/// must answer; another that does not is skipped with a log line.
fn query_candidates(partners: &[PeerCommand], log: &mut dyn FnMut(&str)) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for (i, p) in partners.iter().enumerate() {
        match rpcarena_runner::query_capabilities(&p.id, &p.command, CAPABILITIES_TIMEOUT) {
            Ok(caps) => out.push(Candidate {
                id: p.id.clone(),
                command: p.command.clone(),
                caps,
            }),
            Err(e) if i == 0 => {
                return Err(Error::Reference {
                    id: p.id.clone(),
                    reason: e,
                });
            }
            Err(e) => log(&format!(
                "partner {} skipped: its capabilities failed: {e}",
                p.id
            )),
        }
    }
    Ok(out)
}

/// The stacks the peer offers in either role, narrowed to `only`, sorted, once each.
fn stacks(caps: &Capabilities, only: &[String]) -> Vec<String> {
    let mut stacks: Vec<String> = caps
        .roles
        .client
        .iter()
        .chain(&caps.roles.server)
        .map(|s| s.stack.clone())
        .filter(|s| only.is_empty() || only.contains(s))
        .collect();
    stacks.sort();
    stacks.dedup();
    stacks
}

/// Everything one run needs once the capabilities are known.
struct Kit<'a> {
    options: &'a Options,
    bench: shell::Bench,
    peer: Candidate,
    candidates: Vec<Candidate>,
}

impl Kit<'_> {
    /// The partner of `group` for the peer as `role` on `stack`, or the row saying the group is
    /// not checked for that role, and why.
    fn partner(
        &self,
        group: &'static str,
        role: Role,
        stack: &str,
        need: Need,
    ) -> std::result::Result<&Candidate, CheckResult> {
        let partner_role = partners::opposite(role);
        partners::choose(&self.peer, &self.candidates, partner_role, stack, need).map_err(
            |reason| {
                CheckResult::not_checked(
                    group,
                    format!("{} {stack}", partners::role_name(role)),
                    format!(
                        "a {} of {stack}{} to pair with: the Rust peer, the peer itself or a built peer of peers/",
                        partners::role_name(partner_role),
                        match need {
                            Need::Offers => "",
                            Need::Faults => " declaring conformance faults",
                            Need::Plaintext => " that takes --tls off",
                        }
                    ),
                    reason,
                )
            },
        )
    }

    /// The groups of every stack in `stacks`, `options.jobs` stacks at a time; the rows in the
    /// order of `stacks`, each worker's log lines passed on as they come.
    fn stacks_at_once(
        &self,
        dir: &Path,
        stacks: &[String],
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<CheckResult>> {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let done = std::sync::Mutex::new((0..stacks.len()).map(|_| None).collect::<Vec<_>>());
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::scope(|scope| {
            for _ in 0..self.options.jobs.min(stacks.len()) {
                let tx = tx.clone();
                let (next, done) = (&next, &done);
                scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(stack) = stacks.get(i) else { break };
                        let rows = self.stack(dir, stack, &mut |line| {
                            let _ = tx.send(line.to_string());
                        });
                        done.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(rows);
                    }
                });
            }
            drop(tx);
            for line in rx {
                log(&line);
            }
        });
        let done = done.into_inner().unwrap_or_else(|e| e.into_inner());
        let mut rows = Vec::new();
        for stack_rows in done.into_iter().flatten() {
            rows.extend(stack_rows?);
        }
        Ok(rows)
    }

    /// The groups of one stack, in order.
    fn stack(
        &self,
        dir: &Path,
        stack: &str,
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<CheckResult>> {
        let mut rows = Vec::new();
        let roles = &self.peer.caps.roles;
        let client = roles.stack(Role::Client, stack).is_some();
        let server = roles.stack(Role::Server, stack).is_some();
        if self.options.wants("sample") {
            log(&format!("{stack}: samples"));
            rows.extend(self.samples(dir, stack, (client, server), log)?);
        }
        if self.options.wants("lifecycle") {
            log(&format!("{stack}: lifecycle"));
            rows.extend(self.lifecycle(stack, (client, server)));
        }
        if self.options.wants("tls") {
            log(&format!("{stack}: tls"));
            rows.extend(self.tls(stack, (client, server)));
        }
        for role in [Role::Client, Role::Server] {
            rows.extend(self.validation(stack, role, log));
        }
        Ok(rows)
    }

    /// The TLS group: a wrong CA and a wrong name refused (client), and (1.3) a sample each way
    /// with `--tls off` where the stack takes it; skipped, with the reason, on a plaintext-only
    /// stack.
    fn tls(&self, stack: &str, (client, _server): (bool, bool)) -> Vec<CheckResult> {
        if !self.bench.tls(stack) {
            let reason = format!(
                "{stack} has no TLS (docs/stacks.md): it runs only with --tls off, which every other group uses"
            );
            return vec![CheckResult::skipped("tls", format!("{stack}: TLS"), reason)];
        }
        let mut rows = Vec::new();
        if client {
            match self.partner("tls", Role::Client, stack, Need::Offers) {
                Ok(p) => rows.extend(kit::tls(&self.bench, stack, p)),
                Err(row) => rows.push(row),
            }
        }
        let takes_off = |role: Role| {
            let entry = self.peer.caps.roles.stack(role, stack);
            entry.is_some_and(|e| e.takes_tls(false))
        };
        let mut pick = |role: Role| {
            if !takes_off(role) {
                return None;
            }
            let partner = self.partner("tls", role, stack, Need::Plaintext);
            partner.map_err(|row| rows.push(row)).ok()
        };
        let pair = (pick(Role::Server), pick(Role::Client));
        rows.extend(kit::plaintext(&self.bench, stack, pair));
        rows
    }

    /// The lifecycle group: the client against a server partner, the server alone; a 1.2 peer
    /// also on the window commands (a 1.1 peer fails the revision row and skips them).
    fn lifecycle(&self, stack: &str, (client, server): (bool, bool)) -> Vec<CheckResult> {
        let mut rows = Vec::new();
        let window = check::follows_1_2(&self.peer.caps);
        if client {
            match self.partner("lifecycle", Role::Client, stack, Need::Offers) {
                Ok(p) => rows.extend(kit::client_lifecycle(&self.bench, stack, p, window)),
                Err(row) => rows.push(row),
            }
        }
        if server {
            rows.extend(kit::server_lifecycle(&self.bench, stack));
            if window {
                let declared = self.peer.caps.allocations.as_ref();
                rows.push(kit::server_window(&self.bench, stack, declared));
            }
        }
        rows
    }

    /// The sample group: the peer as client against the chosen server, as server against the
    /// chosen client; a role without a partner is one row not checked.
    fn samples(
        &self,
        dir: &Path,
        stack: &str,
        (client, server): (bool, bool),
        log: &mut dyn FnMut(&str),
    ) -> Result<Vec<CheckResult>> {
        let mut rows = Vec::new();
        let mut pick = |offered: bool, role: Role| {
            if !offered {
                return None;
            }
            self.partner("sample", role, stack, Need::Offers)
                .map_err(|row| rows.push(row))
                .ok()
        };
        let partners = (pick(client, Role::Client), pick(server, Role::Server));
        rows.extend(samples::run(dir, stack, &self.peer, partners, log)?);
        Ok(rows)
    }

    /// The validation group of `role` (client-validation, server-validation) on `stack`, when
    /// the peer offers the role: the shapes it and a partner with faults both offer, and a row
    /// not checked for the partner, or for the shapes it does not offer, when missing.
    fn validation(&self, stack: &str, role: Role, log: &mut dyn FnMut(&str)) -> Vec<CheckResult> {
        let group = match role {
            Role::Client => "client-validation",
            Role::Server => "server-validation",
        };
        let Some(ours) = self.peer.caps.roles.stack(role, stack) else {
            return Vec::new();
        };
        if !self.options.wants(group) {
            return Vec::new();
        }
        log(&format!("{stack}: {}", group.replace('-', " ")));
        let partner = match self.partner(group, role, stack, Need::Faults) {
            Ok(p) => p,
            Err(row) => return vec![row],
        };
        let theirs = partners::entry(partner, partners::opposite(role), stack);
        let offered =
            |e: Option<&StackCapability>, x: &String| e.is_some_and(|e| e.shapes.contains(x));
        // pingpong's validation is bidi's (the same Bidi RPC and faults): the bidi rows check it
        let (shapes, missing): (Vec<String>, Vec<String>) = ours
            .shapes
            .iter()
            .filter(|s| s.as_str() != "pingpong")
            .cloned()
            .partition(|s| offered(theirs, s));
        let takes = |kind: &str| {
            [Some(ours), theirs]
                .iter()
                .all(|e| e.is_some_and(|e| e.payloads.iter().any(|p| p == kind)))
        };
        let kinds = kit::Kinds {
            structured: takes("structured"),
            dated: takes("dated"),
        };
        let mut rows = match role {
            Role::Client => kit::client_validation(&self.bench, stack, (&shapes, kinds), partner),
            Role::Server => kit::server_validation(&self.bench, stack, (&shapes, kinds), partner),
        };
        if !missing.is_empty() {
            rows.push(CheckResult::not_checked(
                group,
                format!(
                    "{} {stack} vs {}: {}",
                    partners::role_name(role),
                    partner.id,
                    missing.join(", ")
                ),
                "every shape the peer offers, against a partner with conformance faults",
                format!(
                    "{} does not offer {} as a {} of {stack}",
                    partner.id,
                    missing.join(", "),
                    partners::role_name(partners::opposite(role))
                ),
            ));
        }
        rows
    }
}

fn finish(rows: Vec<CheckResult>, dir: PathBuf, temp: Option<tempfile::TempDir>) -> Outcome {
    let failed = !check::Counts::of(&rows).done();
    let kept = match temp {
        Some(t) if failed => Some(t.keep()),
        Some(_) => None,
        None => Some(dir),
    };
    Outcome { rows, kept }
}
