//! samples.jsonl stays the same byte for byte: a client's `armed` and `sample` events and a
//! server's `stopped` event, with every optional field present, become the record's `client`,
//! `server_counters` and `server` exactly as `golden/record.json` holds them (written by the
//! hand-written conversions before the field lists were generated from one list).

use rpcarena_model::record::{ClientResult, ServerResult};
use rpcarena_protocol::event::{Event, parse_event};

#[test]
fn the_record_of_every_field_is_unchanged_byte_for_byte() {
    let events: Vec<Event> = include_str!("golden/events.jsonl")
        .lines()
        .map(|line| parse_event(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let [
        Event::Armed(armed),
        Event::Sample(sample),
        Event::Stopped(stopped),
    ] = &events[..]
    else {
        panic!("golden/events.jsonl holds armed, sample and stopped, in that order");
    };
    let client = ClientResult::from((armed.clone(), sample.clone()));
    let (counters, server) = ServerResult::from_stopped(stopped.clone());
    let record = serde_json::json!({
        "client": client,
        "server_counters": counters,
        "server": server,
    });
    let got = serde_json::to_string(&client).unwrap()
        + "\n"
        + &serde_json::to_string(&counters).unwrap()
        + "\n"
        + &serde_json::to_string(&server).unwrap()
        + "\n";
    let want = include_str!("golden/record.json");
    assert_eq!(got, want, "the record changed; the value was {record:#}");
    // and each form reads back as itself
    let back: ClientResult = serde_json::from_str(got.lines().next().unwrap()).unwrap();
    assert_eq!(back, client);
}
