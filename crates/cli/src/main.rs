//! `rpcarena`: validate, inspect and run benchmark campaigns, and regenerate their reports.
//!
//! `main` is a short pipeline: parse arguments, load the campaign, hand it to the runner, hand the
//! run directory to the report crate, seal the manifest. Process-wide concerns live here too:
//! the signal handler and the child subreaper.

mod peers_cmd;
mod plan;
mod profile_cmd;
mod progress;
mod say;
mod tools;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rpcarena_model::files::{MANIFEST, REPORT_MD, SAMPLES};
use rpcarena_netcheck::NetcheckOptions;
use rpcarena_netem_core::EmulatorChoice;
use rpcarena_report::NotWritten;
use rpcarena_runner::{BuildInfo, CampaignSource, RunOptions, RunOutcome};
use say::{say, tell};
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The default campaign, compiled in so that a bare `rpcarena run` works from any directory.
const QUICK: &str = include_str!("../../../campaigns/quick.toml");

#[derive(Parser)]
#[command(
    name = "rpcarena",
    version,
    about = "Benchmark campaigns for RPC stacks and languages"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check a campaign file without running anything.
    Validate {
        /// Campaign TOML file.
        campaign: PathBuf,
    },
    /// Ask every peer of a campaign what it offers, and check that every cell can run.
    Capabilities {
        /// Campaign TOML file.
        campaign: PathBuf,
        /// Folder of peers/<id>/peer.toml for peers named by id alone (default: the nearest
        /// peers/ above the campaign).
        #[arg(long, value_name = "DIR")]
        peers: Option<PathBuf>,
    },
    /// Run a campaign (default: campaigns/quick.toml, built in when absent).
    Run(RunArgs),
    /// Build, or list, the peers of peers/<language>/ (each described by its peer.toml).
    Peers {
        #[command(subcommand)]
        action: peers_cmd::PeersAction,
    },
    /// Check peers against docs/peer-protocol.md: a pass/fail table per check; non-zero exit
    /// when any check fails.
    Conformance(peers_cmd::ConformanceArgs),
    /// Profile the peers of one configuration with Linux perf under the same load as a sample:
    /// flame graphs and summaries (docs/profiling.md); nothing enters a samples.jsonl.
    Profile(profile_cmd::ProfileArgs),
    /// Regenerate aggregate.csv and report.md of a run directory from its samples.jsonl.
    Report {
        /// Run directory.
        dir: PathBuf,
    },
    /// Recompute every SHA-256 the manifest lists (artifacts, peer executables, campaign text);
    /// name each mismatch and exit non-zero on any.
    Verify {
        /// Run directory.
        dir: PathBuf,
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
        /// Print mismatches only.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Compare two run directories, benchstat style: medians with intervals, change, p-value,
    /// `~` when not significant, geomean.
    Compare {
        /// The old run directory.
        old: PathBuf,
        /// The new run directory.
        new: PathBuf,
        /// Metrics to show (repeatable or comma-separated): ops, requests, responses, p50, p99,
        /// p999, client-cpu, server-cpu, client-rss, server-rss. Default: ops, p99.
        #[arg(long = "metric", value_name = "NAME")]
        metrics: Vec<String>,
        /// Compare even when the runs measured different workloads, timing or networks.
        #[arg(long)]
        force: bool,
        /// Print the comparison as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Say which network backends this host supports and why not; list leftovers of killed runs.
    Doctor {
        /// Remove the namespaces and devices that killed runs left behind.
        #[arg(long)]
        clean: bool,
    },
    /// Measure an emulated link and compare it with what its profile promises.
    Netcheck {
        /// Profile name (lan, regional-wan, continental, lossy-mobile, satellite).
        #[arg(default_value = "regional-wan")]
        profile: String,
        /// Smaller samples and wider tolerances: seconds instead of a minute.
        #[arg(long)]
        quick: bool,
        /// Emulator to check: auto, userspace or kernel.
        #[arg(long, default_value = "userspace")]
        emulator: EmulatorChoice,
        /// Master seed of the emulator's random generators.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Loss granularity: packet (every wire packet) or offload (GSO bundles as one unit).
        #[arg(long, default_value = "packet", value_parser = parse_granularity)]
        granularity: rpcarena_netem_core::Granularity,
        /// Also write the full report as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

/// The options of `rpcarena run`.
#[derive(clap::Args)]
struct RunArgs {
    /// Campaign TOML file.
    campaign: Option<PathBuf>,
    /// Output directory (default: results/<campaign>-<UTC time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run only this cell (repeatable).
    #[arg(long = "cell", value_name = "ID")]
    cells: Vec<String>,
    /// Stop at the first failed sample.
    #[arg(long)]
    fail_fast: bool,
    /// Show the expanded plan, its estimated duration and whether this host can run it;
    /// run no sample.
    #[arg(long)]
    dry_run: bool,
    /// Print the outcome (or the plan) as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Print only warnings, failed samples and errors.
    #[arg(long, short)]
    quiet: bool,
    /// Finish the interrupted run in DIR: recorded samples stay, the missing ones run in
    /// their original order and round. Refused if the campaign or a peer changed.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "cells"])]
    resume: Option<PathBuf>,
    /// Folder of peers/<id>/peer.toml for peers named by id alone (default: the nearest
    /// peers/ above the campaign).
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            tell!("rpcarena: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn real_main() -> Result<ExitCode> {
    match Cli::parse().command {
        Cmd::Validate { campaign } => validate(&campaign),
        Cmd::Capabilities { campaign, peers } => capabilities(&campaign, peers),
        Cmd::Run(args) => run(&args),
        Cmd::Peers { action } => peers_cmd::peers(action),
        Cmd::Conformance(args) => peers_cmd::conformance(args),
        Cmd::Profile(args) => profile_cmd::profile(&args),
        Cmd::Report { dir } => report(&dir),
        Cmd::Verify { dir, json, quiet } => tools::verify(&dir, json, quiet),
        Cmd::Compare {
            old,
            new,
            metrics,
            force,
            json,
        } => tools::compare(&old, &new, &metrics, force, json),
        Cmd::Completions { shell } => tools::completions::<Cli>(shell),
        Cmd::Doctor { clean } => doctor(clean),
        Cmd::Netcheck {
            profile,
            quick,
            emulator,
            seed,
            granularity,
            json,
        } => netcheck(
            &profile,
            quick,
            emulator,
            seed,
            granularity,
            json.as_deref(),
        ),
    }
}

fn validate(path: &Path) -> Result<ExitCode> {
    let source = CampaignSource::from_file(path)?;
    let campaign = rpcarena_runner::load(&source)?;
    let samples = campaign.planned_samples();
    let configs = samples / u64::from(campaign.repetitions);
    let seconds = u32::try_from(samples)
        .ok()
        .and_then(|n| campaign.sample_estimate().checked_mul(n))
        .map_or(u64::MAX, |d| d.as_secs());
    say!(
        "{}: valid: {} cells, {configs} configurations x {} repetitions = {samples} samples, about {seconds} s of measurement",
        source.origin,
        campaign.cells.len(),
        campaign.repetitions,
    );
    Ok(ExitCode::SUCCESS)
}

fn capabilities(path: &Path, peers: Option<PathBuf>) -> Result<ExitCode> {
    let mut source = CampaignSource::from_file(path)?;
    source.peers_dir = peers;
    let prepared = rpcarena_runner::prepare(source, &[])?;
    for (id, peer) in &prepared.peers {
        let c = &peer.capabilities;
        say!(
            "peer {id}: {} {} ({}), {}",
            c.peer,
            c.version,
            c.language,
            peer.command.join(" ")
        );
        for (role, stacks) in [("client", &c.roles.client), ("server", &c.roles.server)] {
            for s in stacks.iter() {
                let libraries: Vec<String> = s
                    .libraries
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                say!(
                    "  {role:<6} {:<6} shapes: {}; load: {}; {}",
                    s.stack,
                    s.shapes.join(", "),
                    if s.load_models.is_empty() {
                        "-".to_string()
                    } else {
                        s.load_models.join(", ")
                    },
                    libraries.join(", ")
                );
            }
        }
    }
    say!("{}: every cell can run", prepared.source.origin);
    Ok(ExitCode::SUCCESS)
}

/// `rpcarena run`, a pipeline as hyperfine's main: options -> campaign -> execution -> export.
fn run(args: &RunArgs) -> Result<ExitCode> {
    let target = Target::of(args)?;
    if args.dry_run {
        return dry_run_plan(target.source, &target.cells, args.json);
    }
    let prepared = rpcarena_runner::prepare(target.source, &target.cells)?;
    let outcome = execute(&prepared, args, target.out)?;
    let export = export(&outcome, args.quiet || args.json)?;
    if args.json {
        print_json_summary(&outcome, &export)?;
    } else {
        print_summary(&outcome, &export, args.quiet);
    }
    Ok(exit_code(&outcome, &export))
}

/// What `rpcarena run` runs: the campaign, where it writes and which cells (with `--resume`,
/// those of the interrupted run).
struct Target {
    source: CampaignSource,
    out: Option<PathBuf>,
    cells: Vec<String>,
}

impl Target {
    fn of(args: &RunArgs) -> Result<Target> {
        let (campaign, out, cells) = match &args.resume {
            Some(dir) => {
                let (source, cells) = resume_source(dir, args.campaign.clone())?;
                (Some(source), Some(dir.clone()), cells)
            }
            None => (
                args.campaign.clone().map(Source::File),
                args.out.clone(),
                args.cells.clone(),
            ),
        };
        let mut source = match campaign {
            Some(Source::Kept(source)) => source,
            Some(Source::File(path)) => CampaignSource::from_file(&path)?,
            None => default_campaign()?,
        };
        source.peers_dir.clone_from(&args.peers);
        Ok(Target { source, out, cells })
    }
}

/// campaigns/quick.toml of the working directory, else the built-in copy.
fn default_campaign() -> Result<CampaignSource> {
    let local = Path::new("campaigns/quick.toml");
    if local.is_file() {
        return Ok(CampaignSource::from_file(local)?);
    }
    Ok(CampaignSource {
        text: QUICK.to_string(),
        origin: "built-in campaigns/quick.toml".to_string(),
        dir: PathBuf::from("."),
        peers_dir: None,
    })
}

/// Runs the prepared campaign with progress on stderr; from here on signals stop it cleanly.
fn execute(
    prepared: &rpcarena_runner::Prepared,
    args: &RunArgs,
    out: Option<PathBuf>,
) -> Result<RunOutcome> {
    let estimate = plan::Estimate::of(&prepared.campaign);
    stop_on_signals()?;
    let build = BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        revision: env!("RPCARENA_SOURCE_REVISION").to_string(),
        dirty: env!("RPCARENA_SOURCE_DIRTY") == "true",
    };
    // Dropped on return, which ends its progress line before anything else is printed.
    let mut printer = progress::Printer::new()
        .with_estimate(estimate)
        .quiet(args.quiet || args.json);
    let options = RunOptions {
        out,
        fail_fast: args.fail_fast,
        resume: args.resume.is_some(),
    };
    let outcome = rpcarena_runner::run(prepared, &options, &build, &mut printer)?;
    Ok(outcome)
}

/// What [`export`] wrote.
struct Export {
    /// The reports written.
    reports: Vec<PathBuf>,
    /// What could not be written (none of it is left); the manifest lists it.
    not_written: Vec<NotWritten>,
    /// SHA-256 of the manifest, when it was sealed.
    manifest_sha256: Option<String>,
}

impl Export {
    /// Whether every artifact was written and the manifest sealed.
    fn complete(&self) -> bool {
        self.not_written.is_empty() && self.manifest_sha256.is_some()
    }
}

/// Writes the reports and interval logs and seals the manifest: it hashes what was written and
/// lists what was not. A file that could not be written is named once, with its error; then the
/// run says what it kept.
fn export(outcome: &RunOutcome, quiet: bool) -> Result<Export> {
    let written = match (write_reports(&outcome.dir, quiet), &outcome.stopped_by) {
        (Ok(written), _) => written,
        (Err(e), Some(_)) => {
            tell!("rpcarena: {e:#}");
            Written::default()
        }
        (Err(e), None) => return Err(e),
    };
    let relative = |path: &Path| {
        path.strip_prefix(&outcome.dir)
            .unwrap_or(path)
            .display()
            .to_string()
    };
    let sealing = rpcarena_runner::Sealing {
        written: written.logs.iter().map(|p| relative(p)).collect(),
        not_written: written
            .not_written
            .iter()
            .map(|n| (relative(&n.path), n.error.clone()))
            .collect(),
    };
    let manifest_sha256 = match rpcarena_runner::seal(&outcome.dir, None, &sealing) {
        Ok(_) => rpcarena_report::sha256_file(&outcome.dir.join(MANIFEST)).ok(),
        Err(e) => {
            tell!(
                "rpcarena: sealing the manifest: {}; {MANIFEST} holds no hashes of this run's artifacts: it is not complete",
                e.chain()
            );
            None
        }
    };
    let export = Export {
        reports: written.reports,
        not_written: written.not_written,
        manifest_sha256,
    };
    if !export.complete() {
        tell_kept(outcome, &export, written.logs.len());
    }
    Ok(export)
}

/// After a write failed: what of the run is on disk.
fn tell_kept(outcome: &RunOutcome, export: &Export, logs: usize) {
    let mut kept = vec![format!(
        "{SAMPLES} ({} records)",
        outcome.counts.ok + outcome.counts.failed
    )];
    kept.extend(
        export
            .reports
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())),
    );
    kept.push(format!(
        "{logs} interval logs ({})",
        rpcarena_report::hlog::HLOG
    ));
    let sealed = match &export.manifest_sha256 {
        Some(_) => format!(
            "{MANIFEST}, sealed with the hashes of these and listing the {} files not written (`rpcarena verify` fails until they are: free some space and run `rpcarena report {}`)",
            export.not_written.len(),
            outcome.dir.display()
        ),
        None => format!("{MANIFEST}, not sealed"),
    };
    tell!(
        "rpcarena: kept in {}: {}; {sealed}",
        outcome.dir.display(),
        kept.join(", ")
    );
}

/// `--json`: the outcome as one JSON object on stdout.
fn print_json_summary(outcome: &RunOutcome, export: &Export) -> Result<()> {
    let summary = serde_json::json!({
        "dir": outcome.dir,
        "samples": outcome.counts,
        "interrupted": outcome.interrupted,
        "signal": outcome.signal,
        "stopped_by": outcome.stopped_by,
        "reports": export.reports,
        "not_written": export
            .not_written
            .iter()
            .map(|n| serde_json::json!({"path": n.path, "error": n.error}))
            .collect::<Vec<_>>(),
        "manifest_sha256": export.manifest_sha256,
    });
    say!("{}", serde_json::to_string_pretty(&summary)?);
    Ok(())
}

/// The counts, the files written and the manifest's hash (only the hash with `--quiet`).
fn print_summary(outcome: &RunOutcome, export: &Export, quiet: bool) {
    let c = outcome.counts;
    if !quiet {
        say!(
            "{} samples: {} ok, {} failed{}",
            c.ok + c.failed,
            c.ok,
            c.failed,
            if outcome.interrupted {
                let by = outcome
                    .signal
                    .as_ref()
                    .map_or(String::new(), |s| format!(" by {s}"));
                format!(
                    " ({} not run: stopped early{by})",
                    c.planned - c.ok - c.failed
                )
            } else {
                String::new()
            }
        );
        for path in &export.reports {
            say!("wrote {}", path.display());
        }
        let report = outcome.dir.join(REPORT_MD);
        if export.reports.contains(&report) {
            say!("report: {}", report.display());
        }
    }
    // Only a complete, sealed run is one to publish.
    if let Some(sha) = export
        .manifest_sha256
        .as_ref()
        .filter(|_| export.complete())
    {
        say!(
            "manifest.json SHA-256 {sha} (publish it beside the report; `rpcarena verify {}` checks every hash it lists)",
            outcome.dir.display()
        );
    }
}

/// Failure when the run stopped early, was interrupted, had a failed sample or could not write
/// or seal an artifact, saying which.
fn exit_code(outcome: &RunOutcome, export: &Export) -> ExitCode {
    let c = outcome.counts;
    if let Some(why) = &outcome.stopped_by {
        tell!("rpcarena: the run stopped early: {why}");
        return ExitCode::FAILURE;
    }
    if let Some(signal) = &outcome.signal {
        tell!(
            "rpcarena: the run was interrupted by {signal}; a sample in progress is recorded failed as interrupted"
        );
    }
    if c.failed > 0 {
        tell!(
            "rpcarena: {} samples failed; their reasons are in report.md and samples.jsonl",
            c.failed
        );
    }
    if c.failed > 0 || outcome.interrupted || !export.complete() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn report(dir: &Path) -> Result<ExitCode> {
    if !dir.join(SAMPLES).is_file() {
        bail!(
            "{} has no {SAMPLES}: give the directory a `rpcarena run` wrote",
            dir.display()
        );
    }
    let written = write_reports(dir, false)?;
    for path in &written.reports {
        say!("wrote {}", path.display());
    }
    Ok(if written.not_written.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What [`write_reports`] wrote and could not write.
#[derive(Default)]
struct Written {
    /// `aggregate.csv`, `report.md`, `report.html`: those written.
    reports: Vec<PathBuf>,
    /// The interval logs written.
    logs: Vec<PathBuf>,
    /// What could not be written, each named once here as it is found.
    not_written: Vec<NotWritten>,
}

/// (Re)writes a run directory's reports and interval logs; what they note about degraded inputs
/// is also printed as a warning, and every file that could not be written is named with why.
fn write_reports(dir: &Path, quiet: bool) -> Result<Written> {
    let regenerated = rpcarena_report::regenerate(dir)
        .with_context(|| format!("writing reports in {}", dir.display()))?;
    for note in &regenerated.notes {
        tell!("rpcarena: warning: {note}");
    }
    let logs = rpcarena_report::hlog::write_interval_logs(dir)
        .with_context(|| format!("writing interval logs in {}", dir.display()))?;
    if !logs.written.is_empty() && !quiet {
        tell!(
            "rpcarena: wrote {} HdrHistogram interval logs (raw/<sample>/{})",
            logs.written.len(),
            rpcarena_report::hlog::HLOG
        );
    }
    let mut not_written = regenerated.not_written;
    not_written.extend(logs.not_written);
    for failed in &not_written {
        tell!(
            "rpcarena: {} was not written: {}",
            failed.path.display(),
            failed.error
        );
    }
    Ok(Written {
        reports: regenerated.written,
        logs: logs.written,
        not_written,
    })
}

/// Where a run's campaign comes from.
enum Source {
    /// A campaign file.
    File(PathBuf),
    /// The text kept in an interrupted run's manifest (its file is gone).
    Kept(CampaignSource),
}

/// The campaign and cells of the interrupted run in `dir`: the campaign file
/// the manifest names when it still exists (a changed file is then refused by its hash), else
/// the text the manifest kept.
fn resume_source(dir: &Path, campaign: Option<PathBuf>) -> Result<(Source, Vec<String>)> {
    let manifest = rpcarena_report::read_manifest(dir)
        .with_context(|| format!("--resume {}: not a run directory", dir.display()))?;
    let file = PathBuf::from(&manifest.campaign.file);
    let source = match campaign {
        Some(path) => Source::File(path),
        None if file.is_file() => Source::File(file),
        None => Source::Kept(CampaignSource {
            text: manifest.campaign.text.clone(),
            origin: manifest.campaign.file.clone(),
            dir: PathBuf::from("."),
            peers_dir: None,
        }),
    };
    Ok((source, manifest.only_cells))
}

/// `rpcarena run --dry-run`: the plan, its estimate, and whether this host can run it (the
/// same checks as a run: peers resolved and asked for their capabilities, the network backend
/// available); no sample runs. Non-zero when the host cannot run it.
fn dry_run_plan(source: CampaignSource, cells: &[String], json: bool) -> Result<ExitCode> {
    let mut campaign = rpcarena_runner::load(&source)?;
    if !cells.is_empty() {
        campaign.cells.retain(|c| cells.contains(&c.id));
    }
    let estimate = plan::Estimate::of(&campaign);
    let root = nix::unistd::geteuid().is_root();
    let readiness = rpcarena_runner::prepare(source.clone(), cells);
    let peers: Vec<String> = match &readiness {
        Ok(p) => p
            .peers
            .iter()
            .map(|(id, peer)| format!("{id}: {}", peer.command.join(" ")))
            .collect(),
        Err(_) => Vec::new(),
    };
    if json {
        let value = serde_json::json!({
            "campaign": source.origin,
            "plan": estimate,
            "configurations": rpcarena_model::matrix::expand(&campaign)
                .into_iter()
                .map(|c| c.key)
                .collect::<Vec<_>>(),
            "network": campaign.network.backend,
            "root": root,
            "ready": readiness.is_ok(),
            "peers": peers,
            "problems": readiness.as_ref().err().map(|e| e.to_string()),
        });
        say!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        say!("{}: dry run, no sample runs", source.origin);
        print!("{}", plan::describe(&campaign, &estimate));
        say!(
            "network: {:?}; running as root: {}",
            campaign.network.backend,
            if root { "yes" } else { "no" }
        );
        match &readiness {
            Ok(_) => {
                for p in &peers {
                    say!("peer {p}: built, capabilities checked");
                }
                say!("this host can run it");
            }
            Err(e) => say!("this host cannot run it:\n{}", e.chain()),
        }
    }
    Ok(if readiness.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// From here on, SIGINT, SIGTERM and SIGHUP stop the run cleanly: every live peer group is
/// killed at once, the sample in progress is recorded as failed, no further sample starts, and
/// the reports are still written. The process becomes a child subreaper, so helpers that peers
/// leave behind are re-parented here and reaped instead of escaping to init.
fn stop_on_signals() -> Result<()> {
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        tell!(
            "rpcarena: warning: cannot become a child subreaper ({e}); orphaned peer helpers are reaped by init instead"
        );
    }
    let mut signals =
        Signals::new([SIGINT, SIGTERM, SIGHUP]).context("installing signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                // Stop first: printing may fail (a hung-up terminal) and must not delay it.
                rpcarena_runner::interrupt(signal);
                tell!(
                    "rpcarena: received {} (signal {signal}); stopping peers and writing what was measured",
                    rpcarena_runner::signal_name(signal)
                );
            }
        })
        .context("starting the signal thread")?;
    Ok(())
}

fn doctor(clean: bool) -> Result<ExitCode> {
    let report = rpcarena_netem::doctor();
    say::out(format_args!("{report}"));
    if clean {
        let removed = rpcarena_netem::remove_leftovers().context("removing leftovers")?;
        if removed.is_empty() {
            say!("nothing to clean");
        }
        for leftover in removed {
            say!(
                "removed namespace {} (created by pid {}, devices: {})",
                leftover.namespace,
                leftover.creator_pid,
                if leftover.devices.is_empty() {
                    "none".to_string()
                } else {
                    leftover.devices.join(", ")
                }
            );
        }
    } else if !report.leftovers.is_empty() {
        say!("run `rpcarena doctor --clean` to remove the leftovers above");
    }
    Ok(ExitCode::SUCCESS)
}

/// `--granularity packet|offload`.
fn parse_granularity(text: &str) -> Result<rpcarena_netem_core::Granularity, String> {
    match text {
        "packet" => Ok(rpcarena_netem_core::Granularity::Packet),
        "offload" => Ok(rpcarena_netem_core::Granularity::Offload),
        other => Err(format!("expected packet or offload, got {other:?}")),
    }
}

fn netcheck(
    profile: &str,
    quick: bool,
    emulator: EmulatorChoice,
    seed: u64,
    granularity: rpcarena_netem_core::Granularity,
    json: Option<&Path>,
) -> Result<ExitCode> {
    let mut profile = rpcarena_netem_core::profile_by_name(profile)?;
    profile.granularity = granularity;
    let mut options = if quick {
        NetcheckOptions::quick()
    } else {
        NetcheckOptions::full()
    };
    options.seed = seed;
    options.emulator = emulator;
    let report =
        rpcarena_netcheck::netcheck(&profile, &options).context("netcheck could not run")?;
    say::out(format_args!("{report}"));
    if let Some(path) = json {
        let text = serde_json::to_string_pretty(&report)?;
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if report.passed() {
        Ok(ExitCode::SUCCESS)
    } else {
        tell!(
            "rpcarena: netcheck: {} figures outside their tolerance",
            report.failures().len()
        );
        Ok(ExitCode::FAILURE)
    }
}
