//! Matrix expansion: a campaign becomes a list of sample configurations.

use crate::campaign::{Campaign, Cell, Workload};
use crate::load::{LoadSpec, Payload};
use rpcarena_protocol::workload::{ClientMode, Shape};
use serde::{Deserialize, Serialize};

/// One point of the matrix: everything a sample needs to know about what it measures.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct SampleConfig {
    /// Stable key, e.g. `rust-grpc/unary/c4/256B-256B/closed`: groups repetitions.
    pub key: String,
    /// Cell id.
    pub cell: String,
    /// Client peer id.
    pub client: String,
    /// Server peer id.
    pub server: String,
    /// Stack name.
    pub stack: String,
    /// RPC shape.
    pub shape: Shape,
    /// Lanes.
    pub concurrency: u32,
    /// Request payload bytes.
    pub request_size: u32,
    /// Response payload bytes.
    pub response_size: u32,
    /// Messages per streamed direction.
    pub messages_per_stream: u32,
    /// Payload kind.
    pub payload: Payload,
    /// Load model.
    pub load: LoadSpec,
    /// TLS on (the default) or plaintext (`--tls off`, revision 1.3): the campaign's `tls`.
    #[serde(default = "tls_on", skip_serializing_if = "is_on")]
    pub tls: bool,
    /// (1.4) What sends the calls: the library's official client, or replayed requests.
    #[serde(default, skip_serializing_if = "ClientMode::is_official")]
    pub client_mode: ClientMode,
}

fn tls_on() -> bool {
    true
}

fn is_on(tls: &bool) -> bool {
    *tls
}

impl SampleConfig {
    /// Request messages one operation sends.
    pub fn requests_per_op(&self) -> u64 {
        self.shape.requests_per_op(self.messages_per_stream)
    }

    /// Response messages one operation receives.
    pub fn responses_per_op(&self) -> u64 {
        self.shape.responses_per_op(self.messages_per_stream)
    }
}

/// Every configuration of the campaign, in report order: cells, then shapes, load models,
/// concurrency (a load model that fixes its own, such as `window`, uses that one instead),
/// request size, response size, payload kind.
pub fn expand(campaign: &Campaign) -> Vec<SampleConfig> {
    let w = &campaign.workload;
    let mut out = Vec::new();
    for cell in &campaign.cells {
        let client_mode = cell.client_mode(w);
        for &shape in cell.shapes(w) {
            for load in cell.loads(w) {
                let concurrencies = match load.fixed_concurrency() {
                    Some(c) => vec![c],
                    None => w.concurrency.clone(),
                };
                for concurrency in concurrencies {
                    for (request_size, response_size, payload) in sized_payloads(cell, w) {
                        let mode = match client_mode {
                            ClientMode::Official => String::new(),
                            other => format!("/{other}"),
                        };
                        out.push(SampleConfig {
                            key: format!(
                                "{}/{shape}/c{concurrency}/{request_size}B-{response_size}B/{payload}/{load}{mode}",
                                cell.id
                            ),
                            cell: cell.id.clone(),
                            client: cell.client.clone(),
                            server: cell.server.clone(),
                            stack: cell.stack.clone(),
                            shape,
                            concurrency,
                            request_size,
                            response_size,
                            messages_per_stream: w.messages_per_stream,
                            payload,
                            load: load.clone(),
                            tls: campaign.tls,
                            client_mode,
                        });
                    }
                }
            }
        }
    }
    out
}

/// The (request size, response size, payload kind) triples of `cell`: every size pair with every
/// kind that takes sizes, and a kind with a fixed procedure (`dated`) once, at sizes 0.
fn sized_payloads(cell: &Cell, w: &Workload) -> Vec<(u32, u32, Payload)> {
    let mut out = Vec::new();
    for (k, (request_size, response_size)) in w.size_pairs().into_iter().enumerate() {
        for &payload in cell.payloads(w) {
            if payload.takes_sizes() {
                out.push((request_size, response_size, payload));
            } else if k == 0 {
                out.push((0, 0, payload));
            }
        }
    }
    out
}

/// Campaign `t`: peer `p`, cell `a` on grpc; the tests below add to it.
#[cfg(test)]
fn one_cell() -> rpcarena_fixtures::CampaignText {
    rpcarena_fixtures::campaign("t", 1)
        .peer("p", &["x"])
        .cell("a", "p", "p", "grpc")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The campaign of `text` and the keys of its configurations, in order.
    fn expanded(text: &str) -> (Campaign, Vec<String>) {
        let campaign = Campaign::parse(text, "t").unwrap();
        let keys = expand(&campaign).into_iter().map(|c| c.key).collect();
        (campaign, keys)
    }

    #[test]
    fn expands_the_full_product_in_report_order() {
        let text = one_cell()
            .cell("b", "p", "p", "quic")
            .section("[workload]\nshapes = [\"unary\", \"bidi\"]\nconcurrency = [1, 4]\nrequest_size = [16, 256]")
            .build();
        let campaign = Campaign::parse(&text, "t").unwrap();
        let configs = expand(&campaign);
        assert_eq!(configs.len(), 2 * 2 * 2 * 2);
        assert_eq!(configs[0].key, "a/unary/c1/16B-256B/zeros/closed");
        assert_eq!(configs[1].key, "a/unary/c1/256B-256B/zeros/closed");
        assert_eq!(configs[15].key, "b/bidi/c4/256B-256B/zeros/closed");
        let keys: std::collections::HashSet<_> = configs.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), configs.len(), "keys are unique");
        assert_eq!(configs[15].requests_per_op(), 128);
    }

    #[test]
    fn a_model_that_fixes_its_concurrency_replaces_the_list() {
        let text = one_cell()
            .section(
                r#"[workload]
shapes = ["unary"]
concurrency = [1, 4]
payload = ["zeros", "structured"]
load = ["closed", { model = "window", in_flight = 50 }, { model = "open", rate = 500 }]"#,
            )
            .build();
        let (_, keys) = expanded(&text);
        assert_eq!(
            keys,
            [
                "a/unary/c1/256B-256B/zeros/closed",
                "a/unary/c1/256B-256B/structured/closed",
                "a/unary/c4/256B-256B/zeros/closed",
                "a/unary/c4/256B-256B/structured/closed",
                "a/unary/c50/256B-256B/zeros/window-50",
                "a/unary/c50/256B-256B/structured/window-50",
                "a/unary/c1/256B-256B/zeros/open-500-constant",
                "a/unary/c1/256B-256B/structured/open-500-constant",
                "a/unary/c4/256B-256B/zeros/open-500-constant",
                "a/unary/c4/256B-256B/structured/open-500-constant",
            ]
        );
    }

    #[test]
    fn a_cell_with_its_own_shapes_runs_only_those() {
        let text = one_cell()
            .cell("b", "p", "p", "netrpc-gob")
            .section("shapes = [\"unary\"]")
            .section("[workload]\nshapes = [\"unary\", \"pingpong\"]\nconcurrency = [1]")
            .build();
        let (campaign, keys) = expanded(&text);
        assert_eq!(
            keys,
            [
                "a/unary/c1/256B-256B/zeros/closed",
                "a/pingpong/c1/256B-256B/zeros/closed",
                "b/unary/c1/256B-256B/zeros/closed",
            ]
        );
        assert_eq!(campaign.planned_samples(), 3 * 3);
    }

    #[test]
    fn dated_runs_once_per_cell_at_sizes_zero_and_replay_is_in_the_key() {
        let text = one_cell()
            .cell("b", "p", "p", "orpc-http")
            .cell_line("payload = [\"zeros\", \"dated\"]")
            .cell_line("client_mode = \"replay\"")
            .section(
                "[workload]\nshapes = [\"unary\"]\nconcurrency = [1]\nrequest_size = [16, 256]",
            )
            .build();
        let (campaign, keys) = expanded(&text);
        assert_eq!(
            keys,
            [
                "a/unary/c1/16B-256B/zeros/closed",
                "a/unary/c1/256B-256B/zeros/closed",
                "b/unary/c1/16B-256B/zeros/closed/replay",
                "b/unary/c1/0B-0B/dated/closed/replay",
                "b/unary/c1/256B-256B/zeros/closed/replay",
            ]
        );
        let configs = expand(&campaign);
        assert_eq!(configs[0].client_mode, ClientMode::Official);
        assert_eq!(configs[3].client_mode, ClientMode::Replay);
        assert_eq!(configs[3].payload, Payload::Dated);
    }

    #[test]
    fn dated_with_a_stream_shape_is_refused_with_the_path() {
        let text = one_cell()
            .cell_line("payload = [\"dated\"]")
            .section("[workload]\nshapes = [\"unary\", \"bidi\"]\nconcurrency = [1]")
            .build();
        let problems = Campaign::parse(&text, "t").unwrap_err().to_string();
        assert!(problems.contains("cells[0].payload[0]"), "{problems}");
        assert!(problems.contains("unary procedure"), "{problems}");
    }

    #[test]
    fn paired_sizes_run_each_pair_once() {
        let text = one_cell()
            .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [1]")
            .section(
                "request_size = [1024, 65536]\nresponse_size = [1024, 65536]\npaired_sizes = true",
            )
            .build();
        let (campaign, keys) = expanded(&text);
        assert_eq!(
            keys,
            [
                "a/unary/c1/1024B-1024B/zeros/closed",
                "a/unary/c1/65536B-65536B/zeros/closed"
            ]
        );
        assert_eq!(campaign.planned_samples(), 2 * 3);
        let uneven = text.replace("response_size = [1024, 65536]", "response_size = [1024]");
        let err = Campaign::parse(&uneven, "t").unwrap_err().to_string();
        assert!(err.contains("workload.paired_sizes"), "{err}");
    }
}
