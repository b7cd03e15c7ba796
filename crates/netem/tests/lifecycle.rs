//! Nothing outlives a topology: not its namespaces, TUN devices or threads; and what a killed
//! process leaves behind is found and removed.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rpcarena_netem::privileges::required_by_test;
use rpcarena_netem::{Side, Topology, TopologyConfig, leftovers, remove_leftovers};
use rpcarena_netem_core::{EmulatorChoice, profile_by_name};

/// Thread counting needs the tests in this file to run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

const CHILD_ENV: &str = "RPCARENA_NETEM_TEST_CHILD";

fn link_exists(namespace: &str, device: &str) -> bool {
    Command::new("ip")
        .args(["-n", namespace, "link", "show", "dev", device])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

#[test]
fn dropping_a_topology_leaves_nothing_behind() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !required_by_test("dropping_a_topology_leaves_nothing_behind") {
        return;
    }
    let threads_before = common::rpa_threads();
    let profile = profile_by_name("regional-wan").unwrap();
    let topo = Topology::create(&TopologyConfig::emulated(
        profile,
        EmulatorChoice::Userspace,
        9,
    ))
    .unwrap();
    let client = topo.namespace(Side::Client).to_string();
    let server = topo.namespace(Side::Server).to_string();
    assert!(common::rpa_namespaces().contains(&client));
    assert!(common::rpa_namespaces().contains(&server));
    assert!(link_exists(&client, "rpa-tun"));
    assert!(link_exists(&server, "rpa-tun"));
    assert_eq!(
        common::rpa_threads(),
        threads_before + 2,
        "one forwarder per direction"
    );

    drop(topo);

    assert!(!common::rpa_namespaces().contains(&client));
    assert!(!common::rpa_namespaces().contains(&server));
    assert!(!link_exists(&client, "rpa-tun"));
    // Joined threads disappear from /proc at once; allow a moment for the kernel anyway.
    let deadline = Instant::now() + Duration::from_secs(2);
    while common::rpa_threads() > threads_before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(common::rpa_threads(), threads_before);
}

#[test]
fn a_panic_still_removes_the_topology() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !required_by_test("a_panic_still_removes_the_topology") {
        return;
    }
    let names = std::thread::spawn(|| {
        let topo = Topology::create(&TopologyConfig::netns(1500)).unwrap();
        let names = (
            topo.namespace(Side::Client).to_string(),
            topo.namespace(Side::Server).to_string(),
        );
        std::panic::panic_any(names);
    })
    .join()
    .expect_err("the thread panics");
    let (client, server) = names.downcast_ref::<(String, String)>().unwrap().clone();
    let present = common::rpa_namespaces();
    assert!(!present.contains(&client) && !present.contains(&server));
}

/// Run by `killed_process_leftovers_are_found_and_removed` in a child process.
#[test]
#[ignore = "helper: runs only as a child of killed_process_leftovers_are_found_and_removed"]
fn child_holds_a_topology() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let profile = profile_by_name("lan").unwrap();
    let topo = Topology::create(&TopologyConfig::emulated(
        profile,
        EmulatorChoice::Userspace,
        11,
    ))
    .unwrap();
    println!(
        "READY {} {}",
        topo.namespace(Side::Client),
        topo.namespace(Side::Server)
    );
    // Bounded: the parent kills us long before this ends.
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn killed_process_leftovers_are_found_and_removed() {
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !required_by_test("killed_process_leftovers_are_found_and_removed") {
        return;
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_holds_a_topology",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD_ENV, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .find(|l| l.starts_with("READY"))
        .expect("the child reports its namespaces");
    let names: Vec<String> = ready.split_whitespace().skip(1).map(String::from).collect();
    assert_eq!(names.len(), 2);
    // While the child lives, its namespaces are not leftovers.
    assert!(leftovers().unwrap().iter().all(|l| l.creator_pid != pid));

    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();

    let found: Vec<_> = leftovers()
        .unwrap()
        .into_iter()
        .filter(|l| l.creator_pid == pid)
        .collect();
    let mut found_names: Vec<String> = found.iter().map(|l| l.namespace.clone()).collect();
    found_names.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(found_names, expected);
    // The kernel deleted the TUN devices with the killed process's file descriptors.
    assert!(found.iter().all(|l| l.devices.is_empty()), "{found:?}");

    let removed = remove_leftovers().unwrap();
    assert!(removed.iter().any(|l| l.creator_pid == pid));
    let present = common::rpa_namespaces();
    assert!(names.iter().all(|n| !present.contains(n)), "{present:?}");
    assert!(leftovers().unwrap().iter().all(|l| l.creator_pid != pid));
}
