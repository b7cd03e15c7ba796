//! Error types. Every message says what failed, where, and what the user can do about it.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One device counter that grew during a sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceDrop {
    /// Namespace holding the device.
    pub namespace: String,
    /// Device name inside that namespace.
    pub device: String,
    /// Counter name, e.g. `tx_dropped`.
    pub counter: String,
    /// How much it grew since the previous check.
    pub delta: u64,
}

impl fmt::Display for DeviceDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} +{} on {} in namespace {}",
            self.counter, self.delta, self.device, self.namespace
        )
    }
}

fn join_drops(drops: &[DeviceDrop]) -> String {
    drops
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Anything that can go wrong setting up, running, checking or removing an emulated network.
#[derive(Debug, thiserror::Error)]
pub enum NetemError {
    /// The profile is invalid.
    #[error(transparent)]
    Profile(#[from] rpcarena_netem_core::ProfileError),
    /// The process lacks the capabilities (or devices) to create namespaces and TUN devices.
    #[error(
        "creating network namespaces needs CAP_NET_ADMIN and CAP_SYS_ADMIN ({detail}); run as \
         root, or use the loopback backend"
    )]
    NotPrivileged {
        /// Which capability is missing.
        detail: String,
    },
    /// A required program is not installed.
    #[error(
        "`{tool}` was not found on PATH; it is needed {purpose}; install the `{package}` package"
    )]
    MissingTool {
        /// Program name.
        tool: String,
        /// What it is needed for.
        purpose: String,
        /// Debian package that provides it.
        package: String,
    },
    /// The TUN driver is missing or unusable.
    #[error(
        "the TUN driver is unusable ({detail}); the userspace emulator needs /dev/net/tun: load \
         the `tun` module or give the container the device"
    )]
    NoTun {
        /// What exactly failed.
        detail: String,
    },
    /// Kernel netem was requested but this kernel cannot do it.
    #[error(
        "kernel netem is unavailable on this host: {reason}; use emulator = \"userspace\" (or \
         \"auto\", which picks it here)"
    )]
    KernelNetemUnavailable {
        /// What the probe saw.
        reason: String,
    },
    /// A veth did not take the offload settings its loss granularity needs (kernel backend).
    #[error(
        "{device} in namespace {namespace}: {detail}; the kernel backend cannot give loss \
         granularity \"{granularity}\" on this host: use emulator = \"userspace\""
    )]
    Offloads {
        /// Namespace of the device.
        namespace: String,
        /// The veth end.
        device: String,
        /// The granularity asked for.
        granularity: String,
        /// Which setting did not take, and what the device reports.
        detail: String,
    },
    /// An external command (`ip`, `tc`, `ethtool`) failed.
    #[error("command `{command}` failed ({status}): {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// Exit status or spawn error.
        status: String,
        /// What it printed on stderr (trimmed).
        stderr: String,
    },
    /// A system call or file operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done, with the path or namespace involved.
        what: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A thread could not move into a namespace.
    #[error(
        "could not enter network namespace `{namespace}` ({source}); it may have been removed \
         underneath us: run `rpcarena doctor` to list leftovers"
    )]
    EnterNamespace {
        /// Namespace name.
        namespace: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Devices dropped packets on their own during a sample (not the emulator's loss).
    #[error(
        "network devices dropped packets on their own during the sample: {}; the sample is \
         invalid (the forwarder fell behind or a queue is too short)",
        join_drops(.drops)
    )]
    DeviceDrops {
        /// Every counter that grew.
        drops: Vec<DeviceDrop>,
    },
    /// An emulator thread is no longer forwarding.
    #[error("the {direction} emulator thread is not running: {reason}; the sample is invalid")]
    EmulatorStopped {
        /// `c2s` or `s2c`.
        direction: &'static str,
        /// Why (exit reason, panic, I/O error).
        reason: String,
    },
    /// A helper thread panicked.
    #[error("a helper thread panicked while {what}")]
    ThreadPanicked {
        /// What the thread was doing.
        what: String,
    },
    /// A bug: an invariant of this crate did not hold.
    #[error("internal error in rpcarena-netem: {detail}; please report it")]
    Internal {
        /// Which invariant.
        detail: String,
    },
}

impl NetemError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        NetemError::Io {
            what: what.into(),
            source,
        }
    }
}
