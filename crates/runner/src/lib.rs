//! Runs rpcarena campaigns.
//!
//! [`prepare`] reads and checks a campaign (syntax, meaning, peer executables, peer capabilities)
//! without running anything; [`run`] then executes its schedule: for every sample a fresh server
//! and client peer ([`sample`]), /proc sampling around the measured window ([`procstat`]), and an
//! appended line in `samples.jsonl` ([`artifacts`]). Reports are not this crate's business: the
//! `rpcarena` binary calls the report crate on the finished directory, exactly as
//! `rpcarena report DIR` does.

pub mod artifacts;
pub mod capabilities;
pub mod certs;
pub mod checks;
pub mod host;
pub mod network;
pub mod noise;
pub mod process;
pub mod procstat;
pub mod resolve;
pub mod sample;
pub mod signals;

use anyhow::{Context, Result, bail};
use artifacts::{RunDir, SamplesWriter};
use rpcarena_model::campaign::{Campaign, CampaignError};
use rpcarena_model::matrix::{self, SampleConfig};
use rpcarena_model::record::{
    CampaignInfo, Manifest, PeerInfo, SampleCounts, SampleRecord, SampleStatus,
};
use rpcarena_model::schedule;
use rpcarena_protocol::event::Capabilities;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where a campaign's text came from.
#[derive(Debug, Clone)]
pub struct CampaignSource {
    /// The TOML text.
    pub text: String,
    /// How to name it in errors and the manifest (a path, or `built-in campaigns/quick.toml`).
    pub origin: String,
    /// Directory relative peer paths are resolved against.
    pub dir: PathBuf,
}

impl CampaignSource {
    /// Reads a campaign file.
    pub fn from_file(path: &Path) -> Result<CampaignSource> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading campaign file {}", path.display()))?;
        let dir = path
            .parent()
            .map(|p| {
                if p.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    p
                }
            })
            .unwrap_or(Path::new("."))
            .to_path_buf();
        Ok(CampaignSource {
            text,
            origin: path.display().to_string(),
            dir,
        })
    }
}

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

/// A peer ready to run: resolved command and capabilities.
#[derive(Debug, Clone)]
pub struct ReadyPeer {
    /// Absolute argument vector.
    pub command: Vec<String>,
    /// What it offers.
    pub capabilities: Capabilities,
}

/// A campaign that passed every check that can be made without running a sample.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The campaign.
    pub campaign: Campaign,
    /// Where it came from.
    pub source: CampaignSource,
    /// Peers used by the selected cells, by id.
    pub peers: BTreeMap<String, ReadyPeer>,
    /// Cells selected with `--cell` (empty: all).
    pub only_cells: Vec<String>,
}

/// Parses and validates a campaign's text (no peer is started).
pub fn load(source: &CampaignSource) -> Result<Campaign, CampaignError> {
    Campaign::parse(&source.text, &source.origin)
}

/// Loads the campaign, restricts it to `only_cells`, resolves the peers it uses and asks each for
/// its capabilities; refuses cells a peer cannot run.
pub fn prepare(source: CampaignSource, only_cells: &[String]) -> Result<Prepared> {
    let campaign = load(&source).map_err(|e| anyhow::anyhow!("{e}"))?;
    for cell in only_cells {
        if !campaign.cells.iter().any(|c| &c.id == cell) {
            bail!(
                "--cell {cell:?}: no such cell in {}; cells are: {}",
                source.origin,
                campaign
                    .cells
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut campaign = campaign;
    if !only_cells.is_empty() {
        campaign.cells.retain(|c| only_cells.contains(&c.id));
    }
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let mut peers = BTreeMap::new();
    let mut problems = Vec::new();
    for (i, peer) in campaign.peers.iter().enumerate() {
        let used = campaign
            .cells
            .iter()
            .any(|c| c.client == peer.id || c.server == peer.id);
        if !used {
            continue;
        }
        let command = match resolve::resolve_command(&peer.command, &source.dir, exe_dir.as_deref())
        {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{}: peers[{i}].command: {e}", source.origin));
                continue;
            }
        };
        match capabilities::query(&peer.id, &command, Duration::from_secs(20)) {
            Ok(capabilities) => {
                peers.insert(
                    peer.id.clone(),
                    ReadyPeer {
                        command,
                        capabilities,
                    },
                );
            }
            Err(e) => problems.push(format!("{}: peers[{i}]: {e}", source.origin)),
        }
    }
    if let Err(e) = network::link_profile(&campaign.network) {
        problems.push(format!("{}: {e}", source.origin));
    } else if let Err(e) = network::check_host(&campaign.network) {
        problems.push(format!("{}: {e}", source.origin));
    }
    let caps: BTreeMap<String, Capabilities> = peers
        .iter()
        .map(|(id, p)| (id.clone(), p.capabilities.clone()))
        .collect();
    problems.extend(
        capabilities::check_cells(&campaign, &caps)
            .into_iter()
            .map(|p| format!("{}: {}: {}", source.origin, p.path, p.message)),
    );
    if !problems.is_empty() {
        bail!("{}", problems.join("\n"));
    }
    Ok(Prepared {
        campaign,
        source,
        peers,
        only_cells: only_cells.to_vec(),
    })
}

/// Options of `rpcarena run`.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Output directory (default `results/<campaign>-<UTC time>`).
    pub out: Option<PathBuf>,
    /// Stop at the first failed sample.
    pub fail_fast: bool,
}

/// Told about progress as the run goes.
pub trait Progress {
    /// The run directory exists and `total` samples are planned.
    fn begin(&mut self, dir: &Path, total: usize);
    /// A sample starts.
    fn sample_started(&mut self, index: usize, id: &str, config: &SampleConfig);
    /// A sample ended (its record is already on disk).
    fn sample_finished(&mut self, index: usize, record: &SampleRecord);
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
}

/// Runs a prepared campaign's schedule and writes `manifest.json`, `samples.jsonl`, `raw/` and
/// `certificates/`. A failed sample does not stop the run (unless `fail_fast`).
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
    let dir = RunDir::create(&out)?;
    process::become_subreaper();
    signals::install().context("installing signal handlers")?;

    let ca = certs::Authority::create(&dir.certificates(), &campaign.name)?;
    let emulated = campaign.network.backend == rpcarena_model::network::NetworkBackend::Emulated;
    let pins = noise::plan(&noise::allowed_cpus(), campaign.noise.pinning, emulated);
    let mut net =
        network::RunNetwork::create(&campaign.network, campaign.seed, &ca, &pins.emulator)?;

    let configs = matrix::expand(campaign);
    let slots = schedule::schedule(configs.len(), campaign.repetitions, campaign.seed);
    let mut manifest = Manifest {
        rpcarena_version: build.version.clone(),
        source_revision: build.revision.clone(),
        source_dirty: build.dirty,
        started_at: host::now_rfc3339(),
        finished_at: None,
        interrupted: false,
        seed: campaign.seed,
        campaign: CampaignInfo {
            file: prepared.source.origin.clone(),
            sha256: host::sha256_hex(prepared.source.text.as_bytes()),
            text: prepared.source.text.clone(),
        },
        host: host::host_info(),
        network: net.description().clone(),
        peers: prepared
            .peers
            .iter()
            .map(|(id, p)| PeerInfo {
                id: id.clone(),
                command: p.command.clone(),
                sha256: host::sha256_file(Path::new(&p.command[0])).unwrap_or_default(),
                capabilities: p.capabilities.clone(),
            })
            .collect(),
        only_cells: prepared.only_cells.clone(),
        samples: SampleCounts {
            planned: slots.len() as u32,
            ..SampleCounts::default()
        },
        artifacts: BTreeMap::new(),
    };
    artifacts::write_manifest(&dir.root, &manifest)?;

    let mut writer = SamplesWriter::open(&dir)?;
    progress.begin(&dir.root, slots.len());
    let mut interrupted = false;
    for (index, slot) in slots.iter().enumerate() {
        if signals::interrupted() {
            interrupted = true;
            break;
        }
        let config = &configs[slot.config];
        let id = format!(
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
        );
        progress.sample_started(index, &id, config);
        let client = &prepared.peers[&config.client];
        let server = &prepared.peers[&config.server];
        let (raw_dir, raw_rel) = dir.raw(&id);
        let record = sample::run_sample(sample::SampleJob {
            id: id.clone(),
            slot: *slot,
            config,
            client_command: &client.command,
            server_command: &server.command,
            client_language: &client.capabilities.language,
            server_language: &server.capabilities.language,
            timing: &campaign.timing,
            timeouts: &campaign.timeouts,
            ca_cert: ca.ca_cert.clone(),
            placement: net.placement().clone(),
            raw_dir,
            raw_rel,
            started_at: host::now_rfc3339(),
            pins: &pins,
            noise: &campaign.noise,
            load_seed: campaign.seed ^ ((index as u64) << 20),
        });
        let mut record = record;
        match net.after_sample() {
            Ok(counters) => record.network = counters,
            Err(reason) => {
                record.status = SampleStatus::Failed;
                record.reason = Some(match record.reason.take() {
                    Some(r) => format!("{r}; {reason}"),
                    None => reason,
                });
            }
        }
        writer.append(&record)?;
        match record.status {
            SampleStatus::Ok => manifest.samples.ok += 1,
            SampleStatus::Failed => manifest.samples.failed += 1,
        }
        progress.sample_finished(index, &record);
        if record.status == SampleStatus::Failed && options.fail_fast {
            interrupted = true;
            break;
        }
    }
    interrupted |= signals::interrupted();
    manifest.interrupted = interrupted;
    manifest.finished_at = Some(host::now_rfc3339());
    artifacts::write_manifest(&dir.root, &manifest)?;
    Ok(RunOutcome {
        dir: dir.root,
        counts: manifest.samples,
        interrupted,
    })
}
