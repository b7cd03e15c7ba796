//! Holds an emulated topology open for manual experiments.
//!
//! ```text
//! cargo run --release -p rpcarena-netem --example topology -- regional-wan [userspace|kernel|auto] [SECONDS]
//! ip netns exec <client ns> ping 10.77.0.2
//! ```
//! Prints the namespaces, waits SECONDS (default 60) or until stdin closes, prints the
//! emulator counters and removes everything.

use std::io::Read;
use std::time::Duration;

use rpcarena_netem::{Side, Topology, TopologyConfig};
use rpcarena_netem_core::{EmulatorChoice, profile_by_name};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let profile = profile_by_name(args.first().map_or("regional-wan", String::as_str))?;
    let emulator = match args.get(1).map(String::as_str) {
        Some("kernel") => EmulatorChoice::Kernel,
        Some("auto") => EmulatorChoice::Auto,
        _ => EmulatorChoice::Userspace,
    };
    let seconds: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let mut topo = Topology::create(&TopologyConfig::emulated(profile, emulator, 1))?;
    println!("{}", serde_json::to_string_pretty(topo.info())?);
    println!("client: {}", topo.exec_prefix(Side::Client).join(" "));
    println!("server: {}", topo.exec_prefix(Side::Server).join(" "));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(Duration::from_secs(seconds));
    println!("{}", serde_json::to_string_pretty(&topo.stats())?);
    match topo.check_after_sample() {
        Ok(_) => println!("check_after_sample: ok"),
        Err(e) => println!("check_after_sample: {e}"),
    }
    topo.shutdown()?;
    Ok(())
}
