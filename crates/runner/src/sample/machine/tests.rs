//! Every transition of the sample's state machine on a fake clock: the happy path, and each
//! fault path the runner knows (a peer that cannot start, times out, reports an error, prints
//! something unexpected or malformed, exits, will not shut down or survives SIGKILL; checks that
//! fail; a sampler or network check that fails; a stop signal).

// Tests may exceed the length guard: a step-by-step scenario reads best as one function.
#![allow(clippy::too_many_lines)]

use super::*;
use crate::procstat::GroupUsage;
use rpcarena_netem_core::SampleCheck;
use rpcarena_protocol::event::{PeerError, Ready, Stopped, TransportStats};
use rpcarena_protocol::histogram;
use rpcarena_protocol::workload::Shape;
use std::os::unix::process::ExitStatusExt;

const MS: Nanos = 1_000_000;
const S: Nanos = 1_000 * MS;

fn spec() -> SampleSpec {
    SampleSpec {
        id: "r01-001-x".into(),
        slot: Slot {
            round: 1,
            position: 1,
            config: 0,
        },
        config: crate::checks::tests::config(Shape::Unary),
        client_language: "rust".into(),
        server_language: "go".into(),
        timing: Timing::default(),
        timeouts: Timeouts::default(),
        pins: PinPlan::default(),
        cpus: 2,
        drift_threshold: 0.03,
        emulated: false,
        raw_rel: "raw/r01-001-x".into(),
        started_at: "2026-11-30T00:00:00Z".into(),
        gate: Gate {
            waited: Duration::from_millis(1500),
            load_avg: 0.7,
            timed_out: false,
        },
        server_argv: vec!["peer".into(), "server".into()],
        client: ClientLaunch {
            launcher: Launcher::Local { cpus: vec![0] },
            command: vec!["peer".into()],
            server_name: "127.0.0.1".into(),
            ca: "/run/ca.pem".into(),
            seed: 5,
        },
        server_window: false,
    }
}

/// A report that adds up for [`spec`]: 100 unary operations in the 5 s window.
fn report() -> SampleReport {
    let mut h = histogram::new_latency_histogram();
    h.record_n(1_000_000, 100).unwrap();
    SampleReport {
        completed: 100,
        requests: 100,
        responses: 100,
        request_bytes: 1000,
        response_bytes: 2000,
        window_ns: 5 * S,
        drain_ns: MS,
        histogram: histogram::encode(&h).unwrap(),
        ..SampleReport::default()
    }
}

fn usage() -> WindowUsage {
    let group = GroupUsage {
        cpu_us: 1_000_000.0,
        peak_rss_bytes: 8 << 20,
        readings: 500,
        processes: 1,
        busiest_thread_cpu_us: 500_000.0,
    };
    WindowUsage {
        elapsed_s: 5.0,
        steal_pct: 0.0,
        groups: vec![group, group],
    }
}

fn exit(code: i32) -> Option<ExitStatus> {
    Some(ExitStatus::from_raw(code << 8))
}

fn killed() -> Option<ExitStatus> {
    Some(ExitStatus::from_raw(9))
}

/// The machine, its clock, and the actions it asked for.
struct Run {
    machine: SampleMachine,
    now: Nanos,
}

impl Run {
    fn new() -> Run {
        Run::with(spec())
    }

    fn with(spec: SampleSpec) -> Run {
        let mut machine = SampleMachine::new(spec);
        machine.start();
        Run { machine, now: 0 }
    }

    fn at(&mut self, now: Nanos) -> &mut Run {
        self.now = now;
        self
    }

    fn actions(&mut self) -> Vec<Action> {
        std::iter::from_fn(|| self.machine.poll_action()).collect()
    }

    /// The actions as short text, for comparing sequences.
    fn said(&mut self) -> Vec<String> {
        self.actions()
            .into_iter()
            .map(|a| match a {
                Action::Spawn { role, .. } => format!("spawn {role}"),
                Action::Send { role, command } => format!("send {} {role}", command.as_str()),
                Action::CloseStdin(role) => format!("close {role}"),
                Action::AwaitExit { role, within } => {
                    format!("await exit {role} {}", duration::format(&within))
                }
                Action::StartSampler => "start sampler".into(),
                Action::StopSampler => "stop sampler".into(),
                Action::KillGroups => "kill groups".into(),
                Action::CheckNetwork => "check network".into(),
                Action::Warn(text) => format!("warn {text}"),
                Action::Record(r) => format!("record {:?}", r.status),
            })
            .collect()
    }

    fn feed(&mut self, input: Input) -> &mut Run {
        self.machine.handle(self.now, input);
        self
    }

    fn line(&mut self, role: Role, line: Line) -> &mut Run {
        self.feed(Input::Line(Message { role, line }))
    }

    fn event(&mut self, role: Role, event: Event) -> &mut Run {
        self.line(role, Line::Event(event))
    }

    fn timeout(&mut self) -> &mut Run {
        self.machine.handle_timeout(self.now);
        self
    }

    fn ready(&mut self) -> &mut Run {
        self.feed(Input::Spawned(Role::Server)).event(
            Role::Server,
            Event::Ready(Ready {
                role: Role::Server,
                address: "127.0.0.1:4000".into(),
                pid: 7,
            }),
        )
    }

    fn armed(&mut self) -> &mut Run {
        self.ready().feed(Input::Spawned(Role::Client)).event(
            Role::Client,
            Event::Armed(Armed {
                lanes: 4,
                connections: 1,
                connect_ns: Some(2 * MS),
                warmup_completed: 50,
                ..Armed::default()
            }),
        )
    }

    fn measured(&mut self, report: SampleReport) -> &mut Run {
        self.armed()
            .event(Role::Client, Event::Sample(report))
            .feed(Input::Readings {
                usage: Ok(usage()),
                link: None,
            })
    }

    /// One peer's clean shutdown after SHUTDOWN was sent.
    fn stops(&mut self, role: Role) -> &mut Run {
        let counters = match role {
            Role::Server => BTreeMap::from([("rpcs".to_string(), 104)]),
            Role::Client => BTreeMap::new(),
        };
        self.event(
            role,
            Event::Stopped(Stopped {
                counters,
                ..Stopped::default()
            }),
        )
        .ended(role, exit(0))
    }

    /// The sample measured, and the client's `stopped` after SHUTDOWN.
    fn client_stopped(&mut self) -> &mut Run {
        self.measured(report())
            .event(Role::Client, Event::Stopped(Stopped::default()))
    }

    /// A peer's output ended and it exited with `status`.
    fn ended(&mut self, role: Role, status: Option<ExitStatus>) -> &mut Run {
        self.line(role, Line::Closed)
            .feed(Input::Exit { role, status })
    }

    /// From teardown to the record, with a clean teardown and network check.
    fn record(&mut self) -> SampleRecord {
        self.finish(Vec::new(), Ok(None))
    }

    fn finish(
        &mut self,
        survivors: Vec<String>,
        network: Result<Option<SampleCheck>, String>,
    ) -> SampleRecord {
        // A failed sample listens out its aftermath first.
        if let Some(deadline) = self.machine.deadline() {
            self.at(deadline).timeout();
        }
        let actions = self.said();
        assert!(actions.contains(&"kill groups".to_string()), "{actions:?}");
        self.feed(Input::TornDown(survivors));
        assert_eq!(self.said(), ["check network"]);
        self.feed(Input::Network(network));
        let mut actions = self.actions();
        assert_eq!(actions.len(), 1, "{actions:?}");
        assert!(self.machine.is_done());
        match actions.remove(0) {
            Action::Record(record) => *record,
            other => panic!("expected the record, got {other:?}"),
        }
    }

    fn reason(&mut self) -> String {
        let record = self.record();
        assert_eq!(record.status, SampleStatus::Failed);
        record.reason.unwrap_or_default()
    }
}

#[test]
fn the_happy_path_step_by_step() {
    let mut run = Run::new();
    let argv = match run.actions().remove(0) {
        Action::Spawn { role, argv } => {
            assert_eq!(role, Role::Server);
            argv
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(argv, ["peer", "server"]);
    assert_eq!(
        run.machine.deadline(),
        None,
        "no timer before the spawn is confirmed"
    );
    run.at(10 * MS).feed(Input::Spawned(Role::Server));
    assert_eq!(
        run.machine.deadline(),
        Some(10 * MS + 10 * S),
        "timeouts.ready"
    );

    run.at(20 * MS).event(
        Role::Server,
        Event::Ready(Ready {
            role: Role::Server,
            address: "127.0.0.1:4000".into(),
            pid: 7,
        }),
    );
    let argv = match run.actions().remove(0) {
        Action::Spawn { role, argv } => {
            assert_eq!(role, Role::Client);
            argv
        }
        other => panic!("{other:?}"),
    };
    let text = argv.join(" ");
    assert!(
        text.starts_with("taskset -c 0 peer client --stack grpc --server 127.0.0.1:4000")
            && text.ends_with("--load closed"),
        "{text}"
    );
    run.at(30 * MS).feed(Input::Spawned(Role::Client));
    assert_eq!(
        run.machine.deadline(),
        Some(30 * MS + 31 * S),
        "warmup + timeouts.armed"
    );

    run.at(2 * S).event(
        Role::Client,
        Event::Armed(Armed {
            lanes: 4,
            connections: 1,
            connect_ns: Some(2 * MS),
            warmup_completed: 50,
            ..Armed::default()
        }),
    );
    assert_eq!(run.said(), ["start sampler", "send START client"]);
    assert_eq!(
        run.machine.deadline(),
        Some(22 * S),
        "window + drain + timeouts.sample"
    );

    run.at(8 * S).event(Role::Client, Event::Sample(report()));
    assert_eq!(run.said(), ["stop sampler"]);
    run.feed(Input::Readings {
        usage: Ok(usage()),
        link: None,
    });
    assert_eq!(run.said(), ["send SHUTDOWN client"]);
    assert_eq!(run.machine.deadline(), Some(13 * S), "timeouts.shutdown");

    run.event(Role::Client, Event::Stopped(Stopped::default()));
    assert_eq!(run.said(), ["close client"]);
    run.line(Role::Client, Line::Closed);
    assert_eq!(run.said(), ["await exit client 5s"]);
    run.feed(Input::Exit {
        role: Role::Client,
        status: exit(0),
    });
    assert_eq!(run.said(), ["send SHUTDOWN server"]);
    run.at(9 * S).stops(Role::Server);
    assert_eq!(run.machine.deadline(), None);
    let record = run.record();

    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    assert_eq!(record.reason, None);
    assert_eq!(record.elapsed_ms, 9_000);
    assert_eq!(record.server_counters["rpcs"], 104);
    let client = record.client.unwrap();
    assert_eq!(
        (client.completed, client.lanes, client.warmup_completed),
        (100, 4, 50)
    );
    assert_eq!(record.metrics.unwrap().ops_per_s, 20.0);
    let cpu = record.client_process.unwrap();
    assert_eq!((cpu.cpu_us_per_op, cpu.peak_rss_mib), (10_000.0, 8.0));
    let noise = record.noise.unwrap();
    assert_eq!((noise.load_gate_wait_ms, noise.load_avg_1m), (1500, 0.7));
    assert!((noise.client_cores - 0.2).abs() < 1e-9 && noise.flags.is_empty());
}

#[test]
fn a_server_that_cannot_start_fails_the_sample() {
    let mut run = Run::new();
    run.actions();
    run.feed(Input::SpawnFailed {
        role: Role::Server,
        error: "starting server peer /x: No such file or directory".into(),
    });
    assert_eq!(
        run.reason(),
        "starting server peer /x: No such file or directory"
    );
}

#[test]
fn a_server_that_never_gets_ready_times_out() {
    let mut run = Run::new();
    run.actions();
    run.feed(Input::Spawned(Role::Server));
    run.at(10 * S - 1).timeout();
    assert!(run.said().is_empty(), "not yet");
    run.at(10 * S).timeout();
    assert_eq!(
        run.reason(),
        "server did not print `ready` within 10s (timeouts.ready) during server start-up"
    );
}

#[test]
fn an_error_event_names_its_code_and_phase() {
    let mut run = Run::new();
    run.feed(Input::Spawned(Role::Server)).event(
        Role::Server,
        Event::Error(PeerError {
            phase: "listen".into(),
            code: "config".into(),
            message: "address in use".into(),
        }),
    );
    assert_eq!(
        run.reason(),
        "server reported a config error during listen: address in use"
    );
    // the article follows the code: "an invalid error"
    let mut run = Run::new();
    run.ready().feed(Input::Spawned(Role::Client)).event(
        Role::Client,
        Event::Error(PeerError {
            phase: "validate".into(),
            code: "invalid".into(),
            message: "seq 2, expected 1".into(),
        }),
    );
    assert_eq!(
        run.reason(),
        "client reported an invalid error during validate: seq 2, expected 1"
    );
}

#[test]
fn an_exit_without_stopped_says_stopped_was_missing() {
    let mut run = Run::new();
    run.measured(report()).ended(Role::Client, exit(0));
    assert_eq!(
        run.reason(),
        "client ended its output without printing `stopped` after SHUTDOWN (exit status 0); `stopped` expected before the exit; see client.stderr"
    );
}

#[test]
fn an_unexpected_event_or_a_malformed_line_fails_the_sample() {
    let mut run = Run::new();
    run.feed(Input::Spawned(Role::Server))
        .event(Role::Server, Event::Armed(Armed::default()));
    assert_eq!(
        run.reason(),
        "server printed an unexpected `armed` event during server start-up (waiting for the server's `ready`)"
    );
    let mut run = Run::new();
    run.armed().line(
        Role::Client,
        Line::Malformed {
            text: "garbage".into(),
            error: "not a JSON object".into(),
        },
    );
    assert_eq!(
        run.reason(),
        "client printed a malformed event during measure: not a JSON object; line: garbage"
    );
}

#[test]
fn a_peer_whose_output_ends_is_described_by_its_exit() {
    let mut run = Run::new();
    run.armed().actions();
    run.line(Role::Server, Line::Closed);
    assert_eq!(run.said(), ["await exit server 1s"]);
    run.feed(Input::Exit {
        role: Role::Server,
        status: killed(),
    });
    assert_eq!(run.said(), ["stop sampler"]);
    assert_eq!(
        run.reason(),
        "server exited unexpectedly during measure (killed by signal 9 (SIGKILL)); see server.stderr"
    );
    let mut run = Run::new();
    run.feed(Input::Spawned(Role::Server))
        .line(Role::Server, Line::Closed)
        .feed(Input::Exit {
            role: Role::Server,
            status: None,
        });
    assert_eq!(
        run.reason(),
        "server closed its stdout during server start-up but is still running (a peer prints \
         events until it exits); see server.stderr"
    );
}

#[test]
fn a_reason_stays_bounded_whatever_the_peers_print() {
    let mut run = Run::new();
    run.armed().actions();
    let long = "z".repeat(5_000);
    for _ in 0..200_000 {
        run.line(
            Role::Client,
            Line::Malformed {
                text: long.clone(),
                error: "e".into(),
            },
        );
    }
    let reason = run.reason();
    // Before the fix: 1M lines made a 13 MB reason (here it would be 1 GB).
    assert!(reason.len() < 16 * 1024, "{} bytes", reason.len());
    assert!(
        reason.ends_with("and 199992 more problems (the peers' output is in raw/r01-001-x)"),
        "{}",
        &reason[reason.len() - 200..]
    );
}

#[test]
fn stdout_left_open_after_stopped_says_so() {
    let mut run = Run::new();
    run.client_stopped().actions();
    run.at(20 * S).timeout();
    // Before the fix: "client did not print `end of output` within 5s".
    assert_eq!(
        run.reason(),
        "client printed `stopped` but its stdout was still open 5s later (timeouts.shutdown): \
         the peer did not exit, or a process it started holds its stdout"
    );
}

#[test]
fn a_client_that_cannot_start_or_arm_fails_the_sample() {
    let mut run = Run::new();
    run.ready().feed(Input::SpawnFailed {
        role: Role::Client,
        error: "starting client peer /x: Permission denied".into(),
    });
    assert_eq!(run.reason(), "starting client peer /x: Permission denied");

    let mut run = Run::new();
    run.ready().feed(Input::Spawned(Role::Client));
    run.at(31 * S).timeout();
    assert_eq!(
        run.reason(),
        "client did not print `armed` within 31s (timeouts.armed) during connect and warmup"
    );
}

#[test]
fn a_start_that_cannot_be_sent_stops_the_sampler_and_fails() {
    let mut run = Run::new();
    run.armed();
    assert_eq!(
        run.said(),
        [
            "spawn server",
            "spawn client",
            "start sampler",
            "send START client"
        ]
    );
    run.feed(Input::SendFailed {
        role: Role::Client,
        error: "sending START to the client peer: Broken pipe (os error 32)".into(),
    });
    assert_eq!(run.said(), ["stop sampler"]);
    run.feed(Input::Readings {
        usage: Ok(usage()),
        link: None,
    });
    assert_eq!(
        run.reason(),
        "sending START to the client peer: Broken pipe (os error 32)"
    );
}

#[test]
fn a_sample_that_never_comes_times_out_and_its_readings_are_dropped() {
    let mut run = Run::new();
    run.armed().actions();
    run.at(20 * S).timeout();
    assert_eq!(run.said(), ["stop sampler"]);
    run.feed(Input::Readings {
        usage: Ok(usage()),
        link: None,
    });
    let record = run.record();
    assert_eq!(
        record.reason.as_deref(),
        Some("client did not print `sample` within 20s (timeouts.sample) during measure")
    );
    assert!(record.client.is_none() && record.client_process.is_none());
}

#[test]
fn failed_checks_fail_the_sample_once_the_peers_shut_down_cleanly() {
    let mut run = Run::new();
    let mut bad = report();
    bad.failed = 2;
    bad.failures.insert("timeout".into(), 2);
    bad.responses = 99;
    run.measured(bad).actions();
    run.stops(Role::Client).stops(Role::Server);
    assert!(run.said().contains(&"send SHUTDOWN server".to_string()));
    let record = run.record();
    assert_eq!(
        record.reason.as_deref(),
        Some(
            "2 operations failed (timeout: 2); responses is 99 but 100 expected for 100 completed unary operations; response_bytes is 2000 but 1980 expected for 100 completed unary operations"
        )
    );
    assert!(
        record.client.is_some() && record.metrics.is_some(),
        "kept for audit"
    );
}

fn server_transport(transport: &str) -> Stopped {
    Stopped {
        counters: BTreeMap::from([("rpcs".to_string(), 104)]),
        transport: Some(Box::new(TransportStats {
            transport: transport.into(),
            connections: 1,
            packets_sent: Some(2400),
            retransmitted: Some(3),
            cwnd_bytes: Some(130_304),
            ..TransportStats::default()
        })),
        ..Stopped::default()
    }
}

#[test]
fn the_servers_transport_is_kept_and_checked_like_the_clients() {
    let mut run = Run::new();
    run.measured(report()).actions();
    run.stops(Role::Client);
    run.event(Role::Server, Event::Stopped(server_transport("tcp")))
        .ended(Role::Server, exit(0));
    let record = run.record();
    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    assert_eq!(record.server_counters["rpcs"], 104);
    let t = record
        .server
        .and_then(|s| s.transport)
        .expect("server.transport");
    assert_eq!(
        (t.packets_sent, t.retransmitted, t.cwnd_bytes),
        (Some(2400), Some(3), Some(130_304))
    );

    // A malformed object fails the sample with the same words as the client's would.
    let mut run = Run::new();
    let mut report = report();
    report.transport = Some(Box::new(TransportStats {
        transport: "sctp".into(),
        ..TransportStats::default()
    }));
    run.measured(report).actions();
    run.stops(Role::Client);
    run.event(Role::Server, Event::Stopped(server_transport("udp")))
        .ended(Role::Server, exit(0));
    assert_eq!(
        run.reason(),
        "the client's transport.transport is \"sctp\"; expected one of [\"tcp\", \"quic\"]; the server's transport.transport is \"udp\"; expected one of [\"tcp\", \"quic\"]"
    );
}

#[test]
fn shutdown_faults_each_have_their_reason() {
    // `stopped` never comes
    let mut run = Run::new();
    run.at(8 * S).measured(report());
    run.at(13 * S).timeout();
    assert_eq!(
        run.reason(),
        "client did not print `stopped` within 5s (timeouts.shutdown) during shutdown"
    );
    // SHUTDOWN cannot be written
    let mut run = Run::new();
    run.measured(report()).feed(Input::SendFailed {
        role: Role::Client,
        error: "client stdin is already closed".into(),
    });
    assert_eq!(run.reason(), "client stdin is already closed");
    // something after `stopped`
    let mut run = Run::new();
    run.client_stopped()
        .event(Role::Client, Event::Sample(report()));
    assert_eq!(
        run.reason(),
        "client printed an unexpected `sample` event during shutdown (waiting for the client's `end of output`)"
    );
    // a non-zero exit, and no exit at all
    let mut run = Run::new();
    run.client_stopped().ended(Role::Client, exit(1));
    assert_eq!(
        run.reason(),
        "client exited with exit status 1 after `stopped`"
    );
    let mut run = Run::new();
    run.measured(report())
        .stops(Role::Client)
        .event(Role::Server, Event::Stopped(Stopped::default()))
        .ended(Role::Server, None);
    assert_eq!(
        run.reason(),
        "server did not exit within 5s of `stopped` (timeouts.shutdown)"
    );
    // the server goes while the client shuts down
    let mut run = Run::new();
    run.client_stopped().ended(Role::Server, exit(0));
    assert_eq!(
        run.reason(),
        "server exited unexpectedly during shutdown (exit status 0); see server.stderr"
    );
}

#[test]
fn the_aftermath_adds_what_the_peers_said_next() {
    let mut run = Run::new();
    run.armed().actions();
    run.at(3 * S).line(
        Role::Client,
        Line::Malformed {
            text: "x".into(),
            error: "not a JSON object".into(),
        },
    );
    assert_eq!(run.machine.deadline(), Some(3 * S + 300 * MS));
    run.event(
        Role::Server,
        Event::Error(PeerError {
            phase: "serve".into(),
            code: "connect".into(),
            message: "reset".into(),
        }),
    )
    .line(
        Role::Client,
        Line::Malformed {
            text: "y".into(),
            error: "e".into(),
        },
    )
    .event(Role::Client, Event::Stopped(Stopped::default()))
    .line(Role::Client, Line::Closed);
    assert_eq!(
        run.said(),
        ["stop sampler", "await exit client 100ms"].map(String::from)
    );
    run.feed(Input::Exit {
        role: Role::Client,
        status: exit(2),
    });
    run.at(3 * S + 299 * MS).timeout();
    assert!(run.said().is_empty(), "the aftermath lasts 300 ms");
    assert_eq!(
        run.reason(),
        "client printed a malformed event during measure: not a JSON object; line: x; \
         server then reported a connect error during serve: reset; \
         client then printed a malformed line: y; client then exited (exit status 2)"
    );
}

#[test]
fn survivors_a_failed_network_check_and_a_signal_fail_a_good_sample() {
    let ok = |run: &mut Run| {
        run.measured(report())
            .stops(Role::Client)
            .stops(Role::Server);
    };
    let mut run = Run::new();
    ok(&mut run);
    let record = run.finish(
        vec!["processes of the client group 42 survived SIGKILL for 5 s".into()],
        Ok(None),
    );
    assert_eq!(
        record.reason.as_deref(),
        Some("processes of the client group 42 survived SIGKILL for 5 s")
    );
    let mut run = Run::new();
    ok(&mut run);
    let record = run.finish(
        Vec::new(),
        Err("network check after the sample failed: tx_dropped +3".into()),
    );
    assert_eq!(record.status, SampleStatus::Failed);
    assert_eq!(
        record.reason.as_deref(),
        Some("network check after the sample failed: tx_dropped +3")
    );
    let check = SampleCheck {
        devices: Vec::new(),
        link: None,
    };
    let mut run = Run::new();
    ok(&mut run);
    assert_eq!(
        run.finish(Vec::new(), Ok(Some(check.clone()))).network,
        Some(check)
    );

    // A signal: the machine stops waiting, hears the peers die (its own kill: no news), tears
    // down and says why.
    let mut run = Run::new();
    run.armed().actions();
    run.at(3 * S).feed(Input::Interrupted("SIGTERM".into()));
    assert_eq!(run.said(), ["stop sampler"]);
    assert_eq!(run.machine.deadline(), Some(3 * S + 300 * MS));
    run.ended(Role::Client, killed());
    assert_eq!(run.reason(), INTERRUPTED_BY_SIGTERM);
    // before anything started: no peer is left to run its course
    let mut run = Run::new();
    run.actions();
    run.feed(Input::Interrupted("SIGINT".into()))
        .feed(Input::Spawned(Role::Server));
    assert_eq!(
        run.reason(),
        INTERRUPTED_BY_SIGTERM.replace("SIGTERM", "SIGINT")
    );
}

const INTERRUPTED_BY_SIGTERM: &str = "interrupted: the controller received SIGTERM and stopped the run, killing the peers (not a failure of theirs)";

#[test]
fn a_signal_while_a_peer_exit_is_awaited_is_the_reason_not_the_exit() {
    // Before the fix the shell fed the peer's death (which the stop caused) before the stop:
    // "server exited unexpectedly during measure (killed by signal 9 (SIGKILL)); see
    // server.stderr". The shell now tells the stop first; whatever stage the machine is in.
    let mut run = Run::new();
    run.armed().actions();
    run.line(Role::Server, Line::Closed);
    assert_eq!(run.said(), ["await exit server 1s"]);
    run.feed(Input::Interrupted("SIGTERM".into()))
        .feed(Input::Exit {
            role: Role::Server,
            status: killed(),
        })
        .ended(Role::Client, killed());
    assert_eq!(run.reason(), INTERRUPTED_BY_SIGTERM);
    // Waiting for a peer to exit after `stopped`.
    let mut run = Run::new();
    run.client_stopped().actions();
    run.line(Role::Client, Line::Closed);
    assert!(
        run.said()
            .iter()
            .any(|a| a.starts_with("await exit client"))
    );
    run.feed(Input::Interrupted("SIGTERM".into()))
        .feed(Input::Exit {
            role: Role::Client,
            status: killed(),
        });
    assert_eq!(run.reason(), INTERRUPTED_BY_SIGTERM);
    // A peer that failed on its own before the signal keeps its reason, after the stop's.
    let mut run = Run::new();
    run.armed().actions();
    run.ended(Role::Server, exit(3));
    run.feed(Input::Interrupted("SIGTERM".into()));
    let reason = run.reason();
    assert!(
        reason.starts_with(INTERRUPTED_BY_SIGTERM)
            && reason.contains("server exited unexpectedly during measure (exit status 3)"),
        "{reason}"
    );
}

#[test]
fn a_sampler_without_readings_warns_and_keeps_the_sample() {
    let mut run = Run::new();
    run.armed().actions();
    run.event(Role::Client, Event::Sample(report()));
    assert_eq!(run.said(), ["stop sampler"]);
    run.feed(Input::Readings {
        usage: Err("the /proc sampler thread panicked".into()),
        link: None,
    });
    assert_eq!(
        run.said(),
        [
            "warn sample r01-001-x: the /proc sampler thread panicked; CPU and memory of this sample are not recorded",
            "send SHUTDOWN client"
        ]
    );
    run.stops(Role::Client).stops(Role::Server);
    let record = run.record();
    assert_eq!(record.status, SampleStatus::Ok);
    assert!(record.client_process.is_none() && record.server_process.is_none());
    assert!(record.metrics.is_some());
}

#[test]
fn inputs_that_do_not_fit_the_stage_change_nothing() {
    let mut run = Run::new();
    run.actions();
    // answers nobody asked for
    run.feed(Input::Spawned(Role::Client))
        .feed(Input::Exit {
            role: Role::Server,
            status: exit(0),
        })
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: None,
        })
        .feed(Input::TornDown(Vec::new()))
        .feed(Input::Network(Ok(None)));
    assert!(run.said().is_empty());
    run.at(5 * S).timeout();
    assert!(
        run.said().is_empty(),
        "no deadline before the spawn is confirmed"
    );
    run.feed(Input::Spawned(Role::Server)).ready();
    assert_eq!(run.said(), ["spawn client"]);
}

/// The emulator's counters at the window's two edges, as the shell reads them.
fn link(arrived: u64) -> rpcarena_netem_core::LinkStats {
    let direction = |arrived| rpcarena_netem_core::DirectionStats {
        counters: rpcarena_netem_core::Counters {
            arrived,
            released: arrived,
            ..Default::default()
        },
        ..Default::default()
    };
    rpcarena_netem_core::LinkStats {
        client_to_server: direction(arrived),
        server_to_client: direction(2 * arrived),
    }
}

#[test]
fn the_machine_records_the_link_counters_of_the_window() {
    let mut run = Run::new();
    run.armed();
    assert!(
        run.said()
            .ends_with(&["start sampler".into(), "send START client".into()])
    );
    run.feed(Input::SamplerStarted(Some(link(100))))
        .event(Role::Client, Event::Sample(report()))
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: Some(link(350)),
        });
    run.stops(Role::Client).stops(Role::Server);
    let record = run.record();
    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    let window = record.network_window.expect("the window's link counters");
    assert_eq!(window.client_to_server.arrived, 250);
    assert_eq!(window.client_to_server.released, 250);
    assert_eq!(window.server_to_client.arrived, 500);
}

#[test]
fn no_link_counters_without_both_edges() {
    let mut run = Run::new();
    run.armed();
    run.actions();
    run.feed(Input::SamplerStarted(None))
        .event(Role::Client, Event::Sample(report()))
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: Some(link(350)),
        });
    run.stops(Role::Client).stops(Role::Server);
    assert_eq!(run.record().network_window, None);
}

/// A server that follows revision 1.2.
fn windowed() -> Run {
    Run::with(SampleSpec {
        server_window: true,
        ..spec()
    })
}

fn window_answer(edge: rpcarena_protocol::event::Edge, rpcs: u64, allocations: u64) -> Event {
    Event::Window(rpcarena_protocol::event::WindowReport {
        edge,
        counters: BTreeMap::from([("rpcs".to_string(), rpcs)]),
        allocations: Some(allocations),
        allocated_bytes: Some(allocations * 100),
        first_rejection: None,
    })
}

#[test]
fn a_server_of_revision_1_2_is_told_the_window_and_its_figures_are_kept() {
    use rpcarena_protocol::event::Edge;
    let mut run = windowed();
    run.armed();
    assert!(run.said().ends_with(&[
        "start sampler".into(),
        "send START client".into(),
        "send WINDOW START server".into()
    ]));
    run.event(Role::Server, window_answer(Edge::Start, 20, 1000))
        .at(6 * S)
        .event(Role::Client, Event::Sample(report()));
    assert_eq!(run.said(), ["send WINDOW END server", "stop sampler"]);
    run.feed(Input::Readings {
        usage: Ok(usage()),
        link: None,
    });
    assert_eq!(
        run.said(),
        Vec::<String>::new(),
        "the client waits for WINDOW END's answer"
    );
    assert_eq!(
        run.machine.deadline(),
        Some(6 * S + 5 * S),
        "timeouts.window"
    );
    run.event(Role::Server, window_answer(Edge::End, 121, 3020));
    assert_eq!(run.said(), ["send SHUTDOWN client"]);
    run.stops(Role::Client).stops(Role::Server);
    let record = run.record();
    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    let window = record.server.and_then(|s| s.window).expect("server.window");
    assert_eq!(window.counters["rpcs"], 101);
    assert_eq!(window.allocations, Some(2020));
    assert_eq!(window.allocated_bytes, Some(202_000));
}

#[test]
fn a_window_answer_that_never_comes_fails_the_sample_on_its_timeout() {
    use rpcarena_protocol::event::Edge;
    let mut run = windowed();
    run.armed()
        .event(Role::Server, window_answer(Edge::Start, 20, 1000))
        .at(6 * S)
        .event(Role::Client, Event::Sample(report()))
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: None,
        });
    run.at(11 * S).timeout();
    let reason = run.reason();
    assert!(
        reason.contains("server did not print `window` within 5s (timeouts.window)"),
        "{reason}"
    );
}

#[test]
fn allocations_that_go_backwards_fail_the_sample_naming_the_field() {
    use rpcarena_protocol::event::Edge;
    let mut run = windowed();
    run.armed()
        .event(Role::Server, window_answer(Edge::Start, 20, 9000))
        .event(Role::Client, Event::Sample(report()))
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: None,
        })
        .event(Role::Server, window_answer(Edge::End, 30, 8000));
    run.stops(Role::Client).stops(Role::Server);
    let reason = run.reason();
    assert!(
        reason.contains("server allocations went backwards over the window: 9000 at WINDOW START, 8000 at WINDOW END"),
        "{reason}"
    );
}

/// Send-saturation on `send` (revision 1.3): 4 lanes of commands, a 200 ms settle.
fn settling() -> Run {
    let mut config = crate::checks::tests::config(Shape::Send);
    config.load = LoadSpec::SendSaturation {
        streams: 4,
        settle: Duration::from_millis(200),
    };
    config.concurrency = 4;
    Run::with(SampleSpec {
        server_window: true,
        config,
        ..spec()
    })
}

fn commands_answer(edge: rpcarena_protocol::event::Edge, commands: u64, rejected: u64) -> Event {
    Event::Window(rpcarena_protocol::event::WindowReport {
        edge,
        counters: BTreeMap::from([
            ("commands".to_string(), commands),
            ("rejected".to_string(), rejected),
        ]),
        allocations: None,
        allocated_bytes: None,
        first_rejection: (rejected > 0).then(|| "unparsable frame of 3 bytes: 0a 01 ff".into()),
    })
}

/// 100 commands sent and acknowledged by nothing (zmq) in the 5 s window.
fn command_report() -> SampleReport {
    SampleReport {
        responses: 0,
        response_bytes: 0,
        request_bytes: 100 * 10,
        sent: Some(100),
        max_in_flight: Some(4),
        ..report()
    }
}

#[test]
fn send_saturation_on_send_waits_for_the_servers_count_to_settle_on_both_sides() {
    use rpcarena_protocol::event::Edge;
    let mut run = settling();
    run.armed();
    assert!(
        run.said()
            .ends_with(&["spawn client".into(), "send WINDOW START server".into()]),
        "no START before the settle"
    );
    // warmup commands still arriving: 40, then 50 (changed), then 50 for 200 ms
    run.event(Role::Server, commands_answer(Edge::Start, 40, 0));
    assert_eq!(
        run.machine.deadline(),
        Some(run.now + 10 * MS),
        "the next poll"
    );
    run.at(10 * MS).timeout();
    assert_eq!(run.said(), ["send WINDOW START server"]);
    run.event(Role::Server, commands_answer(Edge::Start, 50, 0));
    run.at(100 * MS).timeout();
    run.event(Role::Server, commands_answer(Edge::Start, 50, 0));
    assert!(run.said().ends_with(&["send WINDOW START server".into()]));
    run.at(211 * MS)
        .event(Role::Server, commands_answer(Edge::Start, 50, 0));
    assert_eq!(
        run.said(),
        ["start sampler", "send START client"],
        "quiet for 200 ms: the window starts from the settled answer (one after START would count the first commands)"
    );
    run.at(6 * S)
        .event(Role::Client, Event::Sample(command_report()));
    assert_eq!(
        run.said(),
        ["stop sampler"],
        "no WINDOW END before the readings"
    );
    run.feed(Input::Readings {
        usage: Ok(usage()),
        link: None,
    });
    assert_eq!(run.said(), ["send WINDOW END server"]);
    run.event(Role::Server, commands_answer(Edge::End, 140, 0));
    run.at(6 * S + 300 * MS).timeout();
    run.event(Role::Server, commands_answer(Edge::End, 150, 0));
    run.at(6 * S + 600 * MS).timeout();
    run.event(Role::Server, commands_answer(Edge::End, 150, 0));
    assert_eq!(
        run.said(),
        [
            "send WINDOW END server",
            "send WINDOW END server",
            "send SHUTDOWN client"
        ]
    );
    run.stops(Role::Client).stops(Role::Server);
    let record = run.record();
    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    let client = record.client.expect("client");
    assert_eq!(
        client.received,
        Some(100),
        "the server's count over the window"
    );
    assert_eq!(record.metrics.unwrap().received_per_s, Some(20.0));
}

#[test]
fn commands_that_never_arrive_or_are_rejected_fail_the_sample() {
    use rpcarena_protocol::event::Edge;
    let mut run = settling();
    run.armed()
        .event(Role::Server, commands_answer(Edge::Start, 0, 0))
        .at(300 * MS)
        .timeout();
    run.event(Role::Server, commands_answer(Edge::Start, 0, 0))
        .at(6 * S)
        .event(Role::Client, Event::Sample(command_report()))
        .feed(Input::Readings {
            usage: Ok(usage()),
            link: None,
        })
        .event(Role::Server, commands_answer(Edge::End, 95, 1))
        .at(6 * S + 250 * MS)
        .timeout();
    run.event(Role::Server, commands_answer(Edge::End, 95, 1));
    run.stops(Role::Client).stops(Role::Server);
    let reason = run.reason();
    assert!(
        reason.contains("5 of 100 commands sent in the window never reached the server"),
        "{reason}"
    );
    assert!(
        reason.contains(
            "the server rejected calls or commands in the window: 1; first: unparsable frame of 3 bytes: 0a 01 ff"
        ),
        "{reason}"
    );
}
