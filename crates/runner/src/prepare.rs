//! Everything that can be checked before a sample runs: the campaign's syntax and meaning, the
//! `--cell` selection, the peer executables and what each offers, the link profile, and whether
//! this host can build the network.

use crate::error::{Error, FileContext, Result};
use crate::{capabilities, network, resolve};
use rpcarena_model::campaign::{Campaign, CampaignError};
use rpcarena_model::peerdir;
use rpcarena_protocol::event::Capabilities;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a peer may take to answer `capabilities`.
const CAPABILITIES_TIMEOUT: Duration = Duration::from_secs(20);

/// Where a campaign's text came from.
#[derive(Debug, Clone)]
pub struct CampaignSource {
    /// The TOML text.
    pub text: String,
    /// How to name it in errors and the manifest (a path, or `built-in campaigns/quick.toml`).
    pub origin: String,
    /// Directory relative peer paths are resolved against.
    pub dir: PathBuf,
    /// `--peers DIR`: where peers named by id alone are found (default: `peers/` in the
    /// campaign's directory or the nearest ancestor that has it).
    pub peers_dir: Option<PathBuf>,
}

impl CampaignSource {
    /// Reads a campaign file.
    pub fn from_file(path: &Path) -> Result<CampaignSource> {
        let bytes = std::fs::read(path).file("reading campaign file", path)?;
        let text = rpcarena_model::campaign::decode(&bytes, &path.display().to_string())?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(CampaignSource {
            text,
            origin: path.display().to_string(),
            dir,
            peers_dir: None,
        })
    }
}

/// A peer ready to run: resolved command and capabilities.
#[derive(Debug, Clone)]
pub struct ReadyPeer {
    /// Absolute argument vector.
    pub command: Vec<String>,
    /// What it offers.
    pub capabilities: Capabilities,
    /// Its `peers/<id>/` folder, when it was named by id alone.
    pub folder: Option<PathBuf>,
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
/// its capabilities; refuses cells a peer cannot run. Every problem found is listed.
pub fn prepare(source: CampaignSource, only_cells: &[String]) -> Result<Prepared> {
    let mut campaign = load(&source)?;
    select_cells(&mut campaign, only_cells, &source.origin)?;
    let mut problems = Vec::new();
    let peers = ready_peers(&campaign, &source, &mut problems);
    if let Err(e) = campaign.network.link_profile() {
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
    problems.extend(command_cpu_problems(
        &campaign,
        &crate::noise::allowed_cpus(),
        &source.origin,
    ));
    if !problems.is_empty() {
        return Err(Error::NotRunnable(problems));
    }
    Ok(Prepared {
        campaign,
        source,
        peers,
        only_cells: only_cells.to_vec(),
    })
}

/// Commands pinned to a CPU this process may not use, each named with its field path.
fn command_cpu_problems(campaign: &Campaign, allowed: &[usize], origin: &str) -> Vec<String> {
    campaign
        .commands
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let cpu = c.cpu?;
            (!allowed.contains(&cpu)).then(|| {
                format!(
                    "{origin}: commands[{i}].cpu: CPU {cpu} is not one this process may use (allowed: {:?}); pick one of those or leave cpu out (the server's CPU)",
                    allowed
                )
            })
        })
        .collect()
}

/// Keeps only the `--cell`s asked for; an unknown one is an error that lists the known ones.
fn select_cells(campaign: &mut Campaign, only_cells: &[String], origin: &str) -> Result<()> {
    for cell in only_cells {
        if !campaign.cells.iter().any(|c| &c.id == cell) {
            return Err(Error::UnknownCell {
                cell: cell.clone(),
                origin: origin.to_string(),
                known: campaign.cells.iter().map(|c| c.id.clone()).collect(),
            });
        }
    }
    if !only_cells.is_empty() {
        campaign.cells.retain(|c| only_cells.contains(&c.id));
    }
    Ok(())
}

/// Resolves and queries every peer the selected cells use; problems name the peer's field.
fn ready_peers(
    campaign: &Campaign,
    source: &CampaignSource,
    problems: &mut Vec<String>,
) -> BTreeMap<String, ReadyPeer> {
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf));
    let mut peers = BTreeMap::new();
    for (i, peer) in campaign.peers.iter().enumerate() {
        let used = campaign
            .cells
            .iter()
            .any(|c| c.client == peer.id || c.server == peer.id);
        if !used {
            continue;
        }
        let resolved = if let Some(command) = &peer.command {
            resolve::resolve_command(command, &source.dir, exe_dir.as_deref()).map(|c| (c, None))
        } else {
            let canonical = source.dir.canonicalize().unwrap_or(source.dir.clone());
            let roots = peerdir::search_roots(source.peers_dir.as_deref(), &canonical);
            resolve::resolve_peer_id(&peer.id, &roots, exe_dir.as_deref())
        };
        let (command, folder) = match resolved {
            Ok(c) => c,
            Err(e) => {
                problems.push(format!("{}: peers[{i}].command: {e}", source.origin));
                continue;
            }
        };
        match capabilities::query(&peer.id, &command, CAPABILITIES_TIMEOUT) {
            Ok(capabilities) => {
                peers.insert(
                    peer.id.clone(),
                    ReadyPeer {
                        command,
                        capabilities,
                        folder,
                    },
                );
            }
            Err(e) => problems.push(format!("{}: peers[{i}]: {e}", source.origin)),
        }
    }
    peers
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: String) -> CampaignSource {
        CampaignSource {
            text,
            origin: "t.toml".into(),
            dir: PathBuf::from("/nonexistent"),
            peers_dir: None,
        }
    }

    #[test]
    fn each_kind_of_refusal_is_a_variant_a_caller_can_match() {
        let text = rpcarena_fixtures::campaign("t", 1)
            .peer("p", &["/nonexistent/peer"])
            .cell("a", "p", "p", "grpc")
            .section("[workload]\nconcurrency = [1]\nshapes = [\"unary\"]")
            .build();
        match prepare(source(text.clone()), &["b".into()]) {
            Err(Error::UnknownCell { cell, known, .. }) => {
                assert_eq!((cell.as_str(), known), ("b", vec!["a".to_string()]));
            }
            other => panic!("an unknown --cell: {other:?}"),
        }
        match prepare(source(text), &[]) {
            Err(Error::NotRunnable(problems)) => {
                assert!(
                    problems.iter().any(|p| p.contains("/nonexistent/peer")),
                    "{problems:?}"
                );
            }
            other => panic!("a peer that does not exist: {other:?}"),
        }
        let broken = prepare(source("name = 1".into()), &[]);
        assert!(matches!(broken, Err(Error::Campaign(_))), "{broken:?}");
    }
}
