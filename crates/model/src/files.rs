//! The names of a run directory's files: written by the runner, read by the report, sealed in
//! the manifest. Nothing else spells them out.

/// What ran: campaign text, peers, host, network, hashes of the other artifacts.
pub const MANIFEST: &str = "manifest.json";
/// One sample per line, appended and synced as each sample ends.
pub const SAMPLES: &str = "samples.jsonl";
/// Per-configuration aggregates.
pub const AGGREGATE: &str = "aggregate.csv";
/// The Markdown report.
pub const REPORT_MD: &str = "report.md";
/// The HTML report: self-contained (inline SVG, CSS and script), the same figures as `report.md`.
pub const REPORT_HTML: &str = "report.html";
/// Each sample's peer stdout and stderr, in `raw/<sample>/`.
pub const RAW: &str = "raw";
/// The run's CA and server certificates (public: they let a reader verify what the peers used).
pub const CERTIFICATES: &str = "certificates";
/// The run's private keys (CA and servers), mode 0700: never publish this directory.
pub const PRIVATE: &str = "private";

/// The files whose SHA-256 the manifest records at the end of a run, when present.
pub const SEALED: [&str; 4] = [SAMPLES, AGGREGATE, REPORT_MD, REPORT_HTML];

/// `raw/<sample>`, relative to the run directory (as sample records hold it).
pub fn raw_dir(sample: &str) -> String {
    format!("{RAW}/{sample}")
}

/// A peer's log in its sample's raw directory: `client.stdout`, `server.stderr`.
pub fn peer_log(role: rpcarena_protocol::event::Role, stream: &str) -> String {
    format!("{role}.{stream}")
}
