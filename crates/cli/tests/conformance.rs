//! `rpcarena conformance`: a group the kit cannot run for want of a partner is a row "not
//! checked" in the table and in `--json`, counted in the summary, and keeps the exit code
//! non-zero. The peer is the Rust peer behind a wrapper that renames its tcp stack, so no
//! partner declares conformance faults for it.

mod common;

use common::{peer, rpcarena};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

fn renamed_peer(dir: &Path) -> String {
    let path = dir.join("renamed");
    let body = include_str!("../../conformance/tests/renamed-tcp.sh");
    let text = format!("#!/bin/bash\nPEER={}\n{body}", peer().display());
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Runs the validation groups of `tcp-renamed` in an empty directory (no peers/ folder, so the
/// Rust peer is the only candidate partner).
fn conformance(dir: &Path, extra: &[&str]) -> Output {
    let empty = dir.join("peers");
    std::fs::create_dir_all(&empty).unwrap();
    let wrapper = renamed_peer(dir);
    let mut args = vec![
        "conformance",
        "--peers",
        empty.to_str().unwrap(),
        "--stack",
        "tcp-renamed",
        "--group",
        "client-validation",
        "--group",
        "server-validation",
    ];
    args.extend(extra);
    args.extend(["--", wrapper.as_str()]);
    Command::new(rpcarena())
        .args(&args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn rows_not_checked_show_in_the_table_and_json_and_fail_the_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let out = conformance(dir.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(
            "| client-validation | client tcp-renamed | *not checked* | a server of tcp-renamed declaring conformance faults"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 checks: 0 passed, 0 failed, 2 not checked; not done: the exit code is non-zero while any row is failed or not checked."),
        "{stdout}"
    );

    let out = conformance(dir.path(), &["--json"]);
    assert!(!out.status.success());
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let statuses: Vec<&str> = rows.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["not checked", "not checked"], "{rows:#?}");
    assert_eq!(rows[1]["name"], "server tcp-renamed");
    assert!(
        rows[1]["received"]
            .as_str()
            .unwrap()
            .starts_with("no client of tcp-renamed with conformance faults among rust"),
        "{rows:#?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("2 not checked; not done"), "{stderr}");
}
