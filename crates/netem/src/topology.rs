//! Two network namespaces per sample or run, joined by a veth pair (plain or with kernel netem)
//! or by two TUN devices and the userspace emulator.
//!
//! A [`Topology`] owns everything it creates. Dropping it stops and joins the forwarding
//! threads, closes the TUN devices (which deletes them), kills anything still running inside
//! the namespaces and deletes the namespaces; it never panics and reports failures on stderr.
//! A process killed with SIGKILL leaves its namespaces behind; [`crate::leftovers`] finds them
//! by the creator pid in their names and [`crate::remove_leftovers`] deletes them.

use std::collections::HashMap;
use std::fmt;
use std::io::Write as _;
use std::net::Ipv4Addr;
use std::sync::Arc;

use rpcarena_netem_core::{
    BackendKind, DeviceCounters, Direction, DirectionSeeds, EmulatorChoice, EmulatorInfo,
    Granularity, LatencyHistogram, LinkEmulator, LinkProfile, LinkStats, ProfileError, SampleCheck,
    TimingOptions, TopologyInfo,
};
use serde::{Deserialize, Serialize};
use tun_rs::SyncDevice;

use crate::error::{DeviceDrop, NetemError};
use crate::forwarder::Forwarder;
use crate::kernel::kernel_netem_support;
use crate::netns::{Namespace, in_namespace};
use crate::{cmd, kernel, netns, privileges, sched, tun};

/// The backend `choice` means on this host, or why it cannot run here.
pub fn resolve_emulator(choice: EmulatorChoice) -> Result<BackendKind, NetemError> {
    match choice {
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

/// Address of the client end in every topology (namespaces keep topologies apart).
pub const CLIENT_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// Address of the server end in every topology.
pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);

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

/// Two namespaces and the link between them, for one sample or one run.
///
/// ```no_run
/// use rpcarena_netem::{Side, Topology, TopologyConfig};
/// use rpcarena_netem_core::{EmulatorChoice, profile_by_name};
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

fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// The devices and threads of a link, as [`Topology::create`] builds them.
#[derive(Default)]
struct Link {
    forwarders: Vec<Forwarder>,
    tuns: Vec<Arc<SyncDevice>>,
}

impl Topology {
    /// Creates the namespaces, devices and (for the userspace backend) forwarding threads.
    /// On error everything created so far is removed again.
    pub fn create(config: &TopologyConfig) -> Result<Topology, NetemError> {
        privileges::check()?;
        cmd::require_tool("ip", "to create namespaces and devices", "iproute2")?;
        let (backend, profile, mtu) = match &config.network {
            NetworkRequest::Netns { mtu } => (BackendKind::Netns, None, *mtu),
            NetworkRequest::Emulated { profile, emulator } => {
                profile.validate()?;
                (resolve_emulator(*emulator)?, Some(profile), profile.mtu)
            }
        };
        if !(576..=65_535).contains(&mtu) {
            return Err(ProfileError::OutOfRange {
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
            profile: profile.cloned(),
            seeds: None,
            kernel_qdisc: None,
            timing: None,
            timing_notes: Vec::new(),
        };
        let latency_request = latency_request(backend, &config.timing, &mut info);
        let link = match (backend, profile) {
            (BackendKind::Netns, _) | (BackendKind::Kernel, None) => {
                veth(&client_ns, &server_ns, &mut info)?;
                Link::default()
            }
            (BackendKind::Kernel, Some(profile)) => {
                veth(&client_ns, &server_ns, &mut info)?;
                kernel_netem(&client_ns, &server_ns, profile, &mut info)?;
                Link::default()
            }
            (BackendKind::Userspace, profile) => {
                // resolve_emulator gives Userspace only for an emulated request, which has one.
                let profile = profile.ok_or(NetemError::Internal {
                    detail: "the userspace backend was chosen without a profile".to_string(),
                })?;
                userspace(&client_ns, &server_ns, profile, config, &mut info)?
            }
        };
        let mut topology = Topology {
            forwarders: link.forwarders,
            tuns: link.tuns,
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

/// Both emulators' timers suffer from wake-ups out of deep idle states on VMs: hold a
/// zero-latency request while an emulated topology exists (when the timing options ask for it).
fn latency_request(
    backend: BackendKind,
    timing: &TimingOptions,
    info: &mut TopologyInfo,
) -> Option<sched::LatencyRequest> {
    if backend == BackendKind::Netns || !timing.cpu_latency_request {
        return None;
    }
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

/// A veth pair between the namespaces, addressed, at the topology's MTU.
fn veth(
    client_ns: &Namespace,
    server_ns: &Namespace,
    info: &mut TopologyInfo,
) -> Result<(), NetemError> {
    kernel::create_veth(
        client_ns.name(),
        server_ns.name(),
        info.mtu,
        CLIENT_ADDR,
        SERVER_ADDR,
    )?;
    info.client_device = kernel::VETH_CLIENT.to_string();
    info.server_device = kernel::VETH_SERVER.to_string();
    Ok(())
}

/// Kernel netem on both veth ends (offloads off, so netem sees real packets).
fn kernel_netem(
    client_ns: &Namespace,
    server_ns: &Namespace,
    profile: &LinkProfile,
    info: &mut TopologyInfo,
) -> Result<(), NetemError> {
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
        // Granularity "packet": offloads off, netem sees wire packets; "offload": TSO/GSO
        // on, netem sees the bundles.
        kernel::set_offloads(ns, dev, profile.granularity)?;
        kernel::add_netem(ns, dev, spec)?;
        qdisc.push(format!("{ns}: {}", kernel::qdisc_text(ns, dev, false)));
    }
    info.kernel_qdisc = Some(qdisc.join("\n"));
    let tc_version = cmd::tc(&["-V"]).unwrap_or_default();
    info.emulator = EmulatorInfo {
        kind: "linux-sch_netem".to_string(),
        version: format!("linux {}; {}", kernel_release(), tc_version.trim()),
    };
    Ok(())
}

/// Two TUN devices and one forwarding thread per direction running the pure core.
fn userspace(
    client_ns: &Namespace,
    server_ns: &Namespace,
    profile: &LinkProfile,
    config: &TopologyConfig,
    info: &mut TopologyInfo,
) -> Result<Link, NetemError> {
    let (mtu, qlen) = (info.mtu, config.timing.tun_tx_queue_len);
    let offload = profile.granularity == Granularity::Offload;
    let client_tun = Arc::new(tun::create_tun(
        client_ns.name(),
        mtu,
        qlen,
        CLIENT_ADDR,
        SERVER_ADDR,
        offload,
    )?);
    let server_tun = Arc::new(tun::create_tun(
        server_ns.name(),
        mtu,
        qlen,
        SERVER_ADDR,
        CLIENT_ADDR,
        offload,
    )?);
    let seeds = DirectionSeeds::derive(config.seed);
    let mut link = Link {
        forwarders: Vec::new(),
        tuns: vec![client_tun.clone(), server_tun.clone()],
    };
    for direction in Direction::BOTH {
        let (input, output) = match direction {
            Direction::ClientToServer => (client_tun.clone(), server_tun.clone()),
            Direction::ServerToClient => (server_tun.clone(), client_tun.clone()),
        };
        let emulator =
            LinkEmulator::new(profile.direction(direction), seeds.for_direction(direction))?;
        let (forwarder, note) = Forwarder::spawn(
            direction,
            input,
            output,
            emulator,
            mtu,
            offload,
            config.timing.clone(),
        )?;
        link.forwarders.push(forwarder);
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
    Ok(link)
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Stop the threads before the devices and namespaces they use go away; the fields'
        // own drops then close the TUN fds and delete the namespaces, logging failures.
        for f in &mut self.forwarders {
            if let Err(e) = f.stop() {
                let _ = writeln!(std::io::stderr(), "rpcarena-netem: {e}");
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
}
