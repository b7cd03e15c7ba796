//! The checks, group by group, in the order of docs/peer-protocol.md "Conformance". Each runs
//! on loopback with short windows and judges what the peers printed with `check`.

use crate::check::{
    self, CheckResult, Transcript, error_expectation, expect_error, expect_stopped,
};
use crate::partners::{self, Candidate};
use crate::shell::{Bench, ClientSpec, Proc, SERVER_NAME, could_not_start};
use rpcarena_protocol::event::{
    AllocationCounters, Capabilities, Command, Event, Role, StackCapability, WindowReport, code,
    phase,
};
use rpcarena_protocol::workload::{Payload, Shape};
use std::path::Path;
use std::time::Duration;

/// "Stop at once" is within 1 s; the kit waits 2 s.
const AT_ONCE: Duration = Duration::from_secs(2);
/// How long an `error` and exit may take after a bad command.
const PROMPTLY: Duration = Duration::from_secs(5);
/// The bound on a whole short client run (connect, validate, warmup, window, drain).
const CLIENT_RUN: Duration = Duration::from_secs(30);

/// Argument refusal: each malformed command line gives `error` startup/config and exit 2.
pub(crate) fn arguments(bench: &Bench, caps: &Capabilities) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    let expected = error_expectation(&[phase::STARTUP], code::CONFIG, 2);
    let with_tls = |entries: &'_ [StackCapability]| {
        entries
            .iter()
            .find(|e| e.takes_tls(true))
            .map(|e| e.stack.clone())
    };
    if let Some(stack) = with_tls(&caps.roles.client) {
        let base = bench
            .short(&stack)
            .args("127.0.0.1:9", SERVER_NAME, &bench.ca);
        let mut cases: Vec<(&str, Vec<String>)> = Vec::new();
        let mut unknown = base.clone();
        unknown.extend(["--bogus".into(), "1".into()]);
        cases.push(("an unknown argument", unknown));
        let missing = drop_pair(&base, "--shape");
        cases.push(("a missing argument (--shape)", missing));
        let mut repeated = base.clone();
        repeated.extend(["--concurrency".into(), "2".into()]);
        cases.push(("a repeated argument (--concurrency)", repeated));
        cases.push((
            "an out-of-range value (--concurrency 0)",
            replace(&base, "--concurrency", "0"),
        ));
        cases.push((
            "an out-of-range value (--window-ms 0)",
            replace(&base, "--window-ms", "0"),
        ));
        cases.push((
            "a model argument of another model (--rate with closed)",
            [base.clone(), vec!["--rate".into(), "10".into()]].concat(),
        ));
        cases.push((
            "an unreadable --ca",
            replace(&base, "--ca", "/nonexistent/rpcarena-ca.pem"),
        ));
        for (what, args) in cases {
            let t = run_to_end(bench, Role::Client, &args, what);
            rows.push(CheckResult::new(
                "arguments",
                format!("client: {what}"),
                &expected,
                expect_error(&t, &[phase::STARTUP], code::CONFIG, 2),
            ));
        }
    }
    if let Some(stack) = with_tls(&caps.roles.server) {
        let base = bench.server_argv_tls(&[], &stack, true, &[]);
        for (what, args) in [
            (
                "an unknown argument",
                [base.clone(), vec!["--bogus".into(), "1".into()]].concat(),
            ),
            ("a missing argument (--key)", drop_pair(&base, "--key")),
            (
                "an unknown stack",
                replace(&base, "--stack", "carrier-pigeon"),
            ),
            (
                "an unreadable --cert",
                replace(&base, "--cert", "/nonexistent/cert.pem"),
            ),
        ] {
            let t = run_to_end(bench, Role::Server, &args, what);
            rows.push(CheckResult::new(
                "arguments",
                format!("server: {what}"),
                &expected,
                expect_error(&t, &[phase::STARTUP], code::CONFIG, 2),
            ));
        }
    }
    rows
}

/// Revision 1.3's `--tls`: each stack refuses the value it cannot run (`quic` off, `zmq` on),
/// and a plaintext command line refuses the certificate and CA arguments.
pub(crate) fn tls_arguments(bench: &Bench, caps: &Capabilities) -> Vec<CheckResult> {
    let mut cases: Vec<(Role, String, Vec<String>)> = Vec::new();
    let address = "127.0.0.1:9";
    for entry in &caps.roles.client {
        let stack = &entry.stack;
        let on = ClientSpec {
            tls: true,
            ..ClientSpec::short(stack)
        };
        let off = ClientSpec {
            tls: false,
            ..on.clone()
        };
        let plain = off.args(address, SERVER_NAME, &bench.ca);
        if !entry.takes_tls(true) {
            let args = on.args(address, SERVER_NAME, &bench.ca);
            cases.push((Role::Client, format!("{stack} with --tls on"), args));
        } else if !entry.takes_tls(false) {
            cases.push((Role::Client, format!("{stack} with --tls off"), plain));
        } else {
            let with_ca = [
                plain.clone(),
                vec!["--ca".into(), bench.ca.display().to_string()],
            ];
            cases.push((
                Role::Client,
                format!("{stack}: --ca with --tls off"),
                with_ca.concat(),
            ));
            let bogus = replace(&plain, "--tls", "maybe");
            cases.push((Role::Client, format!("{stack}: --tls maybe"), bogus));
        }
    }
    for entry in &caps.roles.server {
        let stack = &entry.stack;
        if !entry.takes_tls(true) {
            let args = bench.server_argv_tls(&[], stack, true, &[]);
            cases.push((Role::Server, format!("{stack} with --tls on"), args));
        } else if !entry.takes_tls(false) {
            let args = bench.server_argv_tls(&[], stack, false, &[]);
            cases.push((Role::Server, format!("{stack} with --tls off"), args));
        } else {
            let mut args = bench.server_argv_tls(&[], stack, false, &[]);
            args.extend(["--cert".into(), bench.cert.display().to_string()]);
            cases.push((
                Role::Server,
                format!("{stack}: --cert with --tls off"),
                args,
            ));
        }
    }
    let expected = error_expectation(&[phase::STARTUP], code::CONFIG, 2);
    cases
        .into_iter()
        .map(|(role, what, args)| {
            let name = format!("{}: {what}", partners::role_name(role));
            let t = run_to_end(bench, role, &args, &name);
            CheckResult::new(
                "arguments",
                name,
                &expected,
                expect_error(&t, &[phase::STARTUP], code::CONFIG, 2),
            )
        })
        .collect()
}

/// Revision 1.4's client arguments: `--client-mode` and `--payload dated` refused where the
/// stack entry does not list them, `dated` refused with sizes, an unknown mode refused, and
/// `--client-mode official` (the default) accepted: that client gets past its arguments and fails
/// only at connecting to a closed port.
pub(crate) fn client_arguments_1_4(bench: &Bench, caps: &Capabilities) -> Vec<CheckResult> {
    let address = "127.0.0.1:9";
    let mut cases: Vec<(String, Vec<String>)> = Vec::new();
    for entry in &caps.roles.client {
        let stack = &entry.stack;
        let spec = bench.short(stack);
        let base = spec.args(address, SERVER_NAME, &bench.ca);
        let with = |extra: &[&str]| {
            let mut args = base.clone();
            args.extend(extra.iter().map(|a| a.to_string()));
            args
        };
        if !entry.client_modes.iter().any(|m| m == "replay") {
            cases.push((
                format!("{stack}: --client-mode replay, not listed"),
                with(&["--client-mode", "replay"]),
            ));
        }
        let dated = ClientSpec {
            payload: Payload::Dated,
            ..spec.clone()
        }
        .args(address, SERVER_NAME, &bench.ca);
        if entry.payloads.iter().any(|p| p == "dated") {
            let sized = replace(&dated, "--request-size", "64");
            cases.push((
                format!("{stack}: --payload dated with --request-size 64"),
                sized,
            ));
        } else {
            cases.push((format!("{stack}: --payload dated, not listed"), dated));
        }
    }
    let expected = error_expectation(&[phase::STARTUP], code::CONFIG, 2);
    let mut rows: Vec<CheckResult> = cases
        .into_iter()
        .map(|(what, args)| {
            let name = format!("client: {what}");
            let t = run_to_end(bench, Role::Client, &args, &name);
            CheckResult::new(
                "arguments",
                name,
                &expected,
                expect_error(&t, &[phase::STARTUP], code::CONFIG, 2),
            )
        })
        .collect();
    if let Some(entry) = caps.roles.client.first() {
        let base = bench
            .short(&entry.stack)
            .args(address, SERVER_NAME, &bench.ca);
        let bogus = [base.clone(), vec!["--client-mode".into(), "puppet".into()]].concat();
        let name = "client: --client-mode puppet".to_string();
        let t = run_to_end(bench, Role::Client, &bogus, &name);
        rows.push(CheckResult::new(
            "arguments",
            &name,
            &expected,
            expect_error(&t, &[phase::STARTUP], code::CONFIG, 2),
        ));
        let official = [base, vec!["--client-mode".into(), "official".into()]].concat();
        let name = format!(
            "client: {}: --client-mode official (the default) accepted",
            entry.stack
        );
        let t = run_to_end(bench, Role::Client, &official, &name);
        rows.push(CheckResult::new(
            "arguments",
            &name,
            "past the arguments: an error of phase connect (127.0.0.1:9 is closed), exit 1",
            past_arguments(&t),
        ));
    }
    rows
}

/// A client that accepted its arguments and then failed to connect to a closed port.
fn past_arguments(t: &Transcript) -> Result<String, String> {
    let error = t.events.iter().find_map(|e| match e {
        Event::Error(err) => Some(err),
        _ => None,
    });
    match error {
        Some(err) if err.phase != phase::STARTUP && t.exit == Some(1) => Ok(t.describe()),
        _ => Err(t.describe()),
    }
}

fn drop_pair(args: &[String], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for a in args {
        if skip {
            skip = false;
        } else if a == name {
            skip = true;
        } else {
            out.push(a.clone());
        }
    }
    out
}

fn replace(args: &[String], name: &str, value: &str) -> Vec<String> {
    let mut out = args.to_vec();
    if let Some(i) = out.iter().position(|a| a == name)
        && i + 1 < out.len()
    {
        out[i + 1] = value.to_string();
    }
    out
}

/// Runs the peer under test with `args`, stdin open, until it exits (bounded).
fn run_to_end(bench: &Bench, role: Role, args: &[String], what: &str) -> Transcript {
    let argv = [bench.peer.clone(), args.to_vec()].concat();
    match Proc::spawn(role, &argv, &bench.raw(what)) {
        Ok(p) => p.finish(PROMPTLY),
        Err(e) => could_not_start(e),
    }
}

/// What the kit does to a client under test, and when.
#[derive(Debug, Clone, Copy)]
enum Poke {
    /// A command (or end of stdin, `None`) while it connects and warms up (a 3 s warmup).
    BeforeArmed(Option<Command>),
    /// A line once it printed `armed`.
    Armed(Option<&'static str>),
    /// SHUTDOWN or end of stdin 300 ms into a 3 s window.
    MidWindow(Option<Command>),
    /// A second START after `sample`.
    SecondStart,
}

/// What the client must do after a poke.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// `stopped` within 2 s, no `sample`, exit 0.
    Stops,
    /// `error` in one of these phases, code protocol, exit 1.
    Refuses(&'static [&'static str]),
    /// `sample`, then `error` phase shutdown code protocol, exit 1.
    RefusesAfterSample,
}

impl Outcome {
    fn expectation(self) -> String {
        match self {
            Outcome::Stops => "stopped within 2 s, no sample; exit 0".to_string(),
            Outcome::Refuses(phases) => error_expectation(phases, code::PROTOCOL, 1),
            Outcome::RefusesAfterSample => error_expectation(&[phase::SHUTDOWN], code::PROTOCOL, 1),
        }
    }

    fn judge(self, t: &Transcript) -> Result<String, String> {
        match self {
            Outcome::Stops => expect_stopped(t, false),
            Outcome::Refuses(phases) => expect_error(t, phases, code::PROTOCOL, 1),
            Outcome::RefusesAfterSample => expect_error_after_sample(t),
        }
    }

    /// How long the client may take to end: at once when it stops, promptly when it refuses.
    fn bound(self) -> Duration {
        match self {
            Outcome::Stops => AT_ONCE,
            _ => PROMPTLY,
        }
    }
}

/// The client lifecycle cases: what is done to the client, and what it must do.
const CLIENT_CASES: [(&str, Poke, Outcome); 9] = [
    (
        "SHUTDOWN while connecting or warming up",
        Poke::BeforeArmed(Some(Command::Shutdown)),
        Outcome::Stops,
    ),
    (
        "end of stdin while connecting or warming up",
        Poke::BeforeArmed(None),
        Outcome::Stops,
    ),
    (
        "SHUTDOWN while armed",
        Poke::Armed(Some("SHUTDOWN")),
        Outcome::Stops,
    ),
    (
        "end of stdin while armed",
        Poke::Armed(None),
        Outcome::Stops,
    ),
    (
        "SHUTDOWN mid-window",
        Poke::MidWindow(Some(Command::Shutdown)),
        Outcome::Stops,
    ),
    (
        "end of stdin mid-window",
        Poke::MidWindow(None),
        Outcome::Stops,
    ),
    (
        "START before armed",
        Poke::BeforeArmed(Some(Command::Start)),
        Outcome::Refuses(&["connect", "validate", "warmup"]),
    ),
    (
        "an unknown command while armed",
        Poke::Armed(Some("HELLO")),
        Outcome::Refuses(&[phase::ARMED]),
    ),
    (
        "a second START after the sample",
        Poke::SecondStart,
        Outcome::RefusesAfterSample,
    ),
];

/// The client lifecycle case of revision 1.2: a window command is not the client's.
const CLIENT_WINDOW_CASE: (&str, Poke, Outcome) = (
    "WINDOW START while armed",
    Poke::Armed(Some("WINDOW START")),
    Outcome::Refuses(&[phase::ARMED]),
);

/// Client lifecycle against `server`, a server of `stack`; with `window` (a 1.2 client), the
/// window command while armed too.
pub(crate) fn client_lifecycle(
    bench: &Bench,
    stack: &str,
    server: &Candidate,
    window: bool,
) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    let window = window.then_some(CLIENT_WINDOW_CASE);
    for (what, poke, outcome) in CLIENT_CASES.into_iter().chain(window) {
        let name = format!("client {stack} vs {}: {what}", server.id);
        let received = match client_poke(bench, stack, server, poke, outcome.bound(), &name) {
            Err(t) => Err(format!(
                "the {} server did not start: {}",
                server.id,
                t.describe()
            )),
            Ok(t) => outcome.judge(&t),
        };
        rows.push(CheckResult::new(
            "lifecycle",
            name,
            outcome.expectation(),
            received,
        ));
    }
    rows
}

/// The second START: `sample`, then `error` phase shutdown code protocol, exit 1.
fn expect_error_after_sample(t: &Transcript) -> Result<String, String> {
    let sample_at = t.events.iter().position(|e| matches!(e, Event::Sample(_)));
    let rest = Transcript {
        events: sample_at.map_or(Vec::new(), |i| t.events[i + 1..].to_vec()),
        ..t.clone()
    };
    match sample_at {
        Some(_) => {
            expect_error(&rest, &[phase::SHUTDOWN], code::PROTOCOL, 1).map_err(|_| t.describe())
        }
        None => Err(t.describe()),
    }
}

/// Starts `server` of `stack` and the client under test against it; the server's transcript
/// when it did not start.
fn start_pair(
    bench: &Bench,
    server: &Candidate,
    spec: &ClientSpec,
    raw: &Path,
) -> Result<(Proc, Result<Proc, Transcript>), Transcript> {
    let (server, address) = bench.start_server(&server.command, &spec.stack, &[], raw)?;
    let argv = [
        bench.peer.clone(),
        spec.args(&address, SERVER_NAME, &bench.ca),
    ]
    .concat();
    let client = Proc::spawn(Role::Client, &argv, raw).map_err(could_not_start);
    Ok((server, client))
}

/// Runs the client under test against `server` with one poke; its transcript (the server's,
/// as `Err`, when the server did not start).
fn client_poke(
    bench: &Bench,
    stack: &str,
    server: &Candidate,
    poke: Poke,
    bound: Duration,
    name: &str,
) -> Result<Transcript, Transcript> {
    let mut spec = bench.short(stack);
    match poke {
        Poke::BeforeArmed(_) => spec.warmup = Duration::from_secs(3),
        Poke::MidWindow(_) => spec.window = Duration::from_secs(3),
        _ => {}
    }
    let (server, client) = start_pair(bench, server, &spec, &bench.raw(name))?;
    let t = match client {
        Ok(mut client) => {
            do_poke(&mut client, poke);
            client.finish(bound)
        }
        Err(t) => t,
    };
    server.finish(Duration::ZERO);
    Ok(t)
}

/// Sends `command`, or closes stdin when it is `None`.
fn send_or_close(client: &mut Proc, command: Option<Command>) {
    match command {
        Some(c) => client.send(c),
        None => client.close_stdin(),
    }
}

/// Waits for `armed` (bounded); whether it came.
fn armed(client: &mut Proc) -> bool {
    client
        .until(CLIENT_RUN, |e| matches!(e, Event::Armed(_)))
        .is_some()
}

/// The poke itself.
fn do_poke(client: &mut Proc, poke: Poke) {
    match poke {
        Poke::BeforeArmed(command) => {
            // The client reads stdin from the moment it starts connecting; give it a moment.
            std::thread::sleep(Duration::from_millis(700));
            send_or_close(client, command);
        }
        Poke::Armed(line) => {
            if armed(client) {
                match line {
                    Some(l) => {
                        let _ = client.send_line(l);
                    }
                    None => client.close_stdin(),
                }
            }
        }
        Poke::MidWindow(command) => {
            if armed(client) {
                client.send(Command::Start);
                std::thread::sleep(Duration::from_millis(300));
                send_or_close(client, command);
            }
        }
        Poke::SecondStart => {
            if armed(client) {
                client.send(Command::Start);
                if client
                    .until(CLIENT_RUN, |e| matches!(e, Event::Sample(_)))
                    .is_some()
                {
                    client.send(Command::Start);
                }
            }
        }
    }
}

/// Server lifecycle: SHUTDOWN, end of stdin, START, an unknown command.
pub(crate) fn server_lifecycle(bench: &Bench, stack: &str) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    let cases: [(&str, Option<&str>, bool); 4] = [
        ("SHUTDOWN", Some("SHUTDOWN"), true),
        ("end of stdin", None, true),
        ("START", Some("START"), false),
        ("an unknown command", Some("HELLO"), false),
    ];
    for (what, line, stops) in cases {
        let name = format!("server {stack}: {what} while serving");
        let raw = bench.raw(&name);
        let received = match bench.start_server(&bench.peer, stack, &[], &raw) {
            Err(t) => Err(format!("no ready: {}", t.describe())),
            Ok((mut server, _)) => {
                match line {
                    Some(l) => {
                        let _ = server.send_line(l);
                    }
                    None => server.close_stdin(),
                }
                let t = server.finish(if stops { AT_ONCE } else { PROMPTLY });
                let t = without_ready(t);
                if stops {
                    expect_stopped(&t, false)
                } else {
                    expect_error(&t, &[phase::SERVE], code::PROTOCOL, 1)
                }
            }
        };
        let expected = if stops {
            "stopped within 2 s; exit 0".to_string()
        } else {
            error_expectation(&[phase::SERVE], code::PROTOCOL, 1)
        };
        rows.push(CheckResult::new("lifecycle", name, expected, received));
    }
    rows
}

/// The server's window commands (revision 1.2): `WINDOW START`, then `WINDOW END`, each answered
/// by a `window` event with that edge within 2 s, counters that do not go backwards, the
/// allocation fields exactly as `declared`; then SHUTDOWN: `stopped`, exit 0.
pub(crate) fn server_window(
    bench: &Bench,
    stack: &str,
    declared: Option<&AllocationCounters>,
) -> CheckResult {
    let name = format!("server {stack}: WINDOW START, WINDOW END, then SHUTDOWN");
    let raw = bench.raw(&name);
    let received = match bench.start_server(&bench.peer, stack, &[], &raw) {
        Err(t) => Err(format!("no ready: {}", t.describe())),
        Ok((mut server, _)) => {
            let start = window_answer(&mut server, Command::WindowStart);
            let end = window_answer(&mut server, Command::WindowEnd);
            server.send(Command::Shutdown);
            let t = without_ready(server.finish(AT_ONCE));
            let window = check::window_answers(start.as_ref(), end.as_ref(), declared);
            match (window, expect_stopped(&t, false)) {
                (Ok(w), Ok(_)) => Ok(format!("{w}; then stopped, exit 0")),
                (w, stop) => Err(format!(
                    "{}{}",
                    w.err().map_or(String::new(), |p| format!("{p}; ")),
                    stop.unwrap_or_else(|t| t)
                )),
            }
        }
    };
    CheckResult::new(
        "lifecycle",
        name,
        "each answered by a window event with its edge within 2 s, counters not going backwards, allocation fields as capabilities declares; then stopped, exit 0",
        received,
    )
}

/// Sends a window command and waits up to 2 s for a `window` event (any edge; the judge checks).
fn window_answer(server: &mut Proc, command: Command) -> Option<WindowReport> {
    server.send(command);
    match server.until(AT_ONCE, |e| matches!(e, Event::Window(_))) {
        Some(Event::Window(w)) => Some(w),
        _ => None,
    }
}

fn without_ready(mut t: Transcript) -> Transcript {
    t.events.retain(|e| !matches!(e, Event::Ready(_)));
    t
}

/// TLS: against `server`, a wrong CA and a wrong server name fail as `tls` in phase connect.
pub(crate) fn tls(bench: &Bench, stack: &str, server: &Candidate) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    for (what, ca, name) in [
        (
            "a CA that did not sign the server's certificate",
            &bench.other_ca,
            SERVER_NAME,
        ),
        (
            "a --server-name the certificate does not carry",
            &bench.ca,
            "127.0.0.2",
        ),
    ] {
        let check = format!("client {stack} vs {}: {what}", server.id);
        let raw = bench.raw(&check);
        let received = match bench.start_server(&server.command, stack, &[], &raw) {
            Err(t) => Err(format!(
                "the {} server did not start: {}",
                server.id,
                t.describe()
            )),
            Ok((server, address)) => {
                let args = ClientSpec::short(stack).args(&address, name, ca);
                let t = match Proc::spawn(Role::Client, &[bench.peer.clone(), args].concat(), &raw)
                {
                    Ok(c) => c.finish(CLIENT_RUN),
                    Err(e) => could_not_start(e),
                };
                server.finish(Duration::ZERO);
                expect_error(&t, &[phase::CONNECT], code::TLS, 1)
            }
        };
        rows.push(CheckResult::new(
            "tls",
            check,
            error_expectation(&[phase::CONNECT], code::TLS, 1),
            received,
        ));
    }
    rows
}

/// Plaintext (revision 1.3): the peer's client with `--tls off` against `partner`'s plaintext
/// server, and the peer's server with `--tls off` against `partner`'s plaintext client, each a
/// short unary sample to its end (`armed`, `sample`, `stopped`, exit 0).
pub(crate) fn plaintext(
    bench: &Bench,
    stack: &str,
    (client, server): (Option<&Candidate>, Option<&Candidate>),
) -> Vec<CheckResult> {
    let spec = ClientSpec {
        tls: false,
        ..ClientSpec::short(stack)
    };
    let mut runs = Vec::new();
    if let Some(partner) = server {
        runs.push((
            format!("client {stack} vs {}", partner.id),
            &bench.peer,
            &partner.command,
        ));
    }
    if let Some(partner) = client {
        runs.push((
            format!("server {stack} vs {}", partner.id),
            &partner.command,
            &bench.peer,
        ));
    }
    let expected = "with --tls off on both sides: armed, sample, stopped, exit 0";
    runs.into_iter()
        .map(|(name, client, server)| {
            let name = format!("{name}: a sample with --tls off");
            let raw = bench.raw(&name);
            let argv = bench.server_argv_tls(server, stack, false, &[]);
            let received = match bench.start_server_argv(argv, &raw) {
                Err(t) => Err(format!("the server did not start: {}", t.describe())),
                Ok((server, address)) => {
                    let args = spec.args(&address, SERVER_NAME, &bench.ca);
                    let t = one_sample(&[client.clone(), args].concat(), &raw);
                    server.finish(Duration::ZERO);
                    expect_stopped(&t, true)
                }
            };
            CheckResult::new("tls", name, expected, received)
        })
        .collect()
}

/// Runs a client to its sample: waits for `armed`, sends START, waits for `sample`, SHUTDOWN.
fn one_sample(argv: &[String], raw: &Path) -> Transcript {
    let mut c = match Proc::spawn(Role::Client, argv, raw) {
        Ok(c) => c,
        Err(e) => return could_not_start(e),
    };
    let armed = c.until(CLIENT_RUN, |e| {
        matches!(e, Event::Armed(_) | Event::Error(_))
    });
    if matches!(armed, Some(Event::Armed(_))) {
        c.send(Command::Start);
        c.until(CLIENT_RUN, |e| {
            matches!(e, Event::Sample(_) | Event::Error(_))
        });
        c.send(Command::Shutdown);
    }
    c.finish(PROMPTLY)
}

fn shape_of(name: &str) -> Shape {
    name.parse().unwrap_or(Shape::Unary)
}

/// The payload kinds both sides of a validation group take beside zeros: `structured`, and
/// (1.4) `dated` on unary.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Kinds {
    pub structured: bool,
    pub dated: bool,
}

/// The client's validation duty: against `server` (a peer with conformance faults) misbehaving
/// in one way, the client under test fails its validation operation with the code the page
/// gives, on each of `shapes`, and (1.4) on the `dated` procedure.
pub(crate) fn client_validation(
    bench: &Bench,
    stack: &str,
    (shapes, kinds): (&[String], Kinds),
    server: &Candidate,
) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    // pingpong's faults are bidi's, on the same Bidi RPC: the bidi rows check them.
    let unanswered = |s: &String| s == "send" && check::commands_unanswered(stack);
    let shapes: Vec<String> = shapes
        .iter()
        .filter(|s| s.as_str() != "pingpong" && !unanswered(s))
        .cloned()
        .collect();
    if unanswered(&"send".to_string()) {
        rows.push(CheckResult::skipped(
            "client-validation",
            format!("client {stack} vs {}: send", server.id),
            format!("a {stack} command gets no reply, so the client has nothing to validate (docs/stacks.md)"),
        ));
    }
    for (mode, shape, want) in check::server_faults(&shapes, kinds.structured) {
        let payload = if mode == "corrupt-structured" && kinds.structured {
            Payload::Structured
        } else {
            Payload::Zeros
        };
        rows.push(client_validation_row(
            bench,
            (stack, &shape, payload),
            (mode, want),
            server,
        ));
    }
    if kinds.dated && shapes.iter().any(|s| s == "unary") {
        for (mode, shape, want) in check::server_faults(&["unary".to_string()], false) {
            let row = (stack, shape.as_str(), Payload::Dated);
            rows.push(client_validation_row(bench, row, (mode, want), server));
        }
    }
    rows
}

/// One row of the client's validation duty: `server` misbehaving as `mode` on `shape` with
/// `payload`, the client under test failing its validation operation with `want`.
fn client_validation_row(
    bench: &Bench,
    (stack, shape, payload): (&str, &str, Payload),
    (mode, want): (&str, &str),
    server: &Candidate,
) -> CheckResult {
    let name = format!(
        "client {stack} vs {}: {shape} {}, server {mode}",
        server.id,
        payload.as_str()
    );
    let raw = bench.raw(&name);
    let expected = error_expectation(&[phase::VALIDATE], want, 1);
    let started = bench.start_server(&server.command, stack, &["--conformance-fault", mode], &raw);
    let received = match started {
        Err(t) => Err(format!(
            "the {} server did not start: {}",
            server.id,
            t.describe()
        )),
        Ok((server, address)) => {
            let spec = ClientSpec {
                shape: shape_of(shape),
                payload,
                ..bench.short(stack)
            };
            let args = spec.args(&address, SERVER_NAME, &bench.ca);
            let t = match Proc::spawn(Role::Client, &[bench.peer.clone(), args].concat(), &raw) {
                Ok(mut c) => {
                    // A client that does not fail arms; stop it there.
                    if c.until(CLIENT_RUN, |e| {
                        matches!(e, Event::Armed(_) | Event::Error(_))
                    })
                    .is_some_and(|e| matches!(e, Event::Armed(_)))
                    {
                        c.send(Command::Shutdown);
                    }
                    c.finish(PROMPTLY)
                }
                Err(e) => could_not_start(e),
            };
            server.finish(Duration::ZERO);
            expect_error(&t, &[phase::VALIDATE], want, 1)
        }
    };
    CheckResult::new("client-validation", name, expected, received)
}

/// The server's validation duty: `client` (a peer with conformance faults) sends one malformed
/// call; the server under test must answer INVALID_ARGUMENT and then serve a well-formed call
/// (the faulty client then prints `stopped` and exits 0; otherwise its `error` says what the
/// server did), on each of `shapes`, and (1.4) on the `dated` procedure (its one client mode:
/// an input other than "hello world").
pub(crate) fn server_validation(
    bench: &Bench,
    stack: &str,
    (shapes, kinds): (&[String], Kinds),
    client: &Candidate,
) -> Vec<CheckResult> {
    let mut rows = Vec::new();
    // pingpong drives the Bidi handler the bidi rows already check.
    for shape in shapes.iter().filter(|s| s.as_str() != "pingpong") {
        for mode in check::client_faults(shape, kinds.structured) {
            let payload = if mode == "corrupt-structured" {
                Payload::Structured
            } else {
                Payload::Zeros
            };
            rows.push(server_validation_row(
                bench,
                (stack, shape, payload),
                mode,
                client,
            ));
        }
    }
    if kinds.dated && shapes.iter().any(|s| s == "unary") {
        for mode in check::dated_client_faults() {
            rows.push(server_validation_row(
                bench,
                (stack, "unary", Payload::Dated),
                mode,
                client,
            ));
        }
    }
    rows
}

/// One row of the server's validation duty: `client` sending one call malformed as `mode`.
fn server_validation_row(
    bench: &Bench,
    (stack, shape, payload): (&str, &str, Payload),
    mode: &str,
    client: &Candidate,
) -> CheckResult {
    let name = format!(
        "server {stack} vs {}: {shape} {}, client {mode}",
        client.id,
        payload.as_str()
    );
    let raw = bench.raw(&name);
    let received = match bench.start_server(&bench.peer, stack, &[], &raw) {
        Err(t) => Err(format!("no ready: {}", t.describe())),
        Ok((server, address)) => {
            let spec = ClientSpec {
                shape: shape_of(shape),
                payload,
                ..bench.short(stack)
            };
            let mut argv = client.command.clone();
            argv.extend(spec.args(&address, SERVER_NAME, &bench.ca));
            argv.extend(["--conformance-fault".to_string(), mode.to_string()]);
            let t = match Proc::spawn(Role::Client, &argv, &raw) {
                Ok(c) => c.finish(CLIENT_RUN),
                Err(e) => could_not_start(e),
            };
            let mut server = server;
            let counted = (shape == "send" && check::commands_unanswered(stack))
                .then(|| window_answer(&mut server, Command::WindowEnd));
            let server_t = server.finish(Duration::ZERO);
            match (expect_stopped(&t, false), counted) {
                (Ok(_), Some(answer)) => check::one_rejected_command(answer.as_ref())
                    .map_err(|e| format!("the server's WINDOW END: {e}")),
                (Ok(r), None) => Ok(r),
                (Err(_), _) => Err(format!(
                    "the {} client saw: {}{}",
                    client.id,
                    t.describe(),
                    server_error(&server_t)
                )),
            }
        }
    };
    CheckResult::new(
        "server-validation",
        name,
        "INVALID_ARGUMENT to the malformed call, then a well-formed call served (the faulty client: stopped, exit 0)",
        received,
    )
}

fn server_error(t: &Transcript) -> String {
    t.events
        .iter()
        .find_map(|e| match e {
            Event::Error(err) => Some(format!(
                "; the server: error phase {} code {}: {}",
                err.phase, err.code, err.message
            )),
            _ => None,
        })
        .unwrap_or_default()
}
