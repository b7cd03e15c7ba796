//! Whether this process may build topologies: CAP_NET_ADMIN and CAP_SYS_ADMIN (namespaces,
//! devices) and `/dev/net/tun` (the userspace emulator).

use crate::error::NetemError;

const CAP_NET_ADMIN: u64 = 1 << 12;
const CAP_SYS_ADMIN: u64 = 1 << 21;

/// Fails early, with the capability named, when we are not privileged enough.
pub fn check() -> Result<(), NetemError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| NetemError::io("reading /proc/self/status", e))?;
    let missing = missing_capabilities(&status);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(NetemError::NotPrivileged {
            detail: format!("missing {}", missing.join(" and ")),
        })
    }
}

/// The capabilities a topology needs that `/proc/self/status` text shows as missing.
fn missing_capabilities(status: &str) -> Vec<&'static str> {
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    [
        (CAP_NET_ADMIN, "CAP_NET_ADMIN"),
        (CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
    ]
    .into_iter()
    .filter(|(bit, _)| caps & bit == 0)
    .map(|(_, name)| name)
    .collect()
}

/// Why this process cannot build an emulated topology, or `None` when it can.
pub fn missing() -> Option<String> {
    if let Err(e) = check() {
        return Some(e.to_string());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("/dev/net/tun is missing".to_string());
    }
    None
}

/// For tests that need root: `true` when they can run. Otherwise they skip (printing why) and
/// get `false`, except under `CI=true`, where CI promises root: there a missing privilege is a
/// broken CI set-up and fails the test with a message that says so.
///
/// # Panics
///
/// Under `CI=true` when the process lacks the privileges or `/dev/net/tun`.
pub fn required_by_test(test: &str) -> bool {
    let Some(why) = missing() else {
        return true;
    };
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!(
            "{test} needs root and /dev/net/tun, and CI=true promises both, but: {why}; run CI as \
             root (.ci/run checks this first)"
        );
    }
    println!("SKIP {test}: {why} (run as root; CI does)");
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_missing_capability() {
        let both = "Name:\tx\nCapEff:\t0000000000201000\n";
        assert!(missing_capabilities(both).is_empty());
        let neither = "CapEff:\t0000000000000000\n";
        assert_eq!(
            missing_capabilities(neither),
            ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"]
        );
        assert_eq!(
            missing_capabilities("CapEff:\t0000000000001000\n"),
            ["CAP_SYS_ADMIN"]
        );
    }
}
