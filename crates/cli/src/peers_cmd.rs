//! `rpcarena peers build|list` and `rpcarena conformance`: thin argument handling over
//! `rpcarena_runner::peerbuild` and the `rpcarena_conformance` crate.

use crate::say::{say, tell};
use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use rpcarena_model::peerdir;
use rpcarena_runner::peerbuild;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Subcommand)]
pub(crate) enum PeersAction {
    /// Check each peer's tools, run its build in its folder, and check that the result answers
    /// `capabilities`; a summary table at the end, non-zero exit when any failed.
    Build {
        /// Peer ids (folder names); default: every folder with a peer.toml.
        langs: Vec<String>,
        /// The peers/ folder (default: the nearest peers/ above the current directory).
        #[arg(long, value_name = "DIR")]
        peers: Option<PathBuf>,
    },
    /// List the peers of the peers/ folder, built or not.
    List {
        /// The peers/ folder (default: the nearest peers/ above the current directory).
        #[arg(long, value_name = "DIR")]
        peers: Option<PathBuf>,
    },
}

#[derive(Args)]
pub(crate) struct ConformanceArgs {
    /// Peer ids (`rust`, or a folder of peers/ such as `go`).
    ids: Vec<String>,
    /// A peer given as a command instead of an id: `rpcarena conformance -- ./my-peer --flag`.
    #[arg(last = true)]
    command: Vec<String>,
    /// Only this stack (repeatable).
    #[arg(long = "stack", value_name = "STACK")]
    stacks: Vec<String>,
    /// Only this group of checks (repeatable): capabilities, arguments, sample, lifecycle, tls,
    /// client-validation, server-validation.
    #[arg(long = "group", value_name = "GROUP")]
    groups: Vec<String>,
    /// Keep the raw output here (default: a temporary directory, kept only on failure).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Print the rows as JSON (one array per peer) instead of the table.
    #[arg(long)]
    json: bool,
    /// The peers/ folder (default: the nearest peers/ above the current directory).
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
    /// Check this many stacks at once (default 1). Only without the `sample` group, whose
    /// timed samples need the CPUs alone; CI checks the other groups with 2 on its 2 CPUs.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,
}

/// The peers/ folders to search: `explicit`, or peers/ in the current directory and above.
fn roots(explicit: Option<&Path>) -> Vec<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    peerdir::search_roots(explicit, &cwd)
}

fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

pub(crate) fn peers(action: PeersAction) -> Result<ExitCode> {
    let (explicit, langs, building) = match action {
        PeersAction::Build { langs, peers } => (peers, langs, true),
        PeersAction::List { peers } => (peers, Vec::new(), false),
    };
    let Some(root) = roots(explicit.as_deref()).into_iter().find(|r| r.is_dir()) else {
        bail!("no peers/ folder in the current directory or above; give one with --peers DIR");
    };
    let all = peerbuild::list(&root).map_err(anyhow::Error::msg)?;
    for lang in &langs {
        if !all.iter().any(|p| &p.toml.id == lang) {
            bail!(
                "no peer {lang:?} in {}; peers there: {}",
                root.display(),
                all.iter()
                    .map(|p| p.toml.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let selected: Vec<_> = all
        .iter()
        .filter(|p| langs.is_empty() || langs.contains(&p.toml.id))
        .collect();
    if !building {
        for p in selected {
            let command = p.toml.command_in(&p.dir);
            let built = Path::new(&command[0]).is_file();
            say!(
                "{:<12} {:<12} {} ({})",
                p.toml.id,
                p.toml.language,
                command.join(" "),
                if built {
                    "command present"
                } else {
                    "not built: rpcarena peers build"
                }
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut results = Vec::new();
    for p in selected {
        tell!("== building peer {} in {}", p.toml.id, p.dir.display());
        results.push(peerbuild::build(p, &mut |line| tell!("{line}")));
    }
    say!("\n| peer | result | seconds | toolchain |\n|---|---|--:|---|");
    for r in &results {
        let tools: Vec<String> = r
            .toolchain
            .iter()
            .map(|(t, v)| format!("{t}: {v}"))
            .collect();
        say!(
            "| {} | {} | {:.0} | {} |",
            r.id,
            r.failure
                .as_deref()
                .unwrap_or("built, answers capabilities"),
            r.elapsed.as_secs_f64(),
            tools.join("; ").replace('|', "/")
        );
    }
    Ok(if results.iter().all(|r| r.failure.is_none()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The candidate partners of the conformance kit: the Rust peer first, then every built peer
/// of the first peers/ folder found (a peer not built is skipped with a log line), except
/// `target`, the peer under test.
fn partners(
    roots: &[PathBuf],
    exe: Option<&Path>,
    target: &str,
) -> Result<Vec<rpcarena_conformance::PeerCommand>> {
    let (rust, _) = rpcarena_runner::resolve_peer_id(peerdir::RUST, roots, exe)
        .map_err(|e| anyhow::anyhow!("peer {}: {e}", peerdir::RUST))?;
    let mut out = vec![rpcarena_conformance::PeerCommand {
        id: peerdir::RUST.to_string(),
        command: rust,
    }];
    let Some(root) = roots.iter().find(|r| r.is_dir()) else {
        tell!("no peers/ folder found: the Rust peer is the only candidate partner");
        return Ok(out);
    };
    for folder in peerbuild::list(root).map_err(anyhow::Error::msg)? {
        let id = folder.toml.id;
        if id == target || id == peerdir::RUST {
            continue;
        }
        match rpcarena_runner::resolve_peer_id(&id, roots, exe) {
            Ok((command, _)) => out.push(rpcarena_conformance::PeerCommand { id, command }),
            Err(e) => tell!("candidate partner {id} skipped: {e}"),
        }
    }
    Ok(out)
}

/// The peers to check: the ids, then the command after `--`.
fn targets(
    args: &ConformanceArgs,
    roots: &[PathBuf],
    exe: Option<&Path>,
) -> Result<Vec<(String, Vec<String>)>> {
    let mut targets: Vec<(String, Vec<String>)> = Vec::new();
    for id in &args.ids {
        let (command, _) = rpcarena_runner::resolve_peer_id(id, roots, exe)
            .map_err(|e| anyhow::anyhow!("peer {id}: {e}"))?;
        targets.push((id.clone(), command));
    }
    if !args.command.is_empty() {
        let cwd = std::env::current_dir()?;
        let command = rpcarena_runner::resolve_command(&args.command, &cwd, exe)
            .map_err(anyhow::Error::msg)?;
        targets.push((args.command.join(" "), command));
    }
    if targets.is_empty() {
        bail!(
            "name a peer: `rpcarena conformance go`, or a command: `rpcarena conformance -- ./my-peer`"
        );
    }
    for g in &args.groups {
        if !rpcarena_conformance::GROUPS.contains(&g.as_str()) {
            bail!(
                "--group {g:?}: groups are {}",
                rpcarena_conformance::GROUPS.join(", ")
            );
        }
    }
    Ok(targets)
}

/// Checks each peer; the exit code is non-zero while any row is failed or not checked.
pub(crate) fn conformance(args: ConformanceArgs) -> Result<ExitCode> {
    let roots = roots(args.peers.as_deref());
    let exe = exe_dir();
    let mut all_done = true;
    for (name, command) in targets(&args, &roots, exe.as_deref())? {
        tell!("== conformance of {name}: {}", command.join(" "));
        let options = rpcarena_conformance::Options {
            partners: partners(&roots, exe.as_deref(), &name)?,
            peer: rpcarena_conformance::PeerCommand {
                id: name.clone(),
                command,
            },
            stacks: args.stacks.clone(),
            groups: args.groups.clone(),
            out: args
                .out
                .as_ref()
                .map(|o| o.join(name.replace(['/', ' '], "_"))),
            jobs: args.jobs,
        };
        let outcome = rpcarena_conformance::run(&options, &mut |line| tell!("{name}: {line}"))?;
        let counts = rpcarena_conformance::Counts::of(&outcome.rows);
        if args.json {
            say!("{}", serde_json::to_string(&outcome.rows)?);
            tell!("{name}: {}", counts.summary());
        } else {
            say!(
                "\n## {name}\n\n{}",
                rpcarena_conformance::check::table(&outcome.rows)
            );
        }
        if let Some(dir) = &outcome.kept {
            tell!("{name}: raw output of every check in {}", dir.display());
        }
        all_done &= counts.done();
    }
    Ok(if all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
