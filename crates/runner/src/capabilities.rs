//! Asking peers what they offer, and refusing cells they cannot run before anything starts.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use rpcarena_model::campaign::{Campaign, Problem};
use rpcarena_protocol::event::{Capabilities, Event, Role, parse_event};
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Runs `command capabilities` and parses its single event.
pub fn query(peer_id: &str, command: &[String], timeout: Duration) -> Result<Capabilities, String> {
    let shown = format!("{} capabilities", command.join(" "));
    let (program, args) = command.split_first().ok_or("empty command")?;
    let mut child = std::process::Command::new(program)
        .args(args)
        .arg("capabilities")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("peer {peer_id}: could not start `{shown}`: {e}"))?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
                let _ = child.wait();
                return Err(format!(
                    "peer {peer_id}: `{shown}` did not finish within {} s",
                    timeout.as_secs()
                ));
            }
        }
    };
    let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
    let mut stdout = String::new();
    let mut stderr = String::new();
    if let Some(mut s) = child.stdout.take() {
        let _ = s.read_to_string(&mut stdout);
    }
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_string(&mut stderr);
    }
    let stderr_tail: String = stderr.lines().rev().take(5).collect::<Vec<_>>().join(" | ");
    if !status.success() {
        return Err(format!(
            "peer {peer_id}: `{shown}` failed ({}){}",
            crate::process::describe_exit(status),
            if stderr_tail.is_empty() {
                String::new()
            } else {
                format!("; stderr: {stderr_tail}")
            }
        ));
    }
    let line = stdout.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    match parse_event(line) {
        Ok(Event::Capabilities(c)) => Ok(c),
        Ok(other) => Err(format!(
            "peer {peer_id}: `{shown}` printed a `{}` event instead of `capabilities`",
            other.name()
        )),
        Err(e) => Err(format!(
            "peer {peer_id}: `{shown}` printed no valid capabilities event: {e}"
        )),
    }
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
            for shape in &campaign.workload.shapes {
                if !stack.shapes.iter().any(|s| s == shape.as_str()) {
                    problems.push(Problem {
                        path: format!("cells[{i}]"),
                        message: format!(
                            "peer {peer_id} does not offer shape {shape} on stack {} as a {role} (workload.shapes)",
                            cell.stack
                        ),
                    });
                }
            }
            for payload in &campaign.workload.payload {
                // A peer that lists no payloads offers zero-filled bytes only.
                let offered = stack.payloads.iter().any(|p| p == payload.as_str())
                    || (stack.payloads.is_empty() && payload.as_str() == "zeros");
                if !offered {
                    problems.push(Problem {
                        path: format!("cells[{i}]"),
                        message: format!(
                            "peer {peer_id} does not offer payload {payload} on stack {} as a {role} (workload.payload)",
                            cell.stack
                        ),
                    });
                }
            }
            if role == Role::Client {
                for load in &campaign.workload.load {
                    if !stack.load_models.iter().any(|l| l == load.model()) {
                        problems.push(Problem {
                            path: format!("cells[{i}]"),
                            message: format!(
                                "peer {peer_id} does not offer load model {} on stack {} as a client (workload.load)",
                                load.model(),
                                cell.stack
                            ),
                        });
                    }
                }
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_protocol::event::{Roles, StackCapability};

    #[test]
    fn refuses_cells_a_peer_cannot_run() {
        let text = r#"
name = "t"
seed = 1
[[peers]]
id = "p"
command = ["x"]
[[cells]]
id = "ok"
client = "p"
server = "p"
stack = "grpc"
[[cells]]
id = "bad"
client = "p"
server = "p"
stack = "http3"
[workload]
concurrency = [1]
shapes = ["unary", "bidi"]
"#;
        let campaign = Campaign::parse(text, "t").unwrap();
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
}
