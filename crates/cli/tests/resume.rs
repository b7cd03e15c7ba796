//! `rpcarena run --resume`: a run whose controller is killed with SIGKILL, then resumed, ends
//! with the same samples as a run that was never interrupted.

// A scenario test reads best as one story from campaign to assertions (the rules let tests
// go over the length guard).
#![allow(clippy::too_many_lines)]

mod common;

use common::{peer, records, rpcarena, rpcarena_ok, survivors, wait_until};
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn campaign(peer: &Path) -> String {
    rpcarena_fixtures::campaign("resume", 7)
        .key("repetitions = 3\nnetwork = \"loopback\"")
        .peer("rust", &[&peer.display().to_string()])
        .cells("rust", &["grpc", "tcp"])
        .section("[workload]\nshapes = [\"unary\"]\nconcurrency = [1]")
        .section(rpcarena_fixtures::SHORT_TIMING)
        .section("[noise]\nmax_load = 1000.0")
        .build()
}

fn ids(dir: &Path) -> BTreeSet<(String, u32, u32, String)> {
    records(dir)
        .into_iter()
        .map(|r| (r.sample, r.round, r.position, r.config.key))
        .collect()
}

#[test]
fn a_run_killed_with_sigkill_and_resumed_has_every_sample_once() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("resume.toml");
    std::fs::write(&file, campaign(&peer())).unwrap();

    let whole = tmp.path().join("whole");
    let out = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&whole)
        .arg("--quiet")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = ids(&whole);
    assert_eq!(expected.len(), 6);

    let cut = tmp.path().join("cut");
    let mut child = Command::new(rpcarena())
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(&cut)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || records(&cut).len() >= 2),
        "the run recorded no samples"
    );
    child.kill().unwrap(); // SIGKILL: no handler runs, no report is written
    child.wait().unwrap();
    let before = records(&cut).len();
    assert!(before < 6, "the kill came too late to test anything");
    // The killed controller's peers see their stdin close and exit.
    assert!(
        wait_until(Duration::from_secs(20), || survivors(tmp.path()).is_empty()),
        "{:?}",
        survivors(tmp.path())
    );

    let resumed = Command::new(rpcarena())
        .arg("run")
        .arg("--resume")
        .arg(&cut)
        .arg("--json")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        resumed.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert_eq!(ids(&cut), expected, "the same set of samples, each once");
    let summary: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["samples"]["ok"], 6);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(cut.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["resumed_at"].as_array().unwrap().len(), 1);
    assert!(cut.join("report.html").is_file());
    rpcarena_ok(&[OsStr::new("verify"), cut.as_os_str()]);

    // The two runs compare benchstat-style, configuration by configuration.
    let compare = Command::new(rpcarena())
        .arg("compare")
        .arg(&whole)
        .arg(&cut)
        .args(["--metric", "ops,p50"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&compare.stdout);
    assert!(compare.status.success(), "{text}");
    assert!(text.starts_with("ops/s"), "{text}");
    assert!(text.contains("\np50 us"), "{text}");
    assert_eq!(text.matches("\ngeomean").count(), 2, "{text}");
    assert_eq!(text.matches("rust-grpc/unary/c1").count(), 2, "{text}");

    // A changed campaign is refused, and nothing runs.
    std::fs::write(&file, campaign(&peer()).replace("seed = 7", "seed = 8")).unwrap();
    let refused = Command::new(rpcarena())
        .arg("run")
        .arg("--resume")
        .arg(&cut)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("cannot resume: the campaign text"),
        "{stderr}"
    );
    assert_eq!(ids(&cut), expected);
    assert!(
        !cut.join("certificates-before-resume-2").exists(),
        "a refused resume moves nothing"
    );
    // A finished run has nothing to resume.
    std::fs::write(&file, campaign(&peer())).unwrap();
    let finished = Command::new(rpcarena())
        .arg("run")
        .arg("--resume")
        .arg(&whole)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&finished.stderr);
    assert!(!finished.status.success());
    assert!(stderr.contains("nothing to resume"), "{stderr}");
    assert!(
        survivors(tmp.path()).is_empty(),
        "{:?}",
        survivors(tmp.path())
    );
}
