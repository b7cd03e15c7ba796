//! What a profile says, in numbers: samples taken, the functions with the most samples by self
//! and by total time, where the leaf frames are (the peer's own code, its libraries and runtime,
//! the kernel) and how whole the stacks are. Pure: samples in, a summary out.

use crate::script::{Frame, Sample};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// How many functions each top list keeps.
pub const TOP: usize = 15;

/// Outermost frames that mean a stack was unwound to its thread's start.
const ROOTS: [&str; 6] = [
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone3",
    "__clone",
];

/// What the peer's own code is: frames in its executables, and (for a language that links its
/// libraries statically, Rust) only those whose symbol names its own crates.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnCode {
    /// The peer's executables, by file name.
    pub objects: BTreeSet<String>,
    /// When set, a frame in the executable is the peer's own only if its symbol contains this
    /// (`rpcarena`: the Rust peer's crates); the rest of the executable is statically linked
    /// library code (tokio, tonic, quinn, rustls).
    pub symbols_containing: Option<String>,
}

/// Where a frame's code is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// The peer's own executable.
    Own,
    /// A library or the language's runtime: a shared one (`libc`, `libgrpc`, `libstdc++`) or,
    /// for Rust, a crate linked into the executable.
    Library,
    /// The kernel.
    Kernel,
    /// perf could not tell.
    Unknown,
}

impl Place {
    /// Where `frame` is.
    pub fn of(frame: &Frame, own: &OwnCode) -> Place {
        let object = frame.object.as_str();
        let name = object.rsplit('/').next().unwrap_or(object);
        if own.objects.contains(name) {
            match &own.symbols_containing {
                Some(marker) if !frame.symbol.contains(marker.as_str()) => Place::Library,
                _ => Place::Own,
            }
        } else if object.starts_with("[kernel") || object.starts_with("[guest.kernel") {
            Place::Kernel
        } else if object == "[unknown]" || object.is_empty() {
            Place::Unknown
        } else {
            Place::Library
        }
    }
}

/// A function and its samples.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionShare {
    /// Its name.
    pub function: String,
    /// Where it is.
    pub place: Place,
    /// Samples it was in (as the leaf: self; anywhere: total).
    pub samples: u64,
    /// Those samples' share of all, in percent.
    pub percent: f64,
}

/// How whole the stacks are.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Unwinding {
    /// Samples whose outermost frame is a thread's start (`_start`, `clone3`, ...).
    pub to_thread_start: u64,
    /// Samples with a frame in the peer's own code.
    pub through_own_code: u64,
    /// Samples whose leaf is in a library.
    pub library_leaf: u64,
    /// Of those, the ones whose stack unwinds out of the library back into the peer's own code.
    pub library_leaf_reaching_own_code: u64,
    /// Frames per sample, on average.
    pub mean_depth: f64,
}

/// A profile's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Events counted (`cpu-clock` samples).
    pub samples: u64,
    /// Threads seen, by name, with their samples.
    pub threads: BTreeMap<String, u64>,
    /// Samples by where their leaf frame is.
    pub leaf_places: BTreeMap<Place, u64>,
    /// The functions most often at the leaf.
    pub top_self: Vec<FunctionShare>,
    /// The functions most often anywhere on the stack.
    pub top_total: Vec<FunctionShare>,
    /// How whole the stacks are.
    pub unwinding: Unwinding,
}

impl Summary {
    /// The summary of `samples`, `own` saying which frames are the peer's own code.
    pub fn of(samples: &[Sample], own: &OwnCode) -> Summary {
        let mut threads = BTreeMap::new();
        let mut leaf_places = BTreeMap::new();
        let mut selfs: BTreeMap<(String, Place), u64> = BTreeMap::new();
        let mut totals: BTreeMap<(String, Place), u64> = BTreeMap::new();
        let mut unwinding = Unwinding::default();
        let mut depth = 0u64;
        for sample in samples {
            *threads.entry(sample.comm.clone()).or_insert(0) += 1;
            let places: Vec<Place> = sample.frames.iter().map(|f| Place::of(f, own)).collect();
            let leaf = places.first().copied().unwrap_or(Place::Unknown);
            *leaf_places.entry(leaf).or_insert(0) += 1;
            if let Some(frame) = sample.frames.first() {
                *selfs.entry((frame.symbol.clone(), leaf)).or_insert(0) += 1;
            }
            let distinct: BTreeSet<(String, Place)> = sample
                .frames
                .iter()
                .zip(&places)
                .map(|(f, p)| (f.symbol.clone(), *p))
                .collect();
            for key in distinct {
                *totals.entry(key).or_insert(0) += 1;
            }
            count_unwinding(&mut unwinding, sample, &places);
            depth += sample.frames.len() as u64;
        }
        let n = samples.len() as u64;
        unwinding.mean_depth = if n == 0 { 0.0 } else { depth as f64 / n as f64 };
        Summary {
            samples: n,
            threads,
            leaf_places,
            top_self: top(selfs, n),
            top_total: top(totals, n),
            unwinding,
        }
    }

    /// The share of samples whose leaf is at `place`, in percent.
    pub fn percent_at(&self, place: Place) -> f64 {
        percent(
            self.leaf_places.get(&place).copied().unwrap_or(0),
            self.samples,
        )
    }
}

fn count_unwinding(u: &mut Unwinding, sample: &Sample, places: &[Place]) {
    if sample
        .frames
        .last()
        .is_some_and(|f| ROOTS.contains(&f.symbol.as_str()))
    {
        u.to_thread_start += 1;
    }
    let own = places.contains(&Place::Own);
    if own {
        u.through_own_code += 1;
    }
    if places.first() == Some(&Place::Library) {
        u.library_leaf += 1;
        if own {
            u.library_leaf_reaching_own_code += 1;
        }
    }
}

fn top(counts: BTreeMap<(String, Place), u64>, n: u64) -> Vec<FunctionShare> {
    let mut all: Vec<FunctionShare> = counts
        .into_iter()
        .map(|((function, place), samples)| FunctionShare {
            function,
            place,
            samples,
            percent: percent(samples, n),
        })
        .collect();
    all.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function)));
    all.truncate(TOP);
    all
}

/// `part` of `whole` in percent (0 when `whole` is 0).
pub fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(symbol: &str, object: &str) -> Frame {
        Frame {
            symbol: symbol.into(),
            object: object.into(),
        }
    }

    fn sample(frames: Vec<Frame>) -> Sample {
        Sample {
            comm: "peer".into(),
            tid: 1,
            time_ns: 0,
            event: "cpu-clock".into(),
            detail: String::new(),
            frames,
        }
    }

    #[test]
    fn self_total_places_and_unwinding_are_counted() {
        let own = OwnCode {
            objects: ["rpcarena-peer-rust".to_string()].into(),
            symbols_containing: Some("rpcarena".into()),
        };
        let exe = "/x/rpcarena-peer-rust";
        let samples = vec![
            sample(vec![
                frame("rpcarena_peer::serve", exe),
                frame("tokio::run", exe),
                frame("_start", exe),
            ]),
            sample(vec![
                frame("recv", "/lib/libc.so.6"),
                frame("rpcarena_peer::serve", exe),
                frame("clone3", "/lib/libc.so.6"),
            ]),
            sample(vec![
                frame("memcpy", "/lib/libc.so.6"),
                frame("[unknown]", "[unknown]"),
            ]),
            sample(vec![frame("tcp_sendmsg", "[kernel.kallsyms]")]),
        ];
        let s = Summary::of(&samples, &own);
        assert_eq!(s.samples, 4);
        assert_eq!(s.leaf_places[&Place::Own], 1);
        assert_eq!(s.leaf_places[&Place::Library], 2);
        assert_eq!(s.leaf_places[&Place::Kernel], 1);
        assert_eq!(s.percent_at(Place::Library), 50.0);
        assert_eq!(s.top_total[0].function, "rpcarena_peer::serve");
        let tokio = s
            .top_total
            .iter()
            .find(|f| f.function == "tokio::run")
            .unwrap();
        assert_eq!(
            tokio.place,
            Place::Library,
            "a crate linked into the executable"
        );
        assert_eq!(s.top_total[0].samples, 2);
        assert_eq!(s.top_self.iter().map(|f| f.samples).sum::<u64>(), 4);
        assert_eq!(s.unwinding.to_thread_start, 2);
        assert_eq!(s.unwinding.through_own_code, 2);
        assert_eq!(s.unwinding.library_leaf, 2);
        assert_eq!(s.unwinding.library_leaf_reaching_own_code, 1);
        assert_eq!(s.unwinding.mean_depth, 9.0 / 4.0);
    }

    #[test]
    fn an_empty_profile_has_zero_shares() {
        let s = Summary::of(&[], &OwnCode::default());
        assert_eq!(s.samples, 0);
        assert_eq!(s.percent_at(Place::Own), 0.0);
    }
}
