//! `verify`, `compare` and `completions`: thin shells over `rpcarena_report` and clap.

use crate::say::{say, tell};
use anyhow::{Context, Result, bail};
use rpcarena_report::compare_runs::{Metric, Run, compare_runs, render_text};
use std::path::Path;
use std::process::ExitCode;

/// `rpcarena verify DIR`: every hash the manifest lists, recomputed; non-zero on any mismatch.
pub fn verify(dir: &Path, json: bool, quiet: bool) -> Result<ExitCode> {
    let found = rpcarena_report::verify::verify(dir)
        .with_context(|| format!("verifying {}", dir.display()))?;
    let mismatches = found.mismatches();
    if json {
        say!("{}", serde_json::to_string_pretty(&found)?);
    } else {
        for c in &found.checked {
            match &c.actual {
                Ok(actual) if c.ok() => {
                    if !quiet {
                        say!("ok        {:<8} {}  {actual}", c.listed.kind, c.listed.name);
                    }
                }
                Ok(actual) => say!(
                    "MISMATCH  {:<8} {}: the manifest records {}, the file hashes to {actual}",
                    c.listed.kind,
                    c.listed.name,
                    c.listed.expected
                ),
                Err(why) => say!(
                    "MISMATCH  {:<8} {}: {why} (the manifest records {})",
                    c.listed.kind,
                    c.listed.name,
                    c.listed.expected
                ),
            }
        }
        if !quiet {
            say!("manifest.json SHA-256 {}", found.manifest_sha256);
        }
    }
    if mismatches.is_empty() {
        if !json && !quiet {
            say!(
                "{}: all {} hashes match",
                dir.display(),
                found.checked.len()
            );
        }
        Ok(ExitCode::SUCCESS)
    } else {
        tell!(
            "rpcarena: verify: {} of {} hashes do not match: {}",
            mismatches.len(),
            found.checked.len(),
            mismatches
                .iter()
                .map(|c| c.listed.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(ExitCode::FAILURE)
    }
}

/// `rpcarena compare OLD NEW`: benchstat-style, refusing different workloads unless forced.
pub fn compare(
    old: &Path,
    new: &Path,
    metrics: &[String],
    force: bool,
    json: bool,
) -> Result<ExitCode> {
    let metrics: Vec<Metric> = if metrics.is_empty() {
        vec![Metric::Ops, Metric::P99]
    } else {
        metrics
            .iter()
            .flat_map(|m| m.split(','))
            .map(|m| Metric::parse(m.trim()).map_err(anyhow::Error::msg))
            .collect::<Result<_>>()?
    };
    let load = |dir: &Path| {
        rpcarena_report::load(dir).with_context(|| format!("reading {}", dir.display()))
    };
    let (mo, ao) = load(old)?;
    let (mn, an) = load(new)?;
    let (old_name, new_name) = (old.display().to_string(), new.display().to_string());
    let comparison = compare_runs(
        &Run {
            name: &old_name,
            manifest: &mo,
            aggregates: &ao,
        },
        &Run {
            name: &new_name,
            manifest: &mn,
            aggregates: &an,
        },
        &metrics,
        mo.seed ^ mn.seed,
    );
    if !comparison.differences.is_empty() && !force {
        bail!(
            "{} and {} measured different work: {}. A comparison would read as a change of speed; pass --force to compare the configurations they share anyway",
            old_name,
            new_name,
            comparison.differences.join("; ")
        );
    }
    if json {
        say!("{}", serde_json::to_string_pretty(&comparison)?);
    } else {
        for d in &comparison.differences {
            say!("warning: {d} (compared because of --force)");
        }
        print!("{}", render_text(&comparison, &old_name, &new_name));
    }
    Ok(ExitCode::SUCCESS)
}

/// `rpcarena completions SHELL`: the completion script on stdout.
pub fn completions<C: clap::CommandFactory>(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut command = C::command();
    clap_complete::generate(shell, &mut command, "rpcarena", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}
