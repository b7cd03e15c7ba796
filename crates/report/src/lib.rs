//! Reports from a run directory's artifacts: `aggregate.csv` and `report.md`.
//!
//! Reports read `manifest.json` and `samples.jsonl` and nothing else, and never run anything, so
//! `rpcarena report DIR` regenerates byte-identical reports at any later time. The renderers are
//! pure functions of the parsed artifacts ([`aggregate`], [`csv`], [`markdown`]); [`regenerate`]
//! is the thin I/O shell around them.

pub mod aggregate;
pub mod csv;
pub mod markdown;

use rpcarena_model::campaign::Campaign;
use rpcarena_model::matrix;
use rpcarena_model::record::{Manifest, SampleRecord};
use std::path::{Path, PathBuf};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// An artifact could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
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

/// The artifacts a report is made from.
pub struct Artifacts {
    /// `manifest.json`.
    pub manifest: Manifest,
    /// `samples.jsonl`, in file order.
    pub records: Vec<SampleRecord>,
}

/// Reads `manifest.json` and `samples.jsonl` from a run directory.
pub fn read_artifacts(dir: &Path) -> Result<Artifacts, ReportError> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read_to_string(&path).map_err(|source| ReportError::Io { path, source })
    };
    let manifest_path = dir.join("manifest.json");
    let manifest: Manifest =
        serde_json::from_str(&read("manifest.json")?).map_err(|e| ReportError::Parse {
            path: manifest_path,
            line: e.line(),
            message: e.to_string(),
        })?;
    let samples_path = dir.join("samples.jsonl");
    let text = read("samples.jsonl")?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(line).map_err(|e| ReportError::Parse {
            path: samples_path.clone(),
            line: i + 1,
            message: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(Artifacts { manifest, records })
}

/// The rendered reports.
pub struct Rendered {
    /// `aggregate.csv`.
    pub aggregate_csv: String,
    /// `report.md`.
    pub report_md: String,
}

/// Renders every report from parsed artifacts (pure).
pub fn render(artifacts: &Artifacts) -> Rendered {
    let campaign = Campaign::parse(
        &artifacts.manifest.campaign.text,
        &artifacts.manifest.campaign.file,
    )
    .ok();
    let order: Vec<String> = campaign
        .as_ref()
        .map(|c| matrix::expand(c).into_iter().map(|c| c.key).collect())
        .unwrap_or_default();
    let baseline = campaign
        .as_ref()
        .map(|c| c.baseline_cell().to_string())
        .or_else(|| artifacts.records.first().map(|r| r.config.cell.clone()))
        .unwrap_or_default();
    let rows = aggregate::aggregate(
        &artifacts.records,
        &order,
        &baseline,
        artifacts.manifest.seed,
    );
    let report_md = markdown::render(&markdown::Inputs {
        manifest: &artifacts.manifest,
        campaign: campaign.as_ref(),
        records: &artifacts.records,
        rows: &rows,
        baseline: &baseline,
    });
    Rendered {
        aggregate_csv: csv::render(&rows),
        report_md,
    }
}

/// Reads a run directory and (re)writes `aggregate.csv` and `report.md`; returns their paths.
pub fn regenerate(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let rendered = render(&read_artifacts(dir)?);
    let mut written = Vec::new();
    for (name, text) in [
        ("aggregate.csv", &rendered.aggregate_csv),
        ("report.md", &rendered.report_md),
    ] {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ReportError::Io {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
