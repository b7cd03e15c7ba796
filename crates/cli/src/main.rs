//! `rpcarena`: validate, inspect and run benchmark campaigns, and regenerate their reports.
//!
//! `main` is a short pipeline: parse arguments, load the campaign, hand it to the runner, hand the
//! run directory to the report crate, seal the manifest.

mod progress;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use rpcarena_model::matrix;
use rpcarena_runner::{BuildInfo, CampaignSource, RunOptions};
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
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("rpcarena: {e:#}");
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
    }
}

fn validate(path: &Path) -> Result<ExitCode> {
    let source = CampaignSource::from_file(path)?;
    let campaign = rpcarena_runner::load(&source).map_err(|e| anyhow::anyhow!("{e}"))?;
    let configs = matrix::expand(&campaign).len();
    let samples = configs * campaign.repetitions as usize;
    let per_sample =
        campaign.timing.warmup + campaign.timing.window + std::time::Duration::from_secs(1);
    println!(
        "{}: valid: {} cells, {configs} configurations x {} repetitions = {samples} samples, about {} s of measurement",
        source.origin,
        campaign.cells.len(),
        campaign.repetitions,
        (per_sample * samples as u32).as_secs()
    );
    Ok(ExitCode::SUCCESS)
}

fn capabilities(path: &Path) -> Result<ExitCode> {
    let prepared = rpcarena_runner::prepare(CampaignSource::from_file(path)?, &[])?;
    for (id, peer) in &prepared.peers {
        let c = &peer.capabilities;
        println!(
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
                println!(
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
    println!("{}: every cell can run", prepared.source.origin);
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
    let written = rpcarena_report::regenerate(&outcome.dir)
        .with_context(|| format!("writing reports in {}", outcome.dir.display()))?;
    rpcarena_runner::artifacts::seal_manifest(&outcome.dir, None)?;
    let c = outcome.counts;
    println!(
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
        println!("wrote {}", path.display());
    }
    println!("report: {}", outcome.dir.join("report.md").display());
    if c.failed > 0 || outcome.interrupted {
        if c.failed > 0 {
            eprintln!(
                "rpcarena: {} samples failed; their reasons are in report.md and samples.jsonl",
                c.failed
            );
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn report(dir: &Path) -> Result<ExitCode> {
    if !dir.join("samples.jsonl").is_file() {
        bail!(
            "{} has no samples.jsonl: give the directory a `rpcarena run` wrote",
            dir.display()
        );
    }
    for path in rpcarena_report::regenerate(dir)? {
        println!("wrote {}", path.display());
    }
    Ok(ExitCode::SUCCESS)
}
