//! Reports from a run directory's artifacts: `aggregate.csv` and `report.md`.
//!
//! Reports read `manifest.json` and `samples.jsonl` and nothing else, and never run anything, so
//! `rpcarena report DIR` regenerates byte-identical reports at any later time. Every figure is
//! recomputed from the records (`rpcarena_model::metrics`), not taken from what the runner
//! stored. `samples.jsonl` is read as a stream: a [`Report`] takes one record at a time and keeps
//! per configuration only what it reports ([`aggregate`]), so memory grows with configurations,
//! not samples. The renderers ([`csv`], [`markdown`]) are pure functions of the aggregates;
//! [`regenerate`] is the thin I/O shell around them.
//!
//! Nothing degrades silently: a campaign text that no longer parses, samples without /proc
//! readings, unreadable histograms and a failed network check become notes in `report.md` and
//! are returned to the caller (the binary prints them as warnings).

pub mod aggregate;
pub mod charts;
pub mod commands;
pub mod compare_runs;
pub mod csv;
mod gobench;
pub mod headline;
pub mod hlog;
pub mod html;
pub mod limits;
pub mod markdown;
mod notes;
mod peers;
mod published;
mod table;
pub mod transport;
pub mod verify;

pub use published::sha256_hex;

use aggregate::{Aggregates, Aggregator};
use rpcarena_model::campaign::Campaign;
use rpcarena_model::command::Line;
use rpcarena_model::files::{AGGREGATE, MANIFEST, REPORT_HTML, REPORT_MD, SAMPLES};
use rpcarena_model::matrix;
use rpcarena_model::record::{Manifest, SampleCounts, SampleRecord, SampleStatus};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An artifact could not be read or written. (`error` is in the message, so it is not a
    /// `source` too: `{:#}` printed it twice, "No space left on device (os error 28): No space
    /// left on device (os error 28)".)
    #[error("{path}: {error}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// An artifact is not what rpcarena writes.
    #[error("{path}:{line}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line (0 for a whole-file error).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

/// The artifacts of a run in memory (tests and small tools; [`regenerate`] streams instead).
pub struct Artifacts {
    /// `manifest.json`.
    pub manifest: Manifest,
    /// `samples.jsonl`, in file order.
    pub records: Vec<SampleRecord>,
}

/// The rendered reports.
pub struct Rendered {
    /// `aggregate.csv`.
    pub aggregate_csv: String,
    /// `report.md`.
    pub report_md: String,
    /// `report.html`.
    pub report_html: String,
    /// What the artifacts lacked or no longer say, as `report.md` notes it.
    pub notes: Vec<String>,
}

/// A run's report, built one record at a time (pure).
pub struct Report {
    manifest: Manifest,
    campaign: Result<Campaign, String>,
    aggregator: Aggregator,
    samples_sha256: Option<String>,
    read: SamplesRead,
    /// Counts of the records read: what the report says, whatever the manifest last said (a
    /// killed controller leaves its counts stale).
    counted: SampleCounts,
    /// The command runs.
    commands: commands::Commands,
}

impl Report {
    /// A report of the run `manifest` describes; its campaign text sets the order of the rows and
    /// the baseline.
    pub fn new(manifest: Manifest) -> Report {
        let campaign = Campaign::parse(&manifest.campaign.text, &manifest.campaign.file)
            .map_err(|e| e.to_string());
        Report {
            manifest,
            campaign,
            aggregator: Aggregator::new(),
            samples_sha256: None,
            read: SamplesRead::default(),
            counted: SampleCounts::default(),
            commands: commands::Commands::default(),
        }
    }

    /// Records the SHA-256 of `samples.jsonl` as read, for the report's artifact table.
    pub fn samples_sha256(&mut self, sha256: String) {
        self.samples_sha256 = Some(sha256);
    }

    /// Adds the next record of `samples.jsonl`.
    pub fn add(&mut self, record: &SampleRecord) {
        self.aggregator.add(record);
        match record.status {
            SampleStatus::Ok => self.counted.ok += 1,
            SampleStatus::Failed => self.counted.failed += 1,
        }
    }

    /// Adds the next line of `samples.jsonl`: a peer sample or a command run (a warm-up is
    /// kept apart and not counted as a sample).
    pub fn add_line(&mut self, line: &Line) {
        match line {
            Line::Sample(record) => self.add(record),
            Line::Command(record) => {
                self.commands.add(record);
                match (record.warmup, record.status) {
                    (true, _) => {}
                    (false, SampleStatus::Ok) => self.counted.ok += 1,
                    (false, SampleStatus::Failed) => self.counted.failed += 1,
                }
            }
        }
    }

    /// What reading `samples.jsonl` found besides its records (a torn last line).
    pub fn note_samples_read(&mut self, read: &SamplesRead) {
        self.read = read.clone();
    }

    /// The aggregates in report order, each row compared with the baseline (for `compare` and
    /// other views), with the manifest.
    pub fn aggregates(self) -> (Manifest, Aggregates) {
        let finished = self.aggregate();
        (finished.manifest, finished.aggregates)
    }

    fn aggregate(mut self) -> Finished {
        self.manifest.samples.ok = self.counted.ok;
        self.manifest.samples.failed = self.counted.failed;
        let campaign = self.campaign.as_ref().ok();
        let order: Vec<String> = campaign
            .map(|c| matrix::expand(c).into_iter().map(|c| c.key).collect())
            .unwrap_or_default();
        let first_cell = self.aggregator.first_cell().map(str::to_string);
        let baseline = campaign
            .map(|c| c.baseline_cell().to_string())
            .or(first_cell)
            .unwrap_or_default();
        let aggregates = self
            .aggregator
            .finish(&order, &baseline, self.manifest.seed);
        Finished {
            manifest: self.manifest,
            commands: self.commands,
            campaign: self.campaign,
            aggregates,
            baseline,
            samples_sha256: self.samples_sha256,
            read: self.read,
        }
    }

    /// Renders every report.
    pub fn finish(self) -> Rendered {
        let Finished {
            manifest,
            commands,
            campaign: parsed,
            aggregates,
            baseline,
            samples_sha256,
            read,
        } = self.aggregate();
        let campaign = parsed.as_ref().ok();
        let mut notes = notes::notes(&manifest, &parsed, &aggregates, &baseline);
        notes.extend(notes::torn(&read));
        notes.extend(notes::incomplete(&manifest));
        let command_rows = commands::csv_rows(campaign, &commands);
        let aggregate_csv = csv::render(&aggregates.rows, &command_rows);
        let pairs = headline::pairs(&aggregates.rows, &baseline, manifest.seed);
        let inputs = markdown::Inputs {
            manifest: &manifest,
            campaign,
            aggregates: &aggregates,
            baseline: &baseline,
            notes: &notes,
            pairs: &pairs,
            samples_sha256: samples_sha256.as_deref(),
            aggregate_csv: &aggregate_csv,
            commands: &commands,
        };
        let report_md = markdown::render(&inputs);
        let report_html = html::render(&inputs);
        Rendered {
            aggregate_csv,
            report_md,
            report_html,
            notes,
        }
    }
}

/// A report's aggregates with what rendering needs beside them.
struct Finished {
    manifest: Manifest,
    commands: commands::Commands,
    campaign: Result<Campaign, String>,
    aggregates: Aggregates,
    baseline: String,
    samples_sha256: Option<String>,
    read: SamplesRead,
}

/// Renders every report from artifacts in memory (pure).
pub fn render(artifacts: &Artifacts) -> Rendered {
    let mut report = Report::new(artifacts.manifest.clone());
    for record in &artifacts.records {
        report.add(record);
    }
    report.finish()
}

/// Reads a run's `manifest.json`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, ReportError> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read_to_string(&path).map_err(|error| ReportError::Io {
        path: path.clone(),
        error,
    })?;
    serde_json::from_str(&text).map_err(|e| ReportError::Parse {
        path,
        line: e.line(),
        message: e.to_string(),
    })
}

/// What reading `samples.jsonl` found besides its records.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SamplesRead {
    /// A last line cut short (a full disk, a crash mid-write): its 1-based line number and
    /// length in bytes. It is skipped; every record before it is read.
    pub torn_last_line: Option<(usize, usize)>,
}

/// Feeds every record of a run's `samples.jsonl` to `each`, one line at a time. A last line
/// that has no newline and does not parse was cut short while being written: it is skipped
/// and reported in the result, not a reason to refuse the records before it.
pub fn read_samples(dir: &Path, mut each: impl FnMut(Line)) -> Result<SamplesRead, ReportError> {
    let path = dir.join(SAMPLES);
    let io = |error| ReportError::Io {
        path: path.clone(),
        error,
    };
    let mut reader = std::io::BufReader::new(std::fs::File::open(&path).map_err(io)?);
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(io)? == 0 {
            return Ok(SamplesRead::default());
        }
        number += 1;
        if line.trim_ascii().is_empty() {
            continue;
        }
        match Line::parse(&line) {
            Ok(record) => each(record),
            Err(_) if !line.ends_with(b"\n") => {
                return Ok(SamplesRead {
                    torn_last_line: Some((number, line.len())),
                });
            }
            Err(e) => {
                return Err(ReportError::Parse {
                    path: path.clone(),
                    line: number,
                    message: e.to_string(),
                });
            }
        }
    }
}

/// SHA-256 of a file, read in chunks.
pub fn sha256_file(path: &Path) -> Result<String, ReportError> {
    use sha2::Digest;
    let io = |error| ReportError::Io {
        path: path.to_path_buf(),
        error,
    };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).map_err(io)?;
    Ok(hex::encode(hasher.finalize()))
}

/// Reads a run directory into its manifest and aggregates (for `compare`).
pub fn load(dir: &Path) -> Result<(Manifest, Aggregates), ReportError> {
    let mut report = Report::new(read_manifest(dir)?);
    read_samples(dir, |line| report.add_line(&line))?;
    Ok(report.aggregates())
}

/// What [`regenerate`] wrote and noted.
pub struct Regenerated {
    /// `aggregate.csv`, `report.md` and `report.html`, those written.
    pub written: Vec<PathBuf>,
    /// Those that could not be written (a full disk), with the error; nothing of them is left.
    pub not_written: Vec<NotWritten>,
    /// The notes of `report.md`, for warnings.
    pub notes: Vec<String>,
}

/// An artifact that could not be written, and why (the error alone: the path is beside it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotWritten {
    /// The file.
    pub path: PathBuf,
    /// Why, e.g. "No space left on device (os error 28)".
    pub error: String,
}

/// Writes `text` to `path`; when that fails, removes what was written of it (an empty or cut
/// file is no artifact) and says why.
pub fn write_or_remove(path: &Path, text: &[u8]) -> Result<(), NotWritten> {
    std::fs::write(path, text).map_err(|error| {
        let _ = std::fs::remove_file(path);
        NotWritten {
            path: path.to_path_buf(),
            error: error.to_string(),
        }
    })
}

/// Reads a run directory and (re)writes `aggregate.csv`, `report.md` and `report.html`. A
/// report that cannot be written is removed and listed, and the others are still tried.
pub fn regenerate(dir: &Path) -> Result<Regenerated, ReportError> {
    let mut report = Report::new(read_manifest(dir)?);
    let read = read_samples(dir, |line| report.add_line(&line))?;
    report.note_samples_read(&read);
    report.samples_sha256(sha256_file(&dir.join(SAMPLES))?);
    let rendered = report.finish();
    let mut written = Vec::new();
    let mut not_written = Vec::new();
    for (name, text) in [
        (AGGREGATE, &rendered.aggregate_csv),
        (REPORT_MD, &rendered.report_md),
        (REPORT_HTML, &rendered.report_html),
    ] {
        let path = dir.join(name);
        match write_or_remove(&path, text.as_bytes()) {
            Ok(()) => written.push(path),
            Err(failed) => not_written.push(failed),
        }
    }
    Ok(Regenerated {
        written,
        not_written,
        notes: rendered.notes,
    })
}
