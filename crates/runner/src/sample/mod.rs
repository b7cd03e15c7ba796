//! One sample: the load gate, then a fresh server and client driven by the sans-IO
//! [`machine::SampleMachine`] (which decides everything), with a thin shell here that does what
//! it asks: spawn peers, write commands, wait for exits, run the /proc sampler, kill the groups,
//! check the network. The sample ends with a record whatever happens.

pub(crate) mod machine;
mod outcome;

use crate::network::RunNetwork;
use crate::process::PeerProcess;
use crate::procstat::Sampler;
use crate::{noise, stop};
use machine::{Action, Input, Nanos, SampleMachine};
pub(crate) use machine::{ClientLaunch, Gate, SampleSpec};
use rpcarena_model::campaign::NoiseControls;
use rpcarena_model::record::SampleRecord;
use rpcarena_protocol::event::Role;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// How often the shell looks for a stop signal while it waits.
const STOP_POLL: Duration = Duration::from_millis(100);
/// /proc sampling interval.
const SAMPLER_INTERVAL: Duration = Duration::from_millis(10);
/// Lines in flight between the reader threads and the machine (each at most 1 MiB).
const CHANNEL_BOUND: usize = 16;
/// How long the teardown waits for a killed group to disappear.
const REAP_WAIT: Duration = Duration::from_secs(5);

/// The I/O one sample needs besides its spec.
pub(crate) struct SampleIo<'a> {
    /// Absolute path of `raw/<id>`.
    pub raw_dir: PathBuf,
    /// The run's network, checked after the sample.
    pub network: &'a mut RunNetwork,
    /// Where warnings go (stderr, through the progress display).
    pub warn: &'a mut dyn FnMut(&str),
    /// Told at the window's edges: `rpcarena profile`'s profiler; `None` in measured runs,
    /// which never carry one.
    pub observer: Option<&'a mut dyn WindowObserver>,
}

/// The peers' process ids (each its group's leader) as the window opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPeers {
    /// The client's.
    pub client: u32,
    /// The server's.
    pub server: u32,
}

/// Told at the client's window edges, from the sample's own shell: the window opens right
/// after [`WindowObserver::opening`] returns (the client's `START` is the next write), and is
/// over (the client's `sample` arrived, its drain included) when [`WindowObserver::closed`] is
/// called. A sample that fails before its window ends may never call `closed`.
pub trait WindowObserver {
    /// The window is about to open.
    fn opening(&mut self, peers: WindowPeers);
    /// The window is over.
    fn closed(&mut self);
}

/// The shell's half: the peers, the sampler and the clock.
struct Shell<'a> {
    io: SampleIo<'a>,
    epoch: Instant,
    tx: SyncSender<machine::Message>,
    server: Option<PeerProcess>,
    client: Option<PeerProcess>,
    sampler: Option<Sampler>,
}

/// Waits at the load gate before a sample (see `noise::load_gate`); a stop signal ends the wait.
pub(crate) fn wait_at_gate(controls: &NoiseControls, cpus: usize) -> Gate {
    let (waited, load_avg, timed_out) = noise::load_gate(controls, cpus, stop::interrupted);
    Gate {
        waited,
        load_avg,
        timed_out,
    }
}

/// Runs one sample to the end (its clock starts now, after the gate) and returns its record;
/// never panics on peer misbehaviour.
pub(crate) fn run_sample(spec: SampleSpec, io: SampleIo<'_>) -> SampleRecord {
    // Bounded: a peer that prints faster than the machine reads waits (and is killed at the
    // teardown) instead of growing the controller.
    let (tx, rx) = sync_channel(CHANNEL_BOUND);
    let mut shell = Shell {
        io,
        epoch: Instant::now(),
        tx,
        server: None,
        client: None,
        sampler: None,
    };
    let mut machine = SampleMachine::new(spec);
    machine.start();
    drive(&mut machine, &mut shell, &rx)
}

/// Carries out the machine's actions and feeds it lines, deadlines and signals until it hands
/// out the record.
fn drive(
    machine: &mut SampleMachine,
    shell: &mut Shell<'_>,
    rx: &Receiver<machine::Message>,
) -> SampleRecord {
    let mut stop = StopNotice::default();
    loop {
        while let Some(action) = machine.poll_action() {
            if let Action::Record(record) = action {
                return *record;
            }
            if let Some(input) = shell.execute(action) {
                stop.check(machine, shell.now());
                machine.handle(shell.now(), input);
            }
        }
        if stop.check(machine, shell.now()) {
            continue;
        }
        let now = shell.now();
        let wait = machine.deadline().map_or(STOP_POLL, |deadline| {
            Duration::from_nanos(deadline.saturating_sub(now)).min(STOP_POLL)
        });
        let received = rx.recv_timeout(wait);
        stop.check(machine, shell.now());
        match received {
            Ok(message) => machine.handle(shell.now(), Input::Line(message)),
            // The shell holds a sender, so the channel never disconnects.
            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                machine.handle_timeout(shell.now());
            }
        }
    }
}

/// Tells the machine about a stop signal once. It is checked before every input: the signal
/// handler sets the flag before it kills the peers, so a peer's death (its output closing, its
/// exit status) that the stop caused always reaches the machine after the stop itself, and is
/// not mistaken for the peer's own failure.
#[derive(Default)]
struct StopNotice {
    told: bool,
}

impl StopNotice {
    /// Whether the machine was told just now.
    fn check(&mut self, machine: &mut SampleMachine, now: Nanos) -> bool {
        if self.told {
            return false;
        }
        let Some(signal) = stop::stopping_signal() else {
            return false;
        };
        self.told = true;
        machine.handle(now, Input::Interrupted(signal));
        true
    }
}

impl Shell<'_> {
    fn now(&self) -> Nanos {
        self.epoch.elapsed().as_nanos() as Nanos
    }

    fn peer(&mut self, role: Role) -> &mut Option<PeerProcess> {
        match role {
            Role::Server => &mut self.server,
            Role::Client => &mut self.client,
        }
    }

    /// Does what `action` asks; returns the answer the machine waits for, if any.
    fn execute(&mut self, action: Action) -> Option<Input> {
        match action {
            Action::Spawn { role, argv } => Some(match self.spawn(role, &argv) {
                Ok(peer) => {
                    *self.peer(role) = Some(peer);
                    Input::Spawned(role)
                }
                Err(error) => Input::SpawnFailed { role, error },
            }),
            Action::Send { role, command } => {
                let sent = match self.peer(role) {
                    Some(peer) => peer.send(command).map_err(|e| e.chain()),
                    None => Err(format!("{role} is not running")),
                };
                sent.err().map(|error| Input::SendFailed { role, error })
            }
            Action::CloseStdin(role) => {
                if let Some(peer) = self.peer(role) {
                    peer.close_stdin();
                }
                None
            }
            Action::AwaitExit { role, within } => {
                let status = self.peer(role).as_mut().and_then(|p| p.wait_exit(within));
                Some(Input::Exit { role, status })
            }
            Action::StartSampler => {
                if let Some(observer) = self.io.observer.as_mut() {
                    let pid = |p: &Option<PeerProcess>| p.as_ref().map_or(0, |p| p.pid);
                    observer.opening(WindowPeers {
                        client: pid(&self.client),
                        server: pid(&self.server),
                    });
                }
                let pid = |p: &Option<PeerProcess>| p.as_ref().map_or(0, |p| p.pid as i32);
                let groups = vec![pid(&self.client), pid(&self.server)];
                self.sampler = Some(Sampler::start(groups, SAMPLER_INTERVAL));
                Some(Input::SamplerStarted(self.io.network.link_stats()))
            }
            Action::StopSampler => Some(Input::Readings {
                link: self.io.network.link_stats(),
                usage: self.stop_sampler(),
            }),
            Action::KillGroups => Some(Input::TornDown(self.teardown())),
            Action::CheckNetwork => Some(Input::Network(self.io.network.after_sample())),
            Action::Warn(text) => {
                (self.io.warn)(&text);
                None
            }
            Action::Record(_) => None,
        }
    }

    /// Tells the observer the window is over, then stops the /proc sampler.
    fn stop_sampler(&mut self) -> Result<crate::procstat::WindowUsage, String> {
        if let Some(observer) = self.io.observer.as_mut() {
            observer.closed();
        }
        match self.sampler.take() {
            Some(sampler) => sampler.stop(),
            None => Err("the /proc sampler was not running".to_string()),
        }
    }

    fn spawn(&mut self, role: Role, argv: &[String]) -> Result<PeerProcess, String> {
        let dir = &self.io.raw_dir;
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        PeerProcess::spawn(role, argv, dir, self.tx.clone()).map_err(|e| e.chain())
    }

    /// Kills both groups and checks that nothing of either survives.
    fn teardown(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for peer in [self.client.as_mut(), self.server.as_mut()]
            .into_iter()
            .flatten()
        {
            if !peer.kill_and_reap(REAP_WAIT) {
                problems.push(format!(
                    "processes of the {} group {} survived SIGKILL for {}",
                    peer.role,
                    peer.pid,
                    rpcarena_model::duration::format(&REAP_WAIT)
                ));
            }
            problems.append(&mut peer.findings);
        }
        problems
    }
}
