//! Real processes: a failing command, missing figures, one that runs forever and is bounded,
//! one that passes with its figures, and a failing set-up.

use super::*;
use rpcarena_model::command::Parser;

const TSC_LIKE: &str = "Files:            12\nTypes:          4321\nInstantiations:  98765\nMemory used:    65432K\nCheck time:      0.42s\nTotal time:      0.50s\n";

fn spec(script: &str, timeout: Duration) -> CommandSpec {
    CommandSpec {
        id: "probe".into(),
        command: vec!["sh".into(), "-c".into(), script.into()],
        setup: Vec::new(),
        dir: None,
        cpu: None,
        timeout,
        parser: Some(Parser::TscExtendedDiagnostics),
    }
}

fn run_in(spec: &CommandSpec, dir: &Path) -> CommandRecord {
    run(&CommandRun {
        spec,
        id: "r01-001-probe".into(),
        slot: Slot {
            round: 1,
            position: 1,
            config: 0,
        },
        warmup: false,
        cpus: Vec::new(),
        dir: dir.to_path_buf(),
        raw_dir: dir.join("raw"),
        raw_rel: "raw/r01-001-probe".into(),
        started_at: "t".into(),
    })
}

#[test]
fn a_passing_command_has_its_figures_and_measurements() {
    let tmp = tempfile::tempdir().unwrap();
    let script = format!("printf '{}'", TSC_LIKE.replace('\n', "\\n"));
    let record = run_in(&spec(&script, Duration::from_secs(10)), tmp.path());
    assert_eq!(record.status, SampleStatus::Ok, "{:?}", record.reason);
    assert_eq!(record.figures["types"], 4321.0);
    assert_eq!(record.figures["check_time_s"], 0.42);
    assert_eq!(record.figures["memory_used_kb"], 65432.0);
    let measured = record.measured.unwrap();
    assert!(
        measured.wall_us > 0 && measured.max_rss_kib > 0,
        "{measured:?}"
    );
    assert!(tmp.path().join("raw/command.stdout").exists());
}

#[test]
fn a_command_that_exits_non_zero_fails_and_quotes_its_stderr() {
    let tmp = tempfile::tempdir().unwrap();
    let record = run_in(
        &spec(
            "echo 'no tsconfig here' >&2; exit 3",
            Duration::from_secs(10),
        ),
        tmp.path(),
    );
    assert_eq!(record.status, SampleStatus::Failed);
    let reason = record.reason.unwrap();
    assert!(reason.contains("\"probe\""), "{reason}");
    assert!(reason.contains("exit status 3"), "{reason}");
    assert!(reason.contains("no tsconfig here"), "{reason}");
    assert!(record.measured.is_some(), "what was measured is kept");
}

#[test]
fn missing_figures_fail_the_sample_and_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let partial = "Types: 10\\nInstantiations: 20\\n";
    let record = run_in(
        &spec(
            &format!("printf '{partial}{}'", "x".repeat(300)),
            Duration::from_secs(10),
        ),
        tmp.path(),
    );
    assert_eq!(record.status, SampleStatus::Failed);
    let reason = record.reason.unwrap();
    assert!(reason.contains("Check time, Memory used"), "{reason}");
    assert!(reason.contains("tsc-extended-diagnostics"), "{reason}");
    assert!(
        reason.ends_with("..."),
        "the quote is cut at 200 bytes: {reason}"
    );
    assert!(reason.len() < 450, "{reason}");
}

#[test]
fn a_command_past_its_bound_is_killed_with_its_whole_group() {
    // the controller is a subreaper, so the orphaned background sleep comes back to be reaped
    let _ = nix::sys::prctl::set_child_subreaper(true);
    let tmp = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // a background child in the same group, and the leader itself, both sleep forever
    let record = run_in(
        &spec(
            "sleep 100 & echo $! > bg.pid; sleep 100",
            Duration::from_secs(1),
        ),
        tmp.path(),
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(record.status, SampleStatus::Failed);
    let reason = record.reason.unwrap();
    assert!(reason.contains("ran past its bound of 1s"), "{reason}");
    let bg: i32 = std::fs::read_to_string(tmp.path().join("bg.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // the background sleep was killed too (it may linger briefly as init's zombie)
    let deadline = Instant::now() + Duration::from_secs(3);
    let alive = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "))
    };
    while alive(bg) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(bg), "the background sleep {bg} survived");
}

#[test]
fn a_failing_setup_fails_the_sample_before_the_command_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut with_setup = spec("touch ran", Duration::from_secs(10));
    with_setup.setup = vec![
        "sh".into(),
        "-c".into(),
        "echo cannot prepare >&2; exit 1".into(),
    ];
    let record = run_in(&with_setup, tmp.path());
    assert_eq!(record.status, SampleStatus::Failed);
    let reason = record.reason.unwrap();
    assert!(
        reason.contains("set-up") && reason.contains("cannot prepare"),
        "{reason}"
    );
    assert!(!tmp.path().join("ran").exists());
}

#[test]
fn a_program_that_does_not_exist_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let mut missing = spec("", Duration::from_secs(10));
    missing.command = vec!["rpcarena-no-such-program".into()];
    let record = run_in(&missing, tmp.path());
    let reason = record.reason.unwrap();
    assert!(reason.contains("rpcarena-no-such-program"), "{reason}");
    assert!(reason.contains("PATH"), "{reason}");
}
