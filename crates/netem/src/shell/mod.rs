//! The I/O shell: two network namespaces per sample or run, joined by a veth pair (plain or
//! with kernel netem) or by two TUN devices and the userspace emulator.
//!
//! A [`Topology`] owns everything it creates. Dropping it stops and joins the forwarding
//! threads, closes the TUN devices (which deletes them), kills anything still running inside
//! the namespaces and deletes the namespaces; it never panics and reports failures on stderr.
//! A process killed with SIGKILL leaves its namespaces behind; [`leftovers`] finds them by the
//! creator pid in their names and [`remove_leftovers`] deletes them.

pub(crate) mod cmd;
mod forwarder;
mod kernel;
pub mod netns;
pub(crate) mod sched;
pub mod timing;
mod tun;

use std::collections::HashMap;
use std::fmt;
use std::net::Ipv4Addr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tun_rs::SyncDevice;

use crate::core::LinkEmulator;
use crate::error::{DeviceDrop, NetemError};
use crate::profile::{Direction, LinkProfile};

pub use forwarder::DirectionStats;
pub use kernel::kernel_netem_support;
pub use netns::{Leftover, enter_namespace, in_namespace, leftovers, remove_leftovers};
pub use timing::{LatencyHistogram, LatencySummary, ThreadPriority, TimingOptions};

use forwarder::Forwarder;
use netns::Namespace;

/// Address of the client end in every topology (namespaces keep topologies apart).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Address of the server end in every topology.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

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

impl EmulatorChoice {
    /// The backend this choice means on this host, or why it cannot run here.
    pub fn resolve(self) -> Result<BackendKind, NetemError> {
        match self {
            EmulatorChoice::Userspace => Ok(BackendKind::Userspace),
            EmulatorChoice::Kernel => kernel_netem_support()
                .map(|()| BackendKind::Kernel)
                .map_err(|reason| NetemError::KernelNetemUnavailable { reason }),
            EmulatorChoice::Auto => Ok(if kernel_netem_support().is_ok() {
                BackendKind::Kernel
            } else {
                BackendKind::Userspace
            }),
        }
    }
}

/// What network to build.
// Built once per sample; boxing the profile would only make the API clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NetworkRequest {
    /// Two namespaces joined by a plain veth pair.
    Netns {
        /// MTU of both veth ends.
        mtu: u32,
    },
    /// Two namespaces joined by an emulated link.
    Emulated {
        /// The link.
        profile: LinkProfile,
        /// Which emulator.
        emulator: EmulatorChoice,
    },
}

/// Everything [`Topology::create`] needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopologyConfig {
    /// What to build.
    pub network: NetworkRequest,
    /// Seed for the userspace emulator; each direction derives its own from it.
    pub seed: u64,
    /// Forwarder timing and TUN queue settings.
    pub timing: TimingOptions,
}

impl TopologyConfig {
    /// Two namespaces and a plain veth pair.
    pub fn netns(mtu: u32) -> Self {
        TopologyConfig {
            network: NetworkRequest::Netns { mtu },
            seed: 0,
            timing: TimingOptions::default(),
        }
    }

    /// Two namespaces with `profile` emulated by `emulator`, seeded with `seed`.
    pub fn emulated(profile: LinkProfile, emulator: EmulatorChoice, seed: u64) -> Self {
        TopologyConfig {
            network: NetworkRequest::Emulated { profile, emulator },
            seed,
            timing: TimingOptions::default(),
        }
    }
}

/// Which end of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The client namespace.
    Client,
    /// The server namespace.
    Server,
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

    fn get(&self, direction: Direction) -> u64 {
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

/// What [`Topology::check_after_sample`] saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleCheck {
    /// Per-device deltas since the previous check (all zero when it passed).
    pub devices: Vec<DeviceCounters>,
    /// Emulator counters (userspace only).
    pub link: Option<LinkStats>,
}

/// Two namespaces and the link between them, for one sample or one run.
///
/// ```no_run
/// use rpcarena_netem::{EmulatorChoice, Side, Topology, TopologyConfig, profile_by_name};
///
/// let profile = profile_by_name("regional-wan")?;
/// let mut topo = Topology::create(&TopologyConfig::emulated(profile, EmulatorChoice::Auto, 7))?;
/// // Spawn the server as `ip netns exec <server ns> <peer> ...`, connect to its address.
/// let prefix = topo.exec_prefix(Side::Server);
/// println!("{} -> {}", prefix.join(" "), topo.info().server_address);
/// // ... run the sample ...
/// topo.check_after_sample()?; // an error means the sample is invalid
/// drop(topo); // threads joined, devices and namespaces gone
/// # Ok::<(), rpcarena_netem::NetemError>(())
/// ```
pub struct Topology {
    // Field order is teardown order: threads, then TUN fds, then namespaces.
    forwarders: Vec<Forwarder>,
    tuns: Vec<Arc<SyncDevice>>,
    client_ns: Namespace,
    server_ns: Namespace,
    _latency_request: Option<sched::LatencyRequest>,
    info: TopologyInfo,
    baseline: HashMap<(String, String), [u64; 4]>,
    /// Forwarder (write_errors, oversize) at the previous check, per direction label.
    error_baseline: HashMap<&'static str, (u64, u64)>,
}

impl fmt::Debug for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topology")
            .field("info", &self.info)
            .finish()
    }
}

/// Fails early, with the capability named, when we are not privileged enough.
pub(crate) fn check_privileges() -> Result<(), NetemError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| NetemError::io("reading /proc/self/status", e))?;
    let caps = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .unwrap_or(0);
    const CAP_NET_ADMIN: u64 = 1 << 12;
    const CAP_SYS_ADMIN: u64 = 1 << 21;
    let mut missing = Vec::new();
    if caps & CAP_NET_ADMIN == 0 {
        missing.push("CAP_NET_ADMIN");
    }
    if caps & CAP_SYS_ADMIN == 0 {
        missing.push("CAP_SYS_ADMIN");
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(NetemError::NotPrivileged {
            detail: format!("missing {}", missing.join(" and ")),
        })
    }
}

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

impl Topology {
    /// Creates the namespaces, devices and (for the userspace backend) forwarding threads.
    /// On error everything created so far is removed again.
    pub fn create(config: &TopologyConfig) -> Result<Topology, NetemError> {
        check_privileges()?;
        cmd::require_tool("ip", "to create namespaces and devices", "iproute2")?;
        let (backend, profile, mtu) = match &config.network {
            NetworkRequest::Netns { mtu } => (BackendKind::Netns, None, *mtu),
            NetworkRequest::Emulated { profile, emulator } => {
                profile.validate()?;
                (emulator.resolve()?, Some(profile.clone()), profile.mtu)
            }
        };
        if !(576..=65_535).contains(&mtu) {
            return Err(crate::error::ProfileError::OutOfRange {
                field: "mtu".to_string(),
                value: mtu.to_string(),
                expected: "576..=65535 bytes".to_string(),
            }
            .into());
        }

        let stem = netns::unique_stem();
        let client_ns = Namespace::create(&format!("{stem}-c"))?;
        let server_ns = Namespace::create(&format!("{stem}-s"))?;
        for ns in [&client_ns, &server_ns] {
            in_namespace(ns.name(), tun::disable_ipv6)?;
        }

        let mut info = TopologyInfo {
            backend,
            emulator: EmulatorInfo {
                kind: "none".to_string(),
                version: String::new(),
            },
            client_namespace: client_ns.name().to_string(),
            server_namespace: server_ns.name().to_string(),
            client_address: CLIENT_ADDR,
            server_address: SERVER_ADDR,
            client_device: String::new(),
            server_device: String::new(),
            mtu,
            profile: profile.clone(),
            seeds: None,
            kernel_qdisc: None,
            timing: None,
            timing_notes: Vec::new(),
        };

        // Both emulators' timers suffer from wake-ups out of deep idle states on VMs.
        let latency_request = match (backend, config.timing.cpu_latency_request) {
            (BackendKind::Userspace | BackendKind::Kernel, true) => {
                match sched::LatencyRequest::acquire() {
                    Ok(request) => {
                        info.timing_notes
                            .push("cpu wake-up latency request (0 us) held".to_string());
                        Some(request)
                    }
                    Err(e) => {
                        info.timing_notes
                            .push(format!("cpu wake-up latency request refused: {e}"));
                        None
                    }
                }
            }
            _ => None,
        };

        let mut forwarders = Vec::new();
        let mut tuns = Vec::new();
        match backend {
            BackendKind::Netns | BackendKind::Kernel => {
                kernel::create_veth(
                    client_ns.name(),
                    server_ns.name(),
                    mtu,
                    CLIENT_ADDR,
                    SERVER_ADDR,
                )?;
                info.client_device = kernel::VETH_CLIENT.to_string();
                info.server_device = kernel::VETH_SERVER.to_string();
                if let (BackendKind::Kernel, Some(profile)) = (backend, &profile) {
                    let mut qdisc = Vec::new();
                    for (ns, dev, spec) in [
                        (
                            client_ns.name(),
                            kernel::VETH_CLIENT,
                            &profile.client_to_server,
                        ),
                        (
                            server_ns.name(),
                            kernel::VETH_SERVER,
                            &profile.server_to_client,
                        ),
                    ] {
                        kernel::disable_offloads(ns, dev)?;
                        kernel::add_netem(ns, dev, spec)?;
                        qdisc.push(format!("{ns}: {}", kernel::qdisc_text(ns, dev, false)));
                    }
                    info.kernel_qdisc = Some(qdisc.join("\n"));
                    let tc_version = cmd::tc(&["-V"]).unwrap_or_default();
                    info.emulator = EmulatorInfo {
                        kind: "linux-sch_netem".to_string(),
                        version: format!("linux {}; {}", kernel_release(), tc_version.trim()),
                    };
                }
            }
            BackendKind::Userspace => {
                let profile = profile.as_ref().ok_or_else(|| NetemError::Netcheck {
                    phase: "topology".to_string(),
                    detail: "the userspace backend needs a profile".to_string(),
                })?;
                let qlen = config.timing.tun_tx_queue_len;
                let client_tun = Arc::new(tun::create_tun(
                    client_ns.name(),
                    mtu,
                    qlen,
                    CLIENT_ADDR,
                    SERVER_ADDR,
                )?);
                let server_tun = Arc::new(tun::create_tun(
                    server_ns.name(),
                    mtu,
                    qlen,
                    SERVER_ADDR,
                    CLIENT_ADDR,
                )?);
                tuns.push(client_tun.clone());
                tuns.push(server_tun.clone());
                let seeds = DirectionSeeds::derive(config.seed);
                for direction in Direction::BOTH {
                    let (input, output) = match direction {
                        Direction::ClientToServer => (client_tun.clone(), server_tun.clone()),
                        Direction::ServerToClient => (server_tun.clone(), client_tun.clone()),
                    };
                    let emulator =
                        LinkEmulator::new(profile.direction(direction), seeds.get(direction))?;
                    let (forwarder, note) = Forwarder::spawn(
                        direction,
                        input,
                        output,
                        emulator,
                        mtu,
                        config.timing.clone(),
                    )?;
                    forwarders.push(forwarder);
                    info.timing_notes.extend(note);
                }
                info.client_device = tun::TUN_NAME.to_string();
                info.server_device = tun::TUN_NAME.to_string();
                info.seeds = Some(seeds);
                info.timing = Some(config.timing.clone());
                info.emulator = EmulatorInfo {
                    kind: "rpcarena-netem-userspace".to_string(),
                    version: format!(
                        "rpcarena-netem {} (sch_netem semantics: loss, limit, delay/jitter, \
                         rate with max() rule, reorder)",
                        env!("CARGO_PKG_VERSION")
                    ),
                };
            }
        }

        let mut topology = Topology {
            forwarders,
            tuns,
            client_ns,
            server_ns,
            _latency_request: latency_request,
            info,
            baseline: HashMap::new(),
            error_baseline: HashMap::new(),
        };
        topology.baseline = topology.read_device_counters()?;
        Ok(topology)
    }

    /// Everything the manifest should record.
    pub fn info(&self) -> &TopologyInfo {
        &self.info
    }

    /// Backend in use.
    pub fn backend(&self) -> BackendKind {
        self.info.backend
    }

    /// Namespace of one side.
    pub fn namespace(&self, side: Side) -> &str {
        match side {
            Side::Client => self.client_ns.name(),
            Side::Server => self.server_ns.name(),
        }
    }

    /// Address of one side.
    pub fn address(&self, side: Side) -> Ipv4Addr {
        match side {
            Side::Client => self.info.client_address,
            Side::Server => self.info.server_address,
        }
    }

    /// MTU of both devices.
    pub fn mtu(&self) -> u32 {
        self.info.mtu
    }

    /// The argv prefix that runs a command inside one side's namespace:
    /// `["/usr/sbin/ip", "netns", "exec", NAME]`. `ip netns exec` execs the command in place,
    /// so a child spawned with this prefix (as a process-group leader) is the peer itself.
    pub fn exec_prefix(&self, side: Side) -> Vec<String> {
        let ip = cmd::find_tool("ip")
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|| "ip".to_string());
        vec![
            ip,
            "netns".to_string(),
            "exec".to_string(),
            self.namespace(side).to_string(),
        ]
    }

    /// Runs `f` on a thread inside one side's namespace (to open sockets there).
    pub fn run_in<F, R>(&self, side: Side, f: F) -> Result<R, NetemError>
    where
        F: FnOnce() -> R + Send,
        R: Send,
    {
        in_namespace(self.namespace(side), f)
    }

    /// Userspace emulator counters and lateness, `None` for other backends.
    pub fn stats(&self) -> Option<LinkStats> {
        let find = |d: Direction| {
            self.forwarders
                .iter()
                .find(|f| f.direction() == d)
                .map(Forwarder::stats)
        };
        Some(LinkStats {
            client_to_server: find(Direction::ClientToServer)?,
            server_to_client: find(Direction::ServerToClient)?,
        })
    }

    /// The release-lateness histogram of both directions together (userspace only).
    pub fn lateness_histogram(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for f in &self.forwarders {
            h.merge(&f.lateness_histogram());
        }
        h
    }

    /// `tc -s qdisc show` of both veth ends (kernel backend only), with live counters.
    pub fn kernel_qdisc_stats(&self) -> Option<String> {
        (self.info.backend == BackendKind::Kernel).then(|| {
            format!(
                "{}: {}\n{}: {}",
                self.client_ns.name(),
                kernel::qdisc_text(self.client_ns.name(), kernel::VETH_CLIENT, true),
                self.server_ns.name(),
                kernel::qdisc_text(self.server_ns.name(), kernel::VETH_SERVER, true)
            )
        })
    }

    fn read_device_counters(&self) -> Result<HashMap<(String, String), [u64; 4]>, NetemError> {
        let mut out = HashMap::new();
        for (ns, dev) in [
            (self.client_ns.name(), self.info.client_device.as_str()),
            (self.server_ns.name(), self.info.server_device.as_str()),
        ] {
            let json = cmd::ip(&["-n", ns, "-j", "-s", "link", "show", "dev", dev])?;
            out.insert((ns.to_string(), dev.to_string()), parse_link_stats(&json)?);
        }
        Ok(out)
    }

    /// Verifies, after a sample, that the devices dropped nothing on their own and that the
    /// emulator threads still run. Counts are deltas since the previous check (or creation),
    /// so call it once per sample. An error means the sample must be discarded.
    pub fn check_after_sample(&mut self) -> Result<SampleCheck, NetemError> {
        for f in &self.forwarders {
            f.check_alive()
                .map_err(|reason| NetemError::EmulatorStopped {
                    direction: f.direction().label(),
                    reason,
                })?;
        }
        let now = self.read_device_counters()?;
        let mut devices = Vec::new();
        let mut drops = Vec::new();
        for ((ns, dev), values) in &now {
            let before = self.baseline.get(&(ns.clone(), dev.clone())).copied();
            let delta: [u64; 4] =
                std::array::from_fn(|i| values[i].saturating_sub(before.map_or(0, |b| b[i])));
            for (i, name) in COUNTER_NAMES.iter().enumerate() {
                if delta[i] > 0 {
                    drops.push(DeviceDrop {
                        namespace: ns.clone(),
                        device: dev.clone(),
                        counter: name.to_string(),
                        delta: delta[i],
                    });
                }
            }
            devices.push(DeviceCounters {
                namespace: ns.clone(),
                device: dev.clone(),
                rx_dropped: delta[0],
                tx_dropped: delta[1],
                rx_errors: delta[2],
                tx_errors: delta[3],
            });
        }
        devices.sort_by(|a, b| a.namespace.cmp(&b.namespace));
        self.baseline = now;

        let link = self.stats();
        if let Some(link) = &link {
            for (label, stats) in [
                ("c2s", &link.client_to_server),
                ("s2c", &link.server_to_client),
            ] {
                let (prev_w, prev_o) = self.error_baseline.get(label).copied().unwrap_or((0, 0));
                let write = stats.write_errors.saturating_sub(prev_w);
                let oversize = stats.oversize.saturating_sub(prev_o);
                for (counter, delta) in [("write_errors", write), ("oversize", oversize)] {
                    if delta > 0 {
                        drops.push(DeviceDrop {
                            namespace: self.client_ns.name().to_string(),
                            device: format!("{label} forwarder"),
                            counter: counter.to_string(),
                            delta,
                        });
                    }
                }
                self.error_baseline
                    .insert(label, (stats.write_errors, stats.oversize));
            }
        }
        if drops.is_empty() {
            Ok(SampleCheck { devices, link })
        } else {
            Err(NetemError::DeviceDrops { drops })
        }
    }

    /// Tears everything down now and reports the first failure (dropping does the same but
    /// can only log).
    pub fn shutdown(mut self) -> Result<(), NetemError> {
        let mut first_error = None;
        for f in &mut self.forwarders {
            if let Err(e) = f.stop() {
                first_error.get_or_insert(e);
            }
        }
        self.forwarders.clear();
        self.tuns.clear();
        for ns in [&mut self.client_ns, &mut self.server_ns] {
            if let Err(e) = ns.remove() {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Stop the threads before the devices and namespaces they use go away; the fields'
        // own drops then close the TUN fds and delete the namespaces, logging failures.
        for f in &mut self.forwarders {
            if let Err(e) = f.stop() {
                eprintln!("rpcarena-netem: {e}");
            }
        }
    }
}

const COUNTER_NAMES: [&str; 4] = ["rx_dropped", "tx_dropped", "rx_errors", "tx_errors"];

/// Reads `stats64` out of `ip -j -s link show dev X`.
fn parse_link_stats(json: &str) -> Result<[u64; 4], NetemError> {
    let bad = |what: &str| NetemError::Command {
        command: "ip -j -s link show".to_string(),
        status: "unexpected output".to_string(),
        stderr: format!("{what}: {}", json.chars().take(200).collect::<String>()),
    };
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| bad(&format!("not JSON ({e})")))?;
    let stats = value
        .get(0)
        .and_then(|v| v.get("stats64"))
        .ok_or_else(|| bad("no stats64"))?;
    let get = |dir: &str, key: &str| {
        stats
            .get(dir)
            .and_then(|d| d.get(key))
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    Ok([
        get("rx", "dropped"),
        get("tx", "dropped"),
        get("rx", "errors"),
        get("tx", "errors"),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ip_link_stats() {
        let json = r#"[{"ifname":"rpa-s","stats64":{"rx":{"bytes":0,"packets":0,"errors":2,
            "dropped":3},"tx":{"bytes":0,"packets":0,"errors":4,"dropped":5}}}]"#;
        assert_eq!(parse_link_stats(json).unwrap(), [3, 5, 2, 4]);
        assert!(parse_link_stats("[]").is_err());
    }

    #[test]
    fn topology_can_move_between_threads() {
        fn assert_send<T: Send>() {}
        assert_send::<Topology>();
        assert_send::<TopologyInfo>();
    }

    #[test]
    fn direction_seeds_differ_and_reproduce() {
        let a = DirectionSeeds::derive(1);
        assert_ne!(a.client_to_server, a.server_to_client);
        assert_eq!(a, DirectionSeeds::derive(1));
        assert_ne!(a, DirectionSeeds::derive(2));
    }
}
