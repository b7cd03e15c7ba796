//! The run directory: `manifest.json`, `samples.jsonl` (appended and synced after each sample, so a
//! crash loses nothing measured), `raw/<sample>/`, `certificates/` and `private/` (keys).

use crate::error::{Error, FileContext, JsonContext, Result};
use crate::host::sha256_file;
use rpcarena_model::command::CommandRecord;
use rpcarena_model::files::{self, CERTIFICATES, MANIFEST, PRIVATE, RAW, SAMPLES, SEALED};
use rpcarena_model::record::{Manifest, SampleRecord};
use std::collections::BTreeMap;
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
        if let Ok(meta) = fs::symlink_metadata(path)
            && meta.file_type().is_symlink()
            && !path.exists()
        {
            let target = fs::read_link(path).unwrap_or_default();
            return Err(Error::RunDirectory(format!(
                "output directory {} is a symbolic link to {}, which does not exist; create \
                 the target directory or choose another --out",
                path.display(),
                target.display()
            )));
        }
        if path.exists() && !path.is_dir() {
            return Err(Error::RunDirectory(format!(
                "output directory {} exists and is not a directory; choose another --out",
                path.display()
            )));
        }
        if path.exists() {
            let non_empty = fs::read_dir(path)
                .file("reading output directory", path)?
                .next()
                .is_some();
            if non_empty {
                return Err(Error::RunDirectory(format!(
                    "output directory {} already exists and is not empty; choose another --out or remove it",
                    path.display()
                )));
            }
        }
        fs::create_dir_all(path.join(RAW)).file("creating output directory", path)?;
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

    /// `private/` (keys; mode 0700).
    pub fn private(&self) -> PathBuf {
        self.root.join(PRIVATE)
    }
}

/// Appends sample records, one JSON line each, flushed and synced per line. A record is on
/// disk whole or not at all: it is serialized to a buffer, written with one `write_all`, synced,
/// and on any failure (a full disk) the file is cut back to the last good record, so the
/// records before it stay readable.
pub struct SamplesWriter {
    file: File,
    path: PathBuf,
    /// Length of the file up to the end of the last record written whole.
    good: u64,
}

/// A file a record can be appended to whole (the real file; a failing fake in the tests).
trait Durable: Write {
    fn sync(&mut self) -> std::io::Result<()>;
    fn cut(&mut self, len: u64) -> std::io::Result<()>;
}

impl Durable for File {
    fn sync(&mut self) -> std::io::Result<()> {
        self.sync_data()
    }
    fn cut(&mut self, len: u64) -> std::io::Result<()> {
        self.set_len(len)?;
        self.sync_data()
    }
}

/// Appends `bytes` after `good` bytes whole, or cuts the file back to `good`; returns the new
/// good length, or the write's error and whether cutting back worked.
fn append_whole(
    file: &mut impl Durable,
    good: u64,
    bytes: &[u8],
) -> Result<u64, (std::io::Error, std::io::Result<()>)> {
    match file
        .write_all(bytes)
        .and_then(|_| file.flush())
        .and_then(|_| file.sync())
    {
        Ok(()) => Ok(good + bytes.len() as u64),
        Err(e) => Err((e, file.cut(good))),
    }
}

/// Whether an I/O error means the file system has no room left.
pub fn is_disk_full(error: &std::io::Error) -> bool {
    matches!(error.raw_os_error(), Some(28 | 122)) // ENOSPC, EDQUOT
        || error.kind() == std::io::ErrorKind::StorageFull
        || error.kind() == std::io::ErrorKind::QuotaExceeded
}

impl SamplesWriter {
    /// Opens (creating) `samples.jsonl` for appending.
    pub fn open(dir: &RunDir) -> Result<SamplesWriter> {
        let path = dir.root.join(SAMPLES);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .file("opening", &path)?;
        let good = file.metadata().file("reading", &path)?.len();
        Ok(SamplesWriter { file, path, good })
    }

    /// Appends one record and makes it durable before returning; on failure nothing of it
    /// stays in the file, and the error says whether the disk is full.
    pub fn append(&mut self, record: &SampleRecord) -> Result<()> {
        self.append_line(&record.sample, serde_json::to_vec(record))
    }

    /// Appends one command run's record, as [`SamplesWriter::append`] does a sample's.
    pub fn append_command(&mut self, record: &CommandRecord) -> Result<()> {
        self.append_line(&record.sample, serde_json::to_vec(record))
    }

    fn append_line(&mut self, sample: &str, json: serde_json::Result<Vec<u8>>) -> Result<()> {
        let mut line = json.json(|| "serializing a sample record".into())?;
        line.push(b'\n');
        match append_whole(&mut self.file, self.good, &line) {
            Ok(good) => {
                self.good = good;
                Ok(())
            }
            Err((error, cut)) => Err(Error::Append {
                sample: sample.to_string(),
                path: self.path.clone(),
                disk_full: is_disk_full(&error),
                torn: cut.err().map(|e| e.to_string()),
                error,
            }),
        }
    }
}

/// Writes `bytes` to `path` atomically: a temporary file beside it, synced, then renamed. On
/// failure the temporary file is removed and `path` keeps its old content.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = path.with_file_name(name);
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.sync_data()))
        .file("writing", &tmp)
        .and_then(|_| fs::rename(&tmp, path).file("writing", path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

/// Writes the manifest atomically (temporary file, then rename).
pub fn write_manifest(root: &Path, manifest: &Manifest) -> Result<()> {
    let mut text =
        serde_json::to_string_pretty(manifest).json(|| "serializing the manifest".into())?;
    text.push('\n');
    write_atomically(&root.join(MANIFEST), text.as_bytes())
}

/// Reads a run's manifest.
fn read_manifest(root: &Path) -> Result<Manifest> {
    let path = root.join(MANIFEST);
    let text = fs::read_to_string(&path).file("reading", &path)?;
    serde_json::from_str(&text).json(|| format!("parsing {}", path.display()))
}

/// What the end of a run wrote besides the fixed artifacts, and what it could not write.
#[derive(Debug, Default, Clone)]
pub struct Sealing {
    /// Further artifacts written, relative to the run directory (`raw/<sample>/latency.hlog`).
    pub written: Vec<String>,
    /// Artifacts that could not be written, relative to the run directory, with why.
    pub not_written: BTreeMap<String, String>,
}

/// Records the SHA-256 of every artifact present and the end time in the manifest, with what
/// `sealing` adds: the further artifacts hashed, and those not written listed (not hashed, even
/// if something of them is left).
pub fn seal_manifest(
    root: &Path,
    finished_at: Option<String>,
    sealing: &Sealing,
) -> Result<Manifest> {
    let mut manifest = read_manifest(root)?;
    manifest.artifacts.clear();
    let names = SEALED.iter().map(|s| s.to_string());
    for name in names.chain(sealing.written.iter().cloned()) {
        let path = root.join(&name);
        if path.exists() && !sealing.not_written.contains_key(&name) {
            manifest.artifacts.insert(name, sha256_file(&path)?);
        }
    }
    manifest.not_written.clone_from(&sealing.not_written);
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
        let err = RunDir::create(&dir.root).unwrap_err();
        assert!(matches!(err, Error::RunDirectory(_)), "{err:?}");
        assert!(
            err.to_string().contains("already exists and is not empty"),
            "{err}"
        );
        write_manifest(&dir.root, &Manifest::default()).unwrap();
        fs::write(dir.root.join(SAMPLES), "{}\n").unwrap();
        let sealed = seal_manifest(&dir.root, Some("t".into()), &Sealing::default()).unwrap();
        assert_eq!(sealed.finished_at.as_deref(), Some("t"));
        assert_eq!(sealed.artifacts[SAMPLES], crate::host::sha256_hex(b"{}\n"));
    }

    #[test]
    fn a_seal_hashes_the_interval_logs_and_lists_what_was_not_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::create(&tmp.path().join("run")).unwrap();
        write_manifest(&dir.root, &Manifest::default()).unwrap();
        fs::write(dir.root.join(SAMPLES), "{}\n").unwrap();
        fs::create_dir_all(dir.root.join("raw/s1")).unwrap();
        fs::write(dir.root.join("raw/s1/latency.hlog"), "h").unwrap();
        // A report cut short that is still there: listed, never hashed.
        fs::write(dir.root.join(files::REPORT_MD), "").unwrap();
        let sealing = Sealing {
            written: vec!["raw/s1/latency.hlog".into()],
            not_written: BTreeMap::from([
                (files::REPORT_MD.to_string(), "No space left".to_string()),
                (
                    "raw/s2/latency.hlog".to_string(),
                    "No space left".to_string(),
                ),
            ]),
        };
        // Before the fix the .hlog files were not hashed and a failed write was not recorded.
        let sealed = seal_manifest(&dir.root, None, &sealing).unwrap();
        let hashed: Vec<&str> = sealed.artifacts.keys().map(String::as_str).collect();
        assert_eq!(hashed, ["raw/s1/latency.hlog", SAMPLES]);
        assert_eq!(sealed.not_written, sealing.not_written);
        let text = fs::read_to_string(dir.root.join(MANIFEST)).unwrap();
        assert!(text.contains("\"not_written\""), "{text}");
    }

    #[test]
    fn a_dangling_symlink_as_out_is_named_as_such() {
        let tmp = tempfile::tempdir().unwrap();
        let link = tmp.path().join("out");
        std::os::unix::fs::symlink(tmp.path().join("missing"), &link).unwrap();
        // Before the fix: "File exists (os error 17)".
        let err = RunDir::create(&link).unwrap_err().to_string();
        assert!(err.contains("is a symbolic link to"), "{err}");
        assert!(err.contains("does not exist"), "{err}");
    }

    /// A file system that takes `room` more bytes, then says ENOSPC (partial writes included).
    struct Tiny {
        data: Vec<u8>,
        room: usize,
    }

    impl Write for Tiny {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.room == 0 {
                return Err(std::io::Error::from_raw_os_error(28));
            }
            let n = buf.len().min(self.room).min(7);
            self.room -= n;
            self.data.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Durable for Tiny {
        fn sync(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn cut(&mut self, len: u64) -> std::io::Result<()> {
            self.data.truncate(len as usize);
            Ok(())
        }
    }

    #[test]
    fn a_record_that_does_not_fit_leaves_nothing_of_itself() {
        let mut disk = Tiny {
            data: Vec::new(),
            room: 30,
        };
        let good = append_whole(&mut disk, 0, b"{\"a\":1}\n").unwrap();
        assert_eq!(good, 8);
        // Before the fix the partial line stayed, and the report refused the whole file.
        let (error, cut) =
            append_whole(&mut disk, good, b"{\"b\":\"0123456789abcdefghijkl\"}\n").unwrap_err();
        assert!(is_disk_full(&error), "{error}");
        assert!(cut.is_ok());
        assert_eq!(disk.data, b"{\"a\":1}\n");
    }

    #[test]
    fn a_failed_manifest_write_leaves_no_temporary_file() {
        let tmp = tempfile::tempdir().unwrap();
        // A directory where the manifest should go makes the rename fail.
        fs::create_dir(tmp.path().join(MANIFEST)).unwrap();
        fs::write(tmp.path().join(MANIFEST).join("x"), "x").unwrap();
        assert!(write_manifest(tmp.path(), &Manifest::default()).is_err());
        assert!(!tmp.path().join(format!("{MANIFEST}.tmp")).exists());
    }

    #[test]
    fn a_full_device_is_recognised_as_a_full_disk() {
        let Ok(mut file) = OpenOptions::new().append(true).open("/dev/full") else {
            return; // no /dev/full here
        };
        let (error, _) = append_whole(&mut file, 0, b"{}\n").unwrap_err();
        assert!(is_disk_full(&error), "{error}");
    }
}
