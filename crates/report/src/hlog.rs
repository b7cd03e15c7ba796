//! HdrHistogram interval logs (`.hlog`): each sample's per-second latency histograms, as the
//! client peer reported them, in the log format HdrHistogram's own tools read
//! (`HistogramLogProcessor`, `HistogramLogAnalyzer`, hdrhistogram's `IntervalLogIterator`).
//!
//! The file is a pure function of the sample's record ([`interval_log`]): a comment naming the
//! sample, `#[StartTime: ...]` and `#[BaseTime: ...]` (the sample's start), the CSV legend, then
//! one line per second of the admission window: start (seconds from the window's start), length,
//! the interval's maximum in milliseconds, and the histogram (V2, DEFLATE-compressed, base64).
//! [`write_interval_logs`] writes `raw/<sample>/latency.hlog` for every sample with intervals.

use crate::{NotWritten, ReportError};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use rpcarena_model::files::raw_dir;
use rpcarena_model::record::SampleRecord;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The file name in each sample's raw directory.
pub const HLOG: &str = "latency.hlog";

/// The HdrHistogram legend line (written by Java's `HistogramLogWriter::outputLegend`).
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// The sample's interval log; `None` when it has no intervals. An interval whose histogram does
/// not decode is an error naming it.
pub fn interval_log(record: &SampleRecord) -> Result<Option<String>, String> {
    let Some(client) = &record.client else {
        return Ok(None);
    };
    if client.intervals.is_empty() {
        return Ok(None);
    }
    let start = humantime::parse_rfc3339(&record.started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .unwrap_or_default()
        .as_secs_f64();
    let mut out: Vec<u8> = Vec::new();
    let header = format!(
        "#rpcarena sample {} ({}): latency in nanoseconds of the operations that started in each interval; timestamps are seconds from the start of the admission window, Interval_Max in milliseconds\n#[StartTime: {start:.3} (seconds since epoch)]\n#[BaseTime: {start:.3} (seconds since epoch)]\n#[MaxValueDivisor: 1000000.000]\n{LEGEND}\n",
        record.sample, record.config.key
    );
    out.extend_from_slice(header.as_bytes());
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .with_max_value_divisor(1e6)
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| e.to_string())?;
    let window = Duration::from_nanos(client.window_ns);
    for (i, interval) in client.intervals.iter().enumerate() {
        let histogram = rpcarena_protocol::histogram::decode(&interval.histogram)
            .map_err(|e| format!("sample {}, interval {i}: {e}", record.sample))?;
        let offset = Duration::from_nanos(interval.offset_ns);
        let length = window
            .saturating_sub(offset)
            .min(Duration::from_secs(1))
            .max(Duration::from_millis(1));
        writer
            .write_histogram(&histogram, offset, length, None)
            .map_err(|e| format!("sample {}, interval {i}: {e}", record.sample))?;
    }
    drop(writer);
    // The writer's own `#[MaxValueDivisor]` line is written by `begin_log_with` only for a
    // divisor other than 1, after our header; keep one.
    let text = String::from_utf8(out).map_err(|e| e.to_string())?;
    Ok(Some(dedup_divisor(&text)))
}

fn dedup_divisor(text: &str) -> String {
    let mut seen = false;
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.starts_with("#[MaxValueDivisor") {
            if seen {
                continue;
            }
            seen = true;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// What [`write_interval_logs`] wrote and could not write.
#[derive(Debug, Default)]
pub struct IntervalLogs {
    /// The logs written.
    pub written: Vec<PathBuf>,
    /// The logs not written (a full disk, or a histogram that does not decode), with why;
    /// nothing of them is left.
    pub not_written: Vec<NotWritten>,
}

/// Writes `raw/<sample>/latency.hlog` for every sample of `dir/samples.jsonl` with intervals.
/// A log that cannot be made or written is removed and listed, and the others are still tried;
/// only reading `samples.jsonl` is an error.
pub fn write_interval_logs(dir: &Path) -> Result<IntervalLogs, ReportError> {
    let mut logs = IntervalLogs::default();
    crate::read_samples(dir, |line| {
        let rpcarena_model::command::Line::Sample(record) = line else {
            return; // a command run has no intervals
        };
        let raw = dir.join(raw_dir(&record.sample));
        let path = raw.join(HLOG);
        let text = match interval_log(&record) {
            Ok(Some(text)) => text,
            Ok(None) => return,
            Err(error) => {
                logs.not_written.push(NotWritten { path, error });
                return;
            }
        };
        let written = std::fs::create_dir_all(&raw)
            .map_err(|e| NotWritten {
                path: raw.clone(),
                error: e.to_string(),
            })
            .and_then(|()| crate::write_or_remove(&path, text.as_bytes()));
        match written {
            Ok(()) => logs.written.push(path),
            Err(failed) => logs.not_written.push(failed),
        }
    })?;
    Ok(logs)
}
