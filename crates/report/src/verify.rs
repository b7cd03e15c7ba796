//! `rpcarena verify DIR`: recompute every SHA-256 a run's manifest lists and name each file
//! whose bytes no longer match. The checks are a pure function of the manifest and a way to
//! hash a file ([`plan`], [`check`]); [`verify`] is the I/O shell.

use crate::{ReportError, read_manifest, sha256_file};
use rpcarena_model::files::MANIFEST;
use rpcarena_model::record::Manifest;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One hash the manifest lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    /// What it is: `artifact`, `peer` or `campaign`.
    pub kind: &'static str,
    /// The file (relative to the run directory for artifacts; as recorded for peers), or
    /// `manifest.json#campaign.text` for the campaign text kept in the manifest.
    pub name: String,
    /// The SHA-256 the manifest records.
    pub expected: String,
}

/// The outcome of one check.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Checked {
    /// What was checked.
    #[serde(flatten)]
    pub listed: Listed,
    /// The SHA-256 of what is there now, or why there is none.
    pub actual: Result<String, String>,
}

impl Checked {
    /// Whether the bytes match.
    pub fn ok(&self) -> bool {
        self.actual.as_ref() == Ok(&self.listed.expected)
    }
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verification {
    /// Every check, in the manifest's order: campaign text, artifacts, peers.
    pub checked: Vec<Checked>,
    /// SHA-256 of `manifest.json` itself (to compare with the published one).
    pub manifest_sha256: String,
}

impl Verification {
    /// The checks that failed.
    pub fn mismatches(&self) -> Vec<&Checked> {
        self.checked.iter().filter(|c| !c.ok()).collect()
    }
}

/// Every hash `manifest` lists, where its file is found under `dir` (pure).
pub fn plan(manifest: &Manifest, dir: &Path) -> Vec<(Listed, Option<PathBuf>)> {
    let mut out = vec![(
        Listed {
            kind: "campaign",
            name: format!("{MANIFEST}#campaign.text"),
            expected: manifest.campaign.sha256.clone(),
        },
        None,
    )];
    for (name, sha) in &manifest.artifacts {
        out.push((
            Listed {
                kind: "artifact",
                name: name.clone(),
                expected: sha.clone(),
            },
            Some(dir.join(name)),
        ));
    }
    for name in manifest.not_written.keys() {
        out.push((
            Listed {
                kind: "not written",
                name: name.clone(),
                expected: String::new(),
            },
            Some(dir.join(name)),
        ));
    }
    for peer in &manifest.peers {
        let Some(path) = peer.command.first() else {
            continue;
        };
        out.push((
            Listed {
                kind: "peer",
                name: format!("{} ({path})", peer.id),
                expected: peer.sha256.clone(),
            },
            Some(PathBuf::from(path)),
        ));
    }
    out
}

/// Checks every hash `manifest` lists with `hash` (pure given `hash`).
pub fn check(
    manifest: &Manifest,
    dir: &Path,
    hash: impl Fn(&Path) -> Result<String, String>,
) -> Vec<Checked> {
    plan(manifest, dir)
        .into_iter()
        .map(|(listed, path)| {
            let actual = match path {
                // The run could not write it: nothing to compare, and the run is not complete.
                Some(_) if listed.kind == "not written" => Err(format!(
                    "the run could not write it: {}",
                    manifest
                        .not_written
                        .get(&listed.name)
                        .map_or("", String::as_str)
                )),
                Some(path) => hash(&path),
                None => Ok(crate::sha256_hex(manifest.campaign.text.as_bytes())),
            };
            Checked { listed, actual }
        })
        .collect()
}

/// Reads `dir/manifest.json` and checks every hash it lists against the files as they are now.
pub fn verify(dir: &Path) -> Result<Verification, ReportError> {
    let manifest = read_manifest(dir)?;
    let checked = check(&manifest, dir, |path| {
        sha256_file(path).map_err(|e| match e {
            ReportError::Io { error, .. } => format!("cannot read {}: {error}", path.display()),
            other => other.to_string(),
        })
    });
    Ok(Verification {
        checked,
        manifest_sha256: sha256_file(&dir.join(MANIFEST))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_artifact_the_run_could_not_write_fails_verify() {
        let mut manifest = Manifest::default();
        manifest.campaign.sha256 = crate::sha256_hex(b"");
        manifest
            .artifacts
            .insert("samples.jsonl".into(), "aa".into());
        manifest.not_written.insert(
            "raw/s2/latency.hlog".into(),
            "No space left on device (os error 28)".into(),
        );
        let checked = check(&manifest, Path::new("/run"), |_| Ok("aa".to_string()));
        let failed: Vec<&Checked> = checked.iter().filter(|c| !c.ok()).collect();
        // Before the fix an unwritten artifact was nowhere in the manifest: verify passed.
        assert_eq!(failed.len(), 1, "{checked:?}");
        assert_eq!(failed[0].listed.kind, "not written");
        assert_eq!(failed[0].listed.name, "raw/s2/latency.hlog");
        assert_eq!(
            failed[0].actual,
            Err("the run could not write it: No space left on device (os error 28)".to_string())
        );
    }
}
