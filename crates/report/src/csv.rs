//! `aggregate.csv`: one row per configuration, median/min/max of every metric.

use crate::aggregate::{Row, Stat};
use std::fmt::Write;

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

const METRICS: [&str; 10] = [
    "ops_per_s",
    "requests_per_s",
    "responses_per_s",
    "p50_us",
    "p99_us",
    "p999_us",
    "client_cpu_us_per_op",
    "server_cpu_us_per_op",
    "client_peak_rss_mib",
    "server_peak_rss_mib",
];

/// Renders the rows as CSV (RFC 4180, `\n` line ends, a header line).
pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(
        "config,cell,client,server,client_language,server_language,stack,shape,concurrency,request_size,response_size,messages_per_stream,load,samples_ok,samples_failed",
    );
    for m in METRICS {
        let _ = write!(out, ",{m}_median,{m}_min,{m}_max");
    }
    out.push('\n');
    for row in rows {
        let c = &row.config;
        let fields = [
            c.key.clone(),
            c.cell.clone(),
            c.client.clone(),
            c.server.clone(),
            row.client_language.clone(),
            row.server_language.clone(),
            c.stack.clone(),
            c.shape.to_string(),
            c.concurrency.to_string(),
            c.request_size.to_string(),
            c.response_size.to_string(),
            c.messages_per_stream.to_string(),
            c.load.to_string(),
            row.ok.to_string(),
            row.failed.to_string(),
        ];
        out.push_str(
            &fields
                .iter()
                .map(|f| quote(f))
                .collect::<Vec<_>>()
                .join(","),
        );
        let stats: Vec<Option<Stat>> = match &row.metrics {
            Some(m) => vec![
                Some(m.ops_per_s),
                Some(m.requests_per_s),
                Some(m.responses_per_s),
                Some(m.p50_us),
                Some(m.p99_us),
                Some(m.p999_us),
                Some(m.client_cpu_us_per_op),
                Some(m.server_cpu_us_per_op),
                Some(m.client_rss_mib),
                Some(m.server_rss_mib),
            ],
            None => vec![None; METRICS.len()],
        };
        for stat in stats {
            match stat {
                Some(s) => {
                    let _ = write!(out, ",{:.3},{:.3},{:.3}", s.median, s.min, s.max);
                }
                None => out.push_str(",,,"),
            }
        }
        out.push('\n');
    }
    out
}
