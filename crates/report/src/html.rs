//! `report.html`: one self-contained file (inline SVG, CSS and a little JavaScript; no network
//! access, no web fonts) with the same figures as `report.md`: the headline, throughput, message
//! rate and p99 charts per shape, latency percentile curves from each configuration's merged
//! histogram, per-second interval charts for drift, and sortable tables. A pure function of the
//! same inputs as the Markdown report; the SVG is written by hand (a few shapes and text), so
//! the bytes depend on nothing but the data.

use crate::aggregate::{FailedSample, Row, payload_label};
use crate::charts::{self, Chart, Figure, PALETTE};
use crate::headline;
use crate::markdown::Inputs;
use rpcarena_protocol::workload::Shape;
use rpcarena_stats::{Comparison, quantiles_ns};
use std::fmt::Write;

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328;background:#fff}
main{max-width:1180px;margin:0 auto;padding:24px}
h1{font-size:26px;margin:0 0 8px}h2{font-size:20px;margin:32px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
h3{font-size:16px;margin:20px 0 6px}
p.lead{color:#57606a}
.grid{display:flex;flex-wrap:wrap;gap:16px}
figure{margin:0;border:1px solid #d0d7de;border-radius:6px;padding:8px;background:#fff}
figcaption{font-weight:600;font-size:13px;margin-bottom:4px}
svg text{font:11px system-ui,sans-serif;fill:#1f2328}
svg .axis{stroke:#57606a;stroke-width:1}
svg .gridline{stroke:#eaeef2;stroke-width:1}
table{border-collapse:collapse;font-size:12px;margin:8px 0;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f6f8fa;cursor:pointer;user-select:none}
td.t,th.t{text-align:left}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
code{font-size:12px;background:#f6f8fa;padding:1px 4px;border-radius:4px}
.legend span{display:inline-block;margin-right:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
"#;

/// Sorts a table by the clicked column (numbers as numbers), and checks on load that every
/// chart drew something: the browser test reads the console for that line.
const SCRIPT: &str = r#"
document.querySelectorAll("table.sortable th").forEach(function(th){
  th.addEventListener("click",function(){
    var table=th.closest("table"),body=table.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
    var asc=th.getAttribute("aria-sort")!=="ascending";
    table.querySelectorAll("th").forEach(function(h){h.removeAttribute("aria-sort")});
    th.setAttribute("aria-sort",asc?"ascending":"descending");
    var rows=Array.prototype.slice.call(body.rows);
    function key(r){var t=r.cells[i]?r.cells[i].textContent.trim():"";var n=parseFloat(t.replace(/[^0-9.eE+-]/g,""));return isNaN(n)?t:n}
    rows.sort(function(a,b){var x=key(a),y=key(b);var c=(typeof x==="number"&&typeof y==="number")?x-y:String(x).localeCompare(String(y));return asc?c:-c});
    rows.forEach(function(r){body.appendChild(r)});
  });
});
(function(){
  var charts=document.querySelectorAll("svg[data-chart]"),empty=[];
  charts.forEach(function(s){var b=s.getBoundingClientRect();if(b.width<10||b.height<10||s.querySelectorAll("rect.bar,path.line").length===0){empty.push(s.getAttribute("data-chart"))}});
  if(empty.length){console.error("rpcarena-report-check: FAIL: charts without marks: "+empty.join(", "))}
  else{console.log("rpcarena-report-check: ok "+charts.length+" charts")}
})();
"#;

fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn colour(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// "1.2k", "350", "0.25": short tick labels.
fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

const W: f64 = 520.0;
const H: f64 = 250.0;
const LEFT: f64 = 56.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 28.0;
const BOTTOM: f64 = 40.0;

/// The frame of a chart: horizontal grid lines and y labels from 0 to `max`, the axes.
fn frame(out: &mut String, max: f64, y_label: &str) {
    let plot_h = H - TOP - BOTTOM;
    for i in 0..=4 {
        let v = max * f64::from(i) / 4.0;
        let y = TOP + plot_h - plot_h * f64::from(i) / 4.0;
        let _ = write!(
            out,
            r#"<line class="gridline" x1="{LEFT}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            W - RIGHT,
            LEFT - 4.0,
            y + 4.0,
            tick(v)
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{:.1}"/><line class="axis" x1="{LEFT}" x2="{:.1}" y1="{:.1}" y2="{:.1}"/><text transform="translate(12 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        H - BOTTOM,
        W - RIGHT,
        H - BOTTOM,
        H - BOTTOM,
        TOP + plot_h / 2.0,
        esc(y_label)
    );
}

fn legend(out: &mut String, names: &[String]) {
    let mut x = LEFT;
    for (i, name) in names.iter().enumerate() {
        let _ = write!(
            out,
            r#"<rect x="{x:.1}" y="8" width="10" height="10" fill="{}"/><text x="{:.1}" y="17">{}</text>"#,
            colour(i),
            x + 14.0,
            esc(name)
        );
        x += 24.0 + 7.0 * name.chars().count() as f64;
    }
}

/// A grouped bar chart: one group per language, one bar per stack.
fn bar_chart(chart: &Chart, id: &str) -> String {
    let mut out = String::new();
    let max = charts::axis_max(chart.max());
    let _ = write!(
        out,
        r#"<figure><figcaption>{}</figcaption><svg data-chart="{}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        esc(&chart.title),
        esc(id),
        esc(&chart.title)
    );
    frame(&mut out, max, chart.unit);
    let names: Vec<String> = chart.series.iter().map(|(s, _)| s.clone()).collect();
    legend(&mut out, &names);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let groups = chart.groups.len().max(1) as f64;
    let group_w = plot_w / groups;
    let bar_w = (group_w * 0.8) / chart.series.len().max(1) as f64;
    for (g, group) in chart.groups.iter().enumerate() {
        let gx = LEFT + group_w * g as f64;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            gx + group_w / 2.0,
            H - BOTTOM + 16.0,
            esc(group)
        );
        for (s, (stack, values)) in chart.series.iter().enumerate() {
            let Some(v) = values[g] else { continue };
            let h = if max > 0.0 { plot_h * v / max } else { 0.0 };
            let x = gx + group_w * 0.1 + bar_w * s as f64;
            let _ = write!(
                out,
                r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{h:.1}" fill="{}"><title>{} {}: {:.*}</title></rect>"#,
                TOP + plot_h - h,
                bar_w * 0.92,
                colour(s),
                esc(group),
                esc(stack),
                chart.digits,
                v
            );
        }
    }
    out.push_str("</svg></figure>");
    out
}

/// A line chart of several series over `x_range`, y from 0.
struct Lines<'a> {
    id: String,
    title: String,
    y_label: &'a str,
    x_label: &'a str,
    x_ticks: Vec<(f64, String)>,
    x_range: (f64, f64),
    series: Vec<(String, Vec<(f64, f64)>)>,
}

fn line_chart(c: &Lines<'_>) -> String {
    let mut out = String::new();
    let y_max = charts::axis_max(
        c.series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|&(_, y)| y))
            .fold(0.0, f64::max),
    );
    let _ = write!(
        out,
        r#"<figure><figcaption>{}</figcaption><svg data-chart="{}" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
        esc(&c.title),
        esc(&c.id),
        esc(&c.title)
    );
    frame(&mut out, y_max, c.y_label);
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let (x0, x1) = c.x_range;
    let span = if x1 > x0 { x1 - x0 } else { 1.0 };
    let px = |x: f64| LEFT + plot_w * (x - x0) / span;
    let py = |y: f64| TOP + plot_h - if y_max > 0.0 { plot_h * y / y_max } else { 0.0 };
    for (x, label) in &c.x_ticks {
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            px(*x),
            H - BOTTOM + 14.0,
            esc(label)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + plot_w / 2.0,
        H - 6.0,
        esc(c.x_label)
    );
    let names: Vec<String> = c.series.iter().map(|(n, _)| n.clone()).collect();
    legend(&mut out, &names);
    for (i, (name, points)) in c.series.iter().enumerate() {
        if points.is_empty() {
            continue;
        }
        let d: Vec<String> = points
            .iter()
            .enumerate()
            .map(|(k, &(x, y))| {
                format!(
                    "{}{:.1},{:.1}",
                    if k == 0 { "M" } else { "L" },
                    px(x),
                    py(y)
                )
            })
            .collect();
        let _ = write!(
            out,
            r#"<path class="line" d="{}" fill="none" stroke="{}" stroke-width="1.6"><title>{}</title></path>"#,
            d.join(""),
            colour(i),
            esc(name)
        );
    }
    out.push_str("</svg></figure>");
    out
}

/// Percentile curves of one shape's configurations: x is log10(1 / (1 - q)), from p0 to
/// p99.99, as HdrHistogram plots them.
fn percentile_chart(shape: Shape, rows: &[&Row]) -> Option<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = rows
        .iter()
        .filter(|r| r.metrics.is_some() && !r.latency.is_empty())
        .map(|r| {
            let xs: Vec<f64> = (0..=40).map(|k| f64::from(k) / 10.0).collect();
            let qs: Vec<f64> = xs.iter().map(|x| 1.0 - 10f64.powf(-x)).collect();
            let points = xs
                .iter()
                .zip(quantiles_ns(&r.latency, &qs))
                .map(|(&x, ns)| (x, ns as f64 / 1e3))
                .collect();
            (series_name(r), points)
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    Some(line_chart(&Lines {
        id: format!("percentiles-{shape}"),
        title: format!(
            "{} latency by percentile (every good sample's histogram merged)",
            shape.title()
        ),
        y_label: "microseconds",
        x_label: "percentile (log scale)",
        x_ticks: vec![
            (0.0, "p0".into()),
            (1.0, "p90".into()),
            (2.0, "p99".into()),
            (3.0, "p99.9".into()),
            (4.0, "p99.99".into()),
        ],
        x_range: (0.0, 4.0),
        series,
    }))
}

fn series_name(r: &Row) -> String {
    format!(
        "{} c{} {}{}",
        r.config.cell,
        r.config.concurrency,
        r.config.load,
        if r.config.payload.to_string() == "zeros" {
            String::new()
        } else {
            format!(" {}", r.config.payload)
        }
    )
}

/// Operations per second in each second of each sample's window, one line per sample.
fn interval_chart(row: &Row) -> Option<String> {
    let series: Vec<(String, Vec<(f64, f64)>)> = row
        .samples
        .iter()
        .filter(|s| !s.intervals.is_empty())
        .map(|s| {
            let points = s
                .intervals
                .iter()
                .map(|i| {
                    let length = (s.window_s - i.offset_s).clamp(1e-3, 1.0);
                    (i.offset_s + length / 2.0, i.completed as f64 / length)
                })
                .collect();
            (s.sample.clone(), points)
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let window = row.samples.iter().map(|s| s.window_s).fold(0.0, f64::max);
    let ticks = (0..=window.ceil() as u32)
        .map(|t| (f64::from(t), format!("{t}s")))
        .collect();
    Some(line_chart(&Lines {
        id: format!("intervals-{}", row.config.key),
        title: format!("{}: ops/s per second of the window", row.config.key),
        y_label: "operations/s",
        x_label: "time in the window (s), one line per sample",
        x_ticks: ticks,
        x_range: (0.0, window.max(1.0)),
        series,
    }))
}

fn detail_table(out: &mut String, rows: &[Row]) {
    out.push_str(r#"<table class="sortable"><thead><tr><th class="t">Language</th><th class="t">Stack</th><th class="t">Cell</th><th class="t">Shape</th><th class="t">Load</th><th class="t">Payload</th><th>c</th><th>Runs</th><th>Failed</th><th>p50 us</th><th>p99 us</th><th>p99.9 us</th><th>ops/s</th><th>request msg/s</th><th>response msg/s</th><th>client CPU us/op</th><th>server CPU us/op</th><th>client peak MiB</th><th>server peak MiB</th></tr></thead><tbody>"#);
    for r in rows {
        let c = &r.config;
        let _ = write!(
            out,
            r#"<tr><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td>{}</td><td>{}</td><td>{}</td>"#,
            esc(&r.language()),
            esc(&c.stack),
            esc(&c.cell),
            c.shape.title(),
            esc(&c.load.to_string()),
            esc(&payload_label(c)),
            c.concurrency,
            r.ok,
            r.failed
        );
        match &r.metrics {
            Some(m) => {
                let _ = write!(
                    out,
                    "<td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
                    m.p50_us.median,
                    m.p99_us.median,
                    m.p999_us.median,
                    m.ops_per_s.median,
                    m.requests_per_s.median,
                    m.responses_per_s.median,
                    m.process_medians().join("</td><td>")
                );
            }
            None => out.push_str(r#"<td colspan="10" class="t">no good sample</td></tr>"#),
        }
    }
    out.push_str("</tbody></table>");
}

fn pairs_table(out: &mut String, pairs: &[headline::Pair<'_>]) {
    if pairs.is_empty() {
        return;
    }
    out.push_str(r#"<table class="sortable"><thead><tr><th class="t">Candidate</th><th class="t">Reference</th><th class="t">Shape</th><th class="t">Load</th><th class="t">Payload</th><th>c</th><th>throughput ratio</th><th>interval</th><th>p</th><th class="t">verdict</th><th class="t">ranges</th><th>p99 ratio</th><th>p</th><th class="t">verdict</th><th class="t">ranges</th></tr></thead><tbody>"#);
    let verdict = |c: &Comparison| match headline::noise_note(c, true) {
        Some(why) => format!("{} ({why})", c.verdict),
        None => c.verdict.to_string(),
    };
    for p in pairs {
        let c = &p.candidate.config;
        let _ = write!(
            out,
            r#"<tr><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td><td>{}</td><td>{:.2}x</td><td>{:.2}-{:.2}</td><td>{:.3}</td><td class="t">{}</td><td class="t">{}</td><td>{:.2}x</td><td>{:.3}</td><td class="t">{}</td><td class="t">{}</td></tr>"#,
            esc(&c.cell),
            esc(&p.reference.config.cell),
            c.shape.title(),
            esc(&c.load.to_string()),
            esc(&payload_label(c)),
            c.concurrency,
            p.throughput.ratio,
            p.throughput.ratio_interval.lo,
            p.throughput.ratio_interval.hi,
            p.throughput.mann_whitney.p,
            esc(&verdict(&p.throughput)),
            headline::ranges_cell(&p.throughput_ranges),
            p.p99.ratio,
            p.p99.mann_whitney.p,
            esc(&verdict(&p.p99)),
            headline::ranges_cell(&p.p99_ranges),
        );
    }
    out.push_str("</tbody></table>");
}

/// Renders `report.html`.
pub fn render(inputs: &Inputs<'_>) -> String {
    let rows = &inputs.aggregates.rows;
    let mut out = String::new();
    write_head(&mut out, inputs);
    write_headline(&mut out, inputs);
    write_bar_charts(&mut out, rows);
    write_percentiles(&mut out, rows);
    write_intervals(&mut out, rows);
    out.push_str("<h2>Detailed results</h2><p>Medians over each configuration's good samples; click a column to sort.</p>");
    detail_table(&mut out, rows);
    let commands = crate::commands::markdown(inputs.campaign, inputs.commands);
    if !commands.is_empty() {
        // the same tables as report.md's, as text
        let _ = write!(out, "<h2>Commands</h2><pre>{}</pre>", esc(&commands));
    }
    write_failures(&mut out, &inputs.aggregates.failures);
    write_artifacts(&mut out, inputs);
    let _ = writeln!(out, "</main><script>{SCRIPT}</script></body></html>");
    one_block_per_line(out)
}

/// The document's head, the title and description, the run's provenance line and the notes.
fn write_head(out: &mut String, inputs: &Inputs<'_>) {
    let m = inputs.manifest;
    let title = inputs.campaign.map_or("campaign", |c| c.name.as_str());
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>rpcarena report: {}</title><style>{STYLE}</style></head><body><main>",
        esc(title)
    );
    let _ = write!(out, "<h1>rpcarena report: {}</h1>", esc(title));
    if let Some(c) = inputs.campaign
        && !c.description.trim().is_empty()
    {
        let _ = write!(out, r#"<p class="lead">{}</p>"#, esc(c.description.trim()));
    }
    let _ = write!(
        out,
        "<p>rpcarena {} from <code>{}</code>{}; host {} x {} CPUs, Linux {}; {} samples planned, {} ok, {} failed. Every figure is computed from <code>samples.jsonl</code> and <code>manifest.json</code>; <code>report.md</code> has the same figures with the full set-up and interpretation boundaries.</p>",
        esc(&m.rpcarena_version),
        esc(&m.source_revision),
        if m.source_dirty { " (dirty)" } else { "" },
        esc(&m.host.cpu_model),
        m.host.cpus,
        esc(&m.host.kernel),
        m.samples.planned,
        m.samples.ok,
        m.samples.failed
    );
    for note in inputs.notes {
        let _ = write!(out, "<p><strong>Note:</strong> {}</p>", esc(note));
    }
}

/// The headline paragraphs and the table of the pairs they count.
fn write_headline(out: &mut String, inputs: &Inputs<'_>) {
    out.push_str("<h2>Headline</h2>");
    for p in headline::paragraphs(inputs.pairs, inputs.campaign.map(|c| c.repetitions)) {
        let _ = write!(out, "<p>{}</p>", esc(&p));
    }
    pairs_table(out, inputs.pairs);
}

/// Bar charts of the medians per figure and shape.
fn write_bar_charts(out: &mut String, rows: &[Row]) {
    let (_, top) = charts::charted_rows(rows);
    let Some(top) = top else { return };
    let _ = write!(
        out,
        "<h2>Charts</h2><p>Medians of the closed-loop configurations at concurrency {top}, grouped by language, one bar per stack. Hover a bar for its value.</p>"
    );
    for figure in Figure::ALL {
        let _ = write!(out, "<h3>{}</h3><div class=\"grid\">", figure.section());
        for (i, chart) in charts::charts(rows, figure).iter().enumerate() {
            out.push_str(&bar_chart(
                chart,
                &format!("{}-{}-{i}", figure.section(), chart.shape),
            ));
        }
        out.push_str("</div>");
    }
}

/// Latency percentile curves, one chart per shape.
fn write_percentiles(out: &mut String, rows: &[Row]) {
    let mut percentiles = String::new();
    for shape in Shape::EVERY {
        let shape_rows: Vec<&Row> = rows
            .iter()
            .filter(|r| r.config.shape == shape && r.config.load.whole_operations())
            .collect();
        if let Some(svg) = percentile_chart(shape, &shape_rows) {
            percentiles.push_str(&svg);
        }
    }
    if !percentiles.is_empty() {
        let _ = write!(
            out,
            "<h2>Latency percentiles</h2><p>Each configuration's good samples merged into one histogram (bucket upper bounds, 0.1% precision), from p0 to p99.99; the x axis is log10(1 / (1 - q)).</p><div class=\"grid\">{percentiles}</div>"
        );
    }
}

/// Per-second interval charts, one per configuration.
fn write_intervals(out: &mut String, rows: &[Row]) {
    let intervals: Vec<String> = rows
        .iter()
        .filter(|r| r.config.load.whole_operations())
        .filter_map(interval_chart)
        .collect();
    if !intervals.is_empty() {
        let _ = write!(
            out,
            "<h2>Per-second intervals</h2><p>Operations that started in each second of the admission window and completed, per sample: a line that falls or rises within a window is drift.</p><div class=\"grid\">{}</div>",
            intervals.join("")
        );
    }
}

/// The failed samples and why, when there are any.
fn write_failures(out: &mut String, failures: &[FailedSample]) {
    if failures.is_empty() {
        return;
    }
    out.push_str(r#"<h2>Failed samples</h2><table class="sortable"><thead><tr><th class="t">Sample</th><th class="t">Configuration</th><th class="t">Reason</th></tr></thead><tbody>"#);
    for f in failures {
        let _ = write!(
            out,
            r#"<tr><td class="t">{}</td><td class="t">{}</td><td class="t">{}</td></tr>"#,
            esc(&f.sample),
            esc(&f.key),
            esc(&f.reason)
        );
    }
    out.push_str("</tbody></table>");
}

/// The SHA-256s a reader can check.
fn write_artifacts(out: &mut String, inputs: &Inputs<'_>) {
    let m = inputs.manifest;
    out.push_str(r#"<h2>Artifacts</h2><table><thead><tr><th class="t">File</th><th class="t">SHA-256</th></tr></thead><tbody>"#);
    let mut row = |file: &str, sha256: &str| {
        let _ = write!(
            out,
            r#"<tr><td class="t">{}</td><td class="t"><code>{}</code></td></tr>"#,
            esc(file),
            esc(sha256)
        );
    };
    row(&format!("campaign {}", m.campaign.file), &m.campaign.sha256);
    if let Some(sha) = inputs.samples_sha256 {
        row("samples.jsonl", sha);
    }
    row(
        "aggregate.csv",
        &crate::sha256_hex(inputs.aggregate_csv.as_bytes()),
    );
    for p in &m.peers {
        row(&format!("peer {}", p.id), &p.sha256);
    }
    out.push_str("</tbody></table><p>Check every hash the manifest lists with <code>rpcarena verify &lt;run directory&gt;</code>.</p>");
}

/// One block per line, so that diffs of the file (and its snapshot) stay readable.
fn one_block_per_line(mut out: String) -> String {
    for tag in [
        "</figure>",
        "</table>",
        "</p>",
        "</h1>",
        "</h2>",
        "</h3>",
        "</tr>",
        "</style>",
    ] {
        out = out.replace(tag, &format!("{tag}\n"));
    }
    out
}
