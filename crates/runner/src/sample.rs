//! One sample: a fresh server and client, the protocol driven step by step with a timeout on
//! each, the /proc sampler around the measured window, and a record whatever happens.

use crate::certs::ServerIdentity;
use crate::checks::check_report;
use crate::noise::{self, Observed, PinPlan};
use crate::process::{Line, Message, PeerProcess, describe_exit};
use crate::procstat::{GroupUsage, Sampler, WindowUsage};
use rpcarena_model::campaign::{NoiseControls, Timeouts, Timing};
use rpcarena_model::load::PayloadKind;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{
    ClientResult, IntervalRecord, Noise, ProcessStats, SampleRecord, SampleStatus,
};
use rpcarena_model::schedule::Slot;
use rpcarena_protocol::event::{Command, Event, Role, SampleReport};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// Where the peers of a sample run and how they find each other.
#[derive(Debug, Clone)]
pub struct Placement {
    /// Argument-vector prefix that starts a process where the server runs (empty: here).
    pub server_prefix: Vec<String>,
    /// The same for the client.
    pub client_prefix: Vec<String>,
    /// Address the server binds (port 0).
    pub listen: String,
    /// The server's certificate, whose SAN is the listen host.
    pub identity: ServerIdentity,
}

/// Everything one sample needs.
pub struct SampleJob<'a> {
    /// Sample id (also the raw directory name).
    pub id: String,
    /// Where in the schedule.
    pub slot: Slot,
    /// What to measure.
    pub config: &'a SampleConfig,
    /// Client peer command (resolved).
    pub client_command: &'a [String],
    /// Server peer command (resolved).
    pub server_command: &'a [String],
    /// Languages, for the record.
    pub client_language: &'a str,
    /// Languages, for the record.
    pub server_language: &'a str,
    /// Warmup, window, drain.
    pub timing: &'a Timing,
    /// Step timeouts.
    pub timeouts: &'a Timeouts,
    /// The CA certificate clients trust.
    pub ca_cert: PathBuf,
    /// Network placement.
    pub placement: Placement,
    /// Absolute path of `raw/<id>`.
    pub raw_dir: PathBuf,
    /// Its path relative to the run directory.
    pub raw_rel: String,
    /// UTC start time (RFC 3339), supplied by the caller so this module reads no wall clock.
    pub started_at: String,
    /// CPU pinning of the peers (and the emulator, for the record).
    pub pins: &'a PinPlan,
    /// Load gate and drift threshold.
    pub noise: &'a NoiseControls,
    /// Seed for the open model's Poisson arrivals.
    pub load_seed: u64,
}

/// Pseudo event kind: the peer closed its stdout.
const END_OF_OUTPUT: &str = "end of output";

struct Session {
    rx: Receiver<Message>,
    server: Option<PeerProcess>,
    client: Option<PeerProcess>,
}

impl Session {
    fn peer(&mut self, role: Role) -> Option<&mut PeerProcess> {
        match role {
            Role::Server => self.server.as_mut(),
            Role::Client => self.client.as_mut(),
        }
    }

    fn exit_note(&mut self, role: Role, wait: Duration) -> String {
        match self.peer(role).map(|p| p.wait_exit(wait)) {
            Some(Some(status)) => describe_exit(status),
            Some(None) => "still running".to_string(),
            None => "not started".to_string(),
        }
    }

    /// Waits for `kind` from `role`; anything else that arrives first is an anomaly.
    fn expect(
        &mut self,
        role: Role,
        kind: &str,
        timeout: Duration,
        timeout_field: &str,
        phase: &str,
    ) -> Result<Event, String> {
        let message = match self.rx.recv_timeout(timeout) {
            Ok(m) => m,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "{role} did not print `{kind}` within {} (timeouts.{timeout_field}) during {phase}",
                    rpcarena_model::duration::format(&timeout)
                ));
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(format!("lost both peers' output during {phase}"));
            }
        };
        // Whatever arrives first decides: the awaited event, or an anomaly.
        let from = message.role;
        match message.line {
            Line::Event(event) if from == role && event.name() == kind => Ok(event),
            Line::Event(Event::Error(e)) => Err(format!(
                "{from} reported a {} error during {}: {}",
                e.code, e.phase, e.message
            )),
            Line::Event(event) => Err(format!(
                "{from} printed an unexpected `{}` event during {phase} (waiting for the {role}'s `{kind}`)",
                event.name()
            )),
            Line::Malformed { text, error } => Err(format!(
                "{from} printed a malformed event during {phase}: {error}; line: {text}"
            )),
            Line::Closed if from == role && kind == END_OF_OUTPUT => {
                Ok(Event::Stopped(Default::default()))
            }
            Line::Closed => {
                let note = self.exit_note(from, Duration::from_secs(1));
                Err(format!(
                    "{from} exited unexpectedly during {phase} ({note}); see {from}.stderr"
                ))
            }
        }
    }

    /// After an anomaly: what else the peers said within a short grace period, for the reason.
    fn aftermath(&mut self) -> Vec<String> {
        let mut notes = Vec::new();
        let deadline = Instant::now() + Duration::from_millis(300);
        while let Ok(message) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            match message.line {
                Line::Event(Event::Error(e)) => notes.push(format!(
                    "{} then reported a {} error during {}: {}",
                    message.role, e.code, e.phase, e.message
                )),
                Line::Closed => {
                    let note = self.exit_note(message.role, Duration::from_millis(100));
                    notes.push(format!("{} then exited ({note})", message.role));
                }
                Line::Malformed { text, .. } => notes.push(format!(
                    "{} then printed a malformed line: {text}",
                    message.role
                )),
                Line::Event(_) => {}
            }
        }
        notes
    }

    fn send(&mut self, role: Role, command: Command) -> Result<(), String> {
        match self.peer(role) {
            Some(p) => p.send(command).map_err(|e| format!("{e:#}")),
            None => Err(format!("{role} is not running")),
        }
    }

    /// Shuts a peer down: SHUTDOWN, `stopped`, exit 0 within the timeout.
    fn shutdown(&mut self, role: Role, timeout: Duration) -> Result<BTreeMap<String, u64>, String> {
        self.send(role, Command::Shutdown)?;
        let event = self.expect(role, "stopped", timeout, "shutdown", "shutdown")?;
        let counters = match event {
            Event::Stopped(s) => s.counters,
            _ => BTreeMap::new(),
        };
        if let Some(peer) = self.peer(role) {
            peer.close_stdin();
        }
        // After `stopped` the peer closes stdout and exits; nothing else may come first.
        self.expect(role, END_OF_OUTPUT, timeout, "shutdown", "shutdown")?;
        let peer = self.peer(role).ok_or("peer vanished")?;
        match peer.wait_exit(timeout) {
            Some(status) if status.success() => Ok(counters),
            Some(status) => Err(format!(
                "{role} exited with {} after `stopped`",
                describe_exit(status)
            )),
            None => Err(format!(
                "{role} did not exit within {} of `stopped` (timeouts.shutdown)",
                rpcarena_model::duration::format(&timeout)
            )),
        }
    }

    /// Kills both groups and checks that nothing of either survives.
    fn teardown(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for peer in [self.client.as_mut(), self.server.as_mut()]
            .into_iter()
            .flatten()
        {
            if !peer.kill_and_reap(Duration::from_secs(5)) {
                problems.push(format!(
                    "processes of the {} group {} survived SIGKILL for 5 s",
                    peer.role, peer.pid
                ));
            }
        }
        problems
    }
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

fn process_stats(usage: GroupUsage, completed: u64) -> ProcessStats {
    ProcessStats {
        cpu_us: usage.cpu_us,
        cpu_us_per_op: if completed > 0 {
            usage.cpu_us / completed as f64
        } else {
            0.0
        },
        peak_rss_mib: usage.peak_rss_bytes as f64 / (1024.0 * 1024.0),
        readings: usage.readings,
        processes: usage.processes,
    }
}

/// Runs one sample to the end and returns its record; never panics on peer misbehaviour.
pub fn run_sample(job: SampleJob<'_>) -> SampleRecord {
    let begin = Instant::now();
    let mut record = SampleRecord {
        sample: job.id.clone(),
        round: job.slot.round,
        position: job.slot.position,
        config: job.config.clone(),
        status: SampleStatus::Failed,
        reason: None,
        started_at: job.started_at.clone(),
        elapsed_ms: 0,
        client_language: job.client_language.to_string(),
        server_language: job.server_language.to_string(),
        client: None,
        metrics: None,
        client_process: None,
        server_process: None,
        server_counters: BTreeMap::new(),
        noise: None,
        network: None,
        raw: job.raw_rel.clone(),
    };
    let cpus = noise::allowed_cpus().len();
    let (waited, load_avg, gate_timed_out) =
        noise::load_gate(job.noise, cpus, crate::signals::interrupted);
    record.noise = Some(Noise {
        client_cpus: job.pins.client.clone(),
        server_cpus: job.pins.server.clone(),
        emulator_cpus: job.pins.emulator.clone(),
        load_avg_1m: load_avg,
        load_gate_wait_ms: waited.as_millis() as u64,
        ..Noise::default()
    });
    let (tx, rx) = channel();
    let mut session = Session {
        rx,
        server: None,
        client: None,
    };
    let mut problems: Vec<String> = Vec::new();
    let outcome = drive(&job, &mut session, &tx, &mut record, gate_timed_out);
    if let Err(reason) = outcome {
        problems.push(reason);
        problems.extend(session.aftermath());
    }
    problems.extend(session.teardown());
    if crate::signals::interrupted() {
        problems.insert(0, "interrupted by a signal; the run stopped".to_string());
    }
    record.status = if problems.is_empty() {
        SampleStatus::Ok
    } else {
        SampleStatus::Failed
    };
    record.reason = (!problems.is_empty()).then(|| problems.join("; "));
    record.elapsed_ms = begin.elapsed().as_millis() as u64;
    record
}

fn drive(
    job: &SampleJob<'_>,
    session: &mut Session,
    tx: &std::sync::mpsc::Sender<Message>,
    record: &mut SampleRecord,
    gate_timed_out: bool,
) -> Result<(), String> {
    let c = job.config;
    let p = &job.placement;
    std::fs::create_dir_all(&job.raw_dir)
        .map_err(|e| format!("creating {}: {e}", job.raw_dir.display()))?;

    let mut server_argv = p.server_prefix.clone();
    server_argv.extend(noise::taskset_prefix(&job.pins.server));
    server_argv.extend(job.server_command.iter().cloned());
    server_argv.extend(
        [
            "server", "--stack", &c.stack, "--listen", &p.listen, "--cert",
        ]
        .map(String::from),
    );
    server_argv.push(p.identity.cert.display().to_string());
    server_argv.push("--key".into());
    server_argv.push(p.identity.key.display().to_string());
    session.server = Some(
        PeerProcess::spawn(Role::Server, &server_argv, &job.raw_dir, tx.clone())
            .map_err(|e| format!("{e:#}"))?,
    );
    let ready = match session.expect(
        Role::Server,
        "ready",
        job.timeouts.ready,
        "ready",
        "server start-up",
    )? {
        Event::Ready(r) => r,
        _ => unreachable!("expect returns the asked kind"),
    };

    let mut client_argv = p.client_prefix.clone();
    client_argv.extend(noise::taskset_prefix(&job.pins.client));
    client_argv.extend(job.client_command.iter().cloned());
    client_argv.extend([
        "client".to_string(),
        "--stack".into(),
        c.stack.clone(),
        "--server".into(),
        ready.address.clone(),
        "--server-name".into(),
        p.identity.name.clone(),
        "--ca".into(),
        job.ca_cert.display().to_string(),
        "--shape".into(),
        c.shape.to_string(),
        "--concurrency".into(),
        c.concurrency.to_string(),
        "--request-size".into(),
        c.request_size.to_string(),
        "--response-size".into(),
        c.response_size.to_string(),
        "--messages-per-stream".into(),
        c.messages_per_stream.to_string(),
        "--warmup-ms".into(),
        ms(job.timing.warmup),
        "--window-ms".into(),
        ms(job.timing.window),
        "--drain-ms".into(),
        ms(job.timing.drain),
    ]);
    if c.payload != PayloadKind::Zeros {
        // Only peers that offer other payloads know the argument; zeros is the default.
        client_argv.extend(["--payload".to_string(), c.payload.to_string()]);
    }
    client_argv.extend(c.load.peer_args(job.load_seed));
    session.client = Some(
        PeerProcess::spawn(Role::Client, &client_argv, &job.raw_dir, tx.clone())
            .map_err(|e| format!("{e:#}"))?,
    );
    let armed = match session.expect(
        Role::Client,
        "armed",
        job.timing.warmup + job.timeouts.armed,
        "armed",
        "connect and warmup",
    )? {
        Event::Armed(a) => a,
        _ => unreachable!("expect returns the asked kind"),
    };

    let groups = vec![
        session.client.as_ref().map_or(0, |p| p.pid as i32),
        session.server.as_ref().map_or(0, |p| p.pid as i32),
    ];
    let sampler = Sampler::start(groups, Duration::from_millis(10));
    session.send(Role::Client, Command::Start)?;
    let waited = session.expect(
        Role::Client,
        "sample",
        job.timing.window + job.timing.drain + job.timeouts.sample,
        "sample",
        "measure",
    );
    let usage = sampler.stop();
    let report = match waited? {
        Event::Sample(s) => s,
        _ => unreachable!("expect returns the asked kind"),
    };
    let result = client_result(&armed, report);
    let (check_problems, metrics) = check_report(c, job.timing.window.as_nanos() as u64, &result);
    record.metrics = metrics;
    if let [client_usage, server_usage] = usage.groups[..] {
        record.client_process = Some(process_stats(client_usage, result.completed));
        record.server_process = Some(process_stats(server_usage, result.completed));
    }
    if let Some(noise) = record.noise.as_mut() {
        let observed = observe(&usage, job.pins, &result, job.timing.window, gate_timed_out);
        noise.steal_pct = observed.steal_pct;
        noise.client_cores = observed.client_cores;
        noise.server_cores = observed.server_cores;
        noise.client_busiest_thread_cores = observed.client_busiest_thread_cores;
        noise.server_busiest_thread_cores = observed.server_busiest_thread_cores;
        noise::flags(&observed, job.pins, job.noise.drift_threshold, noise);
    }
    record.client = Some(result);

    session.shutdown(Role::Client, job.timeouts.shutdown)?;
    record.server_counters = session.shutdown(Role::Server, job.timeouts.shutdown)?;
    if check_problems.is_empty() {
        Ok(())
    } else {
        Err(check_problems.join("; "))
    }
}

fn client_result(armed: &rpcarena_protocol::event::Armed, report: SampleReport) -> ClientResult {
    ClientResult {
        lanes: armed.lanes,
        connections: armed.connections,
        connect_ns: armed.connect_ns,
        warmup_completed: armed.warmup_completed,
        completed: report.completed,
        failed: report.failed,
        requests: report.requests,
        responses: report.responses,
        request_bytes: report.request_bytes,
        response_bytes: report.response_bytes,
        window_ns: report.window_ns,
        drain_ns: report.drain_ns,
        failures: report.failures,
        first_failure: report.first_failure,
        histogram: report.histogram,
        load: report.load,
        uncorrected_histogram: report.uncorrected_histogram,
        send_lag_histogram: report.send_lag_histogram,
        offered: report.offered,
        target_rate: report.target_rate,
        fell_behind: report.fell_behind,
        max_in_flight: report.max_in_flight,
        sent: report.sent,
        received: report.received,
        intervals: report
            .intervals
            .into_iter()
            .map(|i| IntervalRecord {
                offset_ns: i.offset_ns,
                completed: i.completed,
                histogram: i.histogram,
            })
            .collect(),
    }
}

/// What the window looked like to the /proc sampler and the client, for the noise flags.
fn observe(
    usage: &WindowUsage,
    pins: &PinPlan,
    result: &ClientResult,
    window: Duration,
    gate_timed_out: bool,
) -> Observed {
    let all = noise::allowed_cpus().len();
    let elapsed_us = (usage.elapsed_s * 1e6).max(1.0);
    let cores = |i: usize| usage.groups.get(i).map_or(0.0, |g| g.cpu_us / elapsed_us);
    let busiest = |i: usize| {
        usage
            .groups
            .get(i)
            .map_or(0.0, |g| g.busiest_thread_cpu_us / elapsed_us)
    };
    let count = |pinned: &Vec<usize>| if pinned.is_empty() { all } else { pinned.len() };
    // Throughput per full second of the window, from the intervals (a partial last second is
    // left out: it would look like a slowdown).
    let full = Duration::from_secs(1).as_nanos() as u64;
    let window_ns = window.as_nanos() as u64;
    let per_second = result
        .intervals
        .iter()
        .filter(|i| i.offset_ns + full <= window_ns)
        .map(|i| i.completed as f64)
        .collect();
    Observed {
        client_cores: cores(0),
        server_cores: cores(1),
        client_busiest_thread_cores: busiest(0),
        server_busiest_thread_cores: busiest(1),
        client_cpu_count: count(&pins.client),
        server_cpu_count: count(&pins.server),
        steal_pct: usage.steal_pct,
        per_second,
        generator_behind: result.fell_behind == Some(true),
        gate_timed_out,
    }
}
