//! netcheck with the engineering knobs `rpcarena netcheck` does not offer: a profile from a JSON
//! file, only some phases, a dump of the raw RTTs, the number of links and echoes.
//!
//! ```text
//! cargo run --release -p rpcarena-netcheck --example netcheck -- [PROFILE|FILE.json] [--quick] [--kernel|--auto] [--seed N] [--json FILE]
//!     [--only rtt,loss,rate,tcp,overfill,forwarding] [--dump DIR] [--links N] [--echoes N]
//! ```
//! Exits 1 when a figure is outside its tolerance, 2 when the check could not run.

use rpcarena_netcheck::{NetcheckOptions, NetcheckReport, netcheck};
use rpcarena_netem_core::{EmulatorChoice, LinkProfile, profile_by_name};

/// The flags followed by a value.
const VALUE_FLAGS: [&str; 6] = [
    "--seed", "--json", "--only", "--dump", "--links", "--echoes",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = options_from(&args);
    let profile = match load_profile(profile_name(&args)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    match netcheck(&profile, &options) {
        Ok(report) => {
            print!("{report}");
            if let Some(path) = value_of(&args, "--json") {
                write_json(&path, &report);
            }
            std::process::exit(if report.passed() { 0 } else { 1 });
        }
        Err(e) => {
            eprintln!("netcheck could not run: {e}");
            std::process::exit(2);
        }
    }
}

/// The value after `flag`, if both are there.
fn value_of(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// The options the flags set; a value that does not parse leaves the default.
fn options_from(args: &[String]) -> NetcheckOptions {
    let mut options = if args.iter().any(|a| a == "--quick") {
        NetcheckOptions::quick()
    } else {
        NetcheckOptions::full()
    };
    if args.iter().any(|a| a == "--kernel") {
        options.emulator = EmulatorChoice::Kernel;
    }
    if args.iter().any(|a| a == "--auto") {
        options.emulator = EmulatorChoice::Auto;
    }
    let value_of = |flag: &str| value_of(args, flag);
    if let Some(seed) = value_of("--seed").and_then(|s| s.parse().ok()) {
        options.seed = seed;
    }
    if let Some(only) = value_of("--only") {
        options.phases = only
            .split(',')
            .filter_map(|p| serde_json::from_str(&format!("\"{p}\"")).ok())
            .collect();
    }
    options.dump_dir = value_of("--dump").map(Into::into);
    if let Some(n) = value_of("--links").and_then(|s| s.parse().ok()) {
        options.max_parallel_links = n;
    }
    if let Some(n) = value_of("--echoes").and_then(|s| s.parse().ok()) {
        options.rtt_echoes = n;
    }
    options
}

/// The first argument that is neither a flag nor a flag's value; `regional-wan` without one.
fn profile_name(args: &[String]) -> &str {
    args.iter()
        .enumerate()
        .find(|(i, a)| {
            !a.starts_with("--") && (*i == 0 || !VALUE_FLAGS.contains(&args[i - 1].as_str()))
        })
        .map_or("regional-wan", |(_, a)| a.as_str())
}

/// A profile by name, or from a JSON file when `name` ends in `.json`.
fn load_profile(name: &str) -> Result<LinkProfile, String> {
    if name.ends_with(".json") {
        std::fs::read_to_string(name)
            .map_err(|e| e.to_string())
            .and_then(|s| serde_json::from_str(&s).map_err(|e| e.to_string()))
            .map_err(|e| format!("{name}: {e}"))
    } else {
        profile_by_name(name).map_err(|e| e.to_string())
    }
}

/// Writes the report as JSON to `path`; a failure is only reported.
fn write_json(path: &str, report: &NetcheckReport) {
    let json = serde_json::to_string_pretty(report).unwrap_or_default();
    if let Err(e) = std::fs::write(path, json) {
        eprintln!("writing {path}: {e}");
    }
}
