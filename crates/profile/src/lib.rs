//! Profiles of native peers (Rust, C, C++) with Linux `perf`, for `rpcarena profile`.
//!
//! A pure core reads `perf script` text ([`script`]), sums it up ([`summary`]), turns scheduler
//! switches into off-CPU time ([`offcpu`]) and writes the summary ([`report`]); folding and
//! drawing go through the `inferno` crate ([`fold`]). A thin shell ([`perf`]) checks that perf
//! can record here, attaches `perf record` to running peers between two exact edges, and runs
//! `perf script`. [`analyse_cpu`] and [`analyse_off_cpu`] turn a recording into its files.
//!
//! The crate knows nothing of campaigns or samples: the `rpcarena` binary starts a sample
//! through the runner and calls this crate at the client's window edges.

pub mod fold;
pub mod offcpu;
pub mod perf;
pub mod report;
pub mod script;
pub mod summary;

use std::path::Path;

/// The files of one peer's profile, by name.
pub mod files {
    /// perf's raw CPU recording.
    pub const CPU_DATA: &str = "perf.data";
    /// Its folded stacks.
    pub const CPU_FOLDED: &str = "cpu.folded";
    /// Its flame graph.
    pub const CPU_SVG: &str = "flamegraph.svg";
    /// perf's raw scheduler recording (`--off-cpu`).
    pub const OFF_DATA: &str = "offcpu.data";
    /// Off-CPU folded stacks, in microseconds.
    pub const OFF_FOLDED: &str = "offcpu.folded";
    /// Their flame graph.
    pub const OFF_SVG: &str = "offcpu.svg";
    /// The summary, for people.
    pub const SUMMARY_MD: &str = "summary.md";
    /// The summary, for programs.
    pub const SUMMARY_JSON: &str = "summary.json";
    /// perf record's own messages.
    pub const PERF_LOG: &str = "perf.log";
}

/// What can go wrong, each saying what to do.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No `perf` executable.
    #[error(
        "perf is not installed ({0}): install Debian's `linux-perf` package (`apt-get install linux-perf`)"
    )]
    Missing(String),
    /// The kernel refuses.
    #[error(
        "perf may not record {event} here: kernel.perf_event_paranoid is {paranoid}; run rpcarena as root, or allow it with `sysctl -w kernel.perf_event_paranoid=-1` (perf said: {said})"
    )]
    Forbidden {
        /// The event tried.
        event: String,
        /// The sysctl's value.
        paranoid: String,
        /// perf's message.
        said: String,
    },
    /// perf failed otherwise.
    #[error("perf {what}: {said}")]
    Perf {
        /// What was asked.
        what: String,
        /// The end of perf's message.
        said: String,
    },
    /// The profiled process went away before the window ended.
    #[error("{0}")]
    Ended(String),
    /// The recording holds no sample.
    #[error(
        "{0} holds no sample: the peer did not run on a CPU during the window (or perf lost every event); no graph was drawn"
    )]
    NoSamples(String),
    /// A file could not be read or written.
    #[error("{what}: {source}")]
    Io {
        /// What was done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
}

/// `source` as an [`Error::Io`] about `what` on `path`.
fn file_error(what: &str, path: &Path, source: std::io::Error) -> Error {
    Error::Io {
        what: format!("{what} {}", path.display()),
        source,
    }
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|e| file_error("writing", path, e))
}

/// A CPU recording in `dir` (`perf.data`) turned into its folded stacks and flame graph; its
/// summary is returned (the caller writes it with the run's figures). `own` says which frames
/// are the peer's own code; `title` heads the graph.
pub fn analyse_cpu(
    dir: &Path,
    own: &summary::OwnCode,
    title: &str,
    subtitle: &str,
) -> Result<summary::Summary, Error> {
    let data = dir.join(files::CPU_DATA);
    let text = perf::script(&data, perf::CPU_FIELDS, false)?;
    let samples = script::parse(&String::from_utf8_lossy(&text));
    if samples.is_empty() {
        return Err(Error::NoSamples(data.display().to_string()));
    }
    let folded = fold::fold(&text).map_err(|e| file_error("folding", &data, e))?;
    write(&dir.join(files::CPU_FOLDED), folded.as_bytes())?;
    let svg = fold::flamegraph(&folded, title, subtitle, "samples")
        .map_err(|e| file_error("drawing the flame graph of", &data, e))?;
    write(&dir.join(files::CPU_SVG), &svg)?;
    Ok(summary::Summary::of(&samples, own))
}

/// A scheduler recording in `dir` (`offcpu.data`) turned into off-CPU folded stacks (in
/// microseconds) and their flame graph; returns the blocked time in microseconds and the
/// heaviest stacks.
pub fn analyse_off_cpu(dir: &Path, title: &str, subtitle: &str) -> Result<report::OffCpu, Error> {
    let data = dir.join(files::OFF_DATA);
    let text = perf::script(&data, perf::SWITCH_FIELDS, true)?;
    let text = String::from_utf8_lossy(&text);
    let switches = script::parse(&text);
    let ins = offcpu::switch_ins(&text);
    // The last switch-out is the window's end as near as the recording knows it: the tracepoint
    // is disabled with the window, perf's switch records are not.
    let end = switches.iter().map(|s| s.time_ns).max().unwrap_or(0);
    let (folded, total_us) = offcpu::fold(&switches, &ins, end);
    if folded.is_empty() {
        return Err(Error::NoSamples(data.display().to_string()));
    }
    write(&dir.join(files::OFF_FOLDED), folded.as_bytes())?;
    let svg = fold::flamegraph(&folded, title, subtitle, "us")
        .map_err(|e| file_error("drawing the off-CPU graph of", &data, e))?;
    write(&dir.join(files::OFF_SVG), &svg)?;
    Ok(report::OffCpu::of(&folded, total_us, switches.len() as u64))
}
