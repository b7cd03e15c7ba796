//! The parts of `report.md` that follow the published report's structure: the headline, the
//! Mermaid charts, the detailed table, the network and its physical limits, and the artifacts'
//! SHA-256s. Pure functions of the aggregates and the manifest.

use crate::aggregate::{Row, payload_label};
use crate::charts::{self, Chart, Figure, PALETTE};
use crate::headline::{self, Pair};
use crate::limits;
use rpcarena_model::network::NetworkBackend;
use rpcarena_model::record::Manifest;
use rpcarena_netem_core::{LinkProfile, TopologyInfo};
use rpcarena_stats::{Comparison, Verdict};
use std::fmt::Write;

/// The names of [`PALETTE`]'s colours, for the sentence under the charts (Mermaid's xychart has
/// no legend).
const COLOUR_NAMES: [&str; 6] = [
    "blue",
    "orange",
    "green",
    "purple",
    "sky blue",
    "vermillion",
];

/// `## Headline`.
pub fn write_headline(out: &mut String, pairs: &[Pair<'_>], repetitions: Option<u32>) {
    let _ = writeln!(out, "## Headline\n");
    for paragraph in headline::paragraphs(pairs, repetitions) {
        let _ = writeln!(out, "{paragraph}\n");
    }
    if pairs.is_empty() {
        return;
    }
    let lines: Vec<String> = pairs.iter().map(pair_line).collect();
    crate::table::write(
        out,
        "| Shape | Language | Load | Payload | c | Candidate | Reference | candidate ops/s | reference ops/s | ratio [95% interval] | verdict | ranges | candidate p99 us | reference p99 us | p99 verdict | p99 ranges |",
        "|---|---|---|---|--:|---|---|--:|--:|--:|---|---|--:|--:|---|---|",
        &lines,
    );
}

/// One pair's line of the headline's table.
fn pair_line(p: &Pair<'_>) -> String {
    let c = &p.candidate.config;
    let word = |v: &Comparison| match (v.verdict, headline::noise_note(v, true)) {
        (Verdict::WithinNoise, None) => format!("~ (p = {:.3})", v.mann_whitney.p),
        (Verdict::WithinNoise, Some(why)) => format!("~ (p = {:.3}; {why})", v.mann_whitney.p),
        (Verdict::Significant { change }, _) => {
            format!("{change} (p = {:.3})", v.mann_whitney.p)
        }
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.2}x [{:.2}-{:.2}] | {} | {} | {:.3} | {:.3} | {} | {} |",
        c.shape.title(),
        p.candidate.language(),
        c.load,
        payload_label(c),
        c.concurrency,
        c.cell,
        p.reference.config.cell,
        p.throughput.candidate_median,
        p.throughput.baseline_median,
        p.throughput.ratio,
        p.throughput.ratio_interval.lo,
        p.throughput.ratio_interval.hi,
        word(&p.throughput),
        headline::ranges_cell(&p.throughput_ranges),
        p.p99.candidate_median,
        p.p99.baseline_median,
        word(&p.p99),
        headline::ranges_cell(&p.p99_ranges),
    )
}

/// `## Charts`: Mermaid `xychart-beta` blocks per figure and shape.
pub fn write_charts(out: &mut String, rows: &[Row]) {
    let throughput = charts::charts(rows, Figure::Throughput);
    let Some(first) = throughput.first() else {
        return;
    };
    let (_, top) = charts::charted_rows(rows);
    let colours: Vec<String> = first
        .series
        .iter()
        .zip(COLOUR_NAMES.iter().cycle())
        .map(|((stack, _), colour)| format!("{stack} {colour}"))
        .collect();
    let _ = writeln!(
        out,
        "## Charts\n\nMedians of the closed-loop configurations at concurrency {}, grouped by language, one bar per stack: {} (later bars are drawn narrower, in front). Each shape has its own scale; a missing bar is drawn as 0.\n",
        top.unwrap_or(0),
        colours.join(", ")
    );
    for figure in Figure::ALL {
        let _ = writeln!(out, "### {}\n", figure.section());
        for chart in charts::charts(rows, figure) {
            write_mermaid(out, &chart);
        }
    }
}

fn write_mermaid(out: &mut String, chart: &Chart) {
    let n = chart.series.len();
    let palette: Vec<&str> = PALETTE.iter().cycle().take(n.max(1)).copied().collect();
    let _ = writeln!(
        out,
        "```mermaid\n---\nconfig:\n  themeVariables:\n    xyChart:\n      plotColorPalette: '{}'",
        palette.join(", ")
    );
    if n > 1 {
        let _ = writeln!(out, "  themeCSS: |");
        for i in 1..n {
            let _ = writeln!(
                out,
                "    .bar-plot-{i} rect {{ transform-box: fill-box; transform-origin: center; transform: scaleX({:.2}); }}",
                (n - i) as f64 / n as f64
            );
        }
    }
    let _ = writeln!(out, "---\nxychart-beta");
    let _ = writeln!(out, "  title \"{}\"", chart.title.replace('"', "'"));
    let groups: Vec<String> = chart
        .groups
        .iter()
        .map(|g| format!("\"{}\"", g.replace('"', "'")))
        .collect();
    let _ = writeln!(out, "  x-axis [{}]", groups.join(", "));
    let _ = writeln!(
        out,
        "  y-axis \"{}\" 0 --> {}",
        chart.unit,
        charts::axis_max(chart.max())
    );
    for (stack, values) in &chart.series {
        let values: Vec<String> = values
            .iter()
            .map(|v| format!("{:.*}", chart.digits, v.unwrap_or(0.0)))
            .collect();
        let _ = writeln!(out, "  bar \"{stack}\" [{}]", values.join(", "));
    }
    let _ = writeln!(out, "```\n");
}

/// `## Detailed results`: one line per configuration, medians over its good samples.
pub fn write_detail(out: &mut String, rows: &[Row]) {
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Detailed results\n\nEvery value is the median over the configuration's good samples (Runs). Latency and CPU in microseconds, peak RSS in MiB. Throughput is completed operations per second of the fixed admission window; a streaming operation carries many messages, so operations per second are not comparable across shapes.\n"
    );
    let _ = writeln!(
        out,
        "| Language | Stack | Cell | Shape | Load | Payload | c | Runs | p50 us | p99 us | p99.9 us | ops/s | client CPU us/op | server CPU us/op | client peak MiB | server peak MiB |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
    );
    for row in rows {
        let c = &row.config;
        let lead = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row.language(),
            c.stack,
            c.cell,
            c.shape.title(),
            c.load,
            payload_label(c),
            c.concurrency,
            row.ok
        );
        match &row.metrics {
            None => {
                let _ = writeln!(out, "{lead} failed | | | | | | | |");
            }
            Some(m) => {
                let _ = writeln!(
                    out,
                    "{lead} {:.3} | {:.3} | {:.3} | {:.1} | {} |",
                    m.p50_us.median,
                    m.p99_us.median,
                    m.p999_us.median,
                    m.ops_per_s.median,
                    m.process_medians().join(" | ")
                );
            }
        }
    }
    out.push('\n');
}

/// `## Network`: for emulated runs, the profile, each direction, the emulator, and how close
/// each closed-loop configuration came to what the link allows.
pub fn write_network(out: &mut String, manifest: &Manifest, rows: &[Row]) {
    if manifest.network.backend != NetworkBackend::Emulated {
        return;
    }
    let topology = manifest.network.topology.as_ref();
    let profile = topology.and_then(|t| t.profile.as_ref());
    write_link(out, topology, profile);
    if let Some(profile) = profile {
        write_limits(out, profile, rows);
    }
}

/// The table of the emulated link: profile, backend, emulator, MTU, qdisc, both directions.
fn write_link(out: &mut String, topology: Option<&TopologyInfo>, profile: Option<&LinkProfile>) {
    let _ = writeln!(out, "## Network\n");
    let _ = writeln!(out, "| Item | Value |\n|---|---|");
    let _ = writeln!(
        out,
        "| Profile | {} |",
        profile.and_then(|p| p.name.as_deref()).unwrap_or("custom")
    );
    if let Some(t) = topology {
        let _ = writeln!(out, "| Backend | {:?} |", t.backend);
        let _ = writeln!(
            out,
            "| Emulator | {} {} |",
            t.emulator.kind, t.emulator.version
        );
        let _ = writeln!(out, "| MTU | {} |", t.mtu);
        if let Some(q) = &t.kernel_qdisc {
            let _ = writeln!(out, "| Kernel qdisc | `{}` |", q.replace('|', "\\|"));
        }
    }
    if let Some(p) = profile {
        let _ = writeln!(
            out,
            "| Client to server | {} |",
            crate::markdown::describe_direction(&p.client_to_server)
        );
        let _ = writeln!(
            out,
            "| Server to client | {} |",
            crate::markdown::describe_direction(&p.server_to_client)
        );
    }
    out.push('\n');
}

/// `### Distance to the physical limit`: each closed-loop row's median against what the link
/// allows.
fn write_limits(out: &mut String, profile: &LinkProfile, rows: &[Row]) {
    let lines: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let m = row.metrics.as_ref()?;
            let l = limits::limit(&row.config, profile)?;
            let share = m.ops_per_s.median / l.ops_per_s;
            let above = if share > 1.0 {
                " (above the limit: the link did not hold its profile; check `rpcarena netcheck`)"
            } else {
                ""
            };
            Some(format!(
                "| {} | {} | {} | {} | {:.3} | {:.3} | {:.1} | {:.1} | {:.1}%{above} |",
                row.config.cell,
                row.config.shape.title(),
                row.config.load,
                l.lanes,
                l.rtt_ms,
                l.serialisation_ms,
                l.ops_per_s,
                m.ops_per_s.median,
                100.0 * share
            ))
        })
        .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Distance to the physical limit\n\n{}\n",
        limits::EXPLANATION
    );
    crate::table::write(
        out,
        "| Cell | Shape | Load | lanes | RTT ms | serialisation ms | limit ops/s | median ops/s | share of limit |",
        "|---|---|---|--:|--:|--:|--:|--:|--:|",
        &lines,
    );
}

/// SHA-256 of the bytes given, as lower-case hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// `## Artifacts`: the SHA-256s a reader can check, and how.
pub fn write_artifacts(
    out: &mut String,
    manifest: &Manifest,
    samples_sha256: Option<&str>,
    aggregate_csv: &str,
) {
    let _ = writeln!(out, "## Artifacts\n");
    let _ = writeln!(out, "| File | SHA-256 |\n|---|---|");
    let _ = writeln!(
        out,
        "| campaign `{}` | `{}` |",
        manifest.campaign.file, manifest.campaign.sha256
    );
    let _ = writeln!(
        out,
        "| samples.jsonl | {} |",
        samples_sha256.map_or(
            "not hashed (rendered from memory)".to_string(),
            |s| format!("`{s}`")
        )
    );
    let _ = writeln!(
        out,
        "| aggregate.csv | `{}` |",
        sha256_hex(aggregate_csv.as_bytes())
    );
    out.push('\n');
    if !manifest.peers.is_empty() {
        let _ = writeln!(out, "| Peer | Executable | SHA-256 |\n|---|---|---|");
        for p in &manifest.peers {
            let _ = writeln!(
                out,
                "| {} | `{}` | `{}` |",
                p.id,
                p.command.first().map_or("", String::as_str),
                p.sha256
            );
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "manifest.json records the SHA-256 of samples.jsonl, aggregate.csv, report.md and report.html and of every peer executable; `rpcarena run` prints the manifest's own SHA-256 at its end, for publishing beside this report, and `rpcarena verify <this directory>` recomputes every hash the manifest lists.\n"
    );
}
