//! A quick netcheck through real namespaces (needs root and /dev/net/tun; CI runs as root).

use rpcarena_netcheck::{NetcheckOptions, Phase, netcheck};
use rpcarena_netem::privileges::required_by_test;
use rpcarena_netem_core::profile_by_name;

#[test]
fn quick_netcheck_produces_every_figure() {
    if !required_by_test("quick_netcheck_produces_every_figure") {
        return;
    }
    let mut options = NetcheckOptions::quick();
    options.phases = vec![Phase::Rtt, Phase::Loss, Phase::Rate, Phase::Overfill];
    let report = netcheck(&profile_by_name("regional-wan").unwrap(), &options).expect("netcheck");
    let text = report.to_string();
    println!("{text}");
    for name in [
        "rtt mean",
        "rtt sd",
        "one-way loss",
        "udp payload rate (loss off)",
        "overfilled queue one-way delay",
        "release lateness p99",
    ] {
        assert!(
            report
                .figures
                .iter()
                .any(|f| f.name == name && f.measured.is_some()),
            "missing {name}:\n{text}"
        );
    }
    // Timing figures are not asserted (shared CI machine); functional ones are.
    let figure = |name: &str| report.figures.iter().find(|f| f.name == name).unwrap();
    assert!(!text.contains("phase failed"), "{text}");
    assert_eq!(figure("udp reordering (with rate)").measured, Some(0.0));
    let rate = figure("udp payload rate (loss off)");
    let (e, m) = (rate.expected.unwrap(), rate.measured.unwrap());
    assert!((m / e - 1.0).abs() < 0.05, "rate {m} vs {e}");
}
