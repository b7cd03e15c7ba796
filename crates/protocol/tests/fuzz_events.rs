//! Fuzzing the peer-event parser on stable Rust, with proptest's generators: arbitrary text,
//! and valid events of every kind with random edits (a value swapped for a hostile one, bytes
//! cut or repeated). The properties: `parse_event` never panics, and the histograms of an
//! event it accepts decode or fail with an error, never a panic.
//!
//! Each target runs for `RPCARENA_FUZZ_SECS` seconds (default 2) and prints how many inputs it
//! ran; docs/faults.md has the figures of a 10-minute run:
//!
//! ```text
//! RPCARENA_FUZZ_SECS=600 cargo test --release -p rpcarena-protocol --test fuzz_events -- --nocapture
//! ```

use proptest::prelude::*;
use rpcarena_fuzz_support::fuzz;
use rpcarena_protocol::event::{Event, parse_event};
use rpcarena_protocol::histogram;

const EVENTS: [&str; 8] = [
    r#"{"protocol":1,"event":"ready","role":"server","address":"127.0.0.1:4000","pid":7}"#,
    r#"{"protocol":1,"event":"armed","lanes":4,"connections":1,"connect_ns":"2000000","warmup_completed":"50"}"#,
    r#"{"protocol":1,"event":"sample","completed":"24410","failed":"0","requests":"24410","responses":"24410","request_bytes":"6248960","response_bytes":"6248960","window_ns":"2000000000","drain_ns":"161021","histogram":"HISTFAAAAD14nJNpmSzMwMDAzgABMJqRAQJsIUxmXYg4ZzBEnBUIAGHTAuw=","load":"closed","intervals":[{"offset_ns":"0","completed":"12190","histogram":"HISTFAAAAD14nJNpmSzMwMDAzgABMJqRAQJsIUxmXYg4ZzBEnBUIAGHTAuw="},{"offset_ns":"1000000000","completed":"12220","histogram":"HISTFAAAAD14nJNpmSzMwMDAzgABMJqRAQJsIUxmXYg4ZzBEnBUIAGHTAuw="}],"failures":{"timeout":"0"}}"#,
    r#"{"protocol":1,"event":"capabilities","peer":"p","language":"go","version":"1","revision":"1.1","roles":{"client":[{"stack":"grpc","shapes":["unary"],"load_models":["closed"],"payloads":["zeros"],"libraries":{"grpc":"1"},"settings":{"a":true,"b":3,"c":"x","d":["y"]}}],"server":[{"stack":"grpc","shapes":["unary"]}]}}"#,
    r#"{"protocol":1,"event":"error","phase":"startup","code":"config","message":"--x: unknown"}"#,
    r#"{"protocol":1,"event":"stopped","counters":{"rpcs":"104"},"allocations":"5","allocated_bytes":"640"}"#,
    r#"{"protocol":1,"event":"window","edge":"start","counters":{"rpcs":"1285","rejected":"0"},"allocations":"902211","allocated_bytes":"130542208"}"#,
    r#"{"protocol":1,"event":"sample","completed":"1","failed":"0","requests":"1","responses":"1","request_bytes":"0","response_bytes":"0","window_ns":"1","drain_ns":"0","histogram":"","load":"open","target_rate":1.5,"fell_behind":true}"#,
];

/// What must hold for any line; whether the parser accepted it.
fn check_line(line: &str) -> bool {
    match parse_event(line) {
        Ok(Event::Sample(report)) => {
            let _ = histogram::decode(&report.histogram);
            for interval in &report.intervals {
                let _ = histogram::decode(&interval.histogram);
            }
            true
        }
        Ok(_) => true,
        Err(_) => false,
    }
}

/// JSON values a hostile peer might put anywhere.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_string()),
        Just("\"18446744073709551616\"".to_string()),
        Just("\"-1\"".to_string()),
        Just("\"007\"".to_string()),
        Just("1e999".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("\"\\ud800\"".to_string()),
        any::<u64>().prop_map(|n| format!("\"{n}\"")),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| format!("{f:?}")),
        "[A-Za-z0-9+/=]{0,64}".prop_map(|s| format!("\"HISTFAAA{s}\"")),
        "\\PC{0,12}".prop_map(|s| format!("{s:?}")),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    /// Replace the value after the `n`th `:` (up to the next `,` or `}`).
    Value(usize, String),
    /// Cut the line at byte `n`.
    Cut(usize),
    /// Repeat bytes `n..n+len`.
    Repeat(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (0usize..40, value()).prop_map(|(n, v)| Edit::Value(n, v)),
        1 => (0usize..600).prop_map(Edit::Cut),
        1 => (0usize..600, 1usize..40).prop_map(|(n, l)| Edit::Repeat(n, l)),
    ]
}

fn apply(base: &str, edits: &[Edit]) -> String {
    let mut line = base.as_bytes().to_vec();
    for e in edits {
        match e {
            Edit::Value(n, v) => {
                let colons: Vec<usize> = line
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b':')
                    .map(|(i, _)| i)
                    .collect();
                if colons.is_empty() {
                    continue;
                }
                let start = colons[n % colons.len()] + 1;
                let end = line[start..]
                    .iter()
                    .position(|b| *b == b',' || *b == b'}')
                    .map_or(line.len(), |p| start + p);
                line.splice(start..end, v.bytes());
            }
            Edit::Cut(n) => line.truncate((*n).min(line.len())),
            Edit::Repeat(n, len) => {
                let start = (*n).min(line.len());
                let end = (start + len).min(line.len());
                let piece = line[start..end].to_vec();
                line.splice(start..start, piece);
            }
        }
    }
    String::from_utf8_lossy(&line).into_owned()
}

#[test]
fn the_seed_events_parse() {
    for line in EVENTS {
        parse_event(line).unwrap_or_else(|e| panic!("{line}: {e}"));
    }
}

#[test]
fn fuzz_event_text() {
    fuzz("event text", "\\PC{0,300}", |text: &String| {
        check_line(text)
    });
}

#[test]
fn fuzz_event_edits() {
    fuzz(
        "event edits",
        (0..EVENTS.len(), prop::collection::vec(edit(), 1..5)),
        |(which, edits)| check_line(&apply(EVENTS[*which], edits)),
    );
}
