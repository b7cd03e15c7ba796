//! Progress on stderr: a bar on a terminal, one line per sample otherwise (CI logs).

use crate::say::tell;
use indicatif::{ProgressBar, ProgressStyle};
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_runner::Progress;
use std::io::IsTerminal;
use std::path::Path;

/// Prints progress to stderr.
pub struct Printer {
    bar: Option<ProgressBar>,
    total: usize,
}

impl Printer {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Printer {
        Printer {
            bar: None,
            total: 0,
        }
    }

    fn line(&self, text: String) {
        match &self.bar {
            Some(bar) => bar.println(text),
            None => tell!("{text}"),
        }
    }
}

impl Progress for Printer {
    fn begin(&mut self, dir: &Path, total: usize) {
        self.total = total;
        tell!("rpcarena: writing to {} ({total} samples)", dir.display());
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{bar:30} {pos}/{len} {elapsed_precise} eta {eta} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar = Some(bar);
        }
    }

    fn sample_started(&mut self, _index: usize, id: &str, _config: &SampleConfig) {
        if let Some(bar) = &self.bar {
            bar.set_message(id.to_string());
        }
    }

    fn sample_finished(&mut self, index: usize, record: &SampleRecord) {
        let figure = record
            .metrics
            .map(|m| {
                format!(
                    "{:.1} ops/s, p50 {:.1} us",
                    m.ops_per_s,
                    m.p50_ns as f64 / 1e3
                )
            })
            .unwrap_or_default();
        let text = match record.status {
            SampleStatus::Ok => format!(
                "[{}/{}] ok     {} {figure}",
                index + 1,
                self.total,
                record.sample
            ),
            SampleStatus::Failed => format!(
                "[{}/{}] FAILED {}: {}",
                index + 1,
                self.total,
                record.sample,
                record.reason.as_deref().unwrap_or("unknown")
            ),
        };
        self.line(text);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    fn warning(&mut self, text: &str) {
        self.line(format!("rpcarena: warning: {text}"));
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
