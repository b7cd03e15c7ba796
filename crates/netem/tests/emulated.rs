//! Traffic through real namespaces and the userspace emulator. Bounds are generous: the
//! machine is a shared 2-core VM, and these tests check behaviour, not performance.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use rpcarena_netem::privileges::required_by_test;
use rpcarena_netem::{Side, Topology, TopologyConfig, kernel_netem_support};
use rpcarena_netem_core::{
    BackendKind, DirectionSpec, EmulatorChoice, Granularity, LinkProfile, LossModel,
    profile_by_name,
};

fn userspace(spec: DirectionSpec, seed: u64) -> Topology {
    let profile = LinkProfile::symmetric(Some("test"), 1500, spec);
    Topology::create(&TopologyConfig::emulated(
        profile,
        EmulatorChoice::Userspace,
        seed,
    ))
    .expect("create userspace topology")
}

#[test]
fn udp_round_trip_shows_the_configured_delay() {
    if !required_by_test("udp_round_trip_shows_the_configured_delay") {
        return;
    }
    let mut topo = userspace(
        DirectionSpec {
            delay_ns: 10_000_000,
            jitter_ns: 1_000_000,
            ..DirectionSpec::default()
        },
        1,
    );
    assert_eq!(topo.backend(), BackendKind::Userspace);
    let mut rtts = common::echo_rtts(&topo, 40, Duration::from_millis(5));
    assert_eq!(
        rtts.len(),
        40,
        "every echo should come back on a lossless link"
    );
    rtts.sort_by(f64::total_cmp);
    // Delays are 9..11 ms each way: the round trip is at least 18 ms; allow a lot on top.
    assert!(rtts[0] >= 0.018, "fastest RTT {:.4} s", rtts[0]);
    let median = rtts[rtts.len() / 2];
    assert!(
        (0.0195..0.030).contains(&median),
        "median RTT {median:.4} s"
    );
    let stats = topo.stats().expect("userspace stats");
    assert!(stats.client_to_server.counters.released >= 40);
    assert_eq!(stats.client_to_server.counters.lost, 0);
    topo.check_after_sample().expect("no device drops");
}

#[test]
fn random_loss_is_roughly_the_configured_rate() {
    if !required_by_test("random_loss_is_roughly_the_configured_rate") {
        return;
    }
    let mut topo = userspace(
        DirectionSpec {
            loss: LossModel::Random { probability: 0.2 },
            ..DirectionSpec::default()
        },
        2,
    );
    let receiver = common::udp(&topo, Side::Server, 9200);
    receiver
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let sender = common::udp(&topo, Side::Client, 0);
    let to = SocketAddrV4::new(topo.address(Side::Server), 9200);
    let n = 2000;
    // Receive while sending, so the socket buffer never overflows.
    // The receiver stops at the first quiet 300 ms *after* the sender finished: on a busy machine
    // the sender itself can stall for longer than that.
    let sent_all = std::sync::atomic::AtomicBool::new(false);
    let received = std::thread::scope(|scope| {
        let rx = scope.spawn(|| {
            let mut received = 0;
            let mut buf = [0u8; 64];
            let deadline = Instant::now() + Duration::from_secs(20);
            while received < n && Instant::now() < deadline {
                match receiver.recv(&mut buf) {
                    Ok(_) => received += 1,
                    Err(_) if sent_all.load(std::sync::atomic::Ordering::Acquire) => break,
                    Err(_) => {}
                }
            }
            received
        });
        for i in 0..n {
            sender.send_to(&(i as u64).to_le_bytes(), to).unwrap();
            if i % 20 == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        sent_all.store(true, std::sync::atomic::Ordering::Release);
        rx.join().unwrap()
    });
    let kept = received as f64 / n as f64;
    // 80 % expected; 5 standard errors are about 4.5 points.
    assert!((0.75..0.85).contains(&kept), "kept {kept}");
    let c = topo.stats().unwrap().client_to_server.counters;
    assert_eq!(c.arrived, n as u64);
    assert_eq!(c.lost + received as u64, n as u64, "only the model loses");
    topo.check_after_sample().expect("no device drops");
}

#[test]
fn tcp_data_arrives_intact_at_the_emulated_rate() {
    if !required_by_test("tcp_data_arrives_intact_at_the_emulated_rate") {
        return;
    }
    let topo = tcp_intact(Granularity::Packet);
    // Every wire packet went through the emulator on its own: 2 MB is at least 1,381 segments.
    let c2s = topo.stats().unwrap().client_to_server.counters;
    assert!(c2s.arrived >= 1_381, "{c2s:?}");
}

#[test]
fn tcp_data_arrives_intact_through_offload_bundles() {
    if !required_by_test("tcp_data_arrives_intact_through_offload_bundles") {
        return;
    }
    let topo = tcp_intact(Granularity::Offload);
    // The kernel handed over GSO bundles: fewer units than the 1,381 segments 2 MB needs, while
    // the rate still charged every segment's bytes (tcp_intact checks the time).
    let c2s = topo.stats().unwrap().client_to_server.counters;
    assert!(c2s.arrived < 1_381, "no bundles seen: {c2s:?}");
    assert!(c2s.bytes >= 2_000_000, "{c2s:?}");
}

/// Sends 2 MB through a 5 ms, 50 Mbit/s link of `granularity` and checks it arrives intact, no
/// faster than the rate; returns the topology for its counters.
fn tcp_intact(granularity: Granularity) -> Topology {
    let mut profile = LinkProfile::symmetric(
        Some("test"),
        1500,
        DirectionSpec {
            delay_ns: 5_000_000,
            rate_bps: Some(50_000_000),
            ..DirectionSpec::default()
        },
    );
    profile.granularity = granularity;
    let mut topo = Topology::create(&TopologyConfig::emulated(
        profile,
        EmulatorChoice::Userspace,
        3,
    ))
    .expect("create userspace topology");
    let addr = SocketAddrV4::new(topo.address(Side::Server), 9300);
    let listener = topo
        .run_in(Side::Server, move || TcpListener::bind(addr))
        .unwrap()
        .unwrap();
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let started = Instant::now();
    let received = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let (mut s, _) = listener.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            got
        });
        let mut client = topo
            .run_in(Side::Client, move || {
                TcpStream::connect_timeout(&addr.into(), Duration::from_secs(5))
            })
            .unwrap()
            .unwrap();
        client
            .set_write_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        client.write_all(&data).unwrap();
        drop(client);
        reader.join().unwrap()
    });
    let elapsed = started.elapsed().as_secs_f64();
    assert!(received == data, "payload corrupted or truncated");
    // 2 MB at 50 Mbit/s cannot take less than 0.32 s of wire time.
    assert!(
        elapsed > 0.3,
        "transfer took only {elapsed:.3} s: rate not enforced"
    );
    assert!(elapsed < 20.0, "transfer took {elapsed:.1} s");
    topo.check_after_sample().expect("no device drops");
    topo
}

#[test]
fn plain_veth_backend_connects_the_namespaces() {
    if !required_by_test("plain_veth_backend_connects_the_namespaces") {
        return;
    }
    let mut topo = Topology::create(&TopologyConfig::netns(1500)).expect("netns topology");
    assert_eq!(topo.backend(), BackendKind::Netns);
    assert!(topo.stats().is_none());
    let rtts = common::echo_rtts(&topo, 10, Duration::from_millis(1));
    assert_eq!(rtts.len(), 10);
    assert!(rtts.iter().all(|&r| r < 0.05), "veth RTTs {rtts:?}");
    topo.check_after_sample().expect("no device drops");
    let prefix = topo.exec_prefix(Side::Client);
    assert_eq!(&prefix[1..3], ["netns", "exec"]);
    assert_eq!(prefix[3], topo.namespace(Side::Client));
}

#[test]
fn exec_prefix_runs_commands_inside_the_namespace() {
    if !required_by_test("exec_prefix_runs_commands_inside_the_namespace") {
        return;
    }
    let topo = userspace(DirectionSpec::default(), 4);
    let prefix = topo.exec_prefix(Side::Server);
    let out = std::process::Command::new(&prefix[0])
        .args(&prefix[1..])
        .args([&prefix[0], "-o", "addr", "show", "dev", "rpa-tun"])
        .output()
        .expect("run ip inside the namespace");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("10.77.0.2"), "{text}");
    assert_eq!(topo.info().mtu, 1500);
}

#[test]
fn kernel_backend_is_used_or_refused_clearly() {
    if !required_by_test("kernel_backend_is_used_or_refused_clearly") {
        return;
    }
    let profile = profile_by_name("regional-wan").unwrap();
    let result = Topology::create(&TopologyConfig::emulated(
        profile,
        EmulatorChoice::Kernel,
        5,
    ));
    match kernel_netem_support() {
        Ok(()) => {
            let topo = result.expect("kernel netem topology");
            assert!(
                topo.info()
                    .kernel_qdisc
                    .as_deref()
                    .unwrap_or("")
                    .contains("netem")
            );
        }
        Err(reason) => {
            let err = result
                .expect_err("kernel netem must be refused here")
                .to_string();
            assert!(err.contains("kernel netem is unavailable"), "{err}");
            assert!(
                err.contains("userspace"),
                "the error should name the way out: {err}"
            );
            println!("kernel netem unavailable here: {reason}");
        }
    }
}

#[test]
fn doctor_reports_the_userspace_backend() {
    if !required_by_test("doctor_reports_the_userspace_backend") {
        return;
    }
    let report = rpcarena_netem::doctor();
    let text = report.to_string();
    assert!(report.supports(BackendKind::Userspace), "{text}");
    assert!(report.supports(BackendKind::Netns), "{text}");
    assert!(report.auto_emulator.is_some(), "{text}");
}
