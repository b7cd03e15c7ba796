//! Generates the tonic service of the workload contract (only the peer serves and calls it; the
//! messages come from `rpcarena-protocol`), reads the versions of the libraries behind each stack
//! from the workspace's `Cargo.lock`, so that `capabilities` always reports what was actually
//! built (no hand-kept version numbers), and records how this build was made (the compiler's
//! version, the profile and its optimization level, the target and extra compiler flags) for
//! `capabilities`' `build`.
//!
//! The lockfile may hold several versions of one crate (for different dependents), so the
//! versions are taken from the dependency graph reachable from this package, not by name alone.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::env;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

/// Libraries reported in `capabilities` (see src/capabilities.rs for which stack uses which).
const LIBRARIES: &[&str] = &[
    "tonic",
    "hyper",
    "h2",
    "prost",
    "quinn",
    "quinn-proto",
    "rustls",
    "tokio-rustls",
    "ring",
    "tokio",
    "zmq",
    "zmq-sys",
];

const PACKAGE: &str = "rpcarena-peer-rust";

#[derive(Default)]
struct Package {
    name: String,
    version: String,
    dependencies: Vec<String>,
}

fn main() {
    generate_service();
    report_library_versions();
}

/// `BenchService`'s tonic client and server, on the message types of `rpcarena_protocol::pb`.
fn generate_service() {
    let proto_root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../proto");
    let file = "rpcarena/bench/v1/bench.proto";
    println!("cargo:rerun-if-changed={proto_root}/{file}");
    let descriptors = protox::compile([file], [proto_root])
        .unwrap_or_else(|e| panic!("compiling {proto_root}/{file}: {e}"));
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .extern_path(".rpcarena.bench.v1", "::rpcarena_protocol::pb")
        .compile_fds(descriptors)
        .unwrap_or_else(|e| panic!("generating the BenchService code: {e}"));
}

fn report_library_versions() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let lock_path = manifest_dir.join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock_path.display());
    let text = fs::read_to_string(&lock_path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; the peer reports library versions from the workspace lockfile",
            lock_path.display()
        )
    });
    let packages = parse_lock(&text);
    let reachable = reachable_from(&packages, PACKAGE);
    for library in LIBRARIES {
        let versions: BTreeSet<&str> = reachable
            .iter()
            .filter(|(name, _)| name == library)
            .map(|(_, version)| version.as_str())
            .collect();
        if versions.is_empty() {
            panic!("{library} is not in the dependency graph of {PACKAGE} in Cargo.lock");
        }
        // Two versions of one library in our graph would be a build smell; report both.
        let joined = versions.into_iter().collect::<Vec<_>>().join("+");
        let key = library.to_uppercase().replace('-', "_");
        println!("cargo:rustc-env=RPCARENA_LIB_{key}={joined}");
    }
    record_build();
}

/// How this build is made, as cargo tells a build script (a change of any of these rebuilds
/// the package, and so reruns this script).
fn record_build() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let toolchain = Command::new(&rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_else(|| panic!("`{rustc} --version` failed; capabilities report the compiler"));
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS")
        .unwrap_or_default()
        .split('\x1f')
        .filter(|flag| !flag.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let cargo = |name: &str| env::var(name).unwrap_or_else(|_| format!("unknown {name}"));
    println!("cargo:rustc-env=RPCARENA_BUILD_TOOLCHAIN={toolchain}");
    println!(
        "cargo:rustc-env=RPCARENA_BUILD_PROFILE={}",
        cargo("PROFILE")
    );
    println!(
        "cargo:rustc-env=RPCARENA_BUILD_OPT_LEVEL={}",
        cargo("OPT_LEVEL")
    );
    println!("cargo:rustc-env=RPCARENA_BUILD_DEBUG={}", cargo("DEBUG"));
    println!("cargo:rustc-env=RPCARENA_BUILD_TARGET={}", cargo("TARGET"));
    println!("cargo:rustc-env=RPCARENA_BUILD_RUSTFLAGS={flags}");
}

/// Parses the `[[package]]` tables of a Cargo.lock (name, version, dependencies).
fn parse_lock(text: &str) -> Vec<Package> {
    let mut packages = Vec::new();
    let mut current: Option<Package> = None;
    let mut in_dependencies = false;
    for line in text.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            packages.extend(current.take());
            current = Some(Package::default());
            in_dependencies = false;
            continue;
        }
        let Some(package) = current.as_mut() else {
            continue;
        };
        if in_dependencies {
            if line == "]" {
                in_dependencies = false;
            } else {
                package
                    .dependencies
                    .push(line.trim_end_matches(',').trim_matches('"').to_string());
            }
        } else if let Some(value) = line.strip_prefix("name = ") {
            package.name = value.trim_matches('"').to_string();
        } else if let Some(value) = line.strip_prefix("version = ") {
            package.version = value.trim_matches('"').to_string();
        } else if line == "dependencies = [" {
            in_dependencies = true;
        } else if line.starts_with('[') {
            // Another table (e.g. [metadata]) ends the package list.
            packages.extend(current.take());
        }
    }
    packages.extend(current);
    packages
}

/// (name, version) of every package reachable from `root` through lockfile dependency edges.
fn reachable_from(packages: &[Package], root: &str) -> BTreeSet<(String, String)> {
    let mut by_name: BTreeMap<&str, Vec<&Package>> = BTreeMap::new();
    for package in packages {
        by_name.entry(&package.name).or_default().push(package);
    }
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<&Package> = by_name
        .get(root)
        .map(|list| list.iter().copied().collect())
        .unwrap_or_default();
    while let Some(package) = queue.pop_front() {
        if !seen.insert((package.name.clone(), package.version.clone())) {
            continue;
        }
        for dependency in &package.dependencies {
            // An entry is "name", or "name version" when the name alone is ambiguous, optionally
            // followed by " (source)".
            let mut parts = dependency.split(' ');
            let name = parts.next().unwrap_or_default();
            let version = parts.next();
            for candidate in by_name.get(name).into_iter().flatten() {
                if version.is_none_or(|v| v == candidate.version) {
                    queue.push_back(candidate);
                }
            }
        }
    }
    seen
}
