//! Progress on stderr: a bar on a terminal, one line per sample otherwise (CI logs).

use crate::say::tell;
use indicatif::{ProgressBar, ProgressStyle};
use rpcarena_model::command::CommandRecord;
use rpcarena_model::matrix::SampleConfig;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_runner::Progress;
use std::io::IsTerminal;
use std::path::Path;

/// Prints progress to stderr.
pub struct Printer {
    bar: Option<ProgressBar>,
    total: usize,
    /// The plan's estimate: the ETA starts from it and follows the samples' measured times.
    estimate: Option<crate::plan::Estimate>,
    done: usize,
    started: Option<std::time::Instant>,
    /// Only warnings and failures (no bar, no line per good sample).
    quiet: bool,
}

impl Printer {
    /// A bar when stderr is a terminal, plain lines otherwise.
    pub fn new() -> Printer {
        Printer {
            bar: None,
            total: 0,
            estimate: None,
            done: 0,
            started: None,
            quiet: false,
        }
    }

    /// Shows an ETA from `estimate`, corrected as samples finish.
    pub fn with_estimate(mut self, estimate: crate::plan::Estimate) -> Printer {
        self.estimate = Some(estimate);
        self
    }

    /// Prints only warnings and failed samples.
    pub fn quiet(mut self, quiet: bool) -> Printer {
        self.quiet = quiet;
        self
    }

    /// "eta about 2 min 10 s", from the estimate and what samples took so far.
    fn eta(&self) -> String {
        self.estimate
            .as_ref()
            .map(|e| {
                format!(
                    "eta about {}",
                    crate::plan::human(e.remaining(
                        self.done,
                        self.started.map_or(0.0, |t| t.elapsed().as_secs_f64())
                    ))
                )
            })
            .unwrap_or_default()
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
        self.started = Some(std::time::Instant::now());
        // A resumed run plans only the samples it still has to run.
        if let Some(e) = &mut self.estimate {
            e.samples = total;
        }
        if self.quiet {
            return;
        }
        tell!(
            "rpcarena: writing to {} ({total} samples{})",
            dir.display(),
            if self.estimate.is_some() {
                format!(", {}", self.eta())
            } else {
                String::new()
            }
        );
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            self.bar = Some(bar);
        }
    }

    fn sample_started(&mut self, _index: usize, id: &str, _config: &SampleConfig) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{} {id}", self.eta()));
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
        self.finished(
            index,
            &record.sample,
            record.status,
            record.reason.as_deref(),
            figure,
        );
    }

    fn command_finished(&mut self, index: usize, record: &CommandRecord) {
        let figure = record
            .measured
            .map(|m| {
                format!(
                    "wall {:.1} ms, cpu {:.1} ms, peak RSS {:.1} MiB",
                    m.wall_us as f64 / 1e3,
                    (m.user_us + m.sys_us) as f64 / 1e3,
                    m.max_rss_kib as f64 / 1024.0
                )
            })
            .unwrap_or_default();
        if record.warmup {
            // the untimed first run is no sample of the plan: only its failure is told
            if let (SampleStatus::Failed, Some(reason)) = (record.status, &record.reason) {
                self.line(format!(
                    "rpcarena: warning: warm-up {} failed: {reason}",
                    record.sample
                ));
            }
            return;
        }
        self.finished(
            index,
            &record.sample,
            record.status,
            record.reason.as_deref(),
            figure,
        );
    }

    fn warning(&mut self, text: &str) {
        self.line(format!("rpcarena: warning: {text}"));
    }
}

impl Printer {
    /// One line for a finished sample, the ETA and the bar.
    fn finished(
        &mut self,
        index: usize,
        sample: &str,
        status: SampleStatus,
        reason: Option<&str>,
        figure: String,
    ) {
        self.done += 1;
        let eta = if self.estimate.is_some() && self.done < self.total {
            format!(" ({})", self.eta())
        } else {
            String::new()
        };
        let text = match status {
            SampleStatus::Ok if self.quiet => return,
            SampleStatus::Ok => format!(
                "[{}/{}] ok     {sample} {figure}{eta}",
                index + 1,
                self.total
            ),
            SampleStatus::Failed => format!(
                "[{}/{}] FAILED {sample}: {}",
                index + 1,
                self.total,
                reason.unwrap_or("unknown")
            ),
        };
        self.line(text);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }
}

impl Drop for Printer {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
