//! The run directory: `manifest.json`, `samples.jsonl` (appended and synced after each sample, so a
//! crash loses nothing measured), `raw/<sample>/`, `certificates/`.

use crate::host::sha256_file;
use anyhow::{Context, Result, bail};
use rpcarena_model::files::{self, CERTIFICATES, MANIFEST, RAW, SAMPLES, SEALED};
use rpcarena_model::record::{Manifest, SampleRecord};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A run's output directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    /// Its absolute path.
    pub root: PathBuf,
}

impl RunDir {
    /// Creates the directory; refuses one that exists and is not empty, so that no earlier run's
    /// artifacts are mixed in.
    pub fn create(path: &Path) -> Result<RunDir> {
        if path.exists() {
            let non_empty = fs::read_dir(path)
                .with_context(|| format!("reading output directory {}", path.display()))?
                .next()
                .is_some();
            if non_empty {
                bail!(
                    "output directory {} already exists and is not empty; choose another --out or remove it",
                    path.display()
                );
            }
        }
        fs::create_dir_all(path.join(RAW))
            .with_context(|| format!("creating output directory {}", path.display()))?;
        let root = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        Ok(RunDir { root })
    }

    /// `raw/<sample>` (absolute) and its relative form.
    pub fn raw(&self, sample: &str) -> (PathBuf, String) {
        let rel = files::raw_dir(sample);
        (self.root.join(&rel), rel)
    }

    /// `certificates/`.
    pub fn certificates(&self) -> PathBuf {
        self.root.join(CERTIFICATES)
    }
}

/// Appends sample records, one JSON line each, flushed and synced per line.
pub struct SamplesWriter {
    file: File,
    path: PathBuf,
}

impl SamplesWriter {
    /// Opens (creating) `samples.jsonl` for appending.
    pub fn open(dir: &RunDir) -> Result<SamplesWriter> {
        let path = dir.root.join(SAMPLES);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        Ok(SamplesWriter { file, path })
    }

    /// Appends one record and makes it durable before returning.
    pub fn append(&mut self, record: &SampleRecord) -> Result<()> {
        let mut line = serde_json::to_string(record).context("serializing a sample record")?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|_| self.file.sync_data())
            .with_context(|| format!("appending to {}", self.path.display()))
    }
}

/// Writes the manifest atomically (temporary file, then rename).
pub fn write_manifest(root: &Path, manifest: &Manifest) -> Result<()> {
    let path = root.join(MANIFEST);
    let tmp = root.join(format!("{MANIFEST}.tmp"));
    let mut text = serde_json::to_string_pretty(manifest).context("serializing the manifest")?;
    text.push('\n');
    fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// Reads a run's manifest.
fn read_manifest(root: &Path) -> Result<Manifest> {
    let path = root.join(MANIFEST);
    let text = fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// Records the SHA-256 of every artifact present and the end time in the manifest.
pub fn seal_manifest(root: &Path, finished_at: Option<String>) -> Result<Manifest> {
    let mut manifest = read_manifest(root)?;
    manifest.artifacts.clear();
    for name in SEALED {
        let path = root.join(name);
        if path.exists() {
            manifest
                .artifacts
                .insert(name.to_string(), sha256_file(&path)?);
        }
    }
    if finished_at.is_some() {
        manifest.finished_at = finished_at;
    }
    write_manifest(root, &manifest)?;
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_a_non_empty_directory_and_seals_hashes() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(&tmp.path().join("run")).unwrap();
        assert!(dir.root.join("raw").is_dir());
        let err = RunDir::create(&dir.root).unwrap_err().to_string();
        assert!(err.contains("already exists and is not empty"), "{err}");
        write_manifest(&dir.root, &Manifest::default()).unwrap();
        fs::write(dir.root.join(SAMPLES), "{}\n").unwrap();
        let sealed = seal_manifest(&dir.root, Some("t".into())).unwrap();
        assert_eq!(sealed.finished_at.as_deref(), Some("t"));
        assert_eq!(sealed.artifacts[SAMPLES], crate::host::sha256_hex(b"{}\n"));
    }
}
