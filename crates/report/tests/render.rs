//! The exporters are pure functions of the artifacts: fixed records in, fixed bytes out.

use rpcarena_model::campaign::Campaign;
use rpcarena_model::matrix;
use rpcarena_model::record::{
    CampaignInfo, ClientResult, HostInfo, Manifest, Metrics, Noise, ProcessStats, SampleCounts,
    SampleRecord, SampleStatus,
};
use rpcarena_protocol::histogram;
use rpcarena_report::{Artifacts, render};

const CAMPAIGN: &str = r#"
name = "fixture"
description = "Two cells, unary and open loop, six rounds."
seed = 42
repetitions = 6
baseline = "a"
[[peers]]
id = "p"
command = ["peer"]
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
shapes = ["unary"]
concurrency = [4]
load = ["closed", { model = "open", rate = 100 }]
"#;

fn record(config_index: usize, round: u32, ops: f64, p99_ns: u64) -> SampleRecord {
    let campaign = Campaign::parse(CAMPAIGN, "fixture.toml").unwrap();
    let config = matrix::expand(&campaign)[config_index].clone();
    let completed = (ops * 2.0) as u64;
    let mut h = histogram::new_latency_histogram();
    h.record_n(1_000_000, completed).unwrap();
    let open = config.load.model() == "open";
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
        client: Some(ClientResult {
            lanes: 4,
            connections: 1,
            completed,
            requests: completed,
            responses: completed,
            request_bytes: completed * 256,
            response_bytes: completed * 256,
            window_ns: 2_000_000_000,
            histogram: histogram::encode(&h).unwrap(),
            ..ClientResult::default()
        }),
        metrics: Some(Metrics {
            ops_per_s: ops,
            requests_per_s: ops,
            responses_per_s: ops,
            mean_ns: 1_000_000.0,
            p50_ns: 1_000_447,
            p90_ns: 1_000_447,
            p99_ns,
            p999_ns: p99_ns,
            max_ns: p99_ns,
            uncorrected_p50_ns: open.then_some(900_000),
            uncorrected_p99_ns: open.then_some(1_200_000),
            send_lag_p50_ns: open.then_some(4_000),
            send_lag_p99_ns: open.then_some(20_000),
            received_per_s: None,
        }),
        client_process: Some(ProcessStats {
            cpu_us: 1000.0,
            cpu_us_per_op: 25.0,
            peak_rss_mib: 8.5,
            readings: 200,
            processes: 1,
        }),
        server_process: Some(ProcessStats {
            cpu_us: 800.0,
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
        network: None,
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
            seed: 42,
            campaign: CampaignInfo {
                file: "fixture.toml".into(),
                sha256: "ab".repeat(32),
                text: CAMPAIGN.into(),
            },
            host: HostInfo {
                cpu_model: "Test CPU".into(),
                cpus: 2,
                kernel: "6.18".into(),
                memory_mib: 24000,
            },
            network: serde_json::json!({"backend": "loopback"}),
            peers: Vec::new(),
            only_cells: Vec::new(),
            samples: SampleCounts {
                planned: 25,
                ok: 24,
                failed: 1,
            },
            artifacts: Default::default(),
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
    let b_closed = md
        .lines()
        .find(|l| l.starts_with("| b | quic | rust | closed"))
        .unwrap();
    assert!(
        b_closed.contains("1.20x") && b_closed.contains("faster"),
        "{b_closed}"
    );
    assert!(b_closed.contains("drift 1/6"), "{b_closed}");
    assert!(
        b_closed.contains("| 6/7 |"),
        "the failed sample is counted, not used: {b_closed}"
    );
    let b_open = md
        .lines()
        .find(|l| l.starts_with("| b | quic | rust | open"))
        .unwrap();
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
