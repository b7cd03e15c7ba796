//! The data of rpcarena: campaigns, sample configurations, the schedule, and the artifact
//! contract, the one place where what a run writes is defined.
//!
//! Everything here is pure: serde types and functions of them, no I/O and no clock. The runner
//! turns these into processes and files; the report reads them back.
//!
//! - [`campaign`], [`network`], [`load`], [`duration`]: the campaign file and its checks;
//! - [`matrix`], [`schedule`]: the configurations and the seeded order they run in;
//! - [`invocation`]: the peer command line of each role, from a configuration;
//! - [`record`]: a sample's line in `samples.jsonl` and `manifest.json` (with the typed,
//!   versioned [`network::NetworkDescription`]); [`files`]: the run directory's file names;
//! - [`command`]: the command benchmark kind (`[[commands]]`, output parsers, its record);
//! - [`metrics`]: every figure of a sample, computed from its record (the runner and the
//!   report both call it).
//!
//! ```
//! use rpcarena_model::{campaign::Campaign, matrix, schedule};
//! let text = r#"
//! name = "demo"
//! seed = 1
//! [[peers]]
//! id = "rust"
//! command = ["rpcarena-peer-rust"]
//! [[cells]]
//! id = "rust-quic"
//! client = "rust"
//! server = "rust"
//! stack = "quic"
//! [workload]
//! concurrency = [4]
//! "#;
//! let campaign = Campaign::parse(text, "demo.toml").unwrap();
//! let configs = matrix::expand(&campaign);
//! assert_eq!(configs.len(), 4); // four shapes
//! let slots = schedule::schedule(configs.len(), campaign.repetitions, campaign.seed);
//! assert_eq!(slots.len(), 12); // three rounds by default
//! ```

pub mod campaign;
pub mod command;
pub mod duration;
mod fields;
pub mod files;
pub mod gocolumns;
pub mod invocation;
pub mod load;
pub mod matrix;
pub mod metrics;
pub mod network;
pub mod peerdir;
pub mod record;
pub mod schedule;
pub mod transport;
