//! What a run's network was, as `manifest.json` records it: a typed, versioned
//! [`NetworkDescription`]. Version 1 (before the description was typed) kept the topology's
//! fields flat beside `backend`; it is still read, so reports of old runs regenerate the same.

use super::{Network, NetworkBackend};
use rpcarena_netem_core::{BackendKind, TopologyInfo};
use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};

/// The version of [`NetworkDescription`] this build writes. Version 1 (no `version` key) was
/// flat: the topology's fields beside `backend`; it is still read.
pub const NETWORK_DESCRIPTION_VERSION: u32 = 2;

/// The network a run used, as `manifest.json` records it under `network`.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct NetworkDescription {
    /// [`NETWORK_DESCRIPTION_VERSION`] when written by this build.
    pub version: u32,
    /// The backend the campaign asked for.
    pub backend: NetworkBackend,
    /// The address servers listen on.
    pub server_address: String,
    /// The campaign's `network` as parsed (absent for loopback in version 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign: Option<Network>,
    /// Namespaces, devices, emulator, profile, seeds and timing (netns and emulated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<TopologyInfo>,
    /// Why the network's check right after set-up failed, if it did (the first sample's
    /// device counters then include set-up traffic, or the emulator already stopped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_check: Option<String>,
}

impl Default for NetworkDescription {
    fn default() -> NetworkDescription {
        NetworkDescription::loopback(&Network::default())
    }
}

impl NetworkDescription {
    /// Loopback: both peers on 127.0.0.1 in the controller's namespace.
    pub fn loopback(campaign: &Network) -> NetworkDescription {
        NetworkDescription {
            version: NETWORK_DESCRIPTION_VERSION,
            backend: NetworkBackend::Loopback,
            server_address: "127.0.0.1".to_string(),
            campaign: Some(campaign.clone()),
            topology: None,
            setup_check: None,
        }
    }

    /// Namespaces joined by a veth pair or an emulated link, as the topology describes itself.
    pub fn of_topology(campaign: &Network, topology: &TopologyInfo) -> NetworkDescription {
        NetworkDescription {
            version: NETWORK_DESCRIPTION_VERSION,
            backend: campaign.backend,
            server_address: topology.server_address.to_string(),
            campaign: Some(campaign.clone()),
            topology: Some(topology.clone()),
            setup_check: None,
        }
    }
}

/// Version 2 as written.
#[derive(Deserialize)]
struct DescriptionV2 {
    version: u32,
    backend: NetworkBackend,
    server_address: String,
    #[serde(default)]
    campaign: Option<Network>,
    #[serde(default)]
    topology: Option<TopologyInfo>,
    #[serde(default)]
    setup_check: Option<String>,
}

/// Version 1: `backend`, `server_address`, `campaign` and, for namespaces, the topology's own
/// fields at the same level, its `backend` (the backend kind) overwritten by the campaign's.
fn from_v1(mut value: serde_json::Value) -> Result<NetworkDescription, String> {
    let object = value
        .as_object_mut()
        .ok_or("expected a JSON object for the network description")?;
    let take = |object: &mut serde_json::Map<String, serde_json::Value>, key: &str| {
        object.remove(key).unwrap_or(serde_json::Value::Null)
    };
    let backend: NetworkBackend = serde_json::from_value(take(object, "backend"))
        .map_err(|e| format!("network.backend: {e}"))?;
    let campaign: Option<Network> = serde_json::from_value(take(object, "campaign"))
        .map_err(|e| format!("network.campaign: {e}"))?;
    let server_address = match take(object, "server_address") {
        serde_json::Value::String(s) => s,
        other => {
            return Err(format!(
                "network.server_address: expected a string, got {other}"
            ));
        }
    };
    let topology = if backend == NetworkBackend::Loopback {
        None
    } else {
        // The kind the topology ran, from its emulator (version 1 did not keep it apart).
        let emulator = object.get("emulator").and_then(|e| e.get("kind"));
        let kind = match emulator.and_then(|k| k.as_str()) {
            Some("rpcarena-netem-userspace") => BackendKind::Userspace,
            Some("linux-sch_netem") => BackendKind::Kernel,
            _ => BackendKind::Netns,
        };
        object.insert(
            "backend".into(),
            serde_json::to_value(kind).unwrap_or_default(),
        );
        object.insert("server_address".into(), server_address.clone().into());
        Some(serde_json::from_value(value).map_err(|e| format!("network: {e}"))?)
    };
    Ok(NetworkDescription {
        version: 1,
        backend,
        server_address,
        campaign,
        topology,
        setup_check: None,
    })
}

impl<'de> Deserialize<'de> for NetworkDescription {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<NetworkDescription, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        match value.get("version").map(|v| v.as_u64()) {
            None => from_v1(value).map_err(de::Error::custom),
            Some(Some(v)) if v == u64::from(NETWORK_DESCRIPTION_VERSION) => {
                let d: DescriptionV2 = serde_json::from_value(value).map_err(de::Error::custom)?;
                Ok(NetworkDescription {
                    version: d.version,
                    backend: d.backend,
                    server_address: d.server_address,
                    campaign: d.campaign,
                    topology: d.topology,
                    setup_check: d.setup_check,
                })
            }
            Some(other) => Err(de::Error::custom(format!(
                "network description version {} is not one this rpcarena reads (1 or {NETWORK_DESCRIPTION_VERSION}); use the rpcarena that wrote the run",
                other.map_or("(not a number)".to_string(), |v| v.to_string())
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcarena_netem_core::profile_by_name;

    fn topology() -> TopologyInfo {
        let profile = profile_by_name("regional-wan").unwrap();
        TopologyInfo {
            backend: BackendKind::Userspace,
            emulator: rpcarena_netem_core::EmulatorInfo {
                kind: "rpcarena-netem-userspace".into(),
                version: "rpcarena-netem 0.1.0".into(),
            },
            client_namespace: "rpa-1-a-c".into(),
            server_namespace: "rpa-1-a-s".into(),
            client_address: std::net::Ipv4Addr::new(10, 77, 0, 1),
            server_address: std::net::Ipv4Addr::new(10, 77, 0, 2),
            client_device: "rpa0".into(),
            server_device: "rpa0".into(),
            mtu: profile.mtu,
            profile: Some(profile),
            seeds: Some(rpcarena_netem_core::DirectionSeeds::derive(3)),
            kernel_qdisc: None,
            timing: Some(rpcarena_netem_core::TimingOptions::default()),
            timing_notes: vec!["cpu wake-up latency request (0 us) held".into()],
        }
    }

    #[test]
    fn descriptions_round_trip_with_their_version() {
        let campaign: Network =
            toml::from_str("backend = \"emulated\"\nprofile = \"regional-wan\"\n").unwrap();
        let mut d = NetworkDescription::of_topology(&campaign, &topology());
        d.setup_check = Some("devices dropped packets".into());
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["version"], NETWORK_DESCRIPTION_VERSION);
        assert_eq!(
            json["topology"]["profile"]["client_to_server"]["delay_ns"],
            15_000_000
        );
        let back: NetworkDescription = serde_json::from_value(json).unwrap();
        assert_eq!(back, d);
        let loopback = NetworkDescription::loopback(&Network::default());
        let text = serde_json::to_string(&loopback).unwrap();
        assert_eq!(
            serde_json::from_str::<NetworkDescription>(&text).unwrap(),
            loopback
        );
        let err = serde_json::from_str::<NetworkDescription>(r#"{"version":9,"backend":"netns"}"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("version 9"), "{err}");
    }

    #[test]
    fn version_1_manifests_still_read() {
        // What runs before the description was typed wrote: the topology's fields flat, its
        // backend overwritten by the campaign's, the server address as a string.
        let campaign: Network =
            toml::from_str("backend = \"emulated\"\nprofile = \"regional-wan\"\n").unwrap();
        let mut v1 = serde_json::to_value(topology()).unwrap();
        let object = v1.as_object_mut().unwrap();
        object.insert("backend".into(), "emulated".into());
        object.insert("campaign".into(), serde_json::to_value(&campaign).unwrap());
        object.insert("server_address".into(), "10.77.0.2".into());
        let d: NetworkDescription = serde_json::from_value(v1).unwrap();
        assert_eq!(d.version, 1);
        assert_eq!(d.backend, NetworkBackend::Emulated);
        assert_eq!(d.topology, Some(topology()));
        assert_eq!(d.campaign, Some(campaign));
        let loopback: NetworkDescription =
            serde_json::from_str(r#"{"backend":"loopback","server_address":"127.0.0.1"}"#).unwrap();
        assert_eq!(
            (loopback.version, loopback.backend, loopback.topology),
            (1, NetworkBackend::Loopback, None)
        );
    }
}
