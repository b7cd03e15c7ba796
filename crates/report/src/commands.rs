//! The command benchmark kind in the reports: per command, the median and min-max over its timed
//! runs of every instrument ([`INSTRUMENTS`]: wall, CPU, peak RSS) and of every figure its parser
//! reads, each with its resolution; a value below the resolution is shown as below it. Warm-ups
//! are counted apart and never aggregated; a failed run counts as failed and adds no value.

use rpcarena_model::campaign::Campaign;
use rpcarena_model::command::{CommandRecord, Figure, INSTRUMENTS};
use rpcarena_model::record::SampleStatus;
use rpcarena_stats::Summary;
use std::collections::BTreeMap;
use std::fmt::Write;

/// One command's runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CommandRuns {
    /// Timed runs that passed.
    pub ok: u32,
    /// Timed runs that failed.
    pub failed: u32,
    /// Warm-ups recorded (not aggregated).
    pub warmups: u32,
    /// Values of the passing runs, by figure name, in file order.
    pub values: BTreeMap<String, Vec<f64>>,
    /// The failed runs (warm-ups included): sample id and reason.
    pub failures: Vec<(String, String)>,
}

/// Every command's runs, by command id (pure; fed one record at a time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Commands(pub BTreeMap<String, CommandRuns>);

impl Commands {
    /// Adds one command record.
    pub fn add(&mut self, record: &CommandRecord) {
        let runs = self.0.entry(record.command.clone()).or_default();
        if record.status == SampleStatus::Failed {
            let reason = record.reason.clone().unwrap_or_default();
            runs.failures.push((record.sample.clone(), reason));
        }
        if record.warmup {
            runs.warmups += 1;
            return;
        }
        if record.status == SampleStatus::Failed {
            runs.failed += 1;
            return;
        }
        runs.ok += 1;
        if let Some(measured) = record.measured {
            for (figure, value) in INSTRUMENTS.iter().zip(measured.values()) {
                runs.values
                    .entry(figure.name.into())
                    .or_default()
                    .push(value);
            }
        }
        for (name, value) in &record.figures {
            runs.values.entry(name.clone()).or_default().push(*value);
        }
    }

    /// Timed runs that passed and failed, over every command.
    pub fn counts(&self) -> (u32, u32) {
        self.0
            .values()
            .fold((0, 0), |(ok, failed), r| (ok + r.ok, failed + r.failed))
    }
}

/// A command's rows: its id, then each figure with its summary (none: no passing run).
type CommandRows = (String, Vec<(Figure, Option<Summary>)>);

/// The rows in campaign order (commands the campaign no longer lists follow, by id).
fn rows(campaign: Option<&Campaign>, commands: &Commands) -> Vec<CommandRows> {
    let mut ids: Vec<String> = campaign
        .map(|c| c.commands.iter().map(|c| c.id.clone()).collect())
        .unwrap_or_default();
    ids.extend(
        commands
            .0
            .keys()
            .filter(|k| !ids.contains(k))
            .cloned()
            .collect::<Vec<_>>(),
    );
    ids.into_iter()
        .filter_map(|id| {
            let runs = commands.0.get(&id)?;
            let parsed = campaign
                .and_then(|c| c.commands.iter().find(|s| s.id == id))
                .and_then(|s| s.parser)
                .map_or(&[][..], |p| p.figures());
            let figures = INSTRUMENTS.iter().chain(parsed).map(|f| {
                let values = runs.values.get(f.name).map(Vec::as_slice).unwrap_or(&[]);
                (*f, Summary::of(values).ok())
            });
            Some((id, figures.collect()))
        })
        .collect()
}

/// A value as the instrument can show it: `< 0.01 s` below its resolution.
pub fn shown(value: f64, figure: &Figure) -> String {
    let unit = if figure.unit.is_empty() {
        String::new()
    } else {
        format!(" {}", figure.unit)
    };
    if value < figure.resolution && figure.resolution > 0.0 {
        return format!("< {}{unit}", number(figure.resolution, figure));
    }
    format!("{}{unit}", number(value, figure))
}

/// As many decimals as the resolution has (at most 3).
fn number(value: f64, figure: &Figure) -> String {
    let decimals = (-figure.resolution.log10()).ceil().clamp(0.0, 3.0) as usize;
    format!("{value:.decimals$}")
}

/// The Markdown section: one table per command; empty when the run has none.
pub fn markdown(campaign: Option<&Campaign>, commands: &Commands) -> String {
    let mut out = String::new();
    if commands.0.is_empty() {
        return out;
    }
    out.push_str("## Commands\n\n");
    out.push_str(
        "Each command's timed runs (the untimed warm-up left out): wall time from spawn to reaping, \
         CPU time (user + system) and peak RSS (`ru_maxrss`) from `wait4`, and the figures its \
         parser read. A value below an instrument's resolution is shown as below it.\n\n",
    );
    for (id, figures) in rows(campaign, commands) {
        let runs = &commands.0[&id];
        let argv = campaign
            .and_then(|c| c.commands.iter().find(|s| s.id == id))
            .map(|s| format!(" `{}`", s.command.join(" ")))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "### `{id}`{argv}\n\n{} timed runs ok, {} failed, {} warm-up\n",
            runs.ok, runs.failed, runs.warmups
        );
        out.push_str("| figure | median | min | max | resolution |\n|---|--:|--:|--:|--:|\n");
        for (figure, summary) in figures {
            let cells = match summary {
                Some(s) => [s.median, s.min, s.max].map(|v| shown(v, &figure)),
                None => ["-".to_string(), "-".to_string(), "-".to_string()],
            };
            let _ = writeln!(
                out,
                "| {} (`{}`) | {} | {} | {} | {} |",
                figure.label,
                figure.name,
                cells[0],
                cells[1],
                cells[2],
                shown(figure.resolution, &figure)
            );
        }
        out.push('\n');
        for (sample, reason) in &runs.failures {
            let _ = writeln!(out, "- failed: `{sample}`: {}", reason.replace('\n', " "));
        }
        if !runs.failures.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// `aggregate.csv`'s command rows: one per command and figure, in the order of the Markdown
/// tables (the caller places them in its columns).
pub fn csv_rows(campaign: Option<&Campaign>, commands: &Commands) -> Vec<CsvRow> {
    let mut out = Vec::new();
    for (id, figures) in rows(campaign, commands) {
        let runs = &commands.0[&id];
        for (figure, summary) in figures {
            out.push(CsvRow {
                config: format!("command/{id}/{}", figure.name),
                command: id.clone(),
                ok: runs.ok,
                failed: runs.failed,
                figure,
                summary,
            });
        }
    }
    out
}

/// One command figure's row of `aggregate.csv`.
#[derive(Debug, Clone)]
pub struct CsvRow {
    /// `command/<id>/<figure>`.
    pub config: String,
    /// The command's id (the `cell` column).
    pub command: String,
    /// Timed runs that passed.
    pub ok: u32,
    /// Timed runs that failed.
    pub failed: u32,
    /// The figure.
    pub figure: Figure,
    /// Its median, min and max over the passing runs.
    pub summary: Option<Summary>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_model::command::{Measured, RecordKind, TSC_FIGURES};

    fn record(warmup: bool, status: SampleStatus, wall_us: u64, check: f64) -> CommandRecord {
        CommandRecord {
            kind: RecordKind::Command,
            sample: "s".into(),
            round: 1,
            position: 1,
            command: "tsc".into(),
            warmup,
            status,
            reason: None,
            started_at: "t".into(),
            cpus: vec![],
            measured: Some(Measured {
                wall_us,
                user_us: 0,
                sys_us: 0,
                max_rss_kib: 2048,
            }),
            figures: BTreeMap::from([("check_time_s".to_string(), check)]),
            raw: "raw/s".into(),
        }
    }

    #[test]
    fn warmups_and_failures_add_no_values() {
        let mut commands = Commands::default();
        commands.add(&record(true, SampleStatus::Ok, 9_000_000, 9.0));
        commands.add(&record(false, SampleStatus::Failed, 8_000_000, 8.0));
        for (wall, check) in [(1000, 0.5), (3000, 0.7), (2000, 0.0)] {
            commands.add(&record(false, SampleStatus::Ok, wall, check));
        }
        let runs = &commands.0["tsc"];
        assert_eq!((runs.ok, runs.failed, runs.warmups), (3, 1, 1));
        assert_eq!(runs.values["wall_ms"], [1.0, 3.0, 2.0]);
        let md = markdown(None, &commands);
        assert!(md.contains("3 timed runs ok, 1 failed, 1 warm-up"), "{md}");
        assert!(
            md.contains("| wall time (`wall_ms`) | 2.000 ms | 1.000 ms | 3.000 ms |"),
            "{md}"
        );
        // CPU time 0 is below the 1 us resolution: shown as below it, never as 0
        assert!(
            md.contains("| < 0.001 ms | < 0.001 ms | < 0.001 ms |"),
            "{md}"
        );
        assert_eq!(commands.counts(), (3, 1));
        let csv = crate::csv::render(&[], &csv_rows(None, &commands));
        let header = csv.lines().next().unwrap();
        assert!(header.ends_with(",figure,unit,resolution,value_median,value_min,value_max"));
        let wall = csv
            .lines()
            .find(|l| l.starts_with("command/tsc/wall_ms,"))
            .unwrap();
        assert_eq!(header.split(',').count(), wall.split(',').count(), "{wall}");
        assert!(
            wall.starts_with("command/tsc/wall_ms,tsc,,,,,command,"),
            "{wall}"
        );
        assert!(
            wall.ends_with(",wall_ms,ms,0.001,2.000,1.000,3.000"),
            "{wall}"
        );
        assert!(wall.contains(",3,1,"), "{wall}");
    }

    #[test]
    fn below_resolution_is_shown_as_below_it() {
        let check = TSC_FIGURES[0];
        assert_eq!(shown(0.0, &check), "< 0.01 s");
        assert_eq!(shown(2.47, &check), "2.47 s");
        assert_eq!(shown(31870.0, &TSC_FIGURES[1]), "31870");
    }
}
