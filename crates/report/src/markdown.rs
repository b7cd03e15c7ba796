//! `report.md`: what a person would publish. A pure function of the manifest and the aggregates.

use crate::aggregate::{
    Aggregates, FailedSample, NoiseSummary, Row, RowMetrics, Stat, median_or_na, payload_label,
};
use crate::published;
use rpcarena_model::campaign::Campaign;
use rpcarena_model::load::LoadSpec;
use rpcarena_model::network::{NetworkBackend, NetworkDescription};
use rpcarena_model::record::Manifest;
use rpcarena_netem_core::{DirectionSpec, LossModel};
use rpcarena_protocol::workload::Shape;
use rpcarena_stats::{Comparison, Verdict};
use std::fmt::Write;

/// Everything the Markdown report is made of.
pub struct Inputs<'a> {
    /// The run's manifest.
    pub manifest: &'a Manifest,
    /// The campaign, parsed from the manifest (absent if it no longer parses).
    pub campaign: Option<&'a Campaign>,
    /// Rows in report order, failures and noise.
    pub aggregates: &'a Aggregates,
    /// The baseline cell id.
    pub baseline: &'a str,
    /// What the artifacts lacked or no longer say.
    pub notes: &'a [String],
    /// The comparisons the headline counts.
    pub pairs: &'a [crate::headline::Pair<'a>],
    /// SHA-256 of `samples.jsonl` as read (absent when rendered from memory).
    pub samples_sha256: Option<&'a str>,
    /// `aggregate.csv` as rendered, for its hash.
    pub aggregate_csv: &'a str,
    /// The command runs.
    pub commands: &'a crate::commands::Commands,
}

fn language(row: &Row) -> String {
    row.language()
}

fn us(v: f64) -> String {
    format!("{v:.3}")
}

fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Renders the report.
pub fn render(inputs: &Inputs<'_>) -> String {
    let m = inputs.manifest;
    let mut out = String::new();
    let title = inputs.campaign.map_or("campaign", |c| c.name.as_str());
    let _ = writeln!(out, "# rpcarena report: {title}\n");
    if let Some(c) = inputs.campaign
        && !c.description.trim().is_empty()
    {
        let _ = writeln!(out, "{}\n", c.description.trim());
    }
    write_setup(&mut out, inputs);
    write_notes(&mut out, inputs.notes);
    // a run of commands only has no peer results to head, chart or tabulate
    let peers = !inputs.aggregates.rows.is_empty() || inputs.commands.0.is_empty();
    if peers {
        published::write_headline(
            &mut out,
            inputs.pairs,
            inputs.campaign.map(|c| c.repetitions),
        );
        published::write_charts(&mut out, &inputs.aggregates.rows);
        write_tables(&mut out, inputs);
    }
    out.push_str(&crate::commands::markdown(inputs.campaign, inputs.commands));
    if peers {
        published::write_detail(&mut out, &inputs.aggregates.rows);
        published::write_network(&mut out, m, &inputs.aggregates.rows);
    }
    write_failures(&mut out, &inputs.aggregates.failures);
    write_noise(&mut out, &inputs.aggregates.noise);
    published::write_artifacts(&mut out, m, inputs.samples_sha256, inputs.aggregate_csv);
    write_boundaries(&mut out, inputs);
    let _ = writeln!(
        out,
        "\nRegenerate this report with `rpcarena report <this directory>`; it reads only `manifest.json` and `samples.jsonl`. Campaign SHA-256 `{}`.",
        m.campaign.sha256
    );
    out
}

fn write_setup(out: &mut String, inputs: &Inputs<'_>) {
    let m = inputs.manifest;
    let _ = writeln!(out, "## Set-up\n");
    let _ = writeln!(
        out,
        "- rpcarena {} from source revision `{}`{}; campaign `{}`, seed {}.",
        m.rpcarena_version,
        short(&m.source_revision),
        if m.source_dirty {
            " (dirty: uncommitted changes)"
        } else {
            ""
        },
        m.campaign.file,
        m.seed
    );
    let _ = writeln!(
        out,
        "- Host: {} x {} CPUs, {} MiB, Linux {}.",
        m.host.cpu_model, m.host.cpus, m.host.memory_mib, m.host.kernel
    );
    let _ = writeln!(out, "- Network: {}.", describe_network(&m.network));
    if let Some(c) = inputs.campaign {
        let security = if c.tls {
            "TLS 1.3 on every TCP-based stack (QUIC has it inside)"
        } else {
            "**plaintext** (`tls = false`: every stack ran with `--tls off`, gRPC as h2c; the rows say \"plaintext\" beside their figures)"
        };
        let _ = writeln!(out, "- Transport security: {security}.");
        write_workload(out, c);
    }
    let _ = writeln!(
        out,
        "- Samples: {} planned, {} ok, {} failed{}.",
        m.samples.planned,
        m.samples.ok,
        m.samples.failed,
        if m.interrupted {
            "; the run was interrupted before the end"
        } else {
            ""
        }
    );
    crate::peers::write(out, m, inputs.campaign);
}

fn write_workload(out: &mut String, c: &Campaign) {
    let w = &c.workload;
    let list = |v: &[u32]| {
        v.iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        out,
        "- Workload: request payload {} B, response payload {} B, payload kinds {}{}, {} messages per streamed direction, concurrency {}, load {}{}.",
        list(&w.request_size),
        list(&w.response_size),
        joined(&w.payload),
        cells_own(c, |cell| cell.payload.as_deref().map(joined), "payloads"),
        w.messages_per_stream,
        list(&w.concurrency),
        joined(&w.load),
        cells_own(c, |cell| cell.load.as_deref().map(joined), "loads")
    );
    write_client_modes(out, c);
    let _ = writeln!(
        out,
        "- Timing: {} untimed warmup{}, {} fixed admission window, up to {} drain; {} repetitions in seeded random order per round; a fresh server and client process for every sample.",
        rpcarena_model::duration::format(&c.timing.warmup),
        cells_own(
            c,
            |cell| cell.warmup.as_ref().map(rpcarena_model::duration::format),
            "warmups"
        ),
        rpcarena_model::duration::format(&c.timing.window),
        rpcarena_model::duration::format(&c.timing.drain),
        c.repetitions
    );
}

/// (1.4) Which cells replayed captured requests instead of calling through the library's
/// official client; nothing when every cell used its official client.
fn write_client_modes(out: &mut String, c: &Campaign) {
    let replayed: Vec<&str> = c
        .cells
        .iter()
        .filter(|cell| !cell.client_mode(&c.workload).is_official())
        .map(|cell| cell.id.as_str())
        .collect();
    if replayed.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "- Client mode: **replay** in {} (the official client's captured request sent as-is on every lane, each response checked against the captured one; rows say \"replay\"), the library's official client elsewhere.",
        replayed.join(", ")
    );
}

fn joined<T: std::fmt::Display>(items: &[T]) -> String {
    items
        .iter()
        .map(|l| l.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// " (cells' own warmups: a 30s; b 10s)" for the cells that replace a workload or timing value
/// with their own (`own` gives it), empty when none does.
fn cells_own(
    c: &Campaign,
    own: impl Fn(&rpcarena_model::campaign::Cell) -> Option<String>,
    what: &str,
) -> String {
    let listed: Vec<String> = c
        .cells
        .iter()
        .filter_map(|cell| own(cell).map(|v| format!("{} {v}", cell.id)))
        .collect();
    if listed.is_empty() {
        return String::new();
    }
    format!(" (cells' own {what}: {})", listed.join("; "))
}

/// What the artifacts lacked or no longer say (absent when there is nothing to say).
fn write_notes(out: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Notes\n");
    for note in notes {
        let _ = writeln!(out, "- {note}");
    }
    out.push('\n');
}

fn write_tables(out: &mut String, inputs: &Inputs<'_>) {
    let _ = writeln!(
        out,
        "## Results\n\nMedians over repetitions; ops/s shows [min-max], or [95% confidence interval of the median] where there are at least 6 repetitions. Latency in microseconds (upper bounds of HdrHistogram buckets, 0.1% precision); CPU in microseconds per completed operation (user + system of the peer's process group, from /proc); RSS is the peak resident set in MiB. \"vs baseline\" is the ratio of median throughput to the baseline cell `{}` on the same workload, with a bootstrap 95% interval, marked significant (faster/slower) only when a two-sided Mann-Whitney test gives p < 0.05 and the change exceeds 1%, else `~` (within noise); where the interval excludes 1 but the verdict is `~`, the brackets after it say why (too few repetitions for the test to reach p < 0.05, a p not below 0.05, or a change within 1%).\n",
        inputs.baseline
    );
    let rows = &inputs.aggregates.rows;
    for shape in Shape::EVERY {
        let rows: Vec<&Row> = rows
            .iter()
            .filter(|r| r.config.shape == shape && r.config.load.whole_operations())
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "### {}\n", shape.title());
        let _ = writeln!(
            out,
            "| Cell | Stack | Language | Load | Payload | c | ops/s | vs baseline | p50 us | p99 us | client CPU us/op | server CPU us/op | client RSS MiB | server RSS MiB | flags | ok/n |"
        );
        let _ = writeln!(
            out,
            "|---|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|"
        );
        for row in rows {
            let _ = writeln!(out, "{}", shape_row(row, inputs.baseline));
        }
        out.push('\n');
    }
    write_messages(out, rows);
    write_connect(out, rows);
    crate::gobench::write(out, rows);
    crate::transport::write_section(out, rows);
    write_open_loop(out, rows);
    write_saturation(out, rows);
}

/// One configuration's line in its shape's table.
fn shape_row(row: &Row, baseline: &str) -> String {
    let c = &row.config;
    let n = row.ok + row.failed;
    let lead = format!(
        "| {} | {} | {} | {} | {} | {} |",
        c.cell,
        c.stack,
        language(row),
        c.load,
        payload_label(c),
        c.concurrency
    );
    let Some(mm) = &row.metrics else {
        return format!("{lead} failed | | | | | | | | | {}/{n} |", row.ok);
    };
    let (lo, hi) = mm
        .ops_per_s
        .interval
        .unwrap_or((mm.ops_per_s.min, mm.ops_per_s.max));
    let versus = if c.cell == baseline {
        "baseline".to_string()
    } else {
        row.versus
            .as_ref()
            .map(|v| verdict(&v.throughput))
            .unwrap_or_else(|| "n/a".to_string())
    };
    let (cpu, rss) = process_columns(mm);
    format!(
        "{lead} {:.1} [{:.1}-{:.1}] | {versus} | {} | {} | {cpu} | {rss} | {} | {}/{n} |",
        mm.ops_per_s.median,
        lo,
        hi,
        us(mm.p50_us.median),
        us(mm.p99_us.median),
        flag_list(row),
        row.ok
    )
}

/// CPU per operation: the median; "< x" when most samples counted less than one clock tick of
/// CPU (x is then the median bound, one tick per completed operations); n/a without /proc.
fn cpu_cell(stat: Option<Stat>, below_resolution: bool, digits: usize) -> String {
    match stat {
        None => "n/a".to_string(),
        Some(s) if below_resolution => format!("< {:.digits$}", s.median),
        Some(s) => format!("{:.digits$}", s.median),
    }
}

/// "client CPU | server CPU" and "client RSS | server RSS" cells; n/a without /proc readings.
fn process_columns(m: &RowMetrics) -> (String, String) {
    (
        format!(
            "{} | {}",
            cpu_cell(m.client_cpu_us_per_op, m.client_cpu_below_resolution, 1),
            cpu_cell(m.server_cpu_us_per_op, m.server_cpu_below_resolution, 1)
        ),
        format!(
            "{} | {}",
            median_or_na(m.client_rss_mib, 2),
            median_or_na(m.server_rss_mib, 2)
        ),
    )
}

/// "1.07x [1.02-1.12] faster", "0.99x [0.95-1.03] ~", and where the interval excludes 1 but
/// the test does not call it significant, why: "3.79x [2.86-4.07] ~ (3+3 reps cannot reach
/// p < 0.05)".
fn verdict(c: &Comparison) -> String {
    let word = match (c.verdict, crate::headline::noise_note(c, false)) {
        (Verdict::WithinNoise, None) => "~".to_string(),
        (Verdict::WithinNoise, Some(why)) => format!("~ ({why})"),
        (Verdict::Significant { change }, _) => change.to_string(),
    };
    format!(
        "{:.2}x [{:.2}-{:.2}] {word}",
        c.ratio, c.ratio_interval.lo, c.ratio_interval.hi
    )
}

fn flag_list(row: &Row) -> String {
    row.flags
        .iter()
        .map(|(f, n)| format!("{f} {n}/{}", row.ok))
        .collect::<Vec<_>>()
        .join(", ")
}
fn write_messages(out: &mut String, rows: &[Row]) {
    let streaming: Vec<&Row> = rows
        .iter()
        .filter(|r| {
            r.metrics.is_some()
                && r.config.load.whole_operations()
                && r.config.shape != Shape::Unary
        })
        .collect();
    if streaming.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Application message rates\n\nRequest and response protobuf messages per second of window (a client stream's summary counts as one response). Not payload bytes or wire throughput.\n"
    );
    let _ = writeln!(
        out,
        "| Cell | Shape | Load | Payload | c | request msg/s | response msg/s |"
    );
    let _ = writeln!(out, "|---|---|---|---|--:|--:|--:|");
    for row in streaming {
        if let Some(m) = &row.metrics {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.1} | {:.1} |",
                row.config.cell,
                row.config.shape,
                row.config.load,
                payload_label(&row.config),
                row.config.concurrency,
                m.requests_per_s.median,
                m.responses_per_s.median
            );
        }
    }
    out.push('\n');
}

/// Connection set-up per cell and concurrency, apart from operation latency.
fn write_connect(out: &mut String, rows: &[Row]) {
    let mut seen: Vec<(String, u32)> = Vec::new();
    let mut lines = Vec::new();
    for row in rows {
        let Some(connect) = row.metrics.as_ref().and_then(|m| m.connect_ms) else {
            continue;
        };
        let key = (row.config.cell.clone(), row.config.concurrency);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        lines.push(format!(
            "| {} | {} | {} | {:.3} | {:.3}-{:.3} |",
            row.config.cell,
            row.config.stack,
            row.config.concurrency,
            connect.median,
            connect.min,
            connect.max
        ));
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Connection set-up

Time for the client to open all its connections, TLS handshakes included, before the validation operation; not part of any operation's latency. gRPC and QUIC open one connection, raw TCP one per lane. First configuration of each cell and concurrency, medians in milliseconds.
"
    );
    let _ = writeln!(out, "| Cell | Stack | c | connect ms | min-max |");
    let _ = writeln!(out, "|---|---|--:|--:|--:|");
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    out.push('\n');
}

fn write_open_loop(out: &mut String, rows: &[Row]) {
    let open: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.config.load, LoadSpec::Open { .. }))
        .collect();
    if open.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Open loop\n\nEach operation has an intended start time; corrected latency runs from it (no coordinated omission), uncorrected latency from the actual start. Send lag is actual minus intended start.\n"
    );
    let _ = writeln!(
        out,
        "| Cell | Shape | Load | Payload | max in flight | target ops/s | achieved ops/s | corrected p50 us | corrected p99 us | uncorrected p50 us | uncorrected p99 us | send lag p99 us | flags | ok/n |"
    );
    let _ = writeln!(
        out,
        "|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|"
    );
    for row in open {
        let Some(m) = &row.metrics else { continue };
        let med = |s: Option<crate::aggregate::Stat>| s.map(|s| us(s.median)).unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {}/{} |",
            row.config.cell,
            row.config.shape,
            row.config.load,
            payload_label(&row.config),
            row.config.concurrency,
            m.target_rate.map(|r| format!("{r}")).unwrap_or_default(),
            m.ops_per_s.median,
            us(m.p50_us.median),
            us(m.p99_us.median),
            med(m.uncorrected_p50_us),
            med(m.uncorrected_p99_us),
            med(m.send_lag_p99_us),
            flag_list(row),
            row.ok,
            row.ok + row.failed
        );
    }
    out.push('\n');
}

fn write_saturation(out: &mut String, rows: &[Row]) {
    let saturation: Vec<&Row> = rows
        .iter()
        .filter(|r| !r.config.load.whole_operations())
        .collect();
    if saturation.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "### Send saturation\n\nOne-way messages from `streams` senders as fast as the transport accepts them: on **client streams** (each stream's summary confirms what arrived) or as **send commands** (shape `send`: gRPC's `Command` returning `Empty`, or a zmq message with no reply; one in flight per stream, as in seed 004). Either way the rate is what the *server* counted over the window, read once its count had been stable for the settle time.\n"
    );
    let _ = writeln!(
        out,
        "| Cell | Load | Sends | Payload | streams | received msg/s | server CPU us/msg | flags | ok/n |"
    );
    let _ = writeln!(out, "|---|---|---|---|--:|--:|--:|---|--:|");
    for row in saturation {
        let Some(m) = &row.metrics else { continue };
        let sends = if row.config.shape.is_one_way() {
            "send commands"
        } else {
            "client streams"
        };
        let _ = writeln!(
            out,
            "| {} | {} | {sends} | {} | {} | {} | {} | {} | {}/{} |",
            row.config.cell,
            row.config.load,
            payload_label(&row.config),
            row.config.concurrency,
            m.received_per_s
                .map(|s| format!("{:.1}", s.median))
                .unwrap_or_default(),
            cpu_cell(m.server_cpu_us_per_op, m.server_cpu_below_resolution, 2),
            flag_list(row),
            row.ok,
            row.ok + row.failed
        );
    }
    out.push('\n');
}

fn write_failures(out: &mut String, failed: &[FailedSample]) {
    if failed.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Failed samples\n");
    let _ = writeln!(
        out,
        "Left out of every figure above; raw peer output is in each sample's `raw/` directory.\n"
    );
    let _ = writeln!(out, "| Sample | Configuration | Reason |");
    let _ = writeln!(out, "|---|---|---|");
    for f in failed {
        let reason = f.reason.replace('|', "\\|").replace('\n', " ");
        let _ = writeln!(out, "| {} | {} | {} |", f.sample, f.key, reason);
    }
    out.push('\n');
}

fn cpus(list: &[usize]) -> String {
    list.iter()
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

fn write_noise(out: &mut String, noise: &NoiseSummary) {
    let Some(first) = &noise.first else {
        return;
    };
    let _ = writeln!(
        out,
        "## Noise controls and flags
"
    );
    let placement = if first.client_cpus.is_empty() && first.server_cpus.is_empty() {
        "no CPU pinning".to_string()
    } else {
        format!(
            "client on CPU {}, server on CPU {}{}",
            cpus(&first.client_cpus),
            cpus(&first.server_cpus),
            if first.emulator_cpus.is_empty() {
                String::new()
            } else {
                format!(", emulator on CPU {}", cpus(&first.emulator_cpus))
            }
        )
    };
    let notes = if first.placement_notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", first.placement_notes.join("; "))
    };
    let _ = writeln!(out, "- Placement: {placement}{notes}.");
    let _ = writeln!(
        out,
        "- Load gate: {} of {} samples waited for the load average to settle ({:.1} s in all); the highest 1-minute load average at a sample's start was {:.2}.",
        noise.gated,
        noise.samples,
        noise.gate_wait_ms as f64 / 1e3,
        noise.max_load
    );
    let _ = writeln!(
        out,
        "- CPU steal during windows: at most {:.2}%.",
        noise.max_steal_pct
    );
    if noise.flags.is_empty() {
        let _ = writeln!(out, "- No sample was flagged.");
    }
    for (flag, count) in &noise.flags {
        let _ = writeln!(
            out,
            "- `{flag}` in {count} of {} samples ({}).",
            noise.samples,
            flag_meaning(flag)
        );
    }
    out.push('\n');
}

fn flag_meaning(flag: &str) -> &'static str {
    match flag {
        "client-bound" => {
            "the client used nearly all of its CPU: the figure describes the load generator, not the stack"
        }
        "server-saturated" => "the server used nearly all of its CPU",
        "cpu-in-latency" => {
            "on an emulated link, the peers' CPU per operation (client + server, after the readings' resolution) was at least 5% of the median latency: the row may be slower than the network allows because of processing (a JIT still compiling, a costly library), not the network"
        }
        "drift" => {
            "throughput changed between the window's halves by more than the threshold (judged on windows of at least 4 s, and only beyond what counting noise explains)"
        }
        "load-gate-timeout" => "the machine was still busy when the sample started",
        "warmup-rising" => {
            "the warmup's last three tenths completed over 10% more operations than the three before (beyond counting noise): the warmup may have been too short"
        }
        "long-drain" => {
            "the drain after the window took over 10% of the window: read the row's rate with the drain time and the consumption rate over window and drain (the sample's warning gives both)"
        }
        "steal" => "the hypervisor stole CPU time during the window",
        "generator-behind" => {
            "open-loop operations could not start on schedule: the generator lagged, or every one of the `concurrency` slots was busy; the offered load was lower than the target"
        }
        "start-late" => {
            "open-loop operations started over 50 us after their intended start at p99 (the pacing's target on a quiet machine): latencies, measured from the intended start, include the generator's own lag; the sample's warning gives the steal and the client's CPU beside it"
        }
        _ => "",
    }
}

fn write_boundaries(out: &mut String, inputs: &Inputs<'_>) {
    let _ = writeln!(out, "## Interpretation boundaries\n");
    write_spreads(out, &inputs.aggregates.rows);
    let reps = inputs.campaign.map_or(0, |c| c.repetitions);
    if reps < 4 {
        let _ = writeln!(
            out,
            "- {reps} repetition(s) per configuration cannot show a statistically significant difference (two-sided Mann-Whitney at alpha 0.05 needs at least 4 per side); ratios here are descriptive."
        );
    } else if reps < 6 {
        let _ = writeln!(
            out,
            "- {reps} repetitions are too few for a distribution-free confidence interval of the median (6 needed)."
        );
    }
    let _ = writeln!(
        out,
        "- Closed-loop throughput and latency are coupled: a slower operation lowers the offered load. These figures do not describe an open arrival process or overload."
    );
    if let Some(c) = inputs.campaign {
        let _ = writeln!(
            out,
            "- A streaming operation carries {} messages in each streamed direction, a unary one a single request and response: operations per second are not comparable across shapes. Streaming latency is the whole operation, not per message.",
            c.workload.messages_per_stream
        );
    }
    let _ = writeln!(
        out,
        "- CPU and RSS cover each peer's process group only, sampled from /proc every 10 ms around the measured window (CPU at clock-tick resolution); the controller is excluded. A CPU figure \"< x\" means less than one 10 ms clock tick was counted in most samples: x is one tick divided by the operations, an upper bound, not a measurement."
    );
    let _ = writeln!(
        out,
        "- Publish this report, `aggregate.csv`, `samples.jsonl`, `manifest.json`, `raw/` and `certificates/` freely; never publish `private/`, which holds the run's CA and server private keys."
    );
    let _ = writeln!(
        out,
        "- Implementations differ above the common contract (language runtime, transport library, scheduler, buffering): a ratio cannot be attributed to the transport alone."
    );
    write_network_boundaries(out, inputs.manifest.network.backend);
    if inputs.manifest.source_dirty {
        let _ = writeln!(
            out,
            "- The source was dirty when rpcarena was built: the revision above does not identify the controller exactly."
        );
    }
}

/// How much repetitions of one configuration differ, for throughput and p99.
fn write_spreads(out: &mut String, rows: &[Row]) {
    // Spread needs at least two repetitions to mean anything.
    let with_metrics: Vec<&Row> = rows
        .iter()
        .filter(|r| r.metrics.is_some() && r.ok >= 2)
        .collect();
    let spread_line = |name: &str, pick: &dyn Fn(&Row) -> Option<f64>| -> String {
        let spreads: Vec<(f64, &Row)> = with_metrics
            .iter()
            .filter_map(|r| pick(r).map(|s| (s, *r)))
            .collect();
        let below = |t: f64| spreads.iter().filter(|(s, _)| *s < t).count();
        let worst = spreads
            .iter()
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(s, r)| format!("; the largest is {:.2}% for {}", s * 100.0, r.config.key))
            .unwrap_or_default();
        format!(
            "- {name} spread, (max - min) / median over repetitions: {} of {} configurations below 5%, {} below 10%{worst}.",
            below(0.05),
            spreads.len(),
            below(0.10)
        )
    };
    let _ = writeln!(
        out,
        "{}",
        spread_line("Throughput", &|r| r
            .metrics
            .and_then(|m| m.ops_per_s.spread))
    );
    let _ = writeln!(
        out,
        "{}",
        spread_line("p99", &|r| r.metrics.and_then(|m| m.p99_us.spread))
    );
}

fn write_network_boundaries(out: &mut String, backend: NetworkBackend) {
    match backend {
        NetworkBackend::Loopback => {
            let _ = writeln!(
                out,
                "- Loopback has no delay, loss or bandwidth limit: these figures measure software cost on this host, not network behaviour."
            );
        }
        NetworkBackend::Emulated => {
            let _ = writeln!(
                out,
                "- The network is emulated on one host: it reproduces the profile's delay, jitter, loss, rate and queue, not physical NIC offloads, routing changes, cross traffic or a real WAN. Check the emulator's accuracy on this host with `rpcarena netcheck`."
            );
            let _ = writeln!(
                out,
                "- A closed loop with c lanes cannot exceed c / RTT operations per second: compare unary throughput with that limit before reading anything into it."
            );
        }
        NetworkBackend::Netns => {}
    }
}

/// One sentence about the network, from the manifest's description of it.
fn describe_network(network: &NetworkDescription) -> String {
    let topology = network.topology.as_ref();
    match network.backend {
        NetworkBackend::Loopback => "loopback (127.0.0.1), no emulation".to_string(),
        NetworkBackend::Netns => format!(
            "client and server in separate network namespaces joined by a veth pair, no emulation, MTU {}",
            topology.map_or(0, |t| t.mtu)
        ),
        NetworkBackend::Emulated => {
            let emulator = topology.map(|t| &t.emulator);
            let profile = topology.and_then(|t| t.profile.as_ref());
            let direction = |d: fn(&rpcarena_netem_core::LinkProfile) -> &DirectionSpec| {
                profile
                    .map(|p| describe_direction(d(p)))
                    .unwrap_or_default()
            };
            format!(
                "client and server in separate network namespaces joined by an emulated link ({} {}), profile {}, MTU {}, loss granularity {}; client to server: {}; server to client: {}",
                emulator.map_or("unknown", |e| e.kind.as_str()),
                emulator.map_or("unknown", |e| e.version.as_str()),
                profile.and_then(|p| p.name.as_deref()).unwrap_or("custom"),
                profile.map_or(0, |p| p.mtu),
                profile.map_or("packet", |p| match p.granularity {
                    rpcarena_netem_core::Granularity::Packet =>
                        "packet (every wire packet decided on its own)",
                    rpcarena_netem_core::Granularity::Offload =>
                        "offload (GSO bundles decided as one unit)",
                }),
                direction(|p| &p.client_to_server),
                direction(|p| &p.server_to_client)
            )
        }
    }
}

/// "delay 15 ms +- 2 ms (uniform), loss 0.1%, rate 100 Mbit/s, queue 1000 packets".
pub(crate) fn describe_direction(d: &DirectionSpec) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut parts = Vec::new();
    if d.jitter_ns > 0 {
        parts.push(format!(
            "delay {} ms +- {} ms ({})",
            ms(d.delay_ns),
            ms(d.jitter_ns),
            d.distribution.as_str()
        ));
    } else {
        parts.push(format!("delay {} ms", ms(d.delay_ns)));
    }
    match d.loss {
        LossModel::Random { probability } => parts.push(format!("loss {}%", probability * 100.0)),
        LossModel::GilbertElliott { .. } => parts.push("Gilbert-Elliott loss".to_string()),
        LossModel::None => {}
    }
    if let Some(rate) = d.rate_bps {
        parts.push(format!("rate {} Mbit/s", rate as f64 / 1e6));
    }
    parts.push(format!("queue {} packets", d.limit_packets));
    parts.join(", ")
}
