//! The network a run's samples use: loopback, or two namespaces joined by a veth pair or an
//! emulated link (`rpcarena-netem`). One topology serves the whole run; its counters are checked
//! after every sample, and dropping it removes every namespace and device, also on error, panic
//! and the signals the binary handles.

use crate::certs::{Authority, ServerIdentity};
use crate::error::{Error, Result};
use crate::launcher::Launcher;
use rpcarena_model::network::{Network, NetworkBackend, NetworkDescription};
use rpcarena_netem::{NetemError, Side, Topology, TopologyConfig};
use rpcarena_netem_core::SampleCheck;

/// Checks, before anything runs, that this host can build the network the campaign asks for.
pub(crate) fn check_host(network: &Network) -> Result<(), String> {
    let Some(needed) = network.needed_backend() else {
        return Ok(());
    };
    let report = rpcarena_netem::doctor();
    let support = report.backends.iter().find(|b| b.backend == needed);
    match support {
        Some(s) if s.supported => Ok(()),
        Some(s) => Err(format!(
            "network: this host cannot run the {} backend: {}; run `rpcarena doctor` for details",
            needed,
            s.missing.join("; ")
        )),
        None => Err(format!(
            "network: backend {needed} is unknown to this build"
        )),
    }
}

/// Where the peers of a run's samples run and how they find each other.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    /// Where the server runs (CPU pinning is added per run, see `with_cpus`).
    pub server: Launcher,
    /// Where the client runs.
    pub client: Launcher,
    /// Address the server binds (port 0).
    pub listen: String,
    /// The server's certificate, whose SAN is the listen host.
    pub identity: ServerIdentity,
}

/// The network of a running campaign.
pub(crate) struct RunNetwork {
    topology: Option<Topology>,
    placement: Placement,
    description: NetworkDescription,
}

impl RunNetwork {
    /// Builds the network (namespaces, devices, emulator threads) and the server identity for its
    /// address. `warn` hears about a failed check right after set-up.
    pub fn create(
        network: &Network,
        seed: u64,
        ca: &Authority,
        emulator_cpus: &[usize],
        warn: &mut dyn FnMut(&str),
    ) -> Result<RunNetwork> {
        let config = match network.backend {
            NetworkBackend::Loopback => {
                return Ok(RunNetwork {
                    topology: None,
                    placement: Placement {
                        server: Launcher::Local { cpus: Vec::new() },
                        client: Launcher::Local { cpus: Vec::new() },
                        listen: "127.0.0.1:0".to_string(),
                        identity: ca.server("127.0.0.1")?,
                    },
                    description: NetworkDescription::loopback(network),
                });
            }
            NetworkBackend::Netns => TopologyConfig::netns(network.mtu.unwrap_or(1500)),
            NetworkBackend::Emulated => {
                let profile = network
                    .link_profile()
                    .map_err(Error::NetworkConfig)?
                    .ok_or_else(|| {
                        Error::NetworkConfig("the emulated backend has no link profile".into())
                    })?;
                let mut config = TopologyConfig::emulated(profile, network.emulator, seed);
                config.timing.cpus = emulator_cpus.to_vec();
                config
            }
        };
        let mut topology = Topology::create(&config).map_err(Error::Network)?;
        let mut description = NetworkDescription::of_topology(network, topology.info());
        // The first check sets the baseline of the device counters; a failure here is kept.
        if let Some(note) = setup_check_note(topology.check_after_sample()) {
            warn(&note);
            description.setup_check = Some(note);
        }
        let server = topology.address(Side::Server).to_string();
        Ok(RunNetwork {
            placement: Placement {
                server: Launcher::Namespace {
                    exec_prefix: topology.exec_prefix(Side::Server),
                    cpus: Vec::new(),
                },
                client: Launcher::Namespace {
                    exec_prefix: topology.exec_prefix(Side::Client),
                    cpus: Vec::new(),
                },
                listen: format!("{server}:0"),
                identity: ca.server(&server)?,
            },
            topology: Some(topology),
            description,
        })
    }

    /// Where peers run and how they find each other.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// What the manifest records.
    pub fn description(&self) -> &NetworkDescription {
        &self.description
    }

    /// The emulator's counters now (userspace emulator only), to take a sample's window apart.
    pub fn link_stats(&self) -> Option<rpcarena_netem_core::LinkStats> {
        self.topology.as_ref().and_then(Topology::stats)
    }

    /// After a sample: the devices dropped nothing on their own and the emulator is alive.
    /// Returns the counters to keep in the sample record, or why the sample is invalid.
    pub fn after_sample(&mut self) -> Result<Option<SampleCheck>, String> {
        let Some(topology) = self.topology.as_mut() else {
            return Ok(None);
        };
        match topology.check_after_sample() {
            Ok(check) => Ok(Some(check)),
            Err(e) => Err(format!("network check after the sample failed: {e}")),
        }
    }
}

/// What to say about the check right after set-up, when it failed.
fn setup_check_note(check: Result<SampleCheck, NetemError>) -> Option<String> {
    check.err().map(|e| {
        format!(
            "the network's check right after set-up failed: {e}; the first sample's own check \
             still runs, so a lasting problem fails that sample"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_netem::DeviceDrop;

    #[test]
    fn a_failed_check_at_set_up_is_named_and_a_passed_one_is_silent() {
        let drops = NetemError::DeviceDrops {
            drops: vec![DeviceDrop {
                namespace: "rpa-1-c".into(),
                device: "rpa0".into(),
                counter: "tx_dropped".into(),
                delta: 3,
            }],
        };
        let note = setup_check_note(Err(drops)).unwrap();
        assert!(
            note.starts_with("the network's check right after set-up failed")
                && note.contains("tx_dropped +3"),
            "{note}"
        );
        let passed = SampleCheck {
            devices: Vec::new(),
            link: None,
        };
        assert_eq!(setup_check_note(Ok(passed)), None);
    }
}
