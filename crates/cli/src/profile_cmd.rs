//! `rpcarena profile`: one configuration of a campaign run as a sample is run (the runner's own
//! sample code, through `rpcarena_runner::Probe`), once without a profiler and once with Linux
//! perf attached to the chosen peers between the client's window edges; then, per peer, perf's
//! data, folded stacks, a flame graph and a summary. Nothing goes to a `samples.jsonl`.

use crate::say::{say, tell};
use anyhow::{Context, Result, anyhow, bail};
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_profile::perf::{self, CallGraph, RecordSpec, Recording};
use rpcarena_profile::report::{Load, PeerReport};
use rpcarena_profile::summary::OwnCode;
use rpcarena_profile::{Error as ProfileError, files};
use rpcarena_protocol::event::Role;
use rpcarena_runner::{CampaignSource, Prepared, Probe, WindowObserver, WindowPeers};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The options of `rpcarena profile`.
#[derive(clap::Args)]
pub struct ProfileArgs {
    /// Campaign TOML file.
    campaign: PathBuf,
    /// The cell to profile.
    #[arg(long, value_name = "ID")]
    cell: String,
    /// The configuration key (`rust-tcp/unary/c4/256B-256B/zeros/closed`), when the cell has
    /// several.
    #[arg(long, value_name = "KEY")]
    config: Option<String>,
    /// Which peers to profile.
    #[arg(long, value_enum, default_value = "server")]
    role: Which,
    /// The window's length (default: the campaign's).
    #[arg(long, value_name = "D", value_parser = humantime::parse_duration)]
    duration: Option<Duration>,
    /// Also record where threads wait (sched:sched_switch): offcpu.folded and offcpu.svg.
    #[arg(long)]
    off_cpu: bool,
    /// Sampling frequency of cpu-clock, in Hz.
    #[arg(long, default_value_t = 999)]
    frequency: u32,
    /// How perf unwinds: dwarf (whole stacks without frame pointers) or fp.
    #[arg(long, value_enum, default_value = "dwarf")]
    call_graph: Unwind,
    /// Output directory (default: results/profile-<cell>-<unix time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Folder of peers/<id>/peer.toml for peers named by id alone.
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Which {
    Client,
    Server,
    Both,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Unwind {
    Dwarf,
    Fp,
}

impl Unwind {
    fn call_graph(self) -> CallGraph {
        match self {
            Unwind::Dwarf => CallGraph::Dwarf,
            Unwind::Fp => CallGraph::FramePointers,
        }
    }
}

/// One profiled peer.
struct Target {
    role: Role,
    peer: String,
    dir: PathBuf,
    own: OwnCode,
}

/// `rpcarena profile`.
pub fn profile(args: &ProfileArgs) -> Result<ExitCode> {
    let mut source = CampaignSource::from_file(&args.campaign)?;
    source.peers_dir.clone_from(&args.peers);
    let mut prepared = rpcarena_runner::prepare(source, std::slice::from_ref(&args.cell))?;
    if let Some(window) = args.duration {
        prepared.campaign.timing.window = window;
    }
    let config = rpcarena_runner::select_config(&prepared, &args.cell, args.config.as_deref())?;
    let out = args.out.clone().unwrap_or_else(default_out(&args.cell));
    let targets = targets(&prepared, &config, args.role, &out)?;
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    perf::check("cpu-clock", &out)?;
    if args.off_cpu {
        perf::check("sched:sched_switch", &out)?;
    }
    crate::stop_on_signals()?;
    let mut warn = |text: &str| tell!("rpcarena: warning: {text}");
    let mut probe = Probe::open(&prepared, config, &out, &mut warn)?;
    say!(
        "profiling {} ({} peer(s)); a sample without perf first",
        probe.config().key,
        targets.len()
    );
    let unprofiled = probe.sample("unprofiled", None, &mut warn);
    let unprofiled_ops = ops_per_s(&unprofiled)
        .map_err(|why| anyhow!("the sample without perf failed: {why}; nothing was profiled"))?;
    let mut observer = PerfObserver::new(&targets, args);
    let profiled = probe.sample("profiled", Some(&mut observer), &mut warn);
    let window = observer.end();
    let profiled_ops = ops_per_s(&profiled);
    let (window, profiled_ops) = match (window, profiled_ops) {
        (Ok(w), Ok(ops)) => (w, ops),
        (Err(e), _) => bail!(
            "{e}; no graph was drawn (perf's data, if any, is left in {})",
            out.display()
        ),
        (_, Err(why)) => bail!("the profiled sample failed: {why}; no graph was drawn"),
    };
    let load = Load {
        profiled_ops_per_s: profiled_ops,
        unprofiled_ops_per_s: unprofiled_ops,
    };
    for target in &targets {
        write_peer(target, args, probe.config().key.as_str(), window, load)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn default_out(cell: &str) -> impl FnOnce() -> PathBuf + '_ {
    move || {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        PathBuf::from("results").join(format!("profile-{cell}-{secs}"))
    }
}

/// The peers to profile, each refused with the reason when it declares no profiler.
fn targets(
    prepared: &Prepared,
    config: &rpcarena_model::matrix::SampleConfig,
    which: Which,
    out: &Path,
) -> Result<Vec<Target>> {
    let roles: &[Role] = match which {
        Which::Client => &[Role::Client],
        Which::Server => &[Role::Server],
        Which::Both => &[Role::Client, Role::Server],
    };
    let mut targets = Vec::new();
    for &role in roles {
        let id = match role {
            Role::Client => &config.client,
            Role::Server => &config.server,
        };
        let peer = &prepared.peers[id];
        let caps = &peer.capabilities;
        match caps.profiler.as_deref() {
            Some("perf") => {}
            declared => bail!("{}", refusal(role, id, caps, declared)),
        }
        targets.push(Target {
            role,
            peer: id.clone(),
            dir: out.join(role.to_string()),
            own: OwnCode {
                objects: own_names(&peer.command),
                // Rust links its crates into the executable: its own code is the rpcarena crates
                symbols_containing: (caps.language == "rust").then(|| "rpcarena".to_string()),
            },
        });
    }
    Ok(targets)
}

/// Why a peer cannot be profiled.
pub fn refusal(
    role: Role,
    id: &str,
    caps: &rpcarena_protocol::event::Capabilities,
    declared: Option<&str>,
) -> String {
    let what = match declared {
        None => "declares no profiler in its capabilities".to_string(),
        Some(p) => format!("declares the profiler {p:?}, which this rpcarena does not drive"),
    };
    format!(
        "cannot profile the {role} peer {id} ({} {}, {}): it {what}; profilers rpcarena drives: perf (Linux perf, for native peers that declare `\"profiler\": \"perf\"`: the Rust, C and C++ peers); Go, JVM and Node.js profilers are not supported yet (docs/profiling.md)",
        caps.peer, caps.version, caps.language
    )
}

/// The file names of a peer's executable (as named and as resolved), whose frames are its own
/// code.
fn own_names(command: &[String]) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    if let Some(exe) = command.first() {
        let path = Path::new(exe);
        for p in [Some(path.to_path_buf()), std::fs::canonicalize(path).ok()]
            .into_iter()
            .flatten()
        {
            if let Some(name) = p.file_name() {
                names.insert(name.to_string_lossy().to_string());
            }
        }
    }
    names
}

/// ops/s of an ok sample, else its reason.
fn ops_per_s(record: &SampleRecord) -> std::result::Result<f64, String> {
    match (&record.status, &record.client) {
        (SampleStatus::Ok, Some(c)) => Ok(c.completed as f64 / (c.window_ns.max(1) as f64 / 1e9)),
        _ => Err(record
            .reason
            .clone()
            .unwrap_or_else(|| "no reason recorded".to_string())),
    }
}

/// Folds, draws and sums up one peer's recording, with the run's figures.
fn write_peer(
    target: &Target,
    args: &ProfileArgs,
    config: &str,
    window: Duration,
    load: Load,
) -> Result<()> {
    let recording = format!(
        "perf record -e cpu-clock -F {} --call-graph {} (software clock: no hardware counters here)",
        args.frequency,
        args.call_graph.call_graph().perf_name()
    );
    let title = format!("{} {} ({}), cpu-clock", target.role, target.peer, config);
    let summary = rpcarena_profile::analyse_cpu(&target.dir, &target.own, &title, &recording)?;
    let folded = std::fs::read_to_string(target.dir.join(files::CPU_FOLDED))?;
    let off_cpu = if args.off_cpu {
        let title = format!("{} {} ({}), off-CPU time", target.role, target.peer, config);
        Some(rpcarena_profile::analyse_off_cpu(
            &target.dir,
            &title,
            "sched:sched_switch, microseconds off the CPU",
        )?)
    } else {
        None
    };
    let report = PeerReport {
        role: target.role.to_string(),
        peer: target.peer.clone(),
        config: config.to_string(),
        recording,
        window_ms: window.as_millis() as u64,
        folded_samples: rpcarena_profile::fold::total(&folded),
        summary,
        off_cpu,
        load: Some(load),
    };
    std::fs::write(target.dir.join(files::SUMMARY_MD), report.markdown())?;
    std::fs::write(
        target.dir.join(files::SUMMARY_JSON),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    say!(
        "{} {}: {} samples, {:.1}% in its own code; ops/s {:.0} with perf, {:.0} without; wrote {}",
        target.role,
        target.peer,
        report.summary.samples,
        report
            .summary
            .percent_at(rpcarena_profile::summary::Place::Own),
        load.profiled_ops_per_s,
        load.unprofiled_ops_per_s,
        target.dir.display()
    );
    Ok(())
}

/// perf attached at the window's opening and finished at its close, for each target.
struct PerfObserver<'a> {
    targets: &'a [Target],
    spec: (u32, CallGraph, bool),
    live: Vec<Recording>,
    opened: Option<Instant>,
    window: Option<Duration>,
    error: Option<String>,
}

impl<'a> PerfObserver<'a> {
    fn new(targets: &'a [Target], args: &ProfileArgs) -> PerfObserver<'a> {
        PerfObserver {
            targets,
            spec: (args.frequency, args.call_graph.call_graph(), args.off_cpu),
            live: Vec::new(),
            opened: None,
            window: None,
            error: None,
        }
    }

    /// Starts and enables every recording; the first failure stops (drops, kills) them all.
    fn attach(&mut self, peers: WindowPeers) -> std::result::Result<(), ProfileError> {
        let (frequency, call_graph, off_cpu) = self.spec;
        for target in self.targets {
            std::fs::create_dir_all(&target.dir).map_err(|e| ProfileError::Io {
                what: format!("creating {}", target.dir.display()),
                source: e,
            })?;
            let pid = match target.role {
                Role::Client => peers.client,
                Role::Server => peers.server,
            };
            let pids = perf::group_members(pid);
            let mut specs = vec![RecordSpec {
                pids: pids.clone(),
                data: target.dir.join(files::CPU_DATA),
                log: target.dir.join(files::PERF_LOG),
                event_args: cpu_args(frequency, call_graph),
            }];
            if off_cpu {
                specs.push(RecordSpec {
                    pids,
                    data: target.dir.join(files::OFF_DATA),
                    log: target.dir.join("offcpu.log"),
                    event_args: vec![
                        "-e".into(),
                        "sched:sched_switch".into(),
                        "--switch-events".into(),
                        "-g".into(),
                    ],
                });
            }
            for spec in specs {
                self.live.push(Recording::start(&spec)?);
            }
        }
        for recording in &mut self.live {
            recording.enable()?;
        }
        Ok(())
    }

    /// The window recorded, or why there is no whole profile. Every perf still running is
    /// killed (dropped).
    fn end(mut self) -> std::result::Result<Duration, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if !self.live.is_empty() {
            self.live.clear();
            return Err("the profiled sample ended before its window did (a peer exited or failed early): perf was stopped".into());
        }
        self.window
            .ok_or_else(|| "the profiled sample never opened its window".to_string())
    }
}

fn cpu_args(frequency: u32, call_graph: CallGraph) -> Vec<String> {
    let mut args = vec![
        "-e".to_string(),
        "cpu-clock".to_string(),
        "-F".to_string(),
        frequency.to_string(),
        "--call-graph".to_string(),
    ];
    args.push(match call_graph {
        // 16 KiB of stack per sample: deep async stacks unwind whole
        CallGraph::Dwarf => "dwarf,16384".to_string(),
        CallGraph::FramePointers => "fp".to_string(),
    });
    args
}

impl WindowObserver for PerfObserver<'_> {
    fn opening(&mut self, peers: WindowPeers) {
        if let Err(e) = self.attach(peers) {
            self.live.clear();
            self.error = Some(format!("attaching perf: {e}"));
        }
        self.opened = Some(Instant::now());
    }

    fn closed(&mut self) {
        self.window = self.opened.map(|t| t.elapsed());
        for recording in std::mem::take(&mut self.live) {
            if let Err(e) = recording.finish()
                && self.error.is_none()
            {
                self.error = Some(format!("stopping perf: {e}"));
            }
        }
    }
}
