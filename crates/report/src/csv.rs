//! `aggregate.csv`: one row per configuration: median, min and max of every metric, the median's
//! confidence interval where the repetitions allow one, and the comparison with the baseline.

use crate::aggregate::{Row, RowMetrics, Stat};
use crate::commands::CsvRow as CommandRow;
use rpcarena_stats::Comparison;
use std::fmt::Write;

fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

/// A column group's name and where its figure is in a row's metrics.
type Column = (&'static str, fn(&RowMetrics) -> Option<Stat>);

/// Metrics with median, min and max columns.
const STATS: [Column; 10] = [
    ("ops_per_s", |m| Some(m.ops_per_s)),
    ("requests_per_s", |m| Some(m.requests_per_s)),
    ("responses_per_s", |m| Some(m.responses_per_s)),
    ("p50_us", |m| Some(m.p50_us)),
    ("p99_us", |m| Some(m.p99_us)),
    ("p999_us", |m| Some(m.p999_us)),
    ("client_cpu_us_per_op", |m| m.client_cpu_us_per_op),
    ("server_cpu_us_per_op", |m| m.server_cpu_us_per_op),
    ("client_peak_rss_mib", |m| m.client_rss_mib),
    ("server_peak_rss_mib", |m| m.server_rss_mib),
];

/// Optional metrics with a median column only.
const MEDIANS: [Column; 6] = [
    ("connect_ms", |m| m.connect_ms),
    ("uncorrected_p50_us", |m| m.uncorrected_p50_us),
    ("uncorrected_p99_us", |m| m.uncorrected_p99_us),
    ("send_lag_p99_us", |m| m.send_lag_p99_us),
    ("received_per_s", |m| m.received_per_s),
    ("max_in_flight", |m| m.max_in_flight),
];

fn num(v: f64) -> String {
    format!("{v:.3}")
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

fn comparison(c: Option<&Comparison>) -> [String; 5] {
    match c {
        Some(c) => [
            format!("{:.4}", c.ratio),
            format!("{:.4}", c.ratio_interval.lo),
            format!("{:.4}", c.ratio_interval.hi),
            format!("{:.4}", c.mann_whitney.p),
            c.verdict.to_string(),
        ],
        None => Default::default(),
    }
}

/// Renders the rows as CSV (RFC 4180, `\n` line ends, a header line): the configurations' rows,
/// then, in a run with commands, one row per command and figure, which fills `config`
/// (`command/<id>/<figure>`), `cell` (the command's id), `stack` (`command`), the sample counts
/// and six more columns at the end (only there in a run with commands; empty in a
/// configuration's row).
pub fn render(rows: &[Row], commands: &[CommandRow]) -> String {
    let mut out = header(!commands.is_empty());
    let width = out.split(',').count();
    let lines = rows
        .iter()
        .map(|row| {
            let mut f = fields(row);
            f.resize(width, String::new());
            f
        })
        .chain(commands.iter().map(|c| command_fields(c, width)));
    for line in lines {
        out.push_str(&line.iter().map(|f| quote(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}

/// The columns a command figure's row fills, at the end of the header.
const COMMAND_COLUMNS: &str = "figure,unit,resolution,value_median,value_min,value_max";

/// A command figure's row: its columns filled, every other one empty.
fn command_fields(row: &CommandRow, width: usize) -> Vec<String> {
    let mut f = vec![String::new(); width];
    f[0] = row.config.clone();
    f[1] = row.command.clone();
    f[6] = "command".to_string();
    f[14] = row.ok.to_string();
    f[15] = row.failed.to_string();
    let s = row.summary.as_ref();
    let tail = [
        row.figure.name.to_string(),
        row.figure.unit.to_string(),
        num_exact(row.figure.resolution),
        opt(s.map(|s| s.median)),
        opt(s.map(|s| s.min)),
        opt(s.map(|s| s.max)),
    ];
    f.truncate(width - tail.len());
    f.extend(tail);
    f
}

/// A resolution as written: enough decimals to not round it to zero.
fn num_exact(v: f64) -> String {
    format!("{v}")
}

/// The header line.
fn header(with_commands: bool) -> String {
    let mut out = String::from(
        "config,cell,client,server,client_language,server_language,stack,shape,concurrency,request_size,response_size,messages_per_stream,payload,load,samples_ok,samples_failed",
    );
    for (m, _) in STATS {
        let _ = write!(out, ",{m}_median,{m}_min,{m}_max");
    }
    out.push_str(",ops_per_s_ci95_lo,ops_per_s_ci95_hi,target_rate");
    for (m, _) in MEDIANS {
        let _ = write!(out, ",{m}_median");
    }
    for m in ["ops", "p99"] {
        let _ = write!(
            out,
            ",{m}_vs_baseline,{m}_vs_baseline_lo,{m}_vs_baseline_hi,{m}_vs_baseline_p,{m}_verdict"
        );
    }
    out.push_str(",flags,client_cpu_below_resolution,server_cpu_below_resolution");
    if with_commands {
        out.push(',');
        out.push_str(COMMAND_COLUMNS);
    }
    out.push('\n');
    out
}

/// One row's fields, unquoted, in header order.
fn fields(row: &Row) -> Vec<String> {
    let c = &row.config;
    let mut fields = vec![
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
        c.payload.to_string(),
        c.load.to_string(),
        row.ok.to_string(),
        row.failed.to_string(),
    ];
    let m = row.metrics.as_ref();
    for (_, figure) in STATS {
        let s = m.and_then(figure);
        fields.extend([
            opt(s.map(|s| s.median)),
            opt(s.map(|s| s.min)),
            opt(s.map(|s| s.max)),
        ]);
    }
    let ci = m.and_then(|m| m.ops_per_s.interval);
    fields.extend([
        opt(ci.map(|c| c.0)),
        opt(ci.map(|c| c.1)),
        opt(m.and_then(|m| m.target_rate)),
    ]);
    fields.extend(
        MEDIANS
            .iter()
            .map(|(_, figure)| opt(m.and_then(figure).map(|s| s.median))),
    );
    fields.extend(comparison(row.versus.as_ref().map(|v| &v.throughput)));
    fields.extend(comparison(row.versus.as_ref().map(|v| &v.p99)));
    fields.push(
        row.flags
            .iter()
            .map(|(f, n)| format!("{f}:{n}"))
            .collect::<Vec<_>>()
            .join(";"),
    );
    // true: the CPU medians above are bounds (less than one 10 ms clock tick was counted).
    fields.extend([
        m.is_some_and(|m| m.client_cpu_below_resolution).to_string(),
        m.is_some_and(|m| m.server_cpu_below_resolution).to_string(),
    ]);
    fields
}
