//! The columns `go test -bench -benchmem` prints, computed from one sample's record, so a run
//! of rpcarena can be set beside cockroachdb/rpc-bench's table (docs/go-stacks.md):
//!
//! - **time/op**: the window divided by the completed operations, as `go test` divides the
//!   elapsed time by `b.N` (the inverse of throughput, not a latency); for `pingpong` the window
//!   divided by the exchanges (responses), as rpc-bench's `Stream` benchmarks count one
//!   exchange as one operation;
//! - **MB/s**: payload bytes both ways over the window, in 10^6 bytes per second (`b.SetBytes`
//!   counts both directions in rpc-bench);
//! - **B/op** and **allocs/op**: the client's allocations over the window (its `sample`), the
//!   server's (its `window` answers), and their sum (rpc-bench runs both in one process and
//!   cannot tell them apart), per operation as for time/op.
//!
//! A figure a peer does not count is `None`, never 0.

use crate::record::SampleRecord;

/// One sample's rpc-bench columns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GoColumns {
    /// Operations the per-op figures divide by: completed operations, or exchanges (pingpong).
    pub ops: u64,
    /// Window nanoseconds per operation.
    pub ns_per_op: f64,
    /// Payload megabytes (10^6) per second, both directions.
    pub mb_per_s: f64,
    /// Client bytes allocated per operation.
    pub client_bytes_per_op: Option<f64>,
    /// Client heap allocations per operation.
    pub client_allocs_per_op: Option<f64>,
    /// Server bytes allocated per operation (over the window).
    pub server_bytes_per_op: Option<f64>,
    /// Server heap allocations per operation (over the window).
    pub server_allocs_per_op: Option<f64>,
}

impl GoColumns {
    /// Client and server bytes per operation together, when both are counted.
    pub fn bytes_per_op(&self) -> Option<f64> {
        Some(self.client_bytes_per_op? + self.server_bytes_per_op?)
    }

    /// Client and server allocations per operation together, when both are counted.
    pub fn allocs_per_op(&self) -> Option<f64> {
        Some(self.client_allocs_per_op? + self.server_allocs_per_op?)
    }
}

/// The columns of a sample with a client result; `None` when nothing completed.
pub fn of(record: &SampleRecord) -> Option<GoColumns> {
    let client = record.client.as_ref()?;
    let ops = if record.config.shape.as_str() == "pingpong" {
        client.responses
    } else {
        client.completed
    };
    if ops == 0 || client.window_ns == 0 {
        return None;
    }
    let per_op = |total: Option<u64>| total.map(|t| t as f64 / ops as f64);
    let window = record.server.as_ref().and_then(|s| s.window.as_ref());
    Some(GoColumns {
        ops,
        ns_per_op: client.window_ns as f64 / ops as f64,
        mb_per_s: (client.request_bytes + client.response_bytes) as f64 * 1e3
            / client.window_ns as f64,
        client_bytes_per_op: per_op(client.allocated_bytes),
        client_allocs_per_op: per_op(client.allocations),
        server_bytes_per_op: per_op(window.and_then(|w| w.allocated_bytes)),
        server_allocs_per_op: per_op(window.and_then(|w| w.allocations)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{ServerResult, ServerWindow};

    /// A record as `rpcarena run` wrote it (the JavaScript peer on grpc), with round figures.
    fn record() -> SampleRecord {
        let line = include_str!("gocolumns_sample.json").trim();
        let mut record: SampleRecord = serde_json::from_str(line).unwrap();
        let client = record.client.as_mut().unwrap();
        client.completed = 1000;
        client.requests = 1000;
        client.responses = 1000;
        client.request_bytes = 1_024_000;
        client.response_bytes = 1_024_000;
        client.window_ns = 2_000_000_000;
        client.allocations = Some(96_000);
        client.allocated_bytes = Some(9_600_000);
        record
    }

    #[test]
    fn go_test_columns_of_a_unary_sample() {
        let mut r = record();
        r.config.shape = rpcarena_protocol::workload::Shape::Unary;
        r.server = Some(ServerResult {
            window: Some(ServerWindow {
                allocations: Some(144_000),
                allocated_bytes: Some(20_000_000),
                ..ServerWindow::default()
            }),
            ..ServerResult::default()
        });
        let g = of(&r).unwrap();
        assert_eq!(g.ops, 1000);
        assert_eq!(g.ns_per_op, 2_000_000.0);
        assert!((g.mb_per_s - 1.024).abs() < 1e-9, "{}", g.mb_per_s);
        assert_eq!(g.client_allocs_per_op, Some(96.0));
        assert_eq!(g.server_allocs_per_op, Some(144.0));
        assert_eq!(g.allocs_per_op(), Some(240.0));
        assert_eq!(g.bytes_per_op(), Some(9_600.0 + 20_000.0));
    }

    #[test]
    fn a_figure_nobody_counted_stays_absent() {
        let mut r = record();
        r.server = None;
        let g = of(&r).unwrap();
        assert_eq!(g.server_bytes_per_op, None);
        assert_eq!(g.bytes_per_op(), None, "no sum without the server's share");
        r.client.as_mut().unwrap().completed = 0;
        r.client.as_mut().unwrap().responses = 0;
        assert!(of(&r).is_none());
    }
}
