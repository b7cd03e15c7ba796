//! Records the source revision and whether the tree was dirty, for the manifest.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    // Re-run when the checkout or any source changes, so the dirty flag follows edits.
    for path in [
        ".git/HEAD",
        ".git/index",
        "crates",
        "proto",
        "campaigns",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={root}/{path}");
    }
    let revision = git(&["-C", root, "rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty = git(&["-C", root, "status", "--porcelain", "--untracked-files=no"])
        .map(|s| !s.is_empty())
        .unwrap_or(false);
    println!("cargo:rustc-env=RPCARENA_SOURCE_REVISION={revision}");
    println!("cargo:rustc-env=RPCARENA_SOURCE_DIRTY={dirty}");
}
