//! `rpcarena`: validate, inspect and run benchmark campaigns, and regenerate their reports.
//!
//! `main` is a short pipeline: parse arguments, load the campaign, hand it to the runner, hand the
//! run directory to the report crate, seal the manifest. Process-wide concerns live here too:
//! the signal handler and the child subreaper.

mod progress;
mod say;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rpcarena_model::files::{REPORT_MD, SAMPLES};
use rpcarena_netcheck::NetcheckOptions;
use rpcarena_netem_core::EmulatorChoice;
use rpcarena_runner::{BuildInfo, CampaignSource, RunOptions};
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
    },
    /// Run a campaign (default: campaigns/quick.toml, built in when absent).
    Run {
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
    },
    /// Regenerate aggregate.csv and report.md of a run directory from its samples.jsonl.
    Report {
        /// Run directory.
        dir: PathBuf,
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
        /// Also write the full report as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
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
        Cmd::Capabilities { campaign } => capabilities(&campaign),
        Cmd::Run {
            campaign,
            out,
            cells,
            fail_fast,
        } => run(campaign, out, cells, fail_fast),
        Cmd::Report { dir } => report(&dir),
        Cmd::Doctor { clean } => doctor(clean),
        Cmd::Netcheck {
            profile,
            quick,
            emulator,
            seed,
            json,
        } => netcheck(&profile, quick, emulator, seed, json.as_deref()),
    }
}

fn validate(path: &Path) -> Result<ExitCode> {
    let source = CampaignSource::from_file(path)?;
    let campaign = rpcarena_runner::load(&source).map_err(|e| anyhow::anyhow!("{e}"))?;
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

fn capabilities(path: &Path) -> Result<ExitCode> {
    let prepared = rpcarena_runner::prepare(CampaignSource::from_file(path)?, &[])?;
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

fn run(
    campaign: Option<PathBuf>,
    out: Option<PathBuf>,
    cells: Vec<String>,
    fail_fast: bool,
) -> Result<ExitCode> {
    let source = match campaign {
        Some(path) => CampaignSource::from_file(&path)?,
        None => {
            let local = Path::new("campaigns/quick.toml");
            if local.is_file() {
                CampaignSource::from_file(local)?
            } else {
                CampaignSource {
                    text: QUICK.to_string(),
                    origin: "built-in campaigns/quick.toml".to_string(),
                    dir: PathBuf::from("."),
                }
            }
        }
    };
    let prepared = rpcarena_runner::prepare(source, &cells)?;
    stop_on_signals()?;
    let build = BuildInfo {
        version: env!("CARGO_PKG_VERSION").to_string(),
        revision: env!("RPCARENA_SOURCE_REVISION").to_string(),
        dirty: env!("RPCARENA_SOURCE_DIRTY") == "true",
    };
    let mut printer = progress::Printer::new();
    let outcome = rpcarena_runner::run(
        &prepared,
        &RunOptions { out, fail_fast },
        &build,
        &mut printer,
    )?;
    drop(printer);
    // Reports and the seal are written where they fit, even when the disk filled up.
    let written = match (write_reports(&outcome.dir), &outcome.stopped_by) {
        (Ok(written), _) => written,
        (Err(e), Some(_)) => {
            tell!("rpcarena: {e:#}");
            Vec::new()
        }
        (Err(e), None) => return Err(e),
    };
    if let Err(e) = rpcarena_runner::seal(&outcome.dir, None) {
        match &outcome.stopped_by {
            Some(_) => tell!("rpcarena: sealing the manifest: {e:#}"),
            None => return Err(e),
        }
    }
    let c = outcome.counts;
    say!(
        "{} samples: {} ok, {} failed{}",
        c.ok + c.failed,
        c.ok,
        c.failed,
        if outcome.interrupted {
            format!(" ({} not run: stopped early)", c.planned - c.ok - c.failed)
        } else {
            String::new()
        }
    );
    for path in written {
        say!("wrote {}", path.display());
    }
    say!("report: {}", outcome.dir.join(REPORT_MD).display());
    if let Some(why) = &outcome.stopped_by {
        tell!("rpcarena: the run stopped early: {why}");
        return Ok(ExitCode::FAILURE);
    }
    if c.failed > 0 || outcome.interrupted {
        if c.failed > 0 {
            tell!(
                "rpcarena: {} samples failed; their reasons are in report.md and samples.jsonl",
                c.failed
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn report(dir: &Path) -> Result<ExitCode> {
    if !dir.join(SAMPLES).is_file() {
        bail!(
            "{} has no {SAMPLES}: give the directory a `rpcarena run` wrote",
            dir.display()
        );
    }
    for path in write_reports(dir)? {
        say!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// (Re)writes a run directory's reports; what they note about degraded inputs is also printed
/// as a warning.
fn write_reports(dir: &Path) -> Result<Vec<PathBuf>> {
    let regenerated = rpcarena_report::regenerate(dir)
        .with_context(|| format!("writing reports in {}", dir.display()))?;
    for note in &regenerated.notes {
        tell!("rpcarena: warning: {note}");
    }
    Ok(regenerated.written)
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
                rpcarena_runner::interrupt();
                tell!(
                    "rpcarena: received signal {signal}; stopping peers and writing what was measured"
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

fn netcheck(
    profile: &str,
    quick: bool,
    emulator: EmulatorChoice,
    seed: u64,
    json: Option<&Path>,
) -> Result<ExitCode> {
    let profile = rpcarena_netem_core::profile_by_name(profile)?;
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
