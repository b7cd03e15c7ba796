//! What the charts of both reports show: per shape, one group of bars per language and one bar
//! per stack, at the campaign's highest concurrency, as the published report draws them. The
//! Markdown report renders these as Mermaid `xychart-beta` blocks (GitHub draws them), the HTML
//! report as inline SVG.

use crate::aggregate::{Row, RowMetrics};
use rpcarena_protocol::workload::Shape;

/// One figure drawn per shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Median operations per second.
    Throughput,
    /// Median application message rate (requests for unary, client streams and bidi; responses
    /// for server streams: the direction that carries the stream).
    Messages,
    /// Median p99 latency.
    P99,
}

impl Figure {
    /// In the order the reports show them.
    pub const ALL: [Figure; 3] = [Figure::Throughput, Figure::Messages, Figure::P99];

    /// Section title.
    pub fn section(self) -> &'static str {
        match self {
            Figure::Throughput => "Throughput",
            Figure::Messages => "Application message rates",
            Figure::P99 => "p99 latency",
        }
    }

    /// What the chart shows, for a title: "median throughput".
    pub fn what(self, shape: Shape) -> &'static str {
        match (self, shape) {
            (Figure::Throughput, _) => "median throughput",
            (Figure::Messages, Shape::Unary | Shape::Bidi | Shape::Pingpong) => {
                "median request and response message rate"
            }
            (Figure::Messages, Shape::ClientStream | Shape::Send) => "median request message rate",
            (Figure::Messages, Shape::ServerStream) => "median response message rate",
            (Figure::P99, _) => "median p99 latency",
        }
    }

    /// The y axis.
    pub fn unit(self, shape: Shape) -> &'static str {
        match (self, shape) {
            (Figure::Throughput, _) => "operations/s",
            (Figure::Messages, Shape::Unary | Shape::Bidi | Shape::Pingpong) => {
                "messages/s in each direction"
            }
            (Figure::Messages, Shape::ClientStream | Shape::Send) => "request messages/s",
            (Figure::Messages, Shape::ServerStream) => "response messages/s",
            (Figure::P99, _) => "microseconds",
        }
    }

    /// The row's value.
    pub fn value(self, shape: Shape, m: &RowMetrics) -> f64 {
        match (self, shape) {
            (Figure::Throughput, _) => m.ops_per_s.median,
            (Figure::Messages, Shape::ServerStream) => m.responses_per_s.median,
            (Figure::Messages, _) => m.requests_per_s.median,
            (Figure::P99, _) => m.p99_us.median,
        }
    }

    /// Digits after the point when printed.
    pub fn digits(self) -> usize {
        match self {
            Figure::P99 => 3,
            _ => 1,
        }
    }
}

/// One chart: groups (x axis) by language, one series per stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// The shape.
    pub shape: Shape,
    /// Title, e.g. "Unary median throughput at concurrency 4".
    pub title: String,
    /// Y axis label.
    pub unit: &'static str,
    /// Languages, in row order.
    pub groups: Vec<String>,
    /// (stack, one value per group; `None` where that language has no such row).
    pub series: Vec<(String, Vec<Option<f64>>)>,
    /// Digits after the point.
    pub digits: usize,
}

impl Chart {
    /// The largest value, for the axis.
    pub fn max(&self) -> f64 {
        self.series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten())
            .fold(0.0, |a, &b| f64::max(a, b))
    }
}

/// Rows a chart can show: whole operations of the closed-loop kind (the charts compare stacks
/// at the same offered concurrency), with good samples, at the highest concurrency measured.
pub fn charted_rows(rows: &[Row]) -> (Vec<&Row>, Option<u32>) {
    let eligible: Vec<&Row> = rows
        .iter()
        .filter(|r| r.metrics.is_some() && r.config.load.model() == "closed")
        .collect();
    let top = eligible.iter().map(|r| r.config.concurrency).max();
    (
        eligible
            .into_iter()
            .filter(|r| Some(r.config.concurrency) == top)
            .collect(),
        top,
    )
}

/// Every chart of `figure`, one per shape and remaining workload variant (sizes, payload).
pub fn charts(rows: &[Row], figure: Figure) -> Vec<Chart> {
    let (rows, top) = charted_rows(rows);
    let Some(top) = top else { return Vec::new() };
    let mut out = Vec::new();
    for shape in Shape::EVERY {
        let mut variants: Vec<(u32, u32, String)> = Vec::new();
        for r in rows.iter().filter(|r| r.config.shape == shape) {
            let v = (
                r.config.request_size,
                r.config.response_size,
                r.config.payload.to_string(),
            );
            if !variants.contains(&v) {
                variants.push(v);
            }
        }
        for variant in &variants {
            let rows: Vec<&&Row> = rows
                .iter()
                .filter(|r| {
                    r.config.shape == shape
                        && (
                            r.config.request_size,
                            r.config.response_size,
                            r.config.payload.to_string(),
                        ) == *variant
                })
                .collect();
            let mut groups: Vec<String> = Vec::new();
            let mut stacks: Vec<String> = Vec::new();
            for r in &rows {
                if !groups.contains(&r.language()) {
                    groups.push(r.language());
                }
                if !stacks.contains(&r.config.stack) {
                    stacks.push(r.config.stack.clone());
                }
            }
            let series = stacks
                .iter()
                .map(|stack| {
                    let values = groups
                        .iter()
                        .map(|g| {
                            rows.iter()
                                .find(|r| &r.config.stack == stack && &r.language() == g)
                                .and_then(|r| r.metrics.as_ref())
                                .map(|m| figure.value(shape, m))
                        })
                        .collect();
                    (stack.clone(), values)
                })
                .collect();
            let suffix = if variants.len() > 1 {
                format!(" ({} B / {} B {})", variant.0, variant.1, variant.2)
            } else {
                String::new()
            };
            out.push(Chart {
                shape,
                title: format!(
                    "{} {} at concurrency {top}{suffix}",
                    shape.title(),
                    figure.what(shape)
                ),
                unit: figure.unit(shape),
                groups,
                series,
                digits: figure.digits(),
            });
        }
    }
    out
}

/// A round axis end above `max`: two significant digits, at least 5% headroom.
pub fn axis_max(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let target = max * 1.05;
    let step = 10f64.powf(target.log10().floor() - 1.0);
    (target / step).ceil() * step
}

/// Bar colours, one per series (colour-blind safe: Okabe-Ito).
pub const PALETTE: [&str; 6] = [
    "#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
];
