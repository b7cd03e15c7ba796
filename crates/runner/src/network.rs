//! The network a run's samples use: loopback, or two namespaces joined by a veth pair or an
//! emulated link (the `netem` crate). One topology serves the whole run; its counters are checked
//! after every sample, and dropping it removes every namespace and device, also on error, panic
//! and the signals the runner handles.

use crate::certs::Authority;
use crate::sample::Placement;
use anyhow::{Context, Result, anyhow};
use rpcarena_model::network::{EmulatorChoice, LinkOverrides, Network, NetworkBackend};
use rpcarena_netem::{
    BackendKind, DelayDistribution, DirectionOverrides, LinkProfile, LossModel, Side, Topology,
    TopologyConfig, profile_by_name,
};

/// The link profile a campaign asks for: its named profile with the overrides applied.
/// `None` unless the backend is `emulated`. Pure; errors name the campaign field.
pub fn link_profile(network: &Network) -> Result<Option<LinkProfile>, String> {
    if network.backend != NetworkBackend::Emulated {
        return Ok(None);
    }
    let name = network
        .profile
        .as_deref()
        .ok_or("network.profile: expected a link profile name")?;
    let mut profile = profile_by_name(name).map_err(|e| format!("network.profile: {e}"))?;
    profile = profile.with_overrides(
        &overrides(&network.both)?,
        &overrides(&network.client_to_server)?,
        &overrides(&network.server_to_client)?,
    );
    if let Some(mtu) = network.mtu {
        profile.mtu = mtu;
    }
    profile
        .validate()
        .map_err(|e| format!("network (profile {name} with overrides): {e}"))?;
    Ok(Some(profile))
}

fn overrides(o: &LinkOverrides) -> Result<DirectionOverrides, String> {
    let distribution = match o.distribution.as_deref() {
        None => None,
        Some("uniform") => Some(DelayDistribution::Uniform),
        Some("normal") => Some(DelayDistribution::Normal),
        Some("pareto") => Some(DelayDistribution::Pareto),
        Some(other) => return Err(format!("network: unknown distribution {other:?}")),
    };
    Ok(DirectionOverrides {
        delay_ns: o.delay.map(|d| d.as_nanos() as u64),
        jitter_ns: o.jitter.map(|d| d.as_nanos() as u64),
        distribution,
        loss: o.loss.map(|f| {
            if f.0 == 0.0 {
                LossModel::None
            } else {
                LossModel::Random { probability: f.0 }
            }
        }),
        // DirectionOverrides: rate_bps = 0 removes the limit.
        rate_bps: o.rate.map(|r| r.0.unwrap_or(0)),
        overhead_bytes: o.overhead,
        limit_packets: o.limit,
        reorder: None,
    })
}

/// Checks, before anything runs, that this host can build the network the campaign asks for.
pub fn check_host(network: &Network) -> Result<(), String> {
    let needed = match network.backend {
        NetworkBackend::Loopback => return Ok(()),
        NetworkBackend::Netns => BackendKind::Netns,
        NetworkBackend::Emulated => match network.emulator {
            EmulatorChoice::Kernel => BackendKind::Kernel,
            EmulatorChoice::Userspace | EmulatorChoice::Auto => BackendKind::Userspace,
        },
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

/// The network of a running campaign.
pub struct RunNetwork {
    topology: Option<Topology>,
    placement: Placement,
    description: serde_json::Value,
}

impl RunNetwork {
    /// Builds the network (namespaces, devices, emulator threads) and the server identity for its
    /// address.
    pub fn create(
        network: &Network,
        seed: u64,
        ca: &Authority,
        emulator_cpus: &[usize],
    ) -> Result<RunNetwork> {
        let config = match network.backend {
            NetworkBackend::Loopback => {
                let identity = ca.server("127.0.0.1")?;
                return Ok(RunNetwork {
                    topology: None,
                    placement: Placement {
                        server_prefix: Vec::new(),
                        client_prefix: Vec::new(),
                        listen: "127.0.0.1:0".to_string(),
                        identity,
                    },
                    description: serde_json::json!({
                        "backend": "loopback",
                        "server_address": "127.0.0.1",
                    }),
                });
            }
            NetworkBackend::Netns => TopologyConfig::netns(network.mtu.unwrap_or(1500)),
            NetworkBackend::Emulated => {
                let profile = link_profile(network)
                    .map_err(|e| anyhow!(e))?
                    .ok_or_else(|| anyhow!("network: emulated backend without a profile"))?;
                let emulator = match network.emulator {
                    EmulatorChoice::Auto => rpcarena_netem::EmulatorChoice::Auto,
                    EmulatorChoice::Userspace => rpcarena_netem::EmulatorChoice::Userspace,
                    EmulatorChoice::Kernel => rpcarena_netem::EmulatorChoice::Kernel,
                };
                let mut config = TopologyConfig::emulated(profile, emulator, seed);
                config.timing.cpus = emulator_cpus.to_vec();
                config
            }
        };
        let mut topology =
            Topology::create(&config).context("setting up the campaign's network")?;
        // The first check only sets the baseline of the device counters.
        let _ = topology.check_after_sample();
        let server = topology.address(Side::Server).to_string();
        let identity = ca.server(&server)?;
        let mut description = serde_json::to_value(topology.info()).unwrap_or_default();
        if let Some(object) = description.as_object_mut() {
            object.insert("backend".into(), network.backend.as_str().into());
            object.insert(
                "campaign".into(),
                serde_json::to_value(network).unwrap_or_default(),
            );
            object.insert("server_address".into(), server.clone().into());
        }
        Ok(RunNetwork {
            placement: Placement {
                server_prefix: topology.exec_prefix(Side::Server),
                client_prefix: topology.exec_prefix(Side::Client),
                listen: format!("{server}:0"),
                identity,
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
    pub fn description(&self) -> &serde_json::Value {
        &self.description
    }

    /// After a sample: the devices dropped nothing on their own and the emulator is alive.
    /// Returns the counters to keep in the sample record, or why the sample is invalid.
    pub fn after_sample(&mut self) -> Result<Option<serde_json::Value>, String> {
        let Some(topology) = self.topology.as_mut() else {
            return Ok(None);
        };
        match topology.check_after_sample() {
            Ok(check) => Ok(serde_json::to_value(check).ok()),
            Err(e) => Err(format!("network check after the sample failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn network(text: &str) -> Network {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn applies_overrides_to_the_named_profile() {
        let n = network(
            "backend = \"emulated\"\nprofile = \"regional-wan\"\nmtu = 1400\n[both]\nloss = \"0%\"\n[client_to_server]\nrate = \"50Mbit\"\ndelay = \"10ms\"\n",
        );
        let p = link_profile(&n).unwrap().unwrap();
        assert_eq!(p.mtu, 1400);
        assert_eq!(p.client_to_server.delay_ns, 10_000_000);
        assert_eq!(p.client_to_server.rate_bps, Some(50_000_000));
        assert_eq!(p.server_to_client.delay_ns, 15_000_000);
        assert_eq!(p.server_to_client.rate_bps, Some(100_000_000));
        assert_eq!(p.client_to_server.loss, LossModel::None);
        assert_eq!(p.server_to_client.jitter_ns, 2_000_000);
    }

    #[test]
    fn unknown_profiles_are_named_with_the_known_ones() {
        let err =
            link_profile(&network("backend = \"emulated\"\nprofile = \"mars\"\n")).unwrap_err();
        assert!(
            err.starts_with("network.profile:") && err.contains("regional-wan"),
            "{err}"
        );
        assert_eq!(link_profile(&network("backend = \"loopback\"")), Ok(None));
    }
}
