//! The command benchmark kind: a campaign's `[[commands]]`, the parsers of their output, and
//! the record of one run (a line of `samples.jsonl` beside the peer samples).
//!
//! A command is an argument vector run without a shell (write `["sh", "-c", "..."]` for one),
//! in the same seeded, interleaved rounds as the peer configurations: the schedule shuffles the
//! configurations and the commands together (see [`crate::schedule`]). Everything here is pure;
//! the runner's `command` module spawns, times and bounds the process.

use crate::duration;
use crate::record::SampleStatus;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// One `[[commands]]` entry of a campaign.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CommandSpec {
    /// Identifier, used in sample ids and the report.
    pub id: String,
    /// The argument vector, run without a shell; a bare program name is looked up on `PATH`,
    /// a relative path is relative to `dir`.
    pub command: Vec<String>,
    /// Run before every run (the warm-up and each timed one), untimed; empty: none. A set-up
    /// that fails fails the sample.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub setup: Vec<String>,
    /// Working directory, relative to the campaign file (default: the campaign file's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    /// The CPU it is pinned to (`taskset -c`); default: the CPU the run pins servers to (none
    /// when pinning is off or the machine has one CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<usize>,
    /// Longest a run (and its set-up, each) may take; past it the process group is killed and
    /// the sample fails.
    #[serde(default = "default_timeout", with = "duration")]
    pub timeout: Duration,
    /// The parser of its standard output, if figures are to be read from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parser: Option<Parser>,
}

fn default_timeout() -> Duration {
    Duration::from_secs(600)
}

impl CommandSpec {
    /// Problems of the entry at `path` (`commands[0]`), each with its field path.
    pub fn validate(&self, path: &str) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        if self.command.first().is_none_or(|c| c.trim().is_empty()) {
            problems.push((
                format!("{path}.command"),
                "expected an argument vector with a program first, e.g. [\"node\", \"--version\"] (run without a shell: [\"sh\", \"-c\", \"...\"] for one)".to_string(),
            ));
        }
        if self.setup.first().is_some_and(|c| c.trim().is_empty()) {
            problems.push((
                format!("{path}.setup"),
                "expected an argument vector with a program first, or no setup".to_string(),
            ));
        }
        if self.timeout.is_zero() || self.timeout > crate::campaign::MAX_DURATION {
            problems.push((
                format!("{path}.timeout"),
                format!(
                    "expected a bound longer than zero and at most a day, got {}",
                    duration::format(&self.timeout)
                ),
            ));
        }
        problems
    }
}

/// A parser of a command's standard output.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Parser {
    /// `tsc --extendedDiagnostics`: check time, types, instantiations, memory used.
    TscExtendedDiagnostics,
}

/// A figure a parser reads or an instrument measures: its name in records and CSV, its unit,
/// and its resolution (the smallest step it can show; a value below it is shown as below it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// Name in `samples.jsonl` (`figures`) and `aggregate.csv`.
    pub name: &'static str,
    /// The label the output prints it with (parsers only).
    pub label: &'static str,
    /// Unit.
    pub unit: &'static str,
    /// Resolution, in `unit`.
    pub resolution: f64,
}

/// The figures `tsc --extendedDiagnostics` prints that the parser reads: `Check time:  1.23s`
/// (two decimals), `Types:  12345`, `Instantiations:  67890`, `Memory used:  123456K` (the
/// compiler's heap after the run, in kilobytes of 1000 bytes).
pub const TSC_FIGURES: [Figure; 4] = [
    Figure {
        name: "check_time_s",
        label: "Check time",
        unit: "s",
        resolution: 0.01,
    },
    Figure {
        name: "types",
        label: "Types",
        unit: "",
        resolution: 1.0,
    },
    Figure {
        name: "instantiations",
        label: "Instantiations",
        unit: "",
        resolution: 1.0,
    },
    Figure {
        name: "memory_used_kb",
        label: "Memory used",
        unit: "kB",
        resolution: 1.0,
    },
];

/// What the controller measures of every run, in report and CSV order: wall time (a monotonic
/// clock read around spawn and `wait4`, kept in microseconds), user and system CPU time of the
/// process and every descendant it waited for (`wait4`'s rusage, microseconds), and the peak
/// resident set of the largest of them (`ru_maxrss`, KiB).
pub const INSTRUMENTS: [Figure; 3] = [
    Figure {
        name: "wall_ms",
        label: "wall time",
        unit: "ms",
        resolution: 0.001,
    },
    Figure {
        name: "cpu_ms",
        label: "CPU time (user+sys)",
        unit: "ms",
        resolution: 0.001,
    },
    Figure {
        name: "peak_rss_kib",
        label: "peak RSS",
        unit: "KiB",
        resolution: 1.0,
    },
];

impl Parser {
    /// The figures this parser reads, every one required.
    pub fn figures(self) -> &'static [Figure] {
        match self {
            Parser::TscExtendedDiagnostics => &TSC_FIGURES,
        }
    }

    /// The figures in `output`, by name, or the labels of those it lacks.
    pub fn parse(self, output: &str) -> Result<BTreeMap<String, f64>, Vec<&'static str>> {
        match self {
            Parser::TscExtendedDiagnostics => labelled_figures(output, &TSC_FIGURES),
        }
    }
}

/// Reads `Label:   value[unit]` lines: the first line of each label counts; a value is a
/// decimal number, with optional thousands separators and the figure's unit suffix (`s`, `K`).
fn labelled_figures(
    output: &str,
    figures: &[Figure],
) -> Result<BTreeMap<String, f64>, Vec<&'static str>> {
    let mut found = BTreeMap::new();
    for line in output.lines() {
        let Some((label, value)) = line.split_once(':') else {
            continue;
        };
        let Some(figure) = figures.iter().find(|f| f.label == label.trim()) else {
            continue;
        };
        if found.contains_key(figure.name) {
            continue;
        }
        let number = value.trim().trim_end_matches(['s', 'K']).replace(',', "");
        if let Ok(v) = number.parse::<f64>()
            && v.is_finite()
        {
            found.insert(figure.name.to_string(), v);
        }
    }
    let missing: Vec<&'static str> = figures
        .iter()
        .filter(|f| !found.contains_key(f.name))
        .map(|f| f.label)
        .collect();
    if missing.is_empty() {
        Ok(found)
    } else {
        Err(missing)
    }
}

/// Marks a `samples.jsonl` line as a command run; it is the line's first key.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum RecordKind {
    /// A run of a `[[commands]]` entry.
    #[default]
    Command,
}

/// What the controller measured of one run of a command.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Default)]
pub struct Measured {
    /// Wall time from spawn to reaping, microseconds.
    pub wall_us: u64,
    /// User CPU time of the process and the descendants it waited for, microseconds.
    pub user_us: u64,
    /// System CPU time, microseconds.
    pub sys_us: u64,
    /// Peak resident set of the largest of them (`ru_maxrss`), KiB.
    pub max_rss_kib: u64,
}

impl Measured {
    /// The instruments' values, in [`INSTRUMENTS`] order and units.
    pub fn values(&self) -> [f64; 3] {
        [
            self.wall_us as f64 / 1000.0,
            (self.user_us + self.sys_us) as f64 / 1000.0,
            self.max_rss_kib as f64,
        ]
    }
}

/// One run of a command, as a line of `samples.jsonl`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct CommandRecord {
    /// Always `command`: tells this line from a peer sample's.
    pub kind: RecordKind,
    /// Sample id, also the name of its `raw/` directory.
    pub sample: String,
    /// Round, from 1.
    pub round: u32,
    /// Position within the round, from 1.
    pub position: u32,
    /// The command's id.
    pub command: String,
    /// The untimed first run: recorded, never aggregated.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// Ok or failed.
    pub status: SampleStatus,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// UTC start time, RFC 3339.
    pub started_at: String,
    /// CPUs it was pinned to (empty: not pinned).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
    /// What was measured, whenever the process was reaped (also when the sample failed after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<Measured>,
    /// Figures parsed from its output, by name (those found, also when some are missing).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
    /// Directory holding its stdout and stderr, relative to the run directory.
    pub raw: String,
}

/// A line of `samples.jsonl`: a peer sample or a command run.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A peer sample.
    Sample(Box<crate::record::SampleRecord>),
    /// A command run.
    Command(Box<CommandRecord>),
}

impl Line {
    /// Parses one line; a command run is told by its first key, `"kind":"command"`, as the
    /// runner writes it.
    pub fn parse(bytes: &[u8]) -> serde_json::Result<Line> {
        if bytes.starts_with(br#"{"kind":"command""#) {
            serde_json::from_slice(bytes).map(|r| Line::Command(Box::new(r)))
        } else {
            serde_json::from_slice(bytes).map(|r| Line::Sample(Box::new(r)))
        }
    }

    /// The sample id and status.
    pub fn id_and_status(&self) -> (&str, SampleStatus) {
        match self {
            Line::Sample(r) => (&r.sample, r.status),
            Line::Command(r) => (&r.sample, r.status),
        }
    }
}

/// At most `limit` bytes of `output` for a reason, cut on a character boundary, escaped.
pub fn quote(output: &str, limit: usize) -> String {
    let mut end = output.len().min(limit);
    while !output.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < output.len() { "..." } else { "" };
    format!("{:?}{cut}", &output[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tsc --extendedDiagnostics` as TypeScript 5 prints it (shortened).
    const TSC: &str = "Files:                         210
Lines of Library:            39135
Lines of Definitions:        48013
Lines of TypeScript:         12503
Identifiers:                 94322
Symbols:                     88120
Types:                       31870
Instantiations:             123456
Memory used:               171213K
Assignability cache size:    12044
I/O Read time:               0.02s
Parse time:                  0.31s
Bind time:                   0.12s
Check time:                  2.47s
Emit time:                   0.00s
Total time:                  2.92s
";

    #[test]
    fn reads_the_four_tsc_figures() {
        let figures = Parser::TscExtendedDiagnostics.parse(TSC).unwrap();
        assert_eq!(figures["check_time_s"], 2.47);
        assert_eq!(figures["types"], 31870.0);
        assert_eq!(figures["instantiations"], 123456.0);
        assert_eq!(figures["memory_used_kb"], 171213.0);
        assert_eq!(figures.len(), 4);
    }

    #[test]
    fn names_every_missing_figure() {
        let cut: String = TSC
            .lines()
            .filter(|l| !l.starts_with("Types"))
            .collect::<Vec<_>>()
            .join("\n");
        assert_eq!(
            Parser::TscExtendedDiagnostics.parse(&cut),
            Err(vec!["Types"])
        );
        let all = Parser::TscExtendedDiagnostics
            .parse("error TS2322: x\n")
            .unwrap_err();
        assert_eq!(
            all,
            ["Check time", "Types", "Instantiations", "Memory used"]
        );
        // a label with a value that is not a number is missing, not zero
        let bad = TSC.replace("Check time:                  2.47s", "Check time: soon");
        assert_eq!(
            Parser::TscExtendedDiagnostics.parse(&bad),
            Err(vec!["Check time"])
        );
    }

    #[test]
    fn separators_and_the_first_line_of_a_label() {
        let text =
            "Types: 1,234\nInstantiations: 5\nMemory used: 9K\nCheck time: 0.00s\nTypes: 7\n";
        let figures = Parser::TscExtendedDiagnostics.parse(text).unwrap();
        assert_eq!(figures["types"], 1234.0);
        assert_eq!(figures["check_time_s"], 0.0);
    }

    #[test]
    fn lines_are_told_apart_by_their_first_key() {
        let record = CommandRecord {
            kind: RecordKind::Command,
            sample: "r01-001-cmd-x".into(),
            round: 1,
            position: 1,
            command: "x".into(),
            warmup: false,
            status: SampleStatus::Ok,
            reason: None,
            started_at: "t".into(),
            cpus: vec![1],
            measured: Some(Measured::default()),
            figures: BTreeMap::new(),
            raw: "raw/r01-001-cmd-x".into(),
        };
        let json = serde_json::to_vec(&record).unwrap();
        assert_eq!(Line::parse(&json).unwrap(), Line::Command(Box::new(record)));
        assert!(
            Line::parse(br#"{"sample":"x"}"#).is_err(),
            "a peer sample needs its fields"
        );
    }

    #[test]
    fn quotes_at_most_the_limit_on_a_character_boundary() {
        assert_eq!(quote("abc", 200), "\"abc\"");
        assert_eq!(quote("ééé", 3), "\"é\"...");
        assert_eq!(quote(&"x".repeat(300), 200).len(), 200 + 2 + 3);
    }
}
