//! Facts about the machine and files, for the manifest.

use crate::error::{FileContext, Result};
use rpcarena_model::record::HostInfo;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::Path;

/// CPU model, CPU count, kernel release and memory of this machine.
pub fn host_info() -> HostInfo {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".to_string());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get() as u32);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string());
    let memory_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024);
    HostInfo {
        cpu_model,
        cpus,
        kernel,
        memory_mib,
    }
}

/// Lower-case hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Content hash of a file or a directory tree: a file's SHA-256; for a directory, the SHA-256
/// of one line per regular file below it, `<sha256>  <relative path>\n`, sorted by path
/// (symbolic links are followed; other special files are left out). A change to any file's
/// contents or name changes it.
pub fn sha256_tree(path: &Path) -> Result<String> {
    let meta = std::fs::metadata(path).file("hashing", path)?;
    if !meta.is_dir() {
        return sha256_file(path);
    }
    let mut lines = Vec::new();
    let mut pending = vec![path.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).file("listing", &dir)? {
            let entry = entry.file("listing", &dir)?;
            let child = entry.path();
            let Ok(meta) = std::fs::metadata(&child) else {
                continue; // a dangling link
            };
            if meta.is_dir() {
                pending.push(child);
            } else if meta.is_file() {
                let rel = child.strip_prefix(path).unwrap_or(&child);
                lines.push(format!("{}  {}\n", sha256_file(&child)?, rel.display()));
            }
        }
    }
    lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
    Ok(sha256_hex(lines.concat().as_bytes()))
}

/// Lower-case hex SHA-256 of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = std::fs::File::open(path).file("hashing", path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = file.read(&mut buf).file("reading", path)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Current UTC time, RFC 3339 with nanoseconds: `2026-11-30T16:15:00.123456789Z`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_nanos(std::time::SystemTime::now()).to_string()
}

/// Current UTC time for directory names: `20261130-161500`.
pub fn now_compact() -> String {
    compact(&humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string())
}

/// `2026-11-30T16:15:00Z` as `20261130-161500`.
fn compact(rfc3339: &str) -> String {
    rfc3339
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .map(|c| if c == 'T' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_known_values() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(sha256_file(&path).unwrap(), sha256_hex(b"abc"));
    }

    #[test]
    fn reads_this_host() {
        let host = host_info();
        assert!(host.cpus >= 1);
        assert!(!host.kernel.is_empty());
        let now = now_rfc3339();
        assert!(now.ends_with('Z') && now.len() == "2026-11-30T16:15:00.123456789Z".len());
        assert_eq!(now_compact().len(), "20261130-161500".len());
        assert_eq!(compact("2026-11-30T16:15:00Z"), "20261130-161500");
    }

    #[test]
    fn a_tree_hash_sees_contents_and_names() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("lib")).unwrap();
        std::fs::write(dir.path().join("run.sh"), "exec node main.js\n").unwrap();
        std::fs::write(dir.path().join("lib/main.js"), "1").unwrap();
        let first = sha256_tree(dir.path()).unwrap();
        assert_eq!(first, sha256_tree(dir.path()).unwrap());
        std::fs::write(dir.path().join("lib/main.js"), "2").unwrap();
        let second = sha256_tree(dir.path()).unwrap();
        assert_ne!(first, second);
        std::fs::rename(
            dir.path().join("lib/main.js"),
            dir.path().join("lib/other.js"),
        )
        .unwrap();
        assert_ne!(second, sha256_tree(dir.path()).unwrap());
        // a file hashes as itself
        assert_eq!(
            sha256_tree(&dir.path().join("run.sh")).unwrap(),
            sha256_hex(b"exec node main.js\n")
        );
        assert!(sha256_tree(&dir.path().join("missing")).is_err());
    }
}
