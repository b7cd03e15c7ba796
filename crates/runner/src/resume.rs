//! `rpcarena run --resume DIR`: finish a run that was interrupted (a signal, `--fail-fast`, a
//! crash, a SIGKILL). The samples already in `samples.jsonl` stay as they are; the schedule is
//! re-expanded from the same campaign and seed, and the slots without a record run in their
//! original order and round. Refused when the campaign text or any peer executable changed
//! since the run began, because the new samples would not measure the same thing.

use crate::artifacts::RunDir;
use crate::error::{Error, FileContext, JsonContext, Result};
use rpcarena_model::files::{CERTIFICATES, MANIFEST, RAW, SAMPLES};
use rpcarena_model::record::{Manifest, SampleStatus};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Moves the interrupted run's certificates aside: the resumed run issues its own CA, and the
/// old one stays for audit as `certificates-before-resume-N`.
pub fn set_aside_certificates(path: &Path) -> Result<()> {
    let certificates = path.join(CERTIFICATES);
    if certificates.exists() {
        let aside = (1..)
            .map(|n| path.join(format!("{CERTIFICATES}-before-resume-{n}")))
            .find(|p| !p.exists())
            .unwrap_or_else(|| path.join(format!("{CERTIFICATES}-old")));
        fs::rename(&certificates, &aside).file("moving aside", &certificates)?;
    }
    Ok(())
}

/// An interrupted run, as found on disk.
pub struct Resumed {
    /// Its directory.
    pub dir: RunDir,
    /// Its manifest as the interrupted run left it.
    pub manifest: Manifest,
    /// Sample ids already recorded, with how they ended.
    pub done: BTreeMap<String, SampleStatus>,
}

/// Opens the run in `path`: reads its manifest and recorded samples, drops a last line that a
/// kill cut short, and removes the raw directories of samples that never got a record.
pub fn open(path: &Path) -> Result<Resumed> {
    let manifest_path = path.join(MANIFEST);
    let text = fs::read_to_string(&manifest_path).map_err(|e| {
        Error::Resume(format!(
            "--resume {}: no readable {MANIFEST} ({e}); give the directory of an interrupted `rpcarena run`",
            path.display()
        ))
    })?;
    let manifest: Manifest =
        serde_json::from_str(&text).json(|| format!("parsing {}", manifest_path.display()))?;
    let samples = path.join(SAMPLES);
    let mut bytes = fs::read(&samples).unwrap_or_default();
    if let Some(end) = bytes.iter().rposition(|&b| b == b'\n') {
        if end + 1 < bytes.len() {
            bytes.truncate(end + 1);
            fs::write(&samples, &bytes).file("dropping the cut-short last line of", &samples)?;
        }
    } else if !bytes.is_empty() {
        bytes.clear();
        fs::write(&samples, &bytes).file("emptying", &samples)?;
    }
    let mut done = BTreeMap::new();
    for (i, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = rpcarena_model::command::Line::parse(line.as_bytes())
            .json(|| format!("{}:{}: not a sample record", samples.display(), i + 1))?;
        let (sample, status) = record.id_and_status();
        done.insert(sample.to_string(), status);
    }
    if let Ok(entries) = fs::read_dir(path.join(RAW)) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !done.contains_key(&name) {
                fs::remove_dir_all(entry.path())
                    .file("removing the unrecorded sample's", &entry.path())?;
            }
        }
    }
    let root = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    Ok(Resumed {
        dir: RunDir { root },
        manifest,
        done,
    })
}

/// The manifest of the resumed run: the original one (start time, host, network, peers) with
/// the resume recorded, or an error naming what changed since the run began.
pub fn continue_manifest(
    old: &Manifest,
    fresh: &Manifest,
    done: &BTreeMap<String, SampleStatus>,
) -> Result<Manifest> {
    let mut changed = Vec::new();
    if old.campaign.sha256 != fresh.campaign.sha256 {
        changed.push(format!(
            "the campaign text (SHA-256 {} when the run began, {} now)",
            old.campaign.sha256, fresh.campaign.sha256
        ));
    }
    for peer in &old.peers {
        match fresh.peers.iter().find(|p| p.id == peer.id) {
            Some(now) if now.sha256 == peer.sha256 => {}
            Some(now) => changed.push(format!(
                "peer {} ({}: SHA-256 {} when the run began, {} now)",
                peer.id,
                now.command.first().map_or("", String::as_str),
                peer.sha256,
                now.sha256
            )),
            None => changed.push(format!("peer {} is no longer used", peer.id)),
        }
    }
    if old.only_cells != fresh.only_cells {
        changed.push(format!(
            "the selected cells ({:?} when the run began, {:?} now)",
            old.only_cells, fresh.only_cells
        ));
    }
    if !changed.is_empty() {
        return Err(Error::Resume(format!(
            "cannot resume: {} changed since the run began, so new samples would not measure the same thing; start a new run instead",
            changed.join("; ")
        )));
    }
    let mut manifest = old.clone();
    manifest.resumed_at.push(fresh.started_at.clone());
    manifest.interrupted = false;
    manifest.finished_at = None;
    manifest.artifacts.clear();
    manifest.samples.planned = fresh.samples.planned;
    manifest.samples.ok = done.values().filter(|s| **s == SampleStatus::Ok).count() as u32;
    manifest.samples.failed = done.len() as u32 - manifest.samples.ok;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_model::record::SampleRecord;

    #[test]
    fn a_changed_peer_or_campaign_is_refused_and_named() {
        let mut old = Manifest::default();
        old.campaign.sha256 = "aa".into();
        old.peers.push(rpcarena_model::record::PeerInfo {
            id: "rust".into(),
            command: vec!["/bin/peer".into()],
            sha256: "11".into(),
            ..Default::default()
        });
        let mut fresh = old.clone();
        fresh.started_at = "now".into();
        let done = BTreeMap::from([("r01".to_string(), SampleStatus::Ok)]);
        let m = continue_manifest(&old, &fresh, &done).unwrap();
        assert_eq!(m.resumed_at, ["now"]);
        assert_eq!((m.samples.ok, m.samples.failed), (1, 0));
        fresh.peers[0].sha256 = "22".into();
        fresh.campaign.sha256 = "bb".into();
        let e = continue_manifest(&old, &fresh, &done).unwrap_err();
        assert!(matches!(e, Error::Resume(_)), "{e:?}");
        let e = e.to_string();
        assert!(
            e.contains("the campaign text (SHA-256 aa when the run began, bb now)"),
            "{e}"
        );
        assert!(
            e.contains("peer rust (/bin/peer: SHA-256 11 when the run began, 22 now)"),
            "{e}"
        );
    }

    #[test]
    fn a_line_cut_short_by_a_kill_is_dropped() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(
            tmp.path().join(MANIFEST),
            serde_json::to_string(&Manifest::default()).unwrap(),
        )
        .unwrap();
        let record = SampleRecord {
            sample: "r01-001".into(),
            round: 1,
            position: 1,
            config: serde_json::from_value(serde_json::json!({
                "key": "k", "cell": "a", "client": "p", "server": "p", "stack": "grpc",
                "shape": "unary", "concurrency": 1, "request_size": 1, "response_size": 1,
                "messages_per_stream": 1, "payload": "zeros", "load": {"model": "closed"}
            }))
            .unwrap(),
            status: SampleStatus::Ok,
            reason: None,
            started_at: String::new(),
            elapsed_ms: 0,
            client_language: "rust".into(),
            server_language: "rust".into(),
            client: None,
            metrics: None,
            client_process: None,
            server_process: None,
            server_counters: Default::default(),
            server: None,
            noise: None,
            network: None,
            network_window: None,
            raw: "raw/r01-001".into(),
        };
        let line = serde_json::to_string(&record).unwrap();
        fs::write(
            tmp.path().join(SAMPLES),
            format!("{line}\n{{\"sample\": \"r01-0"),
        )
        .unwrap();
        fs::create_dir_all(tmp.path().join("raw/r01-001")).unwrap();
        fs::create_dir_all(tmp.path().join("raw/r01-002")).unwrap();
        fs::create_dir_all(tmp.path().join(CERTIFICATES)).unwrap();
        let r = open(tmp.path()).unwrap();
        set_aside_certificates(tmp.path()).unwrap();
        assert_eq!(r.done.keys().collect::<Vec<_>>(), ["r01-001"]);
        assert_eq!(
            fs::read_to_string(tmp.path().join(SAMPLES)).unwrap(),
            format!("{line}\n")
        );
        assert!(tmp.path().join("raw/r01-001").is_dir());
        assert!(!tmp.path().join("raw/r01-002").exists());
        assert!(tmp.path().join("certificates-before-resume-1").is_dir());
    }
}
