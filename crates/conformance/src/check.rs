//! Pure check definitions: what each check expects and how a transcript (the events a peer
//! printed and how it exited) is judged. No process is started here.

use rpcarena_protocol::event::{
    AllocationCounters, Capabilities, Edge, Event, PROFILERS, StackCapability, WindowReport, code,
    load,
};
use rpcarena_protocol::workload::{ClientMode, Payload, Shape};
use serde::Serialize;

/// The verdict of one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    /// The peer did what the page says.
    #[serde(rename = "passed")]
    Passed,
    /// It did not.
    #[serde(rename = "failed")]
    Failed,
    /// The kit could not run the check (no partner for it): not a failure, but not done.
    #[serde(rename = "not checked")]
    NotChecked,
    /// The group does not apply to this stack (TLS on `zmq`, which has none): done, said why.
    #[serde(rename = "skipped")]
    Skipped,
}

/// One row of the conformance table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    /// The group: `capabilities`, `arguments`, `sample`, `lifecycle`, `tls`,
    /// `client-validation`, `server-validation`.
    pub group: &'static str,
    /// What was checked, e.g. `client grpc vs rust: SHUTDOWN while armed`.
    pub name: String,
    /// Passed, failed or not checked.
    pub status: Status,
    /// What the page expects.
    pub expected: String,
    /// What the peer did (not checked: why the kit could not run it).
    pub received: String,
}

impl CheckResult {
    /// A row from a verdict.
    pub fn new(
        group: &'static str,
        name: impl Into<String>,
        expected: impl Into<String>,
        received: Result<String, String>,
    ) -> CheckResult {
        let (status, received) = match received {
            Ok(r) => (Status::Passed, r),
            Err(r) => (Status::Failed, r),
        };
        CheckResult {
            group,
            name: name.into(),
            status,
            expected: expected.into(),
            received,
        }
    }

    /// A row the kit could not run, with the reason (which partner is missing).
    pub fn not_checked(
        group: &'static str,
        name: impl Into<String>,
        expected: impl Into<String>,
        reason: impl Into<String>,
    ) -> CheckResult {
        CheckResult {
            group,
            name: name.into(),
            status: Status::NotChecked,
            expected: expected.into(),
            received: reason.into(),
        }
    }

    /// A group that does not apply to this stack, with the reason.
    pub fn skipped(
        group: &'static str,
        name: impl Into<String>,
        reason: impl Into<String>,
    ) -> CheckResult {
        CheckResult {
            group,
            name: name.into(),
            status: Status::Skipped,
            expected: "does not apply".into(),
            received: reason.into(),
        }
    }

    /// Whether the peer passed this check.
    pub fn passed(&self) -> bool {
        self.status == Status::Passed
    }
}

/// What a peer process did: its events in order, and its exit.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// Every valid event, in order.
    pub events: Vec<Event>,
    /// Lines that were not valid events (with why).
    pub malformed: Vec<String>,
    /// The exit code; `None`: killed by a signal or still running at the bound.
    pub exit: Option<i32>,
    /// The peer had to be killed: it did not exit within the bound.
    pub hung: bool,
}

impl Transcript {
    /// "armed, sample, stopped; exit 0".
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .events
            .iter()
            .map(|e| match e {
                Event::Error(err) => format!(
                    "error phase {} code {} ({})",
                    err.phase,
                    err.code,
                    err.message.chars().take(160).collect::<String>()
                ),
                other => other.name().to_string(),
            })
            .collect();
        parts.extend(
            self.malformed
                .iter()
                .map(|m| format!("malformed line: {m}")),
        );
        let events = if parts.is_empty() {
            "no event".to_string()
        } else {
            parts.join(", ")
        };
        let exit = match (self.hung, self.exit) {
            (true, _) => "still running at the bound (killed)".to_string(),
            (false, Some(c)) => format!("exit {c}"),
            (false, None) => "killed by a signal".to_string(),
        };
        format!("{events}; {exit}")
    }

    fn has(&self, name: &str) -> bool {
        self.events.iter().any(|e| e.name() == name)
    }
}

/// `error` with `phase` (any of `phases`) and `code`, then exit `exit`; nothing malformed.
pub fn expect_error(
    t: &Transcript,
    phases: &[&str],
    code: &str,
    exit: i32,
) -> Result<String, String> {
    let error = t.events.iter().find_map(|e| match e {
        Event::Error(err) => Some(err),
        _ => None,
    });
    let ok = matches!(error, Some(err) if phases.contains(&err.phase.as_str()) && err.code == code)
        && t.exit == Some(exit)
        && !t.hung
        && t.malformed.is_empty()
        && !t.has("stopped")
        && !t.has("sample");
    if ok {
        Ok(t.describe())
    } else {
        Err(t.describe())
    }
}

/// The text of [`expect_error`]'s expectation.
pub fn error_expectation(phases: &[&str], code: &str, exit: i32) -> String {
    format!("error phase {} code {code}; exit {exit}", phases.join("|"))
}

/// The problems of every transport object in the transcript (the client's in `sample`, the
/// server's in `stopped`), by the controller's own check of them.
pub fn transport_problems(t: &Transcript) -> Vec<String> {
    t.events
        .iter()
        .filter_map(|e| match e {
            Event::Sample(s) => s.transport.as_deref().map(|x| ("sample", x)),
            Event::Stopped(s) => s.transport.as_deref().map(|x| ("stopped", x)),
            _ => None,
        })
        .flat_map(|(event, x)| {
            x.problems()
                .into_iter()
                .map(move |p| format!("`{event}`: {p}"))
        })
        .collect()
}

/// `stopped` (no `sample` when `sample` is false), exit 0, within the bound; a transport
/// object, where present, well formed.
pub fn expect_stopped(t: &Transcript, sample: bool) -> Result<String, String> {
    let transport = transport_problems(t);
    if !transport.is_empty() {
        return Err(format!("{}; {}", t.describe(), transport.join("; ")));
    }
    let ok = t.has("stopped")
        && t.exit == Some(0)
        && !t.hung
        && t.malformed.is_empty()
        && !t.has("error")
        && t.has("sample") == sample
        && matches!(t.events.last(), Some(Event::Stopped(_)));
    if ok {
        Ok(t.describe())
    } else {
        Err(t.describe())
    }
}

/// Judges a server's answers to `WINDOW START` (`start`) and `WINDOW END` (`end`), each `None`
/// when none came in time: the edge of each, counters (and allocation figures) that do not go
/// backwards, the allocation fields present exactly as `declared` in `capabilities`.
pub fn window_answers(
    start: Option<&WindowReport>,
    end: Option<&WindowReport>,
    declared: Option<&AllocationCounters>,
) -> Result<String, String> {
    let mut problems = Vec::new();
    for (want, got) in [(Edge::Start, start), (Edge::End, end)] {
        let command = want.command().as_str();
        match got {
            None => problems.push(format!("no window event within 2 s of {command}")),
            Some(w) if w.edge != want => problems.push(format!(
                "{command} answered with edge {:?}, {:?} expected",
                w.edge.as_str(),
                want.as_str()
            )),
            Some(w) => problems.extend(allocation_fields(&format!("window ({want})"), w, declared)),
        }
    }
    let (Some(start), Some(end)) = (start, end) else {
        return Err(problems.join("; "));
    };
    let mut figures: Vec<(String, Option<u64>, Option<u64>)> = start
        .counters
        .iter()
        .map(|(k, v)| {
            (
                format!("counter {k}"),
                Some(*v),
                end.counters.get(k).copied(),
            )
        })
        .collect();
    figures.push(("allocations".into(), start.allocations, end.allocations));
    figures.push((
        "allocated_bytes".into(),
        start.allocated_bytes,
        end.allocated_bytes,
    ));
    for (field, at_start, at_end) in &figures {
        match (at_start, at_end) {
            (Some(s), Some(e)) if e < s => problems.push(format!(
                "{field} went backwards over the window: {s} at WINDOW START, {e} at WINDOW END"
            )),
            (Some(s), None) if field.starts_with("counter") => problems.push(format!(
                "{field} is {s} at WINDOW START but missing at WINDOW END"
            )),
            _ => {}
        }
    }
    if problems.is_empty() {
        let shown: Vec<String> = figures
            .iter()
            .filter_map(|(f, s, e)| Some(format!("{f} {} -> {}", (*s)?, (*e)?)))
            .collect();
        Ok(format!("start and end answered; {}", shown.join(", ")))
    } else {
        Err(problems.join("; "))
    }
}

/// The allocation fields of a `window` answer against the declaration: each present exactly
/// when declared.
fn allocation_fields(
    event: &str,
    w: &WindowReport,
    declared: Option<&AllocationCounters>,
) -> Vec<String> {
    let (counts, bytes) = declared.map_or((false, false), |d| (d.counts, d.bytes));
    let mut problems = Vec::new();
    for (field, wanted, present) in [
        ("allocations", counts, w.allocations.is_some()),
        ("allocated_bytes", bytes, w.allocated_bytes.is_some()),
    ] {
        if wanted && !present {
            problems.push(format!(
                "`{event}` has no {field}, which capabilities declares"
            ));
        } else if present && !wanted {
            problems.push(format!(
                "`{event}` has {field}, which capabilities does not declare"
            ));
        }
    }
    problems
}

/// The capabilities event: revision 1.2, every field typed (parsing did that), every name one
/// the page knows, each stack once per role, the 1.1 declarations present, and the allocation
/// counters (1.2) declared with their source.
pub fn capabilities(caps: &Capabilities) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    let row = |name: &str, expected: &str, got: Result<String, String>| {
        CheckResult::new("capabilities", name, expected, got)
    };
    rows.push(row(
        "revision",
        "\"1.5\" (or \"1.4\": 1.5 only adds the optional `profiler`)",
        match caps.revision.as_deref() {
            Some(r @ (REVISION | "1.4")) => Ok(format!("{r:?}")),
            Some(other) => Err(format!("{other:?}")),
            None => Err("absent (1.0)".into()),
        },
    ));
    let named = |what: &str, v: &str| {
        if v.trim().is_empty() {
            Err(format!("empty {what}"))
        } else {
            Ok(v.to_string())
        }
    };
    rows.push(row("peer", "a name", named("peer", &caps.peer)));
    rows.push(row(
        "language",
        "a language",
        named("language", &caps.language),
    ));
    rows.push(row("version", "a version", named("version", &caps.version)));
    rows.push(row(
        "build",
        "at least one entry (toolchain, flags, runtime)",
        if caps.build.is_empty() {
            Err("absent".into())
        } else {
            Ok(caps.build.keys().cloned().collect::<Vec<_>>().join(", "))
        },
    ));
    rows.push(row(
        "files",
        "absolute paths that exist",
        files(&caps.files),
    ));
    rows.push(row(
        "allocations",
        "absent (no counters), or counts and bytes declared with a non-empty source (1.2)",
        allocations(caps.allocations.as_ref()),
    ));
    rows.push(row(
        "profiler",
        "absent (none), or one the page knows: \"perf\" (1.5)",
        profiler(caps.profiler.as_deref()),
    ));
    for (role, list) in [
        ("client", &caps.roles.client),
        ("server", &caps.roles.server),
    ] {
        for entry in list {
            rows.push(row(
                &format!("{role} {}", entry.stack),
                "a stack name of docs/stacks.md listed once, known shapes, load models (clients; [] for servers), payloads; libraries, settings and deviations declared",
                stack_entry(role, entry, list),
            ));
        }
    }
    if caps.roles.client.is_empty() && caps.roles.server.is_empty() {
        rows.push(row(
            "roles",
            "at least one stack in a role",
            Err("none".into()),
        ));
    }
    rows
}

/// The revision of docs/peer-protocol.md the kit checks.
pub const REVISION: &str = "1.5";

/// (1.5) The declared profiler: absent, or a name of [`PROFILERS`].
fn profiler(declared: Option<&str>) -> Result<String, String> {
    match declared {
        None => Ok("none declared".to_string()),
        Some(p) if PROFILERS.contains(&p) => Ok(format!("{p:?}")),
        Some(p) => Err(format!(
            "{p:?}, which docs/peer-protocol.md does not know (known: {})",
            PROFILERS.join(", ")
        )),
    }
}

/// Whether the peer follows revision 1.2 or later (window commands, allocation counters).
pub fn follows_1_2(caps: &Capabilities) -> bool {
    follows(caps, "1.2")
}

/// Whether the peer's revision is `at_least` or later ("1.3" follows "1.2"); absent is 1.0.
pub fn follows(caps: &Capabilities, at_least: &str) -> bool {
    let minor = |r: &str| r.strip_prefix("1.").and_then(|m| m.parse::<u32>().ok());
    let have = caps.revision.as_deref().map_or(Some(0), minor);
    matches!((have, minor(at_least)), (Some(h), Some(w)) if h >= w)
}

fn allocations(declared: Option<&AllocationCounters>) -> Result<String, String> {
    let Some(a) = declared else {
        return Ok("none declared".to_string());
    };
    if a.source.trim().is_empty() {
        return Err(format!(
            "counts {}, bytes {}, but an empty source: name the counter (e.g. \"runtime.ReadMemStats Mallocs and TotalAlloc\")",
            a.counts, a.bytes
        ));
    }
    Ok(format!(
        "counts {}, bytes {}: {}",
        a.counts, a.bytes, a.source
    ))
}

fn files(files: &[String]) -> Result<String, String> {
    if files.is_empty() {
        return Err("none declared".into());
    }
    let bad: Vec<&String> = files
        .iter()
        .filter(|f| !f.starts_with('/') || !std::path::Path::new(f).exists())
        .collect();
    if bad.is_empty() {
        Ok(files.join(", "))
    } else {
        Err(format!(
            "not absolute or missing: {}",
            bad.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }
}

/// Revision 1.3's declarations of a stack entry: `tls` values the page knows and the stack can
/// take, and `not_offered` only for shapes it does not list, each with a reason.
fn tls_and_not_offered(entry: &StackCapability) -> Vec<String> {
    let mut problems = Vec::new();
    for value in &entry.tls {
        if !["on", "off"].contains(&value.as_str()) {
            problems.push(format!("tls value {value:?}: expected \"on\" or \"off\""));
        }
    }
    let tls_refused = |tls: bool| {
        let (stack, tls) = (entry.stack.as_str(), tls);
        rpcarena_model::campaign::tls_refusal(stack, tls).is_some() && entry.takes_tls(tls)
    };
    if tls_refused(true) || tls_refused(false) {
        problems.push(format!(
            "tls {:?}: quic takes only \"on\" and zmq only \"off\" (docs/stacks.md)",
            entry.tls
        ));
    }
    for (shape, why) in &entry.not_offered {
        if entry.shapes.contains(shape) || why.trim().is_empty() {
            problems.push(format!(
                "not_offered.{shape}: a shape the entry does not list, with a reason"
            ));
        }
    }
    problems
}

/// Payload kinds the page knows (1.4: `dated` only with `unary`), and (1.4) client modes the
/// page knows, listed by clients only and always with `official`.
fn payloads_and_client_modes(role: &str, entry: &StackCapability) -> Vec<String> {
    let mut problems = Vec::new();
    for payload in &entry.payloads {
        if payload.parse::<Payload>().is_err() {
            problems.push(format!("unknown payload {payload:?}"));
        }
    }
    if entry.payloads.iter().any(|p| p == "dated") && !entry.shapes.iter().any(|s| s == "unary") {
        problems
            .push("payload dated is a unary procedure, but the entry lists no unary".to_string());
    }
    for mode in &entry.client_modes {
        if mode.parse::<ClientMode>().is_err() {
            problems.push(format!(
                "unknown client mode {mode:?}: expected official or replay"
            ));
        }
    }
    if !entry.client_modes.is_empty() && role != "client" {
        problems.push("client_modes on a server entry: only clients have modes".to_string());
    }
    if !entry.client_modes.is_empty() && !entry.client_modes.iter().any(|m| m == "official") {
        problems
            .push("client_modes without \"official\", the default every client takes".to_string());
    }
    problems
}

fn stack_entry(
    role: &str,
    entry: &StackCapability,
    list: &[StackCapability],
) -> Result<String, String> {
    let mut problems = Vec::new();
    if !stack_name_ok(&entry.stack) {
        problems.push(format!(
            "stack name {:?} is not of the form of docs/stacks.md (lowercase letters, digits and '-', e.g. \"netrpc-gob\")",
            entry.stack
        ));
    }
    if list.iter().filter(|e| e.stack == entry.stack).count() > 1 {
        problems.push("listed more than once".to_string());
    }
    for shape in &entry.shapes {
        if !Shape::EVERY.iter().any(|s| s.as_str() == shape) {
            problems.push(format!("unknown shape {shape:?}"));
        }
    }
    if entry.shapes.is_empty() {
        problems.push("no shape".to_string());
    }
    match role {
        "client" => {
            for model in &entry.load_models {
                if !load::ALL.contains(&model.as_str()) {
                    problems.push(format!("unknown load model {model:?}"));
                }
            }
            if entry.load_models.is_empty() {
                problems.push("no load model".to_string());
            }
        }
        _ => {
            if !entry.load_models.is_empty() {
                problems.push(format!(
                    "load_models {:?} but [] expected for a server",
                    entry.load_models
                ));
            }
        }
    }
    problems.extend(tls_and_not_offered(entry));
    problems.extend(payloads_and_client_modes(role, entry));
    if entry.libraries.is_empty() {
        problems.push("no libraries".to_string());
    }
    if entry.settings.is_empty() {
        problems.push("no settings (1.1)".to_string());
    }
    if entry.deviations.is_none() {
        problems.push("no deviations list (1.1; [] when none)".to_string());
    }
    if problems.is_empty() {
        Ok(format!(
            "shapes {}; load {}; payloads {}",
            entry.shapes.join(","),
            if entry.load_models.is_empty() {
                "[]".to_string()
            } else {
                entry.load_models.join(",")
            },
            if entry.payloads.is_empty() {
                "zeros".to_string()
            } else {
                entry.payloads.join(",")
            }
        ))
    } else {
        Err(problems.join("; "))
    }
}

/// The Rust server's fault modes and the code the client under test must fail with, for the
/// shapes each applies to (crates/peer/src/fault.rs).
pub fn server_faults(
    shapes: &[String],
    structured: bool,
) -> Vec<(&'static str, String, &'static str)> {
    let mut out = Vec::new();
    for shape in shapes {
        if shape == "send" {
            // A command's only answer is gRPC's Empty: nothing to corrupt but the status (zmq
            // answers nothing at all; the kit skips it there).
            out.push(("error-status", shape.clone(), code::RPC));
            continue;
        }
        for (mode, code) in [
            ("wrong-seq", code::INVALID),
            ("short-payload", code::INVALID),
            ("nonzero-byte", code::INVALID),
            ("missing-message", code::INVALID),
            ("extra-message", code::INVALID),
            ("early-status", code::INVALID),
            ("error-status", code::RPC),
            ("corrupt-structured", code::INVALID),
        ] {
            out.push((mode, shape.clone(), code));
        }
        if shape == "client_stream" {
            out.push(("wrong-summary", shape.clone(), code::INVALID));
        }
    }
    let _ = structured;
    out
}

/// The Rust client's fault modes that apply to `shape` (crates/peer/src/fault.rs); the
/// structured one only when the server takes structured payloads.
pub fn client_faults(shape: &str, structured: bool) -> Vec<&'static str> {
    let mut modes = vec!["nonzero-byte", "response-size-too-large"];
    if structured {
        modes.push("corrupt-structured");
    }
    match shape {
        "client_stream" | "bidi" => modes.extend(["seq-order", "length-change", "empty-stream"]),
        "server_stream" => modes.push("response-messages-zero"),
        _ => {}
    }
    modes
}

/// (1.4) The client fault modes of the `dated` procedure: `nonzero-byte`, whose input is not
/// "hello world" (a procedure with no sizes has no size to get wrong).
pub fn dated_client_faults() -> Vec<&'static str> {
    vec!["nonzero-byte"]
}

/// Whether `stack` answers a `send` command with nothing at all (docs/stacks.md "zmq"), so a
/// client has nothing to validate and a server's validation shows only in its counters.
pub fn commands_unanswered(stack: &str) -> bool {
    stack == "zmq"
}

/// Judges a server's `WINDOW END` answer after a faulty client sent it one malformed command
/// and then a well-formed one on a stack with no reply to commands (`zmq`'s `send`): one
/// rejection explained in `first_rejection`, one command counted.
pub fn one_rejected_command(answer: Option<&WindowReport>) -> Result<String, String> {
    let Some(answer) = answer else {
        return Err("no answer to WINDOW END".to_string());
    };
    let count = |name: &str| answer.counters.get(name).copied().unwrap_or(0);
    let (rejected, commands) = (count("rejected"), count("commands"));
    let said = format!(
        "rejected {rejected}, commands {commands}, first_rejection {:?}",
        answer.first_rejection.as_deref().unwrap_or("absent")
    );
    if rejected == 1 && commands == 1 && answer.first_rejection.is_some() {
        Ok(said)
    } else {
        Err(said)
    }
}

/// How many rows passed, failed and were not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Rows that passed.
    pub passed: usize,
    /// Rows that failed.
    pub failed: usize,
    /// Rows the kit could not run.
    pub not_checked: usize,
    /// Rows of groups that do not apply.
    pub skipped: usize,
}

impl Counts {
    /// Counts `rows`.
    pub fn of(rows: &[CheckResult]) -> Counts {
        let mut c = Counts::default();
        for r in rows {
            match r.status {
                Status::Passed => c.passed += 1,
                Status::Failed => c.failed += 1,
                Status::NotChecked => c.not_checked += 1,
                Status::Skipped => c.skipped += 1,
            }
        }
        c
    }

    /// The peer is done: nothing failed and nothing was left unchecked.
    pub fn done(&self) -> bool {
        self.failed == 0 && self.not_checked == 0
    }

    /// "159 checks: 150 passed, 2 failed, 7 not checked; not done: ...".
    pub fn summary(&self) -> String {
        let total = self.passed + self.failed + self.not_checked + self.skipped;
        let verdict = if self.done() {
            "done".to_string()
        } else {
            "not done: the exit code is non-zero while any row is failed or not checked".to_string()
        };
        let skipped = match self.skipped {
            0 => String::new(),
            n => format!(", {n} skipped"),
        };
        format!(
            "{total} checks: {} passed, {} failed, {} not checked{skipped}; {verdict}.",
            self.passed, self.failed, self.not_checked
        )
    }
}

/// The conformance table: one row per check, failures and rows not checked with expected and
/// received (or the reason), then the summary line.
pub fn table(rows: &[CheckResult]) -> String {
    let mut out =
        String::from("| group | check | result | expected | received |\n|---|---|---|---|---|\n");
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    for r in rows {
        let (result, expected, received) = match r.status {
            Status::Passed => ("pass", String::new(), String::new()),
            Status::Failed => ("**FAIL**", cell(&r.expected), cell(&r.received)),
            Status::NotChecked => ("*not checked*", cell(&r.expected), cell(&r.received)),
            Status::Skipped => ("skipped", cell(&r.expected), cell(&r.received)),
        };
        out.push_str(&format!(
            "| {} | {} | {result} | {expected} | {received} |\n",
            r.group,
            cell(&r.name),
        ));
    }
    out.push_str(&format!("\n{}\n", Counts::of(rows).summary()));
    out
}

/// A stack name of the form docs/stacks.md uses: lowercase ASCII letters, digits and `-`,
/// starting with a letter (`grpc`, `netrpc-gob`, `http2-proto`).
pub fn stack_name_ok(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{PeerError, Stopped};

    fn error(phase: &str, code: &str) -> Event {
        Event::Error(PeerError {
            phase: phase.into(),
            code: code.into(),
            message: "m".into(),
        })
    }

    #[test]
    fn an_error_must_have_its_phase_code_and_exit() {
        let t = Transcript {
            events: vec![error("startup", "config")],
            exit: Some(2),
            ..Transcript::default()
        };
        assert!(expect_error(&t, &["startup"], "config", 2).is_ok());
        assert!(expect_error(&t, &["startup"], "config", 1).is_err());
        assert!(expect_error(&t, &["connect"], "config", 2).is_err());
        let hung = Transcript {
            hung: true,
            ..t.clone()
        };
        let err = expect_error(&hung, &["startup"], "config", 2).unwrap_err();
        assert!(err.contains("still running at the bound"), "{err}");
    }

    #[test]
    fn stopped_must_be_last_with_exit_zero_and_no_sample_unless_asked() {
        let stopped = Event::Stopped(Stopped::default());
        let t = Transcript {
            events: vec![stopped.clone()],
            exit: Some(0),
            ..Transcript::default()
        };
        assert!(expect_stopped(&t, false).is_ok());
        assert!(expect_stopped(&t, true).is_err());
        let none = Transcript {
            exit: Some(0),
            ..Transcript::default()
        };
        assert_eq!(
            expect_stopped(&none, false).unwrap_err(),
            "no event; exit 0"
        );
    }

    #[test]
    fn a_servers_transport_in_stopped_is_accepted_and_checked() {
        let stopped = |transport: &str| Transcript {
            events: vec![Event::Stopped(Stopped {
                transport: Some(Box::new(rpcarena_protocol::event::TransportStats {
                    transport: transport.into(),
                    connections: 1,
                    packets_sent: Some(10),
                    ..Default::default()
                })),
                ..Stopped::default()
            })],
            exit: Some(0),
            ..Transcript::default()
        };
        assert!(expect_stopped(&stopped("quic"), false).is_ok());
        let err = expect_stopped(&stopped("udp"), false).unwrap_err();
        assert!(
            err.contains("`stopped`: transport.transport is \"udp\""),
            "{err}"
        );
    }

    #[test]
    fn capabilities_of_a_1_0_peer_fail_the_1_1_rows() {
        let caps = Capabilities {
            peer: "p".into(),
            language: "x".into(),
            version: "1".into(),
            roles: rpcarena_protocol::event::Roles {
                client: vec![StackCapability {
                    stack: "grpc".into(),
                    shapes: vec!["unary".into()],
                    load_models: vec!["closed".into()],
                    ..StackCapability::default()
                }],
                server: vec![],
            },
            ..Capabilities::default()
        };
        let rows = capabilities(&caps);
        let failed: Vec<&str> = rows
            .iter()
            .filter(|r| !r.passed())
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(failed, ["revision", "build", "files", "client grpc"]);
        let grpc = rows.iter().find(|r| r.name == "client grpc").unwrap();
        assert!(grpc.received.contains("no settings (1.1)"), "{grpc:?}");
        assert!(
            table(&rows).contains("4 failed, 0 not checked; not done"),
            "{}",
            table(&rows)
        );
    }

    #[test]
    fn any_stack_name_of_the_stacks_page_form_is_accepted() {
        for ok in [
            "grpc",
            "quic",
            "tcp",
            "netrpc-gob",
            "http2-proto",
            "grpc-servehttp",
        ] {
            assert!(stack_name_ok(ok), "{ok}");
        }
        for bad in ["", "GRPC", "net_rpc", "-tcp", "2tcp", "tcp ", "h\u{e9}"] {
            assert!(!stack_name_ok(bad), "{bad:?}");
        }
        let entry = |stack: &str| StackCapability {
            stack: stack.into(),
            shapes: vec!["unary".into()],
            load_models: vec!["closed".into()],
            libraries: [("l".to_string(), "1".to_string())].into(),
            settings: [("s".to_string(), true.into())].into(),
            deviations: Some(vec![]),
            ..StackCapability::default()
        };
        let list = [
            entry("netrpc-gob"),
            entry("Bad_Name"),
            entry("tcp"),
            entry("tcp"),
        ];
        assert!(stack_entry("client", &list[0], &list).is_ok());
        let bad = stack_entry("client", &list[1], &list).unwrap_err();
        assert!(
            bad.contains("is not of the form of docs/stacks.md"),
            "{bad}"
        );
        let twice = stack_entry("client", &list[2], &list).unwrap_err();
        assert_eq!(twice, "listed more than once");
    }

    #[test]
    fn rows_not_checked_are_counted_apart_and_keep_the_peer_not_done() {
        let rows = vec![
            CheckResult::new("tls", "a", "x", Ok("fine".into())),
            CheckResult::not_checked("client-validation", "client x", "a partner", "nobody"),
        ];
        let counts = Counts::of(&rows);
        assert_eq!(
            (counts.passed, counts.failed, counts.not_checked),
            (1, 0, 1)
        );
        assert!(!counts.done());
        assert!(Counts::of(&rows[..1]).done());
        let t = table(&rows);
        assert!(
            t.contains("| client-validation | client x | *not checked* | a partner | nobody |"),
            "{t}"
        );
        assert!(
            t.contains("2 checks: 1 passed, 0 failed, 1 not checked; not done"),
            "{t}"
        );
        let json = serde_json::to_string(&rows[1]).unwrap();
        assert!(json.contains("\"status\":\"not checked\""), "{json}");
        assert!(Counts::of(&rows[..1]).summary().ends_with("; done."));
    }

    fn report(edge: Edge, rpcs: u64, allocations: Option<u64>) -> WindowReport {
        WindowReport {
            edge,
            counters: [("rpcs".to_string(), rpcs), ("rejected".to_string(), 0)].into(),
            allocations,
            allocated_bytes: None,
            first_rejection: None,
        }
    }

    fn counts_only() -> AllocationCounters {
        AllocationCounters {
            counts: true,
            bytes: false,
            source: "ThreadMXBean".into(),
        }
    }

    #[test]
    fn window_answers_need_their_edge_counters_that_grow_and_the_declared_fields() {
        let declared = counts_only();
        let start = report(Edge::Start, 3, Some(100));
        let end = report(Edge::End, 5, Some(140));
        let ok = window_answers(Some(&start), Some(&end), Some(&declared)).unwrap();
        assert!(ok.contains("counter rpcs 3 -> 5"), "{ok}");
        assert!(ok.contains("allocations 100 -> 140"), "{ok}");
        // no answer to WINDOW END
        let err = window_answers(Some(&start), None, Some(&declared)).unwrap_err();
        assert_eq!(err, "no window event within 2 s of WINDOW END");
        // the wrong edge
        let err = window_answers(Some(&start), Some(&start), Some(&declared)).unwrap_err();
        assert!(
            err.contains("WINDOW END answered with edge \"start\", \"end\" expected"),
            "{err}"
        );
        // counters going backwards, named with both figures
        let back = report(Edge::End, 2, Some(90));
        let err = window_answers(Some(&start), Some(&back), Some(&declared)).unwrap_err();
        assert!(
            err.contains(
                "counter rpcs went backwards over the window: 3 at WINDOW START, 2 at WINDOW END"
            ),
            "{err}"
        );
        assert!(
            err.contains(
                "allocations went backwards over the window: 100 at WINDOW START, 90 at WINDOW END"
            ),
            "{err}"
        );
        // a counter that disappears
        let mut gone = end.clone();
        gone.counters.remove("rejected");
        let err = window_answers(Some(&start), Some(&gone), Some(&declared)).unwrap_err();
        assert!(
            err.contains("counter rejected is 0 at WINDOW START but missing"),
            "{err}"
        );
        // fields exactly as declared: missing when declared, present when not
        let bare = report(Edge::End, 5, None);
        let err = window_answers(Some(&start), Some(&bare), Some(&declared)).unwrap_err();
        assert!(
            err.contains("`window (end)` has no allocations, which capabilities declares"),
            "{err}"
        );
        let err = window_answers(Some(&start), Some(&end), None).unwrap_err();
        assert!(
            err.contains("`window (start)` has allocations, which capabilities does not declare"),
            "{err}"
        );
        let plain = (report(Edge::Start, 0, None), report(Edge::End, 0, None));
        assert!(window_answers(Some(&plain.0), Some(&plain.1), None).is_ok());
    }

    #[test]
    fn revision_1_4_and_the_allocation_declaration_are_checked() {
        let mut caps = Capabilities {
            revision: Some("1.4".into()),
            allocations: Some(counts_only()),
            ..Capabilities::default()
        };
        let verdict = |caps: &Capabilities, name: &str| {
            let rows = capabilities(caps);
            rows.into_iter().find(|r| r.name == name).unwrap()
        };
        assert!(verdict(&caps, "revision").passed());
        assert!(follows_1_2(&caps));
        let allocations = verdict(&caps, "allocations");
        assert_eq!(
            allocations.received,
            "counts true, bytes false: ThreadMXBean"
        );
        caps.allocations = Some(AllocationCounters {
            source: " ".into(),
            ..counts_only()
        });
        let empty = verdict(&caps, "allocations");
        assert!(
            !empty.passed() && empty.received.contains("an empty source"),
            "{empty:?}"
        );
        caps.allocations = None;
        assert_eq!(verdict(&caps, "allocations").received, "none declared");
        // 1.5: the profiler, absent or one the page knows
        assert_eq!(verdict(&caps, "profiler").received, "none declared");
        caps.profiler = Some("perf".into());
        caps.revision = Some("1.5".into());
        assert!(verdict(&caps, "profiler").passed() && verdict(&caps, "revision").passed());
        caps.profiler = Some("dtrace".into());
        let unknown = verdict(&caps, "profiler");
        assert!(
            !unknown.passed() && unknown.received.contains("known: perf"),
            "{unknown:?}"
        );
        caps.revision = Some("1.3".into());
        let old = verdict(&caps, "revision");
        assert_eq!((old.passed(), old.received.as_str()), (false, "\"1.3\""));
        assert!(follows(&caps, "1.3") && !follows(&caps, "1.4"));
        caps.revision = Some("1.2".into());
        assert!(follows_1_2(&caps) && !follows(&caps, "1.3"));
        caps.revision = Some("1.1".into());
        assert!(!follows_1_2(&caps));
        caps.revision = None;
        assert!(!follows_1_2(&caps) && follows(&caps, "1.0"));
        // pingpong is a shape the page knows (1.2); a made-up one is not
        let mut entry = StackCapability {
            stack: "tcp".into(),
            shapes: vec!["pingpong".into()],
            load_models: vec!["closed".into()],
            libraries: [("l".to_string(), "1".to_string())].into(),
            settings: [("s".to_string(), true.into())].into(),
            deviations: Some(vec![]),
            ..StackCapability::default()
        };
        assert!(stack_entry("client", &entry, &[]).is_ok());
        entry.shapes.push("ping".into());
        let err = stack_entry("client", &entry, &[]).unwrap_err();
        assert_eq!(err, "unknown shape \"ping\"");
    }
}
