//! End-to-end: the real `rpcarena` binary drives the real Rust peer on loopback.
//!
//! These tests need the peer binary next to `rpcarena` (`cargo test --workspace` builds it).
//! They run one at a time (a lock) because they measure, and two campaigns at once on a 2-core
//! machine would only make each other slow.

// A scenario test reads best as one story from campaign to assertions (the rules let tests
// go over the length guard).
#![allow(clippy::too_many_lines)]

mod common;

use common::{peer, records, rpcarena, rpcarena_ok, rust_peer_on_every_stack, survivors};
use rpcarena_fixtures::CampaignText;
use rpcarena_model::record::{SampleRecord, SampleStatus};
use rpcarena_protocol::histogram;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// The e2e campaign: `peers_and_cells` adds its peers and cells, then the workload and timing.
fn campaign(
    peers_and_cells: impl FnOnce(CampaignText) -> CampaignText,
    workload: &str,
    timing: &str,
) -> String {
    peers_and_cells(
        rpcarena_fixtures::campaign("e2e", 99).key("repetitions = 1\nnetwork = \"loopback\""),
    )
    .section(&format!("[workload]\n{workload}"))
    .section(&format!("[timing]\n{timing}"))
    .section("[timeouts]\nready = \"20s\"\narmed = \"30s\"\nsample = \"20s\"\nshutdown = \"10s\"")
    .build()
}

/// A client peer `c` and a server peer `s` (wrapper scripts, say) in one grpc cell `x`.
fn client_and_server(text: CampaignText, client: &Path, server: &Path) -> CampaignText {
    text.peer("c", &[&client.display().to_string()])
        .peer("s", &[&server.display().to_string()])
        .cell("x", "c", "s", "grpc")
}

struct Run {
    dir: PathBuf,
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

fn run_campaign(tmp: &Path, text: &str) -> Run {
    let file = tmp.join("campaign.toml");
    std::fs::write(&file, text).unwrap();
    let dir = tmp.join("run");
    let out = Command::new(rpcarena())
        .args(["run"])
        .arg(&file)
        .arg("--out")
        .arg(&dir)
        .output()
        .unwrap();
    Run {
        dir,
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn three_stacks_by_four_shapes_by_two_concurrencies_all_pass_and_reports_regenerate() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let text = campaign(
        rust_peer_on_every_stack,
        "concurrency = [1, 4]\nmessages_per_stream = 32\n",
        "warmup = \"200ms\"\nwindow = \"500ms\"\ndrain = \"5s\"\n",
    );
    let run = run_campaign(tmp.path(), &text);
    assert!(
        run.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    assert!(run.stdout.contains("report: "), "{}", run.stdout);

    let records = records(&run.dir);
    assert_eq!(records.len(), 24);
    for r in &records {
        assert_eq!(r.status, SampleStatus::Ok, "{}: {:?}", r.sample, r.reason);
        let client = r.client.as_ref().unwrap();
        assert_eq!(client.failed, 0, "{}", r.sample);
        assert!(client.completed > 0, "{}", r.sample);
        let h = histogram::decode(&client.histogram).unwrap();
        assert_eq!(h.len(), client.completed, "{}", r.sample);
        let n = u64::from(r.config.messages_per_stream);
        let (req, resp) = match r.config.shape.as_str() {
            "unary" => (1, 1),
            "client_stream" => (n, 1),
            "server_stream" => (1, n),
            _ => (n, n),
        };
        assert_eq!(client.requests, client.completed * req, "{}", r.sample);
        assert_eq!(client.responses, client.completed * resp, "{}", r.sample);
        for p in [r.client_process.unwrap(), r.server_process.unwrap()] {
            assert!(p.cpu_us > 0.0, "{}: {p:?}", r.sample);
            assert!(p.peak_rss_mib > 0.0, "{}: {p:?}", r.sample);
        }
        assert!(run.dir.join(&r.raw).join("client.stderr").is_file());
    }

    // The manifest records what ran, with hashes of the artifacts.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.dir.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["samples"]["ok"], 24);
    assert_eq!(manifest["campaign"]["text"], text.as_str());
    assert_eq!(manifest["peers"][0]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        manifest["artifacts"]["samples.jsonl"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(run.dir.join("certificates/ca.pem").is_file());

    // `rpcarena report DIR` regenerates the same bytes.
    let before_md = std::fs::read(run.dir.join("report.md")).unwrap();
    let before_csv = std::fs::read(run.dir.join("aggregate.csv")).unwrap();
    std::fs::remove_file(run.dir.join("report.md")).unwrap();
    rpcarena_ok(&[OsStr::new("report"), run.dir.as_os_str()]);
    assert_eq!(std::fs::read(run.dir.join("report.md")).unwrap(), before_md);
    assert_eq!(
        std::fs::read(run.dir.join("aggregate.csv")).unwrap(),
        before_csv
    );
    let md = String::from_utf8(before_md).unwrap();
    for heading in [
        "### Unary",
        "### Client stream",
        "### Server stream",
        "### Bidirectional stream",
    ] {
        assert!(md.contains(heading), "{md}");
    }
    assert_eq!(
        String::from_utf8(before_csv).unwrap().lines().count(),
        1 + 24
    );
    assert!(
        survivors(tmp.path()).is_empty(),
        "{:?}",
        survivors(tmp.path())
    );
}

/// Runs a one-sample campaign whose client or server is a wrapper script; returns its record.
fn one_failing_sample(
    tmp: &Path,
    client: &Path,
    server: &Path,
    window: &str,
) -> (Run, SampleRecord) {
    let text = campaign(
        |t| client_and_server(t, client, server),
        "shapes = [\"unary\"]\nconcurrency = [2]\n",
        &format!("warmup = \"200ms\"\nwindow = \"{window}\"\ndrain = \"2s\"\n"),
    );
    let run = run_campaign(tmp, &text);
    assert!(
        !run.status.success(),
        "a failed sample makes the run fail:\n{}",
        run.stdout
    );
    let records = records(&run.dir);
    assert_eq!(records.len(), 1);
    let record = records.into_iter().next().unwrap();
    assert_eq!(record.status, SampleStatus::Failed);
    assert!(
        run.dir.join("report.md").is_file(),
        "reports are written even when samples fail"
    );
    let survivors = survivors(tmp);
    assert!(survivors.is_empty(), "processes survived: {survivors:#?}");
    (run, record)
}

#[test]
fn a_server_that_exits_during_measurement_fails_the_sample_and_leaves_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let server = tmp.path().join("dying-server");
    // The server dies 3 s after start: well inside a 6 s window that starts after a 200 ms warmup.
    // (A background job of a non-interactive sh gets /dev/null as stdin unless given fd 3.)
    write_script(
        &server,
        &format!(
            "if [ \"$1\" = server ]; then exec 3<&0; {peer} \"$@\" <&3 & child=$!; sleep 3; kill -9 $child; exit 0; fi\nexec {peer} \"$@\"",
            peer = peer().display()
        ),
    );
    let (_run, record) = one_failing_sample(tmp.path(), &peer(), &server, "6s");
    let reason = record.reason.unwrap();
    assert!(
        reason.contains("server exited unexpectedly during measure"),
        "{reason}"
    );
}

#[test]
fn a_client_that_prints_a_malformed_event_fails_the_sample_and_leaves_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let client = tmp.path().join("garbling-client");
    // A pipeline: the whole process group (sh, peer, sed) must be killed.
    write_script(
        &client,
        &format!(
            "{} \"$@\" | sed -u 's/\"event\":\"sample\"/\"event\":\"sample\"garbage/'",
            peer().display()
        ),
    );
    let (_run, record) = one_failing_sample(tmp.path(), &client, &peer(), "500ms");
    let reason = record.reason.unwrap();
    assert!(
        reason.contains("client printed a malformed event during measure"),
        "{reason}"
    );
    assert!(record.client.is_none());
}

#[test]
fn a_client_with_the_wrong_ca_fails_with_a_tls_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let wrong_ca = tmp.path().join("wrong-ca.pem");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let key = rcgen::KeyPair::generate().unwrap();
    std::fs::write(&wrong_ca, params.self_signed(&key).unwrap().pem()).unwrap();
    let client = tmp.path().join("wrong-ca-client");
    write_script(
        &client,
        &format!(
            "prev=\nfor a; do shift; if [ \"$prev\" = --ca ]; then set -- \"$@\" {wrong}; else set -- \"$@\" \"$a\"; fi; prev=\"$a\"; done\nexec {peer} \"$@\"",
            wrong = wrong_ca.display(),
            peer = peer().display()
        ),
    );
    let (_run, record) = one_failing_sample(tmp.path(), &client, &peer(), "500ms");
    let reason = record.reason.unwrap();
    assert!(
        reason.contains("client reported a tls error during connect"),
        "{reason}"
    );
}

#[test]
fn an_invalid_campaign_is_refused_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("bad.toml");
    std::fs::write(
        &file,
        rpcarena_fixtures::campaign("bad", 1)
            .peer("p", &["x"])
            .cell("c", "p", "q", "grpc")
            .section("[workload]\nconcurrency = [0]")
            .build(),
    )
    .unwrap();
    for sub in ["validate", "run"] {
        let out = Command::new(rpcarena())
            .arg(sub)
            .arg(&file)
            .current_dir(tmp.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("bad.toml: cells[0].server: peer \"q\" is not defined"),
            "{stderr}"
        );
        assert!(
            stderr.contains("bad.toml: workload.concurrency[0]: expected 1 to 10000 lanes, got 0"),
            "{stderr}"
        );
    }
    assert!(!tmp.path().join("results").exists(), "nothing ran");
}

#[test]
fn every_load_model_and_structured_payloads_run_on_every_stack_with_noise_recorded() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let timing = "warmup = \"200ms\"\nwindow = \"500ms\"\ndrain = \"5s\"\n";
    let text = campaign(
        rust_peer_on_every_stack,
        "shapes = [\"unary\"]\nconcurrency = [2]\npayload = [\"structured\"]\nload = [{ model = \"window\", in_flight = 8 }, \"backpressure\", { model = \"open\", rate = 300, arrival = \"poisson\" }]\n",
        timing,
    );
    let run = run_campaign(tmp.path(), &text);
    assert!(
        run.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    let samples = records(&run.dir);
    assert_eq!(samples.len(), 9);
    for r in &samples {
        assert_eq!(r.status, SampleStatus::Ok, "{}: {:?}", r.sample, r.reason);
        let noise = r.noise.as_ref().expect("noise is recorded");
        assert!(noise.load_avg_1m >= 0.0);
        assert!(
            noise.client_cores > 0.0 && noise.server_cores > 0.0,
            "{noise:?}"
        );
        if rpcarena_runner_cpus() >= 2 {
            assert!(
                !noise.client_cpus.is_empty() && !noise.server_cpus.is_empty(),
                "pinning recorded"
            );
        }
        let client = r.client.as_ref().unwrap();
        assert!(
            !client.intervals.is_empty(),
            "per-second intervals are kept"
        );
        match r.config.load.model() {
            "open" => {
                let m = r.metrics.unwrap();
                assert!(m.uncorrected_p99_ns.is_some() && m.send_lag_p99_ns.is_some());
                assert_eq!(client.target_rate, Some(300.0));
            }
            "backpressure" => assert!(client.max_in_flight.unwrap_or(0) >= 1),
            _ => {}
        }
    }
    let md = std::fs::read_to_string(run.dir.join("report.md")).unwrap();
    assert!(
        md.contains("### Open loop") && md.contains("structured"),
        "{md}"
    );

    // Send saturation: one-way messages on client streams; the server's counts come back. A
    // flooding client gets a transport window ahead of the server (megabytes), which a debug-build
    // server on a shared 2-core machine needs seconds to read: a short flood and a settle bound
    // that leaves it that time (this checks function, not speed).
    let tmp = tempfile::tempdir().unwrap();
    let text = campaign(
        rust_peer_on_every_stack,
        "shapes = [\"client_stream\"]\nconcurrency = [2]\nload = [{ model = \"send-saturation\", streams = 2, settle = \"8s\" }]\n",
        "warmup = \"100ms\"\nwindow = \"300ms\"\ndrain = \"10s\"\n",
    );
    let run = run_campaign(tmp.path(), &text);
    assert!(
        run.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    for r in records(&run.dir) {
        assert_eq!(r.status, SampleStatus::Ok, "{}: {:?}", r.sample, r.reason);
        let client = r.client.unwrap();
        let (sent, received) = (client.sent.unwrap(), client.received.unwrap());
        assert!(
            received > 0 && received <= sent,
            "{sent} sent, {received} received"
        );
        assert!(r.metrics.unwrap().received_per_s.unwrap() > 0.0);
    }
}

fn rpcarena_runner_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn a_server_that_never_gets_ready_times_out_and_leaves_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let server = tmp.path().join("silent-server");
    // Answers `capabilities` like the real peer, then serves nothing and says nothing.
    write_script(
        &server,
        &format!(
            "if [ \"$1\" = server ]; then exec sleep 30; fi\nexec {} \"$@\"",
            peer().display()
        ),
    );
    let text = campaign(
        |t| client_and_server(t, &peer(), &server),
        "shapes = [\"unary\"]\nconcurrency = [1]\n",
        "warmup = \"200ms\"\nwindow = \"500ms\"\ndrain = \"2s\"\n",
    )
    .replace("ready = \"20s\"", "ready = \"1s\"");
    let run = run_campaign(tmp.path(), &text);
    assert!(!run.status.success());
    let records = records(&run.dir);
    assert_eq!(records.len(), 1);
    assert_eq!(
        records[0].reason.as_deref(),
        Some("server did not print `ready` within 1s (timeouts.ready) during server start-up")
    );
    assert!(
        survivors(tmp.path()).is_empty(),
        "{:?}",
        survivors(tmp.path())
    );
}

#[test]
fn a_report_of_degraded_artifacts_warns_on_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let manifest = rpcarena_model::record::Manifest {
        campaign: rpcarena_model::record::CampaignInfo {
            file: "gone.toml".into(),
            sha256: String::new(),
            text: "this is not a campaign".into(),
        },
        ..Default::default()
    };
    std::fs::write(
        tmp.path().join("manifest.json"),
        serde_json::to_string(&manifest).unwrap(),
    )
    .unwrap();
    std::fs::write(tmp.path().join("samples.jsonl"), "").unwrap();
    let out = Command::new(rpcarena())
        .arg("report")
        .arg(tmp.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "rpcarena: warning: The campaign text kept in manifest.json no longer parses"
        ),
        "{stderr}"
    );
    let md = std::fs::read_to_string(tmp.path().join("report.md")).unwrap();
    assert!(md.contains("## Notes"), "{md}");
}
