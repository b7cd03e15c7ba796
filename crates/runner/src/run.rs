//! Running a prepared campaign: the run directory, the CA, the CPU plan and the network, then
//! every slot of the seeded schedule as one sample, each record appended as it ends.

use crate::artifacts::{self, RunDir, SamplesWriter};
use crate::error::{Error, Result};
use crate::network::RunNetwork;
use crate::noise::{self, PinPlan};
use crate::prepare::Prepared;
use crate::sample::{self, ClientLaunch, SampleIo, SampleSpec};
use crate::{certs, host, stop};
use rpcarena_model::command::{CommandRecord, CommandSpec};
use rpcarena_model::invocation;
use rpcarena_model::matrix::{self, SampleConfig};
use rpcarena_model::network::NetworkBackend;
use rpcarena_model::record::{
    CampaignInfo, Manifest, PeerInfo, SampleCounts, SampleRecord, SampleStatus,
};
use rpcarena_model::schedule::{self, Slot};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How this rpcarena was built, for the manifest.
#[derive(Debug, Clone)]
pub struct BuildInfo {
    /// Crate version.
    pub version: String,
    /// Git revision of the source.
    pub revision: String,
    /// Whether the source had uncommitted changes.
    pub dirty: bool,
}

/// Options of `rpcarena run`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output directory (default `results/<campaign>-<UTC time>`).
    pub out: Option<PathBuf>,
    /// Stop at the first failed sample.
    pub fail_fast: bool,
    /// Continue the interrupted run in `out` instead of starting a new one (see [`resume`]).
    pub resume: bool,
}

/// Told about progress as the run goes.
pub trait Progress {
    /// The run directory exists and `total` samples are planned.
    fn begin(&mut self, dir: &Path, total: usize);
    /// A sample starts.
    fn sample_started(&mut self, index: usize, id: &str, config: &SampleConfig);
    /// A sample ended (its record is already on disk).
    fn sample_finished(&mut self, index: usize, record: &SampleRecord);
    /// A command run ended, its warm-up or a timed run (its record is already on disk).
    fn command_finished(&mut self, index: usize, record: &CommandRecord);
    /// Something degraded that the run records but does not stop for.
    fn warning(&mut self, text: &str);
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The run directory.
    pub dir: PathBuf,
    /// Sample counts.
    pub counts: SampleCounts,
    /// Stopped early by a signal or `--fail-fast`.
    pub interrupted: bool,
    /// The signal that stopped the run ("SIGTERM"), if one did.
    pub signal: Option<String>,
    /// Stopped early because an artifact could not be written (a full disk): what happened.
    /// The records before it are whole; the caller still writes the reports where they fit.
    pub stopped_by: Option<String>,
}

/// Runs a prepared campaign's schedule and writes `manifest.json`, `samples.jsonl`, `raw/` and
/// `certificates/`. A failed sample does not stop the run (unless `fail_fast`).
///
/// The caller handles signals: it makes itself a child subreaper (so orphaned peer helpers
/// come back to be reaped) and calls [`crate::interrupt`] on SIGINT, SIGTERM and SIGHUP.
pub fn run(
    prepared: &Prepared,
    options: &RunOptions,
    build: &BuildInfo,
    progress: &mut dyn Progress,
) -> Result<RunOutcome> {
    let campaign = &prepared.campaign;
    let out = options.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-{}", campaign.name, host::now_compact()))
    });
    let resumed = if options.resume {
        Some(crate::resume::open(&out)?)
    } else {
        None
    };
    let configs = matrix::expand(campaign);
    let slots = schedule::schedule(
        configs.len() + campaign.commands.len(),
        campaign.repetitions,
        campaign.seed,
    );
    let work = |slot: &Slot| work_of(slot, &configs, &campaign.commands);
    let dir = match &resumed {
        Some(r) => reopen(prepared, &out, r, &slots, &work)?,
        None => RunDir::create(&out)?,
    };
    let ca = certs::Authority::create(&dir.certificates(), &dir.private(), &campaign.name)?;
    let emulated = campaign.network.backend == NetworkBackend::Emulated;
    let pins = noise::plan(&noise::allowed_cpus(), campaign.noise.pinning, emulated);
    let mut net = RunNetwork::create(
        &campaign.network,
        campaign.seed,
        &ca,
        &pins.emulator,
        &mut |text| progress.warning(text),
    )?;

    let fresh = manifest(prepared, build, &net, slots.len());
    let mut manifest = match &resumed {
        Some(r) => crate::resume::continue_manifest(&r.manifest, &fresh, &r.done)?,
        None => fresh,
    };
    artifacts::write_manifest(&dir.root, &manifest)?;
    let done = resumed.map(|r| r.done).unwrap_or_default();
    // A resumed run keeps what was recorded and runs the rest in their scheduled order.
    let todo: Vec<Todo> = slots
        .iter()
        .map(|slot| (*slot, work(slot), sample_id(slot, work(slot))))
        .filter(|(_, _, id)| !done.contains_key(id))
        .collect();

    let mut writer = SamplesWriter::open(&dir)?;
    progress.begin(&dir.root, todo.len());
    let context = Context {
        prepared,
        dir: &dir,
        ca_cert: &ca.ca_cert,
        pins: &pins,
        fail_fast: options.fail_fast,
        recorded: done.keys().cloned().collect(),
    };
    let end = run_samples(
        &context,
        &todo,
        &mut net,
        &mut writer,
        &mut manifest,
        progress,
    );
    finish(dir, manifest, end, progress)
}

/// A sample still to run: its slot, what it runs and its id.
type Todo<'a> = (Slot, Work<'a>, String);

/// What a slot runs: a peer configuration or a command.
#[derive(Clone, Copy)]
enum Work<'a> {
    /// A client and a server peer.
    Peers(&'a SampleConfig),
    /// A `[[commands]]` entry.
    Command(&'a CommandSpec),
}

/// The schedule numbers the configurations first, then the commands.
fn work_of<'a>(slot: &Slot, configs: &'a [SampleConfig], commands: &'a [CommandSpec]) -> Work<'a> {
    match configs.get(slot.config) {
        Some(config) => Work::Peers(config),
        None => Work::Command(&commands[slot.config - configs.len()]),
    }
}

/// What every sample of the run shares.
struct Context<'a> {
    prepared: &'a Prepared,
    dir: &'a RunDir,
    ca_cert: &'a Path,
    pins: &'a PinPlan,
    fail_fast: bool,
    /// Sample ids already in `samples.jsonl` (a resumed run's).
    recorded: BTreeSet<String>,
}

/// Why the loop over the samples ended early, if it did.
#[derive(Default)]
struct LoopEnd {
    /// A signal or `--fail-fast`.
    interrupted: bool,
    /// An artifact could not be written: what happened.
    stopped_by: Option<String>,
}

/// The directory of an interrupted run, checked before anything in it moves: something is left
/// to run, and neither the campaign nor a peer changed.
fn reopen<'a>(
    prepared: &Prepared,
    out: &Path,
    resumed: &crate::resume::Resumed,
    slots: &[Slot],
    work: &dyn Fn(&Slot) -> Work<'a>,
) -> Result<RunDir> {
    if slots
        .iter()
        .all(|s| resumed.done.contains_key(&sample_id(s, work(s))))
    {
        return Err(Error::Resume(format!(
            "--resume {}: nothing to resume, every one of its {} samples is recorded; `rpcarena report {}` regenerates its reports",
            out.display(),
            slots.len(),
            out.display()
        )));
    }
    let identity = Manifest {
        campaign: CampaignInfo {
            sha256: host::sha256_hex(prepared.source.text.as_bytes()),
            ..CampaignInfo::default()
        },
        peers: peer_infos(prepared),
        only_cells: prepared.only_cells.clone(),
        ..Manifest::default()
    };
    crate::resume::continue_manifest(&resumed.manifest, &identity, &resumed.done)?;
    crate::resume::set_aside_certificates(out)?;
    Ok(resumed.dir.clone())
}

/// Runs the samples still to run, in order: the load gate, the sample, its record appended.
fn run_samples(
    context: &Context,
    todo: &[Todo],
    net: &mut RunNetwork,
    writer: &mut SamplesWriter,
    manifest: &mut Manifest,
    progress: &mut dyn Progress,
) -> LoopEnd {
    let interrupted = LoopEnd {
        interrupted: true,
        stopped_by: None,
    };
    let noise = &context.prepared.campaign.noise;
    let mut warmed = BTreeSet::new();
    for (index, (slot, work, id)) in todo.iter().enumerate() {
        if stop::interrupted() {
            return interrupted;
        }
        // A signal while waiting at the load gate ends the run before anything starts.
        let gate = sample::wait_at_gate(noise, noise::allowed_cpus().len());
        if stop::interrupted() {
            return interrupted;
        }
        let config = match work {
            Work::Peers(config) => config,
            Work::Command(spec) => {
                let warm = warmed.insert(spec.id.clone());
                let records = command_runs(context, *slot, spec, id, warm);
                let sink = Sink {
                    writer: &mut *writer,
                    manifest: &mut *manifest,
                    progress: &mut *progress,
                };
                if let Some(end) = append_commands(records, index, sink, context.fail_fast) {
                    return end;
                }
                continue;
            }
        };
        let (raw_dir, raw_rel) = context.dir.raw(id);
        let place = Place {
            slot: *slot,
            index,
            id: id.clone(),
            raw_rel,
        };
        let parts = SpecParts {
            prepared: context.prepared,
            ca_cert: context.ca_cert,
            pins: context.pins,
        };
        let spec = sample_spec(&parts, config, place, net, gate);
        progress.sample_started(index, &spec.id, config);
        let record = sample::run_sample(
            spec,
            SampleIo {
                raw_dir,
                network: net,
                warn: &mut |text| progress.warning(text),
                observer: None,
            },
        );
        if let Err(e) = writer.append(&record) {
            progress.warning(&format!("{}; the run stops here", e.chain()));
            return LoopEnd {
                interrupted: true,
                stopped_by: Some(e.chain()),
            };
        }
        match record.status {
            SampleStatus::Ok => manifest.samples.ok += 1,
            SampleStatus::Failed => manifest.samples.failed += 1,
        }
        progress.sample_finished(index, &record);
        if record.status == SampleStatus::Failed && context.fail_fast {
            return interrupted;
        }
    }
    LoopEnd::default()
}

/// Where records go as they end.
struct Sink<'a> {
    writer: &'a mut SamplesWriter,
    manifest: &'a mut Manifest,
    progress: &'a mut dyn Progress,
}

/// Appends a command's records (a warm-up is no sample of the plan: not counted); `Some` when
/// the run stops: an append failed, or a timed run failed under `--fail-fast`.
fn append_commands(
    records: Vec<CommandRecord>,
    index: usize,
    sink: Sink,
    fail_fast: bool,
) -> Option<LoopEnd> {
    for record in records {
        if let Err(e) = sink.writer.append_command(&record) {
            sink.progress
                .warning(&format!("{}; the run stops here", e.chain()));
            return Some(LoopEnd {
                interrupted: true,
                stopped_by: Some(e.chain()),
            });
        }
        match (record.warmup, record.status) {
            (true, _) => {}
            (false, SampleStatus::Ok) => sink.manifest.samples.ok += 1,
            (false, SampleStatus::Failed) => sink.manifest.samples.failed += 1,
        }
        sink.progress.command_finished(index, &record);
        if record.status == SampleStatus::Failed && !record.warmup && fail_fast {
            return Some(LoopEnd {
                interrupted: true,
                stopped_by: None,
            });
        }
    }
    None
}

/// A command's runs in its slot: its untimed warm-up first when `warm` (the command's first slot
/// in this process, unless an earlier process recorded that warm-up), then the timed run.
fn command_runs(
    context: &Context,
    slot: Slot,
    spec: &CommandSpec,
    id: &str,
    warm: bool,
) -> Vec<CommandRecord> {
    let source = &context.prepared.source;
    let dir = match &spec.dir {
        Some(d) => source.dir.join(d),
        None => source.dir.clone(),
    };
    let cpus = spec
        .cpu
        .map_or_else(|| context.pins.server.clone(), |c| vec![c]);
    let warmup_id = format!("{id}-warmup");
    let warm = warm && !context.recorded.contains(&warmup_id);
    let runs: Vec<(String, bool)> = [(warmup_id, true), (id.to_string(), false)]
        .into_iter()
        .filter(|(_, warmup)| warm || !warmup)
        .collect();
    runs.into_iter()
        .map(|(id, warmup)| {
            let (raw_dir, raw_rel) = context.dir.raw(&id);
            crate::command::run(&crate::command::CommandRun {
                spec,
                id,
                slot,
                warmup,
                cpus: cpus.clone(),
                dir: dir.clone(),
                raw_dir,
                raw_rel,
                started_at: host::now_rfc3339(),
            })
        })
        .collect()
}

/// Writes the final manifest and says how the run ended.
fn finish(
    dir: RunDir,
    mut manifest: Manifest,
    end: LoopEnd,
    progress: &mut dyn Progress,
) -> Result<RunOutcome> {
    let interrupted = end.interrupted || stop::interrupted();
    manifest.interrupted = interrupted;
    manifest.finished_at = Some(host::now_rfc3339());
    if let Err(e) = artifacts::write_manifest(&dir.root, &manifest) {
        // With the disk full the manifest may not fit either: the report then reads the counts
        // from samples.jsonl and says the run is incomplete.
        match &end.stopped_by {
            Some(_) => progress.warning(&e.chain()),
            None => return Err(e),
        }
    }
    Ok(RunOutcome {
        dir: dir.root,
        counts: manifest.samples,
        interrupted,
        signal: stop::stopping_signal(),
        stopped_by: end.stopped_by,
    })
}

/// The manifest as the run starts: what runs, where, from what.
fn manifest(prepared: &Prepared, build: &BuildInfo, net: &RunNetwork, planned: usize) -> Manifest {
    let campaign = &prepared.campaign;
    Manifest {
        rpcarena_version: build.version.clone(),
        source_revision: build.revision.clone(),
        source_dirty: build.dirty,
        started_at: host::now_rfc3339(),
        finished_at: None,
        interrupted: false,
        resumed_at: Vec::new(),
        seed: campaign.seed,
        campaign: CampaignInfo {
            file: prepared.source.origin.clone(),
            sha256: host::sha256_hex(prepared.source.text.as_bytes()),
            text: prepared.source.text.clone(),
        },
        host: host::host_info(),
        network: net.description().clone(),
        peers: peer_infos(prepared),
        only_cells: prepared.only_cells.clone(),
        samples: SampleCounts {
            planned: planned as u32,
            ..SampleCounts::default()
        },
        artifacts: BTreeMap::new(),
        not_written: BTreeMap::new(),
    }
}

/// The peers as run, with their executables' hashes.
fn peer_infos(prepared: &Prepared) -> Vec<PeerInfo> {
    prepared
        .peers
        .iter()
        .map(|(id, p)| PeerInfo {
            id: id.clone(),
            command: p.command.clone(),
            sha256: host::sha256_file(Path::new(&p.command[0])).unwrap_or_default(),
            files: declared_files(p)
                .iter()
                .map(|f| {
                    let hash = host::sha256_tree(Path::new(f))
                        .unwrap_or_else(|e| format!("unreadable: {}", e.chain()));
                    (f.clone(), hash)
                })
                .collect(),
            capabilities: p.capabilities.clone(),
        })
        .collect()
}

/// The files whose contents the manifest hashes: those the peer declares; for a peer of
/// `peers/<id>/` that declares none, the folder its command runs from (its build output).
fn declared_files(peer: &crate::ReadyPeer) -> Vec<String> {
    if !peer.capabilities.files.is_empty() || peer.folder.is_none() {
        return peer.capabilities.files.clone();
    }
    Path::new(&peer.command[0])
        .parent()
        .map(|d| vec![d.display().to_string()])
        .unwrap_or_default()
}

/// A sample's place in the run: its slot, its index in the schedule, its id and raw directory.
pub(crate) struct Place {
    pub slot: Slot,
    pub index: usize,
    pub id: String,
    pub raw_rel: String,
}

/// What every sample's spec is made of besides its configuration: the peers, the CA, the CPUs.
pub(crate) struct SpecParts<'a> {
    pub prepared: &'a Prepared,
    pub ca_cert: &'a Path,
    pub pins: &'a PinPlan,
}

/// Everything the sample of `config` at `place` needs: its peers, where they run, and the load
/// gate's verdict.
pub(crate) fn sample_spec(
    parts: &SpecParts,
    config: &SampleConfig,
    place: Place,
    net: &RunNetwork,
    gate: sample::Gate,
) -> SampleSpec {
    let (prepared, pins) = (parts.prepared, parts.pins);
    let campaign = &prepared.campaign;
    let cpus = noise::allowed_cpus().len();
    let client = &prepared.peers[&config.client];
    let server = &prepared.peers[&config.server];
    let placement = net.placement();
    let server_argv = placement.server.with_cpus(&pins.server).argv(
        &server.command,
        invocation::server_args(
            &config.stack,
            &placement.listen,
            config.tls,
            &placement.identity.cert,
            &placement.identity.key,
        ),
    );
    SampleSpec {
        id: place.id,
        slot: place.slot,
        config: config.clone(),
        raw_rel: place.raw_rel,
        client_language: client.capabilities.language.clone(),
        server_language: server.capabilities.language.clone(),
        timing: campaign.timing_of(&config.cell),
        timeouts: campaign.timeouts.clone(),
        pins: pins.clone(),
        cpus,
        drift_threshold: campaign.noise.drift_threshold,
        emulated: campaign.network.backend == NetworkBackend::Emulated,
        started_at: host::now_rfc3339(),
        gate,
        server_argv,
        client: ClientLaunch {
            launcher: placement.client.with_cpus(&pins.client),
            command: client.command.clone(),
            server_name: placement.identity.name.clone(),
            ca: parts.ca_cert.to_path_buf(),
            seed: campaign.seed ^ ((place.index as u64) << 20),
        },
        server_window: follows_revision(server.capabilities.revision.as_deref(), (1, 2)),
    }
}

/// Whether a peer's declared revision (`"1.2"`; absent means 1.0) is at least `wanted`.
fn follows_revision(revision: Option<&str>, wanted: (u32, u32)) -> bool {
    let parse = |r: &str| -> Option<(u32, u32)> {
        let (major, minor) = r.split_once('.')?;
        Some((major.parse().ok()?, minor.parse().ok()?))
    };
    revision.and_then(parse).is_some_and(|r| r >= wanted)
}

/// `r01-003-rust-grpc-unary-c4-256B-256B-zeros-closed`: round, position, configuration;
/// `r01-004-cmd-typecheck-orpc` for a command.
fn sample_id(slot: &Slot, work: Work) -> String {
    let config = match work {
        Work::Peers(config) => config,
        Work::Command(spec) => {
            return format!("r{:02}-{:03}-cmd-{}", slot.round, slot.position, spec.id);
        }
    };
    format!(
        "r{:02}-{:03}-{}-{}-c{}-{}B-{}B-{}-{}",
        slot.round,
        slot.position,
        config.cell,
        config.shape,
        config.concurrency,
        config.request_size,
        config.response_size,
        config.payload,
        config.load
    )
}

#[cfg(test)]
mod tests {
    use super::follows_revision;

    #[test]
    fn revisions_compare_as_numbers() {
        assert!(follows_revision(Some("1.2"), (1, 2)));
        assert!(follows_revision(Some("1.10"), (1, 2)));
        assert!(!follows_revision(Some("1.1"), (1, 2)));
        assert!(!follows_revision(None, (1, 2)));
        assert!(!follows_revision(Some("one"), (1, 2)));
    }
}
