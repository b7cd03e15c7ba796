//! Matrix expansion: a campaign becomes a list of sample configurations.

use crate::campaign::{Campaign, LoadModel};
use rpcarena_protocol::workload::Shape;
use serde::{Deserialize, Serialize};

/// One point of the matrix: everything a sample needs to know about what it measures.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq, Hash)]
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
    /// Load model.
    pub load: LoadModel,
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

/// Every configuration of the campaign, in report order: cells, then shapes, concurrency,
/// request size, response size, load model.
pub fn expand(campaign: &Campaign) -> Vec<SampleConfig> {
    let w = &campaign.workload;
    let mut out = Vec::new();
    for cell in &campaign.cells {
        for &shape in &w.shapes {
            for &concurrency in &w.concurrency {
                for &request_size in &w.request_size {
                    for &response_size in &w.response_size {
                        for &load in &w.load {
                            out.push(SampleConfig {
                                key: format!(
                                    "{}/{}/c{}/{}B-{}B/{}",
                                    cell.id, shape, concurrency, request_size, response_size, load
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
                                load,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_the_full_product_in_report_order() {
        let text = r#"
name = "t"
seed = 1
[[peers]]
id = "p"
command = ["x"]
[[cells]]
id = "a"
client = "p"
server = "p"
stack = "grpc"
[[cells]]
id = "b"
client = "p"
server = "p"
stack = "quic"
[workload]
shapes = ["unary", "bidi"]
concurrency = [1, 4]
request_size = [16, 256]
"#;
        let campaign = Campaign::parse(text, "t").unwrap();
        let configs = expand(&campaign);
        assert_eq!(configs.len(), 2 * 2 * 2 * 2);
        assert_eq!(configs[0].key, "a/unary/c1/16B-256B/closed");
        assert_eq!(configs[1].key, "a/unary/c1/256B-256B/closed");
        assert_eq!(configs[15].key, "b/bidi/c4/256B-256B/closed");
        let keys: std::collections::HashSet<_> = configs.iter().map(|c| &c.key).collect();
        assert_eq!(keys.len(), configs.len(), "keys are unique");
        assert_eq!(configs[15].requests_per_op(), 128);
    }
}
