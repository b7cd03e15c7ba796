//! The exporters are pure functions of the artifacts: fixed records in, fixed bytes out.

use rpcarena_model::campaign::Campaign;
use rpcarena_model::matrix;
use rpcarena_model::metrics::{Detail, measure};
use rpcarena_model::network::{Network, NetworkDescription};
use rpcarena_model::record::{
    CampaignInfo, ClientResult, HostInfo, IntervalRecord, Manifest, Noise, ProcessStats,
    SampleCounts, SampleRecord, SampleStatus,
};
use rpcarena_netem_core::{
    BackendKind, DirectionSeeds, EmulatorInfo, TimingOptions, TopologyInfo, profile_by_name,
};
use rpcarena_protocol::histogram;
use rpcarena_report::{Artifacts, render};

/// Two cells, unary and open loop, six rounds.
fn campaign_text() -> String {
    rpcarena_fixtures::campaign("fixture", 42)
        .key("description = \"Two cells, unary and open loop, six rounds.\"")
        .key("repetitions = 6\nbaseline = \"a\"")
        .peer("p", &["peer"])
        .cell("a", "p", "p", "grpc")
        .cell("b", "p", "p", "quic")
        .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [4]")
        .section("load = [\"closed\", { model = \"open\", rate = 100 }]")
        .build()
}

/// The first line of `text` that starts with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?} in:\n{text}"))
}

/// A histogram of `n` values: 98% at `typical` and 2% at `tail` (so p50 is `typical`'s
/// bucket and p99, p99.9 and the maximum are `tail`'s), base64 as a sample carries it.
fn histogram(n: u64, typical: u64, tail: u64) -> String {
    let mut h = histogram::new_latency_histogram();
    h.record_n(typical, n - n / 50).unwrap();
    h.record_n(tail, n / 50).unwrap();
    histogram::encode(&h).unwrap()
}

fn record(config_index: usize, round: u32, ops: f64, p99_ns: u64) -> SampleRecord {
    let campaign = Campaign::parse(&campaign_text(), "fixture.toml").unwrap();
    let config = matrix::expand(&campaign)[config_index].clone();
    // Ten seconds of window: `ops` to 0.1 op/s is a whole number of operations.
    let completed = (ops * 10.0).round() as u64;
    let open = config.load.model() == "open";
    let client = ClientResult {
        lanes: 4,
        connections: 1,
        completed,
        requests: completed,
        responses: completed,
        request_bytes: completed * 256,
        response_bytes: completed * 256,
        window_ns: 10_000_000_000,
        histogram: histogram(completed, 1_000_000, p99_ns),
        uncorrected_histogram: open.then(|| histogram(completed, 900_000, 1_200_000)),
        send_lag_histogram: open.then(|| histogram(completed, 4_000, 20_000)),
        // Ten one-second intervals; the second half a little slower in round 2.
        intervals: (0..10u64)
            .map(|i| {
                let n = completed / 10 - u64::from(round == 2 && i >= 5) * (completed / 100);
                IntervalRecord {
                    offset_ns: i * 1_000_000_000,
                    completed: n,
                    histogram: histogram(n.max(50), 1_000_000, p99_ns + i * 10_000),
                }
            })
            .collect(),
        ..ClientResult::default()
    };
    // What the runner stores; the report recomputes it from the histograms and counts.
    let metrics = measure(&client, Detail::Record).ok().map(|m| m.metrics);
    SampleRecord {
        sample: format!("r{round:02}-{config_index}"),
        round,
        position: config_index as u32 + 1,
        config,
        status: SampleStatus::Ok,
        reason: None,
        started_at: "2026-11-30T00:00:00Z".into(),
        elapsed_ms: 3000,
        client_language: "rust".into(),
        server_language: "rust".into(),
        client: Some(client),
        metrics,
        client_process: Some(ProcessStats {
            cpu_us: 25.0 * completed as f64,
            cpu_us_per_op: 25.0,
            peak_rss_mib: 8.5,
            readings: 200,
            processes: 1,
        }),
        server_process: Some(ProcessStats {
            cpu_us: 20.0 * completed as f64,
            cpu_us_per_op: 20.0,
            peak_rss_mib: 7.25,
            readings: 200,
            processes: 1,
        }),
        noise: Some(Noise {
            client_cpus: vec![0],
            server_cpus: vec![1],
            load_avg_1m: 0.5,
            flags: if round == 2 && config_index == 2 {
                vec!["drift".into()]
            } else {
                vec![]
            },
            ..Noise::default()
        }),
        server_counters: Default::default(),
        server: None,
        network: None,
        network_window: None,
        raw: "raw/x".into(),
    }
}

fn artifacts() -> Artifacts {
    let mut records = Vec::new();
    for round in 1..=6u32 {
        let jitter = f64::from(round % 3);
        records.push(record(0, round, 1000.0 + jitter, 2_000_000)); // a closed
        records.push(record(1, round, 100.0, 3_000_000)); // a open
        records.push(record(2, round, 1200.0 + jitter, 1_500_000)); // b closed: 20% faster
        records.push(record(3, round, 99.0 + jitter / 10.0, 3_000_000)); // b open
    }
    let mut failed = record(2, 7, 0.0, 0);
    failed.status = SampleStatus::Failed;
    failed.reason = Some("server exited unexpectedly during measure (exit status 0)".into());
    failed.metrics = None;
    records.push(failed);
    Artifacts {
        manifest: Manifest {
            rpcarena_version: "0.1.0".into(),
            source_revision: "0123456789abcdef".into(),
            source_dirty: false,
            started_at: "2026-11-30T00:00:00Z".into(),
            finished_at: Some("2026-11-30T00:10:00Z".into()),
            interrupted: false,
            resumed_at: Vec::new(),
            seed: 42,
            campaign: CampaignInfo {
                file: "fixture.toml".into(),
                sha256: "ab".repeat(32),
                text: campaign_text(),
            },
            host: HostInfo {
                cpu_model: "Test CPU".into(),
                cpus: 2,
                kernel: "6.18".into(),
                memory_mib: 24000,
            },
            network: NetworkDescription::loopback(&Network::default()),
            peers: Vec::new(),
            only_cells: Vec::new(),
            samples: SampleCounts {
                planned: 25,
                ok: 24,
                failed: 1,
            },
            artifacts: Default::default(),
            not_written: Default::default(),
        },
        records,
    }
}

#[test]
fn markdown_report_snapshot() {
    insta::assert_snapshot!("report_md", render(&artifacts()).report_md);
}

#[test]
fn aggregate_csv_snapshot() {
    insta::assert_snapshot!("aggregate_csv", render(&artifacts()).aggregate_csv);
}

#[test]
fn a_clear_difference_over_six_rounds_is_significant_and_failures_are_left_out() {
    let md = render(&artifacts()).report_md;
    let b_closed = line(&md, "| b | quic | rust | closed");
    assert!(
        b_closed.contains("1.20x") && b_closed.contains("faster"),
        "{b_closed}"
    );
    assert!(b_closed.contains("drift 1/6"), "{b_closed}");
    assert!(
        b_closed.contains("| 6/7 |"),
        "the failed sample is counted, not used: {b_closed}"
    );
    let b_open = line(&md, "| b | quic | rust | open");
    assert!(
        b_open.contains('~'),
        "a 1% wobble is within noise: {b_open}"
    );
    assert!(md.contains("### Open loop"));
    assert!(md.contains("server exited unexpectedly during measure"));
}

#[test]
fn rendering_is_deterministic() {
    let a = render(&artifacts());
    let b = render(&artifacts());
    assert_eq!(a.report_md, b.report_md);
    assert_eq!(a.aggregate_csv, b.aggregate_csv);
}

/// The fixture's run on an emulated regional WAN, as a manifest of this build records it.
fn emulated() -> Artifacts {
    let mut artifacts = artifacts();
    let campaign: Network = serde_json::from_value(serde_json::json!({
        "backend": "emulated",
        "profile": "regional-wan",
        "emulator": "userspace"
    }))
    .unwrap();
    // Figures as a 30 ms round trip allows (c / RTT = 133.3 ops/s).
    let mut records = Vec::new();
    for round in 1..=6u32 {
        let jitter = f64::from(round % 3);
        records.push(record(0, round, 120.0 + jitter, 34_000_000));
        records.push(record(1, round, 100.0, 36_000_000));
        records.push(record(2, round, 127.0 + jitter / 10.0, 33_800_000));
        records.push(record(3, round, 99.0 + jitter / 10.0, 36_000_000));
    }
    let failed = artifacts.records.pop().unwrap();
    records.push(failed);
    artifacts.records = records;
    let profile = profile_by_name("regional-wan").unwrap();
    let topology = TopologyInfo {
        backend: BackendKind::Userspace,
        emulator: EmulatorInfo {
            kind: "rpcarena-netem-userspace".into(),
            version: "rpcarena-netem 0.1.0 (sch_netem semantics)".into(),
        },
        client_namespace: "rpa-7-1-c".into(),
        server_namespace: "rpa-7-1-s".into(),
        client_address: "10.77.0.1".parse().unwrap(),
        server_address: "10.77.0.2".parse().unwrap(),
        client_device: "rpa0".into(),
        server_device: "rpa0".into(),
        mtu: profile.mtu,
        profile: Some(profile),
        seeds: Some(DirectionSeeds::derive(42)),
        kernel_qdisc: None,
        timing: Some(TimingOptions::default()),
        timing_notes: Vec::new(),
    };
    artifacts.manifest.network = NetworkDescription::of_topology(&campaign, &topology);
    artifacts
}

#[test]
fn markdown_report_of_an_emulated_network_snapshot() {
    insta::assert_snapshot!("report_md_emulated", render(&emulated()).report_md);
}

#[test]
fn a_manifest_written_before_the_description_was_versioned_reads_the_same() {
    // Version 1 kept the topology's fields beside `backend`, the campaign's backend over the
    // topology's kind.
    let current = emulated();
    let mut legacy =
        serde_json::to_value(current.manifest.network.topology.as_ref().unwrap()).unwrap();
    let object = legacy.as_object_mut().unwrap();
    object.insert("backend".into(), "emulated".into());
    object.insert("server_address".into(), "10.77.0.2".into());
    object.insert(
        "campaign".into(),
        serde_json::to_value(current.manifest.network.campaign.as_ref().unwrap()).unwrap(),
    );
    let mut manifest = serde_json::to_value(&current.manifest).unwrap();
    manifest["network"] = legacy;
    let old = Artifacts {
        manifest: serde_json::from_value(manifest).unwrap(),
        records: current.records.clone(),
    };
    assert_eq!(old.manifest.network.version, 1);
    assert_eq!(render(&old).report_md, render(&current).report_md);
}

#[test]
fn an_unparsable_campaign_text_is_noted_not_hidden() {
    let mut artifacts = artifacts();
    artifacts.manifest.campaign.text = artifacts.manifest.campaign.text.replace("seed = 42", "");
    let rendered = render(&artifacts);
    assert_eq!(rendered.notes.len(), 1, "{:?}", rendered.notes);
    assert!(
        rendered.notes[0].starts_with("The campaign text kept in manifest.json no longer parses")
            && rendered.notes[0].contains("missing field `seed`")
            && rendered.notes[0].contains("the baseline is the first sample's cell `a`"),
        "{}",
        rendered.notes[0]
    );
    let md = &rendered.report_md;
    assert!(md.contains("## Notes\n\n- The campaign text kept"), "{md}");
    assert!(
        !md.contains("- Workload:"),
        "no workload line without the campaign"
    );
    // rows are still there, in sorted key order
    assert!(md.contains("| a | grpc | rust | closed"));
    assert!(render(&self::artifacts()).notes.is_empty());
}

#[test]
fn samples_without_sampler_readings_keep_their_row_and_are_noted() {
    let mut artifacts = artifacts();
    for r in artifacts
        .records
        .iter_mut()
        .filter(|r| r.config.cell == "b")
    {
        r.client_process = None;
        r.server_process = None;
    }
    let rendered = render(&artifacts);
    assert_eq!(
        rendered.notes,
        [
            "12 of 24 good samples have no /proc readings (the sampler failed): their CPU and memory are left out of the medians, and a configuration without any shows n/a."
        ]
    );
    let md = &rendered.report_md;
    let b_closed = line(md, "| b | quic | rust | closed");
    assert!(
        b_closed.contains("| 1201.0 [") && b_closed.contains("| n/a | n/a | n/a | n/a |"),
        "throughput kept, CPU and memory n/a: {b_closed}"
    );
    let csv = &rendered.aggregate_csv;
    let b_row = line(csv, "b/unary/c4/256B-256B/zeros/closed");
    assert!(
        b_row.contains(",1201.000,") && b_row.contains(",6,1,"),
        "{b_row}"
    );
}

#[test]
fn unreadable_histograms_and_a_failed_network_check_are_noted() {
    let mut artifacts = emulated();
    artifacts.records[0].client.as_mut().unwrap().histogram = "no!".into();
    artifacts.manifest.network.setup_check =
        Some("the network's check right after set-up failed: tx_dropped +2".into());
    let rendered = render(&artifacts);
    assert_eq!(rendered.notes.len(), 2, "{:?}", rendered.notes);
    assert_eq!(
        rendered.notes[0],
        "The network's check right after set-up failed: tx_dropped +2."
    );
    assert!(
        rendered.notes[1].starts_with("1 samples recorded as ok have a latency histogram that cannot be read (the first, r01-0: ")
            && rendered.notes[1].ends_with("they are counted as failed."),
        "{}",
        rendered.notes[1]
    );
    let a_closed = line(&rendered.report_md, "| a | grpc | rust | closed").to_string();
    assert!(a_closed.ends_with("| 5/6 |"), "{a_closed}");
}

#[test]
fn the_report_recomputes_figures_instead_of_trusting_stored_ones() {
    let mut artifacts = artifacts();
    for r in &mut artifacts.records {
        if let Some(m) = r.metrics.as_mut() {
            m.ops_per_s = 1.0;
            m.p99_ns = 1;
        }
    }
    assert_eq!(
        render(&artifacts).report_md,
        render(&self::artifacts()).report_md
    );
}

#[test]
fn reports_stream_samples_jsonl_from_a_run_directory() {
    let dir = tempfile::tempdir().unwrap();
    let artifacts = artifacts();
    std::fs::write(
        dir.path().join("manifest.json"),
        serde_json::to_string_pretty(&artifacts.manifest).unwrap(),
    )
    .unwrap();
    let lines: String = artifacts
        .records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.path().join("samples.jsonl"), lines + "\n").unwrap();
    let regenerated = rpcarena_report::regenerate(dir.path()).unwrap();
    assert_eq!(regenerated.written.len(), 3);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    let samples_sha256 = rpcarena_report::sha256_file(&dir.path().join("samples.jsonl")).unwrap();
    assert!(
        md.contains(&format!("| samples.jsonl | `{samples_sha256}` |")),
        "the report names the hash of the samples it read"
    );
    let mut report = rpcarena_report::Report::new(artifacts.manifest.clone());
    for record in &artifacts.records {
        report.add(record);
    }
    report.samples_sha256(samples_sha256);
    assert_eq!(md, report.finish().report_md);
    std::fs::write(dir.path().join("samples.jsonl"), "{}\n").unwrap();
    let err = rpcarena_report::regenerate(dir.path())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("samples.jsonl:1: missing field"), "{err}");
}

#[test]
fn each_row_keeps_its_good_samples_latencies_merged() {
    let artifacts = artifacts();
    let mut aggregator = rpcarena_report::aggregate::Aggregator::new();
    for record in &artifacts.records {
        aggregator.add(record);
    }
    let rows = aggregator.finish(&[], "a", 42).rows;
    for row in &rows {
        let completed: u64 = artifacts
            .records
            .iter()
            .filter(|r| r.config.key == row.config.key && r.status == SampleStatus::Ok)
            .map(|r| r.client.as_ref().unwrap().completed)
            .sum();
        assert_eq!(row.latency.len(), completed, "{}", row.config.key);
    }
    // without the campaign's order, rows follow their keys
    let keys: Vec<&str> = rows.iter().map(|r| r.config.key.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

/// The fixture cut to its first `rounds` rounds, its campaign saying so.
fn rounds(rounds: u32) -> Artifacts {
    let mut cut = artifacts();
    cut.records.retain(|r| r.round <= rounds);
    cut.manifest.campaign.text = cut
        .manifest
        .campaign
        .text
        .replace("repetitions = 6", &format!("repetitions = {rounds}"));
    cut
}

#[test]
fn the_headline_counts_only_significant_differences_as_wins() {
    let md = render(&artifacts()).report_md;
    assert!(
        md.contains("of 2 same-shape comparisons, b had significantly higher median throughput in 1 and lower in 0 (1 within noise)"),
        "{md}"
    );
    assert!(
        md.contains("The largest throughput gains were b against a on unary c4 closed at 1.20x")
    );
    assert!(
        !md.contains("range rule"),
        "six rounds need no range rule: {md}"
    );
}

#[test]
fn five_rounds_far_apart_are_significant() {
    let md = render(&rounds(5)).report_md;
    assert!(
        md.contains("of 2 same-shape comparisons, b had significantly higher median throughput in 1 and lower in 0 (1 within noise)"),
        "{md}"
    );
    // Every b value above every a value; the rounds' jitter repeats values within a side, so
    // p comes from the tie-corrected normal approximation, a little above 2 / C(10, 5) = 0.008.
    assert!(
        md.contains(
            "The largest throughput gains were b against a on unary c4 closed at 1.20x (p = 0.011)"
        ),
        "{md}"
    );
    assert!(!md.contains("no difference can reach significance"), "{md}");
    assert!(!md.contains("By the range rule"), "{md}");
}

#[test]
fn three_rounds_far_apart_count_a_win_by_the_range_rule() {
    let md = render(&rounds(3)).report_md;
    // The test cannot decide, so nothing is significant, p99 included (tied values a side
    // once gave p = 0.047 from the normal approximation).
    assert!(md.contains("No throughput gain is significant"), "{md}");
    assert!(!md.contains("faster (p ="), "{md}");
    // The 20% gain with ranges far apart is counted, by a rule that is named.
    assert!(
        md.contains("b against a (rust quic against grpc): of 2 same-shape comparisons, by the range rule of the reference reports (medians; a difference counts only where the min-max ranges of the two cells do not overlap, else it is within noise), b had higher median throughput in 1 and lower in 1 (0 within noise); lower median p99 in 1 and higher in 0 (1 within noise); it won both in 1. The Mann-Whitney test cannot decide any of them with these repetitions."),
        "{md}"
    );
    assert!(
        md.contains("By the range rule, the largest throughput gains were b against a on unary c4 closed at 1.20x (ops/s 1200.0-1202.0 against 1000.0-1002.0)"),
        "{md}"
    );
    // Beside the note that significance needs more repetitions, with what the rule is worth.
    assert!(
        md.contains("With 3 repetition(s) per configuration no difference can reach significance: a two-sided Mann-Whitney test at alpha 0.05 needs at least 4 per side (with 3, the smallest possible p is 0.100)"),
        "{md}"
    );
    assert!(
        md.contains("have their ranges apart by chance with probability 0.100 at 3 per side"),
        "{md}"
    );
    let row = line(&md, "| Unary | rust | closed | 256B zeros | 4 | b | a |");
    assert!(row.contains("| apart: faster |"), "{row}");
}

#[test]
fn within_noise_beside_an_interval_that_excludes_one_says_why() {
    let rendered = render(&rounds(3));
    let md = &rendered.report_md;
    assert!(
        md.contains("The widest ratio, within noise, was b against a on unary c4 closed at 1.20x: the interval of the ratio 1.20-1.20 excludes 1, but Mann-Whitney with 3 and 3 repetitions cannot reach p < 0.05 (the smallest possible p is 0.100)."),
        "{md}"
    );
    // Every table cell that says within noise beside such an interval says why.
    let headline_row = line(md, "| Unary | rust | closed | 256B zeros | 4 | b | a |");
    assert!(
        headline_row
            .contains("| 1.20x [1.20-1.20] | ~ (p = 0.100; 3+3 reps cannot reach p < 0.05) |"),
        "{headline_row}"
    );
    let results_row = line(md, "| b | quic | rust | closed");
    assert!(
        results_row.contains("| 1.20x [1.20-1.20] ~ (3+3 reps cannot reach p < 0.05) |"),
        "{results_row}"
    );
    assert!(
        rendered.report_html.contains(
            r#"<td>1.20-1.20</td><td>0.100</td><td class="t">within noise (3+3 reps cannot reach p &lt; 0.05)</td>"#
        ),
        "{}",
        rendered.report_html
    );
    // Where the interval holds 1, a bare "~" stays.
    let md = render(&artifacts()).report_md;
    assert!(
        md.contains("| 0.99x [0.99-0.99] ~ (change within 1%) |"),
        "a 1% change with a narrow interval names the threshold: {md}"
    );
    assert!(
        md.contains("| 3000.319 | 3000.319 | ~ (p = 1.000) | overlap |"),
        "{md}"
    );
}

#[test]
fn charts_are_mermaid_xycharts_per_figure() {
    let md = render(&artifacts()).report_md;
    assert_eq!(md.matches("```mermaid\n").count(), 3, "{md}");
    assert!(md.contains("  title \"Unary median throughput at concurrency 4\"\n  x-axis [\"rust\"]\n  y-axis \"operations/s\" 0 --> 1300\n  bar \"grpc\" [1001.0]\n  bar \"quic\" [1201.0]\n"));
}

/// Writes `artifacts` as a run directory, its reports regenerated and its manifest sealed as
/// the runner seals it, with one peer executable.
fn sealed_run(artifacts: &Artifacts) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut manifest = artifacts.manifest.clone();
    manifest.campaign.sha256 = rpcarena_report::sha256_hex(manifest.campaign.text.as_bytes());
    let peer = dir.path().join("peer-exe");
    std::fs::write(&peer, b"#!/bin/sh\n").unwrap();
    manifest.peers.push(rpcarena_model::record::PeerInfo {
        id: "p".into(),
        command: vec![peer.display().to_string()],
        sha256: rpcarena_report::sha256_file(&peer).unwrap(),
        ..Default::default()
    });
    let write_manifest = |m: &Manifest| {
        std::fs::write(
            dir.path().join("manifest.json"),
            serde_json::to_string_pretty(m).unwrap(),
        )
        .unwrap()
    };
    write_manifest(&manifest);
    let lines: String = artifacts
        .records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(dir.path().join("samples.jsonl"), lines).unwrap();
    rpcarena_report::regenerate(dir.path()).unwrap();
    for name in rpcarena_model::files::SEALED {
        let path = dir.path().join(name);
        if path.exists() {
            manifest.artifacts.insert(
                name.to_string(),
                rpcarena_report::sha256_file(&path).unwrap(),
            );
        }
    }
    write_manifest(&manifest);
    dir
}

#[test]
fn verify_names_a_one_byte_change_in_any_listed_file() {
    let dir = sealed_run(&artifacts());
    let clean = rpcarena_report::verify::verify(dir.path()).unwrap();
    assert!(clean.mismatches().is_empty(), "{:?}", clean.mismatches());
    assert!(clean.checked.len() >= 4, "{:?}", clean.checked);
    assert_eq!(
        clean.manifest_sha256,
        rpcarena_report::sha256_file(&dir.path().join("manifest.json")).unwrap()
    );
    let files: Vec<std::path::PathBuf> = rpcarena_report::verify::plan(
        &rpcarena_report::read_manifest(dir.path()).unwrap(),
        dir.path(),
    )
    .into_iter()
    .filter_map(|(_, path)| path)
    .collect();
    assert!(files.len() >= 4, "{files:?}");
    for path in files {
        let original = std::fs::read(&path).unwrap();
        let mut changed = original.clone();
        let middle = changed.len() / 2;
        changed[middle] ^= 1;
        std::fs::write(&path, &changed).unwrap();
        let found = rpcarena_report::verify::verify(dir.path()).unwrap();
        let mismatches = found.mismatches();
        assert_eq!(mismatches.len(), 1, "{}: {mismatches:?}", path.display());
        let file = path.file_name().unwrap().to_str().unwrap();
        assert!(mismatches[0].listed.name.contains(file), "{mismatches:?}");
        std::fs::write(&path, &original).unwrap();
    }
    std::fs::remove_file(dir.path().join("aggregate.csv")).unwrap();
    let missing = rpcarena_report::verify::verify(dir.path()).unwrap();
    assert!(
        missing.mismatches()[0]
            .actual
            .as_ref()
            .unwrap_err()
            .contains("cannot read"),
        "{:?}",
        missing.mismatches()
    );
}

#[test]
fn compare_finds_a_known_difference_and_refuses_other_workloads() {
    use rpcarena_report::compare_runs::{Metric, Run, compare_runs, render_text};
    let old = artifacts();
    let mut new = artifacts();
    // The new run's cell `a` closed is 10% faster; nothing else changes.
    for r in new
        .records
        .iter_mut()
        .filter(|r| r.config.key.starts_with("a/") && r.config.load.model() == "closed")
    {
        let c = r.client.as_mut().unwrap();
        c.completed = c.completed * 11 / 10;
        c.requests = c.completed;
        c.responses = c.completed;
        c.histogram = histogram(c.completed, 1_000_000, 2_000_000);
    }
    let load = |a: &Artifacts| {
        let mut report = rpcarena_report::Report::new(a.manifest.clone());
        for r in &a.records {
            report.add(r);
        }
        report.aggregates()
    };
    let (mo, ao) = load(&old);
    let (mn, an) = load(&new);
    let run = |name, manifest, aggregates| Run {
        name,
        manifest,
        aggregates,
    };
    let c = compare_runs(
        &run("old", &mo, &ao),
        &run("new", &mn, &an),
        &[Metric::Ops, Metric::P99],
        1,
    );
    assert!(c.differences.is_empty(), "{:?}", c.differences);
    let ops = &c.tables[0];
    assert_eq!(ops.lines.len(), 4);
    let a_closed = &ops.lines[0];
    assert!(a_closed.key.starts_with("a/unary/c4") && a_closed.key.ends_with("closed"));
    assert!(
        a_closed.significant && (a_closed.delta_pct - 10.0).abs() < 0.2,
        "{a_closed:?}"
    );
    assert!(
        ops.lines[1..].iter().all(|l| !l.significant),
        "{:?}",
        ops.lines
    );
    let text = render_text(&c, "old", "new");
    assert!(text.contains("+9.9") || text.contains("+10.0"), "{text}");
    assert!(text.contains("~"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("geomean")), "{text}");
    // Another workload is named, not compared silently.
    let mut other = new.manifest.clone();
    other.campaign.text = other
        .campaign
        .text
        .replace("concurrency = [4]", "concurrency = [8]");
    let c = compare_runs(
        &run("old", &mo, &ao),
        &run("new", &other, &an),
        &[Metric::Ops],
        1,
    );
    assert_eq!(c.differences, ["the campaigns' [workload] tables differ"]);
}

#[test]
fn html_report_snapshot_is_self_contained_and_deterministic() {
    let a = render(&emulated()).report_html;
    assert_eq!(a, render(&emulated()).report_html);
    for forbidden in ["http://", "https://", "@import", "url(", "<link", "src="] {
        assert!(
            !a.contains(forbidden),
            "report.html must not load anything: {forbidden}"
        );
    }
    // throughput, message rate and p99 per shape; percentiles per shape; one interval chart per
    // configuration with intervals
    assert_eq!(a.matches("<svg data-chart=").count(), 3 + 1 + 4, "{a}");
    insta::assert_snapshot!("report_html_emulated", a);
}

/// Renders the fixture's report.html in headless Chromium: no console error, every chart drew
/// marks (the page's own check logs it), and the screenshot is not blank.
#[test]
fn html_report_renders_in_headless_chromium() {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find_map(|name| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|dir| dir.join(name))
                    .find(|p| p.is_file())
            })
        });
    let Some(chromium) = chromium else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("chromium is not installed; CI needs Debian's `chromium` package for this test");
        }
        eprintln!("skipped: no chromium on PATH (install Debian's `chromium` to run this test)");
        return;
    };
    let html = render(&emulated()).report_html;
    let charts = html.matches("<svg data-chart=").count();
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let shot = dir.path().join("report.png");
    std::fs::write(&page, &html).unwrap();
    let output = std::process::Command::new("timeout")
        .arg("120")
        .arg(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,3000",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    let expected = format!("rpcarena-report-check: ok {charts} charts");
    assert!(
        console.iter().any(|l| l.contains(&expected)),
        "the page's own check did not report {charts} charts drawn: {console:?}\n{stderr}"
    );
    assert_eq!(
        console.len(),
        1,
        "console messages besides the check: {console:?}"
    );
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 30_000,
        "the screenshot is missing or blank ({} bytes)",
        png.len()
    );
    if let Ok(keep) = std::env::var("RPCARENA_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
}

#[test]
fn interval_logs_are_hdrhistogram_logs_of_every_interval() {
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let artifacts = artifacts();
    let record = &artifacts.records[0];
    let text = rpcarena_report::hlog::interval_log(record)
        .unwrap()
        .unwrap();
    assert!(
        text.contains("#[StartTime: 1795996800.000 (seconds since epoch)]\n"),
        "{text}"
    );
    assert!(text.contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"));
    let mut intervals = 0;
    let mut total = 0;
    for entry in IntervalLogIterator::new(text.as_bytes()) {
        if let LogEntry::Interval(h) = entry.unwrap() {
            let bytes = base64::Engine::decode(
                &base64::engine::general_purpose::STANDARD,
                h.encoded_histogram(),
            )
            .unwrap();
            let histogram: hdrhistogram::Histogram<u64> =
                Deserializer::new().deserialize(&mut &bytes[..]).unwrap();
            total += histogram.len();
            intervals += 1;
        }
    }
    let client = record.client.as_ref().unwrap();
    assert_eq!(intervals, client.intervals.len());
    let reported: u64 = client.intervals.iter().map(|i| i.completed.max(50)).sum();
    assert_eq!(total, reported);
    assert_eq!(
        text,
        rpcarena_report::hlog::interval_log(record)
            .unwrap()
            .unwrap()
    );
    let dir = sealed_run(&artifacts);
    let logs = rpcarena_report::hlog::write_interval_logs(dir.path()).unwrap();
    assert!(logs.not_written.is_empty(), "{:?}", logs.not_written);
    let written = logs.written;
    assert_eq!(
        written.len(),
        25,
        "every sample with intervals, the failed one too"
    );
    assert!(
        written[0].ends_with("raw/r01-0/latency.hlog"),
        "{:?}",
        written[0]
    );
}

/// Writes `manifest` and `samples` (as given) to a run directory.
fn run_dir(manifest: &Manifest, samples: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("manifest.json"),
        serde_json::to_string_pretty(manifest).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("samples.jsonl"), samples).unwrap();
    dir
}

fn jsonl(records: &[SampleRecord]) -> String {
    records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

#[test]
fn a_torn_last_line_is_skipped_and_noted_not_a_reason_to_refuse_the_file() {
    let artifacts = artifacts();
    let whole = jsonl(&artifacts.records);
    let torn = serde_json::to_string(&artifacts.records[0]).unwrap();
    // Before the fix: "EOF while parsing", and no report of any earlier sample.
    let dir = run_dir(&artifacts.manifest, &(whole + &torn[..torn.len() / 2]));
    let regenerated = rpcarena_report::regenerate(dir.path()).unwrap();
    let line = artifacts.records.len() + 1;
    assert!(
        regenerated
            .notes
            .iter()
            .any(|n| n.contains(&format!("torn line (line {line}"))),
        "{:?}",
        regenerated.notes
    );
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("24 ok, 1 failed"), "{md}");
    // A broken line that is not the last is still an error: that is not a torn write.
    let broken = format!("{{\n{}", jsonl(&artifacts.records));
    let dir = run_dir(&artifacts.manifest, &broken);
    assert!(rpcarena_report::regenerate(dir.path()).is_err());
}

#[test]
fn a_report_of_an_unfinished_run_says_so_and_counts_from_samples_jsonl() {
    let mut artifacts = artifacts();
    // What a SIGKILLed controller leaves: the manifest of the start, records on disk.
    artifacts.manifest.finished_at = None;
    artifacts.manifest.samples.ok = 0;
    artifacts.manifest.samples.failed = 0;
    artifacts.records.truncate(3);
    let rendered = render(&artifacts);
    // Before the fix: "25 planned, 0 ok, 0 failed" and no word of the run being incomplete.
    assert!(
        rendered
            .report_md
            .contains("- Samples: 25 planned, 3 ok, 0 failed"),
        "{}",
        rendered.report_md
    );
    assert!(
        rendered
            .notes
            .iter()
            .any(|n| n.starts_with("This run is incomplete")
                && n.contains("3 of 25 planned samples")),
        "{:?}",
        rendered.notes
    );
}

#[test]
fn cpu_below_one_clock_tick_reads_as_a_bound_not_zero() {
    let mut artifacts = artifacts();
    // Less than a tick (10 ms) of server CPU in every window of configuration 1 (a open).
    let key = artifacts.records[1].config.key.clone();
    for r in &mut artifacts.records {
        if r.config.key == key
            && let Some(p) = r.server_process.as_mut()
        {
            p.cpu_us = 0.0;
        }
    }
    let rendered = render(&artifacts);
    // 100 ops/s over 10 s: 1000 operations, so less than 10 us per operation.
    // Before the fix: "0.0".
    let open_row = line(&rendered.report_md, "| a | grpc | rust | open-100-constant");
    assert!(open_row.contains("| 25.0 | < 10.0 |"), "{open_row}");
    let header = rendered.aggregate_csv.lines().next().unwrap();
    assert!(header.ends_with(",client_cpu_below_resolution,server_cpu_below_resolution"));
    let below: Vec<&str> = rendered
        .aggregate_csv
        .lines()
        .skip(1)
        .filter(|l| l.ends_with(",false,true"))
        .collect();
    assert_eq!(below.len(), 1, "{}", rendered.aggregate_csv);
}
