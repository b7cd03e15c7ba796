//! Fuzzing the campaign parser on stable Rust, with proptest's generators: arbitrary bytes, and
//! a full campaign with random edits (values swapped for hostile ones, lines dropped or
//! repeated). The properties: `decode` and `Campaign::parse` never panic; a campaign they accept
//! passes its own validation again, plans no more samples than `max_samples`, and plans exactly
//! what `matrix::expand` expands.
//!
//! Each target runs for `RPCARENA_FUZZ_SECS` seconds (default 2, so `cargo test` stays quick)
//! and prints how many inputs it ran; docs/faults.md has the figures of a 10-minute run:
//!
//! ```text
//! RPCARENA_FUZZ_SECS=600 cargo test --release -p rpcarena-model --test fuzz_campaign -- --nocapture
//! ```

use proptest::prelude::*;
use rpcarena_fuzz_support::fuzz;
use rpcarena_model::campaign::{Campaign, decode};
use rpcarena_model::matrix;

/// A campaign with every section, the fuzzer's starting point.
static FULL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    rpcarena_fixtures::campaign("fuzz", 7)
        .key("description = \"every section\"\nrepetitions = 2\nmax_samples = 5000\nbaseline = \"a\"")
        .peer("p", &["peer", "--x"])
        .cell("a", "p", "p", "grpc")
        .cell("b", "p", "p", "quic")
        .section(
            r#"[network]
backend = "emulated"
profile = "regional-wan"
emulator = "userspace"
[network.both]
delay = "5ms"
limit = 100
[workload]
shapes = ["unary", "bidi"]
concurrency = [1, 4]
request_size = [0, 256]
response_size = [3]
messages_per_stream = 8
payload = ["zeros", "structured"]
load = ["closed", { model = "open", rate = 100.5, arrival = "poisson" }, { model = "window", in_flight = 8 }]
[timing]
warmup = "100ms"
window = "1s"
drain = "2s"
[timeouts]
ready = "10s"
armed = "10s"
sample = "10s"
shutdown = "5s"
[noise]
pinning = "off"
max_load = 1.5
gate_timeout = "30s"
drift_threshold = 0.03"#,
        )
        .build()
});

/// What must hold for any text; whether the parser accepted it.
fn check_text(text: &str) -> bool {
    let Ok(campaign) = Campaign::parse(text, "fuzz.toml") else {
        return false;
    };
    assert!(campaign.validate().is_empty());
    let planned = campaign.planned_samples();
    assert!(planned <= campaign.max_samples);
    let _ = campaign.sample_estimate();
    let _ = campaign.network.link_profile();
    if planned <= 20_000 {
        let configs = matrix::expand(&campaign).len() as u64;
        assert_eq!(configs * u64::from(campaign.repetitions), planned);
    }
    true
}

/// Values a hostile or careless author might write.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        Just("nan".to_string()),
        Just("-inf".to_string()),
        Just("0".to_string()),
        Just("\"100000000000years\"".to_string()),
        "[0-9]{1,22}(ns|us|ms|s|m|h|d|w|years| )".prop_map(|d| format!("\"{d}\"")),
        "[a-z_\\-.]{0,12}".prop_map(|s| format!("\"{s}\"")),
        "\\PC{0,16}".prop_map(|s| format!("{s:?}")),
        prop::collection::vec(any::<u32>(), 0..6).prop_map(|v| format!("{v:?}")),
        prop::collection::vec(0u32..5000, 0..400).prop_map(|v| format!("{v:?}")),
        (any::<f64>(), 0u32..2).prop_map(|(r, a)| format!(
            "[{{ model = \"open\", rate = {r:?}, arrival = \"{}\" }}]",
            ["constant", "poisson"][a as usize]
        )),
        (0u32..3, any::<u32>()).prop_map(|(m, n)| format!(
            "[{{ model = \"{}\", in_flight = {n}, max_in_flight = {n}, streams = {n} }}]",
            ["window", "backpressure", "send-saturation"][m as usize]
        )),
        Just("true".to_string()),
        Just("{}".to_string()),
        Just("[]".to_string()),
    ]
}

/// One edit of the full campaign's lines.
#[derive(Debug, Clone)]
enum Edit {
    /// Replace the value of line `n` (after its `=`).
    Value(usize, String),
    /// Drop line `n`.
    Drop(usize),
    /// Repeat line `n`.
    Repeat(usize),
    /// Insert `key = value` before line `n`.
    Insert(usize, String, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    let lines = FULL.lines().count();
    let key = prop::sample::select(vec![
        "seed",
        "repetitions",
        "max_samples",
        "window",
        "warmup",
        "drain",
        "shutdown",
        "profile",
        "mtu",
        "concurrency",
        "request_size",
        "payload",
        "load",
        "rate",
        "stack",
        "command",
        "unknown",
    ]);
    prop_oneof![
        4 => (0..lines, token()).prop_map(|(n, v)| Edit::Value(n, v)),
        1 => (0..lines).prop_map(Edit::Drop),
        1 => (0..lines).prop_map(Edit::Repeat),
        1 => (0..lines, key, token()).prop_map(|(n, k, v)| Edit::Insert(n, k.to_string(), v)),
    ]
}

fn apply(edits: &[Edit]) -> String {
    let mut lines: Vec<String> = FULL.lines().map(str::to_string).collect();
    for e in edits {
        let n = |i: usize| i.min(lines.len().saturating_sub(1));
        match e {
            Edit::Value(i, v) if !lines.is_empty() => {
                let i = n(*i);
                if let Some((key, _)) = lines[i].split_once('=') {
                    lines[i] = format!("{key}= {v}");
                }
            }
            Edit::Drop(i) if !lines.is_empty() => {
                lines.remove(n(*i));
            }
            Edit::Repeat(i) if !lines.is_empty() => {
                let line = lines[n(*i)].clone();
                lines.insert(n(*i), line);
            }
            Edit::Insert(i, k, v) => {
                let at = (*i).min(lines.len());
                lines.insert(at, format!("{k} = {v}"));
            }
            _ => {}
        }
    }
    lines.join("\n")
}

#[test]
fn the_full_campaign_parses() {
    let campaign = Campaign::parse(&FULL, "full.toml").unwrap();
    // 2 cells x 2 shapes x (closed and open at 2 concurrencies, window at its own) x 2
    // request sizes x 1 response size x 2 payloads x 2 repetitions
    assert_eq!(campaign.planned_samples(), 160);
    assert!(check_text(&FULL));
}

#[test]
fn fuzz_campaign_bytes() {
    fuzz(
        "campaign bytes",
        prop::collection::vec(any::<u8>(), 0..600),
        |bytes| decode(bytes, "fuzz.toml").is_ok_and(|text| check_text(&text)),
    );
}

#[test]
fn fuzz_campaign_edits() {
    fuzz(
        "campaign edits",
        prop::collection::vec(edit(), 1..6),
        |edits| check_text(&apply(edits)),
    );
}
