//! Asking peers what they offer, and refusing cells they cannot run before anything starts.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rpcarena_model::campaign::{Campaign, Problem};
use rpcarena_protocol::event::{Capabilities, Event, Role, parse_event};
use std::collections::BTreeMap;
use std::io::Read;
use std::process::{ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most bytes of a capabilities query's stderr kept for the error message.
const STDERR_KEPT: usize = 64 * 1024;

/// Reads up to `keep` bytes of `stream` and drains (counts) the rest, so the peer never blocks
/// on a full pipe whatever it prints; returns what was kept and the total length.
fn drain(mut stream: impl Read, keep: usize) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let room = keep.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                total += n;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    (kept, total)
}

/// Runs `command capabilities` and parses its single event. Its stdout and stderr are read
/// while it runs (an answer larger than a pipe's 64 KiB no longer waits for the timeout), each
/// bounded, and every wait is bounded by `timeout`.
pub fn query(peer_id: &str, command: &[String], timeout: Duration) -> Result<Capabilities, String> {
    let shown = format!("{} capabilities", command.join(" "));
    let answer = collect(command, timeout)
        .map_err(|e| format!("peer {peer_id}: could not start `{shown}`: {e}"))?;
    interpret(&answer, timeout).map_err(|e| format!("peer {peer_id}: `{shown}` {e}"))
}

/// What a capabilities query left behind once its process group is gone.
struct Answer {
    /// How the peer exited; `None` when it missed the timeout (and was killed).
    status: Option<ExitStatus>,
    /// The first bytes of stdout, and its whole length.
    stdout: (Vec<u8>, usize),
    /// The first bytes of stderr.
    stderr: Vec<u8>,
    /// Processes that left the group holding its pipes, killed and named.
    escaped: Vec<String>,
}

/// Starts the query, reads both pipes while it runs, waits at most `timeout`, then kills the
/// group (and anything that escaped it holding the pipes).
fn collect(command: &[String], timeout: Duration) -> std::io::Result<Answer> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty command"))?;
    let mut child = crate::process::spawn_group(
        std::process::Command::new(program)
            .args(args)
            .arg("capabilities")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )?;
    let pgid = child.id() as i32;
    let readers = (child.stdout.take(), child.stderr.take());
    let inodes: Vec<u64> = [
        readers.0.as_ref().and_then(crate::escape::pipe_inode),
        readers.1.as_ref().and_then(crate::escape::pipe_inode),
    ]
    .into_iter()
    .flatten()
    .collect();
    let stdout = readers
        .0
        .map(|s| std::thread::spawn(move || drain(s, crate::process::MAX_LINE + 2)));
    let stderr = readers
        .1
        .map(|s| std::thread::spawn(move || drain(s, STDERR_KEPT)));
    let deadline = crate::process::deadline_after(timeout);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => break None,
        }
    };
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
    let _ = child.wait();
    crate::process::untrack_group(pgid);
    let escaped = crate::escape::kill_escaped("the capabilities query", &inodes, &[]);
    // The group is gone: the pipes close at once unless an escaped process holds them.
    Ok(Answer {
        status,
        stdout: join_reader(stdout).unwrap_or_default(),
        stderr: join_reader(stderr).unwrap_or_default().0,
        escaped,
    })
}

/// A pipe reader's result, waiting at most 1 s for it.
fn join_reader(handle: Option<JoinHandle<(Vec<u8>, usize)>>) -> Option<(Vec<u8>, usize)> {
    let handle = handle?;
    let limit = crate::process::deadline_after(Duration::from_secs(1));
    while !handle.is_finished() && Instant::now() < limit {
        std::thread::sleep(Duration::from_millis(2));
    }
    handle.is_finished().then(|| handle.join().ok()).flatten()
}

/// The capabilities event of a finished query, or what went wrong (the caller prefixes the
/// peer and the command).
fn interpret(answer: &Answer, timeout: Duration) -> Result<Capabilities, String> {
    let Some(status) = answer.status else {
        return Err(format!(
            "did not finish within {}",
            rpcarena_model::duration::format(&timeout)
        ));
    };
    if !answer.escaped.is_empty() {
        return Err(format!(
            "left processes behind: {}",
            answer.escaped.join("; ")
        ));
    }
    if !status.success() {
        let stderr = String::from_utf8_lossy(&answer.stderr);
        let tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
        let tail = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr: {tail}")
        };
        return Err(format!(
            "failed ({}){tail}",
            crate::process::describe_exit(status)
        ));
    }
    let line = first_line(&answer.stdout.0, answer.stdout.1)?;
    match parse_event(line) {
        Ok(Event::Capabilities(c)) => Ok(c),
        Ok(other) => Err(format!(
            "printed a `{}` event instead of `capabilities`",
            other.name()
        )),
        Err(e) => Err(format!("printed no valid capabilities event: {e}")),
    }
}

/// The first non-blank line of stdout, within the protocol's line limit and UTF-8.
fn first_line(stdout: &[u8], total: usize) -> Result<&str, String> {
    let Some(line) = stdout
        .split(|&b| b == b'\n')
        .find(|l| !l.trim_ascii().is_empty())
    else {
        return Err("printed no capabilities event".to_string());
    };
    if line.len() > crate::process::MAX_LINE {
        return Err(format!(
            "printed a line longer than {} bytes (1 MiB, the limit of docs/peer-protocol.md; \
             {total} bytes in all)",
            crate::process::MAX_LINE
        ));
    }
    std::str::from_utf8(line).map_err(|e| {
        format!(
            "printed a line that is not UTF-8 (invalid byte at offset {})",
            e.valid_up_to()
        )
    })
}

/// Every cell and workload value the named peers cannot run, with field paths.
pub fn check_cells(campaign: &Campaign, caps: &BTreeMap<String, Capabilities>) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (i, cell) in campaign.cells.iter().enumerate() {
        for (role, peer_id) in [(Role::Client, &cell.client), (Role::Server, &cell.server)] {
            let Some(cap) = caps.get(peer_id) else {
                continue;
            };
            let Some(stack) = cap.roles.stack(role, &cell.stack) else {
                let offered: Vec<&str> = match role {
                    Role::Client => &cap.roles.client,
                    Role::Server => &cap.roles.server,
                }
                .iter()
                .map(|s| s.stack.as_str())
                .collect();
                problems.push(Problem {
                    path: format!("cells[{i}].stack"),
                    message: format!(
                        "peer {peer_id} does not offer stack {:?} as a {role}; it offers: {}",
                        cell.stack,
                        if offered.is_empty() {
                            "nothing".to_string()
                        } else {
                            offered.join(", ")
                        }
                    ),
                });
                continue;
            };
            problems.extend(check_entry(campaign, i, role, peer_id, stack));
        }
    }
    problems
}

/// What one peer's entry for a cell's stack cannot run of the campaign: shapes (with the
/// peer's reason when it gives one), payload kinds, load models (clients), the `tls` setting.
fn check_entry(
    campaign: &Campaign,
    i: usize,
    role: Role,
    peer_id: &str,
    stack: &rpcarena_protocol::event::StackCapability,
) -> Vec<Problem> {
    let cell = &campaign.cells[i];
    let mut problems = Vec::new();
    let mut refuse = |path: String, message: String| problems.push(Problem { path, message });
    for shape in cell.shapes(&campaign.workload) {
        if !stack.shapes.iter().any(|s| s == shape.as_str()) {
            let why = stack
                .not_offered
                .get(shape.as_str())
                .map(|why| format!(": {why}"))
                .unwrap_or_default();
            let field = match cell.shapes {
                Some(_) => format!("cells[{i}].shapes"),
                None => "workload.shapes".to_string(),
            };
            refuse(
                format!("cells[{i}]"),
                format!(
                    "peer {peer_id} does not offer shape {shape} on stack {} as a {role} ({field}){why}",
                    cell.stack
                ),
            );
        }
    }
    if role == Role::Client {
        let field = match cell.load {
            Some(_) => format!("cells[{i}].load"),
            None => "workload.load".to_string(),
        };
        for load in cell.loads(&campaign.workload) {
            if !stack.load_models.iter().any(|l| l == load.model()) {
                refuse(
                    format!("cells[{i}]"),
                    format!(
                        "peer {peer_id} does not offer load model {} on stack {} as a client ({field})",
                        load.model(),
                        cell.stack
                    ),
                );
            }
        }
    }
    problems.extend(payload_problems(campaign, i, role, peer_id, stack));
    if role == Role::Client {
        problems.extend(client_mode_problem(campaign, i, peer_id, stack));
    }
    problems.extend(tls_problem(campaign, i, peer_id, role, stack));
    problems
}

/// The cell's payload kinds this peer's entry does not list (none listed: zeros only).
fn payload_problems(
    campaign: &Campaign,
    i: usize,
    role: Role,
    peer_id: &str,
    stack: &rpcarena_protocol::event::StackCapability,
) -> Vec<Problem> {
    let cell = &campaign.cells[i];
    let field = match cell.payload {
        Some(_) => format!("cells[{i}].payload"),
        None => "workload.payload".to_string(),
    };
    let offered = |payload: &str| {
        stack.payloads.iter().any(|p| p == payload)
            || (stack.payloads.is_empty() && payload == "zeros")
    };
    cell.payloads(&campaign.workload)
        .iter()
        .filter(|payload| !offered(payload.as_str()))
        .map(|payload| Problem {
            path: format!("cells[{i}]"),
            message: format!(
                "peer {peer_id} does not offer payload {payload} on stack {} as a {role} ({field})",
                cell.stack
            ),
        })
        .collect()
}

/// (1.4) The cell's client mode when this client's entry does not list it.
fn client_mode_problem(
    campaign: &Campaign,
    i: usize,
    peer_id: &str,
    stack: &rpcarena_protocol::event::StackCapability,
) -> Option<Problem> {
    let cell = &campaign.cells[i];
    let mode = cell.client_mode(&campaign.workload);
    if stack.takes_client_mode(mode) {
        return None;
    }
    let field = match cell.client_mode {
        Some(_) => format!("cells[{i}].client_mode"),
        None => "workload.client_mode".to_string(),
    };
    let takes = if stack.client_modes.is_empty() {
        "official".to_string()
    } else {
        stack.client_modes.join(", ")
    };
    Some(Problem {
        path: field,
        message: format!(
            "peer {peer_id}'s client of stack {} cannot run client mode {mode} (it takes: {takes}); give cells[{i}] client_mode = \"official\"",
            cell.stack
        ),
    })
}

/// The campaign's `tls` setting when this peer cannot run the cell's stack with it.
fn tls_problem(
    campaign: &Campaign,
    i: usize,
    peer_id: &str,
    role: Role,
    stack: &rpcarena_protocol::event::StackCapability,
) -> Option<Problem> {
    if stack.takes_tls(campaign.tls) {
        return None;
    }
    let cell = &campaign.cells[i];
    let (asked, value) = if campaign.tls {
        ("TLS", "on")
    } else {
        ("plaintext", "off")
    };
    let takes = if stack.tls.is_empty() {
        "on".to_string()
    } else {
        stack.tls.join(", ")
    };
    Some(Problem {
        path: "tls".to_string(),
        message: format!(
            "peer {peer_id} cannot run stack {} as a {role} with {asked} (--tls {value}; it takes: {takes}); cells[{i}] needs tls = {}",
            cell.stack, !campaign.tls
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{Roles, StackCapability};

    #[test]
    fn refuses_cells_a_peer_cannot_run() {
        let text = rpcarena_fixtures::campaign("t", 1)
            .peer("p", &["x"])
            .cell("ok", "p", "p", "grpc")
            .cell("bad", "p", "p", "http3")
            .section("[workload]\nconcurrency = [1]\nshapes = [\"unary\", \"bidi\"]")
            .build();
        let campaign = Campaign::parse(&text, "t").unwrap();
        let grpc = StackCapability {
            stack: "grpc".into(),
            shapes: vec!["unary".into()],
            load_models: vec!["closed".into()],
            libraries: BTreeMap::new(),
            ..StackCapability::default()
        };
        let caps = BTreeMap::from([(
            "p".to_string(),
            Capabilities {
                roles: Roles {
                    client: vec![grpc.clone()],
                    server: vec![grpc],
                },
                ..Capabilities::default()
            },
        )]);
        let problems = check_cells(&campaign, &caps);
        let text: Vec<String> = problems
            .iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect();
        assert_eq!(text.len(), 4, "{text:#?}");
        assert!(
            text[0]
                .contains("cells[0]: peer p does not offer shape bidi on stack grpc as a client")
        );
        assert!(text[2].contains(
            "cells[1].stack: peer p does not offer stack \"http3\" as a client; it offers: grpc"
        ));
    }

    #[test]
    fn refuses_plaintext_a_peer_cannot_run_and_gives_a_shapes_reason() {
        let text = rpcarena_fixtures::campaign("t", 1)
            .key("tls = false")
            .peer("p", &["x"])
            .cell("a", "p", "p", "grpc")
            .section("[workload]\nconcurrency = [1]\nshapes = [\"send\"]")
            .build();
        let campaign = Campaign::parse(&text, "t").unwrap();
        let grpc = StackCapability {
            stack: "grpc".into(),
            shapes: vec!["unary".into()],
            load_models: vec!["closed".into()],
            not_offered: BTreeMap::from([("send".into(), "no one-way RPC here".into())]),
            ..StackCapability::default()
        };
        let caps = BTreeMap::from([(
            "p".to_string(),
            Capabilities {
                roles: Roles {
                    client: vec![grpc.clone()],
                    server: vec![],
                },
                ..Capabilities::default()
            },
        )]);
        let text: Vec<String> = check_cells(&campaign, &caps)
            .iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect();
        assert_eq!(
            text,
            [
                "cells[0]: peer p does not offer shape send on stack grpc as a client (workload.shapes): no one-way RPC here",
                "tls: peer p cannot run stack grpc as a client with plaintext (--tls off; it takes: on); cells[0] needs tls = true",
                "cells[0].stack: peer p does not offer stack \"grpc\" as a server; it offers: nothing"
            ]
        );
    }

    #[test]
    fn refuses_a_client_mode_and_a_cells_payload_a_peer_does_not_list() {
        let text = rpcarena_fixtures::campaign("t", 1)
            .peer("p", &["x"])
            .cell("a", "p", "p", "orpc-http")
            .cell_line("payload = [\"dated\"]")
            .cell_line("client_mode = \"replay\"")
            .section("[workload]\nconcurrency = [1]\nshapes = [\"unary\"]")
            .build();
        let campaign = Campaign::parse(&text, "t").unwrap();
        let plain = StackCapability {
            stack: "orpc-http".into(),
            shapes: vec!["unary".into()],
            load_models: vec!["closed".into()],
            ..StackCapability::default()
        };
        let caps = |entry: &StackCapability| {
            BTreeMap::from([(
                "p".to_string(),
                Capabilities {
                    roles: Roles {
                        client: vec![entry.clone()],
                        server: vec![entry.clone()],
                    },
                    ..Capabilities::default()
                },
            )])
        };
        let text: Vec<String> = check_cells(&campaign, &caps(&plain))
            .iter()
            .map(|p| format!("{}: {}", p.path, p.message))
            .collect();
        assert_eq!(text.len(), 3, "{text:#?}");
        assert!(
            text[0].contains("does not offer payload dated")
                && text[0].contains("(cells[0].payload)"),
            "{text:#?}"
        );
        assert!(text[1].starts_with("cells[0].client_mode: peer p's client of stack orpc-http cannot run client mode replay (it takes: official)"), "{text:#?}");
        let both = StackCapability {
            payloads: vec!["zeros".into(), "dated".into()],
            client_modes: vec!["official".into(), "replay".into()],
            ..plain
        };
        assert!(check_cells(&campaign, &caps(&both)).is_empty());
    }

    #[test]
    fn reports_a_peer_that_fails_or_hangs() {
        let err = query("p", &["false".to_string()], Duration::from_secs(5)).unwrap_err();
        assert!(err.contains("failed (exit status 1)"), "{err}");
        let err = query(
            "p",
            &["sh".into(), "-c".into(), "sleep 10".into()],
            Duration::from_millis(200),
        )
        .unwrap_err();
        assert!(err.contains("did not finish"), "{err}");
    }

    #[test]
    fn a_large_answer_is_read_while_the_peer_runs() {
        // 200 KiB of padding inside one JSON line: more than a pipe holds. Before the fix the
        // peer blocked writing while the controller waited for it to exit, until the timeout.
        let script = "printf '{\"protocol\":1,\"event\":\"error\",\"phase\":\"startup\",\"code\":\"config\",\"message\":\"%s\"}\\n' \"$(head -c 204800 /dev/zero | tr '\\0' x)\"".to_string();
        let started = Instant::now();
        let err = query(
            "p",
            &["sh".into(), "-c".into(), script, "sh".into()],
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert!(err.contains("instead of `capabilities`"), "{err}");
        // A line longer than 1 MiB is refused, and reading it costs at most 1 MiB.
        let err = query(
            "p",
            &[
                "sh".into(),
                "-c".into(),
                "head -c 5000000 /dev/zero | tr '\\0' a".into(),
                "sh".into(),
            ],
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(err.contains("longer than 1048576 bytes"), "{err}");
    }
}
