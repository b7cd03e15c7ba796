//! The Rust peer of rpcarena as a library: the binary `rpcarena-peer-rust` (src/main.rs) wires
//! these modules, and the Criterion benchmark (benches/engine.rs) measures the load engine
//! through them.
//!
//! - [`args`]: the command line of docs/peer-protocol.md;
//! - [`engine`]: the load models (sans-IO schedules and their async shells) and measurement;
//! - [`stacks`]: grpc (tonic), quic (quinn) and tcp, client lanes and servers;
//! - [`client`], [`server`]: one sample's life cycle for each role;
//! - [`output`]: events on stdout, commands on stdin; [`failure`]: errors as `error` events;
//! - [`capabilities`], [`tls`]: what the peer offers, and the one TLS configuration of every stack;
//! - [`service`]: `BenchService`'s generated tonic client and server (build.rs);
//! - [`fault`]: the hidden conformance faults (`--conformance-fault MODE`) the conformance kit
//!   uses to check other peers' validation, documented there.

pub mod args;
pub mod capabilities;
pub mod client;
pub mod engine;
pub mod failure;
pub mod fault;
pub mod output;
pub mod server;
pub mod stacks;

/// The generated tonic client and server of `BenchService`, on `rpcarena_protocol::pb` messages.
#[allow(missing_docs, clippy::all)]
pub mod service {
    tonic::include_proto!("rpcarena.bench.v1");
}
pub mod tls;
pub mod transport;
