//! `rpcarena profile` end to end with the Rust peer, and the promise that measured runs carry no
//! profiler. Tests that need a working Linux perf skip with a printed reason when it cannot
//! record here, and fail loudly under `CI=true`.

mod common;

use common::{peer, records, rpcarena, survivors};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// One rust-tcp cell of the Rust peer (or `command`), one unary configuration, a short window.
fn campaign(tmp: &Path, command: &Path, window: &str) -> PathBuf {
    let text = rpcarena_fixtures::campaign("profile", 7)
        .key("repetitions = 1\nnetwork = \"loopback\"")
        .peer("rust", &[&command.display().to_string()])
        .cells("rust", &["tcp"])
        .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [4]\n")
        .section(&format!(
            "[timing]\nwarmup = \"300ms\"\nwindow = \"{window}\"\ndrain = \"1s\"\n"
        ))
        .section(
            "[timeouts]\nready = \"20s\"\narmed = \"30s\"\nsample = \"30s\"\nshutdown = \"10s\"",
        )
        .build();
    let file = tmp.join("campaign.toml");
    std::fs::write(&file, text).unwrap();
    file
}

fn write_script(path: &Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Whether perf can record here; under CI=true a perf that cannot is a failure, elsewhere the
/// test is skipped with the reason.
fn perf_usable(test: &str) -> bool {
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock",
            "-o",
            "/dev/null",
            "--",
            "true",
        ])
        .output();
    let why = match out {
        Ok(o) if o.status.success() => return true,
        Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
        Err(e) => format!("perf cannot start ({e}): install Debian's linux-perf"),
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test}: perf cannot record on this CI machine: {why}"
    );
    eprintln!("skipping {test}: perf cannot record here: {why}");
    false
}

fn profile(campaign: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(rpcarena())
        .arg("profile")
        .arg(campaign)
        .args(["--cell", "rust-tcp", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_profile_of_the_rust_server_names_its_own_functions_and_adds_up() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !perf_usable("a_profile_of_the_rust_server_names_its_own_functions_and_adds_up") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let file = campaign(tmp.path(), &peer(), "2s");
    let out = tmp.path().join("profile");
    let run = profile(&file, &out, &["--role", "server", "--off-cpu"]);
    assert!(
        run.status.success(),
        "stdout:\n{}\nstderr:\n{}",
        text(&run.stdout),
        text(&run.stderr)
    );
    let dir = out.join("server");
    let summary: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    let samples = summary["summary"]["samples"].as_u64().unwrap();
    let folded = std::fs::read_to_string(dir.join("cpu.folded")).unwrap();
    assert!(samples > 0);
    assert_eq!(rpcarena_profile::fold::total(&folded), samples, "{folded}");
    let own: Vec<&str> = summary["summary"]["top_total"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            f["place"] == "own" && f["function"].as_str().unwrap().contains("rpcarena_peer")
        })
        .map(|f| f["function"].as_str().unwrap())
        .collect();
    assert!(
        own.len() >= 2,
        "two of the peer's own functions: {summary:#}"
    );
    for svg in ["flamegraph.svg", "offcpu.svg"] {
        let xml = std::fs::read_to_string(dir.join(svg)).unwrap();
        roxmltree::Document::parse_with_options(
            &xml,
            roxmltree::ParsingOptions {
                allow_dtd: true,
                ..roxmltree::ParsingOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{svg}: {e}"));
    }
    assert!(summary["load"]["unprofiled_ops_per_s"].as_f64().unwrap() > 0.0);
    assert!(
        !out.join("samples.jsonl").exists(),
        "a profile writes no samples.jsonl"
    );
    assert!(
        survivors(tmp.path()).is_empty(),
        "{:?}",
        survivors(tmp.path())
    );
}

#[test]
fn a_peer_that_declares_no_profiler_is_refused_with_the_reason() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let wrapper = tmp.path().join("no-profiler-peer");
    write_script(
        &wrapper,
        &format!(
            "if [ \"$1\" = capabilities ]; then {peer} capabilities | sed 's/\"profiler\":\"perf\",//'; exit 0; fi\nexec {peer} \"$@\"",
            peer = peer().display()
        ),
    );
    let file = campaign(tmp.path(), &wrapper, "1s");
    let out = tmp.path().join("profile");
    let run = profile(&file, &out, &["--role", "client"]);
    let stderr = text(&run.stderr);
    assert!(!run.status.success());
    assert!(
        stderr.contains("cannot profile the client peer rust")
            && stderr.contains("declares no profiler")
            && stderr.contains("perf"),
        "{stderr}"
    );
    assert!(!out.join("client").exists(), "nothing was recorded");
}

#[test]
fn a_server_that_exits_inside_the_window_ends_the_profile_with_no_graph() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !perf_usable("a_server_that_exits_inside_the_window_ends_the_profile_with_no_graph") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let marker = tmp.path().join("profiled");
    // Dies 1.5 s after its second start (the profiled sample's), inside a 4 s window.
    let server = tmp.path().join("dying-server");
    write_script(
        &server,
        &format!(
            "if [ \"$1\" = server ] && [ -e {m} ]; then exec 3<&0; {peer} \"$@\" <&3 & child=$!; sleep 2; kill -9 $child; exit 0; fi\n[ \"$1\" = server ] && touch {m}\nexec {peer} \"$@\"",
            m = marker.display(),
            peer = peer().display()
        ),
    );
    let file = campaign(tmp.path(), &server, "4s");
    let out = tmp.path().join("profile");
    let run = profile(&file, &out, &["--role", "server"]);
    let stderr = text(&run.stderr);
    assert!(!run.status.success(), "{stderr}");
    assert!(stderr.contains("no graph was drawn"), "{stderr}");
    assert!(!out.join("server/flamegraph.svg").exists());
    assert!(
        survivors(tmp.path()).is_empty(),
        "{:?}",
        survivors(tmp.path())
    );
}

#[test]
fn measured_runs_start_every_peer_with_the_same_arguments_and_environment_and_no_profiler() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("starts.log");
    // Each start logs its argument vector, its environment (as exec gave them) and its parent.
    let wrapper = tmp.path().join("logging-peer");
    write_script(
        &wrapper,
        &format!(
            "{{ tr '\\0' ' ' < /proc/$$/cmdline; echo; tr '\\0' '\\n' < /proc/$$/environ | sort | tr '\\n' ' '; echo; cat /proc/$PPID/comm; }} >> {log}\nexec {peer} \"$@\"",
            log = log.display(),
            peer = peer().display()
        ),
    );
    let file = campaign(tmp.path(), &wrapper, "500ms");
    let dir = tmp.path().join("run");
    let env = [
        ("PATH", std::env::var("PATH").unwrap()),
        ("RPCARENA_TEST", "1".to_string()),
    ];
    let run = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&dir)
        .env_clear()
        .envs(env.clone())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run.stderr));
    assert_eq!(records(&dir).len(), 1);
    let logged = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = logged.lines().collect();
    // capabilities, server, client: three starts of three lines each
    assert_eq!(lines.len(), 9, "{logged}");
    let expected_env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for start in lines.chunks(3) {
        let argv: Vec<&str> = start[0].split_whitespace().collect();
        assert_eq!(argv[1], wrapper.display().to_string(), "{logged}");
        assert_eq!(
            start[1].split_whitespace().collect::<Vec<_>>(),
            expected_env,
            "the controller's environment, nothing added: {logged}"
        );
        assert_eq!(
            start[2], "rpcarena",
            "started by the controller itself: {logged}"
        );
        assert!(!start[0].contains("perf"), "{logged}");
    }
    let server: Vec<&str> = lines[3].split_whitespace().skip(2).collect();
    let after = |flag: &str| server[server.iter().position(|a| *a == flag).unwrap() + 1];
    let expected = rpcarena_model::invocation::server_args(
        "tcp",
        "127.0.0.1:0",
        true,
        Path::new(after("--cert")),
        Path::new(after("--key")),
    );
    assert_eq!(server, expected, "{logged}");
}
