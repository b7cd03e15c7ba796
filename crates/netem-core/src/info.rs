//! What an emulated network is and did, as plain data: which emulator was asked for and which
//! backend runs, how the forwarders are timed, what a topology records for the manifest, and the
//! counters checked after every sample.
//!
//! These are the types a run's artifacts hold (the manifest's network description and each
//! sample's network counters), so they live here, in the pure crate, where the artifact
//! contract (`rpcarena-model`) can use them without linking the namespace and TUN shell.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use rpcarena_stats::LatencySummary;
use serde::{Deserialize, Serialize};

use crate::emulator::Counters;
use crate::profile::{Direction, LinkProfile};

/// Which emulator an emulated network should use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EmulatorChoice {
    /// Kernel netem where the host has it, otherwise the userspace emulator.
    #[default]
    Auto,
    /// The userspace emulator on TUN devices (needs only /dev/net/tun).
    Userspace,
    /// Kernel netem on a veth pair (needs sch_netem, tc and ethtool).
    Kernel,
}

impl EmulatorChoice {
    /// Every choice, in the order campaigns and `--emulator` list them.
    pub const ALL: [EmulatorChoice; 3] = [
        EmulatorChoice::Auto,
        EmulatorChoice::Userspace,
        EmulatorChoice::Kernel,
    ];

    /// The name used in campaigns, arguments and manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            EmulatorChoice::Auto => "auto",
            EmulatorChoice::Userspace => "userspace",
            EmulatorChoice::Kernel => "kernel",
        }
    }
}

impl fmt::Display for EmulatorChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EmulatorChoice {
    type Err = String;
    fn from_str(s: &str) -> Result<EmulatorChoice, String> {
        EmulatorChoice::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| format!("unknown emulator {s:?}; expected auto, userspace or kernel"))
    }
}

/// The backend a topology actually runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackendKind {
    /// veth pair, no emulation.
    Netns,
    /// TUN devices and the userspace emulator.
    Userspace,
    /// veth pair with kernel netem.
    Kernel,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Netns => "netns",
            BackendKind::Userspace => "userspace",
            BackendKind::Kernel => "kernel",
        })
    }
}

/// The emulator in use, for the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmulatorInfo {
    /// `none`, `rpcarena-netem-userspace` or `linux-sch_netem`.
    pub kind: String,
    /// Version of the emulator (crate version, or kernel and tc versions).
    pub version: String,
}

/// Seeds of the two directions' random generators.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionSeeds {
    /// Client to server.
    pub client_to_server: u64,
    /// Server to client.
    pub server_to_client: u64,
}

impl DirectionSeeds {
    /// Per-direction seeds derived from one seed (SplitMix64 of two distinct inputs).
    pub fn derive(seed: u64) -> Self {
        DirectionSeeds {
            client_to_server: splitmix64(seed ^ 0x6332_7300),
            server_to_client: splitmix64(seed ^ 0x7332_6300),
        }
    }

    /// The seed of one direction.
    pub fn for_direction(&self, direction: Direction) -> u64 {
        match direction {
            Direction::ClientToServer => self.client_to_server,
            Direction::ServerToClient => self.server_to_client,
        }
    }
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// How the forwarding threads wait. The defaults reach a release lateness p99 well under
/// 100 us on a 2-core VM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingOptions {
    /// Sleep until this long before a release and spin the rest. Default 50 us. Larger means
    /// more punctual releases and more CPU burnt; 0 relies on the timer alone.
    pub spin_ns: u64,
    /// Longest sleep while nothing is held, so a stop request is seen even if the wake-up pipe
    /// is lost. Default 100 ms.
    pub idle_wakeup_ns: u64,
    /// TUN `tx_queue_len`, packets: how much the kernel may buffer before the forwarder reads.
    /// The TUN drops silently (counted in `tx_dropped`) when it overflows. Default 10000
    /// (the kernel's default is 500).
    pub tun_tx_queue_len: u32,
    /// Scheduling priority of the forwarding threads (and of netcheck's probe threads).
    /// Refusal (no CAP_SYS_NICE) is recorded in the topology info, not fatal.
    pub priority: ThreadPriority,
    /// Hold a zero-latency request on `/dev/cpu_dma_latency` while an emulated topology
    /// exists, so idle CPUs poll instead of halting and wake-ups take microseconds rather than
    /// tens of them. Default true. It is machine-wide (idle CPUs burn host time while held);
    /// the kernel drops it when the topology goes or the process dies.
    pub cpu_latency_request: bool,
    /// CPUs the forwarding threads may run on (empty: any). The runner's CPU pinning keeps the
    /// emulator off the peers' CPUs where the machine has enough of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpus: Vec<usize>,
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            spin_ns: 50_000,
            idle_wakeup_ns: 100_000_000,
            tun_tx_queue_len: 10_000,
            priority: ThreadPriority::Realtime { priority: 10 },
            cpu_latency_request: true,
            cpus: Vec::new(),
        }
    }
}

/// How the forwarding threads are scheduled.
///
/// Measured on a 2-vCPU VM shared with compiler processes: with normal scheduling or nice
/// -20 the forwarders fell behind (release lateness p99 of milliseconds, a TUN queue of
/// 10,000 packets overflowing at 100k packets/s); `SCHED_FIFO` kept lateness p99 under
/// 100 us. When the machine is quiet nice -20 wakes slightly faster (TUN wake-up to read
/// p50 14-30 us against 18-42 us for SCHED_FIFO, whose wake-ups may be pushed to the other
/// vCPU), but peers load the CPUs during every sample, so real-time is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum ThreadPriority {
    /// Whatever the process has.
    Normal,
    /// `setpriority` to this nice value (-20..=19).
    Nice {
        /// The nice value.
        nice: i8,
    },
    /// `SCHED_FIFO` at this priority (1..=99). The spin is bounded per release and the
    /// kernel's RT throttling keeps 5 % of each CPU for others.
    Realtime {
        /// The real-time priority.
        priority: u8,
    },
}

/// Everything the manifest should record about a topology.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyInfo {
    /// Backend in use.
    pub backend: BackendKind,
    /// Emulator kind and version.
    pub emulator: EmulatorInfo,
    /// Client namespace name.
    pub client_namespace: String,
    /// Server namespace name.
    pub server_namespace: String,
    /// Client address.
    pub client_address: Ipv4Addr,
    /// Server address.
    pub server_address: Ipv4Addr,
    /// Client-side device name.
    pub client_device: String,
    /// Server-side device name.
    pub server_device: String,
    /// MTU of both devices.
    pub mtu: u32,
    /// The emulated profile (`None` for a plain veth).
    pub profile: Option<LinkProfile>,
    /// Userspace emulator seeds (`None` otherwise: kernel netem seeds itself).
    pub seeds: Option<DirectionSeeds>,
    /// `tc qdisc show` of both veth ends, when kernel netem is used.
    pub kernel_qdisc: Option<String>,
    /// Forwarder timing (userspace only).
    pub timing: Option<TimingOptions>,
    /// How the timing aids went: latency request held or refused, real-time priority refused.
    pub timing_notes: Vec<String>,
}

/// Counters of both directions of the userspace emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkStats {
    /// Client to server.
    pub client_to_server: DirectionStats,
    /// Server to client.
    pub server_to_client: DirectionStats,
}

impl LinkStats {
    /// What both directions did between `earlier` and `self`: the emulator's counters over a
    /// sample's window.
    pub fn since(&self, earlier: &LinkStats) -> LinkWindow {
        LinkWindow {
            client_to_server: self
                .client_to_server
                .counters
                .since(&earlier.client_to_server.counters),
            server_to_client: self
                .server_to_client
                .counters
                .since(&earlier.server_to_client.counters),
        }
    }
}

/// The emulator's counters of both directions over one sample's window (from `START` to the
/// client's `sample` event). Packets and bytes arrived, lost by the model, dropped at the queue
/// limit, released, and the summed queueing delay ([`Counters::mean_queue_wait_ns`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkWindow {
    /// Client to server.
    pub client_to_server: Counters,
    /// Server to client.
    pub server_to_client: Counters,
}

/// Drop and error counters of one device, as deltas since the previous check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceCounters {
    /// Namespace holding the device.
    pub namespace: String,
    /// Device name.
    pub device: String,
    /// `rx_dropped` delta.
    pub rx_dropped: u64,
    /// `tx_dropped` delta.
    pub tx_dropped: u64,
    /// `rx_errors` delta.
    pub rx_errors: u64,
    /// `tx_errors` delta.
    pub tx_errors: u64,
}

/// What the shell's check after a sample (`rpcarena_netem::Topology::check_after_sample`) saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleCheck {
    /// Per-device deltas since the previous check (all zero when it passed).
    pub devices: Vec<DeviceCounters>,
    /// Emulator counters (userspace only).
    pub link: Option<LinkStats>,
}

/// What one direction's emulator has done so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DirectionStats {
    /// The core's packet counters.
    pub counters: Counters,
    /// Packets held right now.
    pub held: u64,
    /// Release lateness: actual write time minus due time.
    pub lateness: LatencySummary,
    /// Failed reads from the input device.
    pub read_errors: u64,
    /// Failed writes to the output device (packets lost outside the model).
    pub write_errors: u64,
    /// Packets larger than the read buffer (dropped; should never happen at the TUN's MTU).
    pub oversize: u64,
    /// Seed of this direction's random generator.
    pub seed: u64,
    /// The last I/O error seen, if any.
    pub last_error: Option<String>,
    /// Scheduling priority the thread runs at, `None` when setting it failed.
    pub priority: Option<ThreadPriority>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn direction_seeds_differ_and_reproduce() {
        let a = DirectionSeeds::derive(1);
        assert_ne!(a.client_to_server, a.server_to_client);
        assert_eq!(a, DirectionSeeds::derive(1));
        assert_ne!(a, DirectionSeeds::derive(2));
        assert_eq!(
            a.for_direction(Direction::ServerToClient),
            a.server_to_client
        );
    }

    #[test]
    fn emulator_choices_parse_and_print_as_campaigns_write_them() {
        for choice in EmulatorChoice::ALL {
            assert_eq!(choice.as_str().parse::<EmulatorChoice>(), Ok(choice));
            let json = serde_json::to_string(&choice).unwrap();
            assert_eq!(json, format!("\"{choice}\""));
        }
        assert!(
            "netem"
                .parse::<EmulatorChoice>()
                .unwrap_err()
                .contains("userspace")
        );
    }
}
