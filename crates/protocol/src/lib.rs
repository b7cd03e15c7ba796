//! Peer protocol v1 and the workload contract of rpcarena.
//!
//! A peer is any executable that speaks this protocol (see `docs/peer-protocol.md`): the
//! controller starts it with a command (`capabilities`, `server` or `client`) and arguments, reads
//! newline-delimited JSON [`event::Event`]s from its stdout and writes [`event::Command`]s (`START`,
//! `SHUTDOWN`, and to a server of revision 1.2 `WINDOW START` and `WINDOW END`) to its stdin. This
//! crate holds the types both sides share, so the Rust peer and the controller
//! cannot disagree about them:
//!
//! - [`event`]: the events, their envelope with the protocol version, and parsing that refuses
//!   other versions with a clear message;
//! - [`histogram`]: latency histograms as HdrHistogram V2 compressed base64 (nanoseconds, three
//!   significant digits);
//! - [`workload`]: the four RPC shapes and pingpong, the messages each one carries, and payload
//!   validation;
//! - [`pb`]: the generated protobuf messages of `proto/rpcarena/bench/v1/bench.proto` (the
//!   tonic service is generated in the Rust peer, the only crate that serves or calls it).
//!
//! ```
//! use rpcarena_protocol::event::{Event, parse_event};
//! let line = r#"{"protocol":1,"event":"ready","role":"server","address":"127.0.0.1:4000","pid":7}"#;
//! match parse_event(line).unwrap() {
//!     Event::Ready(ready) => assert_eq!(ready.address, "127.0.0.1:4000"),
//!     other => panic!("unexpected {other:?}"),
//! }
//! ```

pub mod counter;
pub mod event;
pub mod fields;
pub mod histogram;
pub mod workload;

/// Generated protobuf messages of `BenchService`.
#[allow(missing_docs, clippy::all)]
pub mod pb {
    include!(concat!(env!("OUT_DIR"), "/rpcarena.bench.v1.rs"));
}

/// The protocol version this crate speaks. Every event carries it; others are refused.
pub const PROTOCOL_VERSION: u32 = 1;
