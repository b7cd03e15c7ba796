//! Runs rpcarena campaigns.
//!
//! [`prepare`] reads and checks a campaign (syntax, meaning, peer executables, peer capabilities,
//! the network this host can build) without running anything; [`run`] then executes its
//! schedule: for every sample a fresh server and client peer, driven by a sans-IO state machine
//! (`sample::machine`, where a sample's fate is decided) behind a thin shell that spawns the
//! processes, samples /proc around the measured window and appends the record to
//! `samples.jsonl`. Reports are not this crate's business: the `rpcarena` binary calls the report
//! crate on the finished directory, exactly as `rpcarena report DIR` does, then [`seal`]s it.
//!
//! Signals are the binary's too: it makes itself a child subreaper and calls [`interrupt`] on
//! SIGINT, SIGTERM and SIGHUP.

mod artifacts;
mod capabilities;
mod certs;
mod checks;
mod command;
mod error;
mod escape;
mod host;
mod launcher;
mod network;
mod noise;
pub mod peerbuild;
mod prepare;
mod probe;
mod process;
mod procstat;
mod resolve;
mod resume;
mod run;
mod sample;
mod stop;

pub use artifacts::{Sealing, seal_manifest as seal};
pub use capabilities::query as query_capabilities;
pub use certs::{Authority, ServerIdentity};
pub use error::{Error, FileContext, Result, chain as error_chain};
pub use prepare::{CampaignSource, Prepared, ReadyPeer, load, prepare};
pub use probe::{Probe, select_config};
pub use process::{PeerProcess, describe_exit};
pub use resolve::{resolve_command, resolve_peer_id};
pub use run::{BuildInfo, Progress, RunOptions, RunOutcome, run};
pub use sample::machine::{Line, Message};
pub use sample::{WindowObserver, WindowPeers};
pub use stop::{interrupt, signal_name, stopping_signal};
