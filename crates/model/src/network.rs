//! The `network` part of a campaign: where client and server talk, and what the link does.
//!
//! Written either as a backend name (`network = "loopback"`) or as a table:
//!
//! ```toml
//! [network]
//! backend = "emulated"       # loopback | netns | emulated
//! profile = "regional-wan"   # emulated: lan, regional-wan, continental, lossy-mobile, satellite
//! emulator = "auto"          # auto (kernel netem where present, else userspace) | userspace | kernel
//! mtu = 1500                 # optional, netns and emulated
//! [network.both]             # optional overrides of the profile, both directions
//! loss = "0%"
//! [network.client_to_server] # then per direction
//! rate = "50Mbit"
//! ```
//!
//! [`Network::link_profile`] turns the table into the emulator's [`LinkProfile`]: the named
//! profile with the overrides applied, checked before anything runs. What a run actually built
//! is recorded in the manifest as a [`NetworkDescription`].

use crate::campaign::Problem;
use rpcarena_netem_core::{
    BackendKind, DirectionOverrides, LinkProfile, LossModel, TopologyInfo, profile_by_name,
};
pub use rpcarena_netem_core::{DelayDistribution, EmulatorChoice};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// Where client and server talk.
#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct Network {
    /// The backend.
    pub backend: NetworkBackend,
    /// Named link profile (emulated only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// Which emulator (emulated only).
    pub emulator: EmulatorChoice,
    /// MTU of both ends (netns and emulated; default 1500 or the profile's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Overrides applied to both directions.
    #[serde(skip_serializing_if = "LinkOverrides::is_empty")]
    pub both: LinkOverrides,
    /// Overrides for packets from client to server (applied after `both`).
    #[serde(skip_serializing_if = "LinkOverrides::is_empty")]
    pub client_to_server: LinkOverrides,
    /// Overrides for packets from server to client (applied after `both`).
    #[serde(skip_serializing_if = "LinkOverrides::is_empty")]
    pub server_to_client: LinkOverrides,
}

/// Network backends.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkBackend {
    /// Both peers in the controller's namespace, on 127.0.0.1.
    #[default]
    Loopback,
    /// Client and server in two namespaces joined by a veth pair, no emulation.
    Netns,
    /// Two namespaces joined by an emulated link.
    Emulated,
}

impl NetworkBackend {
    /// The name used in campaigns.
    pub fn as_str(&self) -> &'static str {
        match self {
            NetworkBackend::Loopback => "loopback",
            NetworkBackend::Netns => "netns",
            NetworkBackend::Emulated => "emulated",
        }
    }
}

/// Per-field replacements of a profile's direction, in campaign units.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct LinkOverrides {
    /// One-way base delay.
    #[serde(
        default,
        with = "opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub delay: Option<Duration>,
    /// Jitter (half-width of the uniform distribution, or sd).
    #[serde(
        default,
        with = "opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub jitter: Option<Duration>,
    /// `uniform`, `normal` or `pareto`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distribution: Option<DelayDistribution>,
    /// Random loss: `"0.1%"` or a fraction such as `0.001`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<Fraction>,
    /// Link rate: `"100Mbit"`, `"1Gbit"`, `"500kbit"`, or `"unlimited"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Rate>,
    /// Queue limit in packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Bytes added to each packet for the rate (default 14, the Ethernet header).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<u32>,
}

impl LinkOverrides {
    /// Whether nothing is overridden.
    pub fn is_empty(&self) -> bool {
        *self == LinkOverrides::default()
    }
}

/// Campaign units to the emulator's: nanoseconds, bits per second (0 removes the limit), a loss
/// model (0% is no loss).
impl From<&LinkOverrides> for DirectionOverrides {
    fn from(o: &LinkOverrides) -> DirectionOverrides {
        DirectionOverrides {
            delay_ns: o.delay.map(|d| d.as_nanos() as u64),
            jitter_ns: o.jitter.map(|d| d.as_nanos() as u64),
            distribution: o.distribution,
            loss: o.loss.map(|f| {
                if f.0 == 0.0 {
                    LossModel::None
                } else {
                    LossModel::Random { probability: f.0 }
                }
            }),
            rate_bps: o.rate.map(|r| r.0.unwrap_or(0)),
            overhead_bytes: o.overhead,
            limit_packets: o.limit,
            reorder: None,
        }
    }
}

mod opt_duration {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(value: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => crate::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        crate::duration::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

/// A probability written as a percentage string (`"0.1%"`) or a fraction (`0.001`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fraction(pub f64);

impl Fraction {
    /// Parses `"0.1%"` or `"0.001"`.
    pub fn parse(text: &str) -> Result<Fraction, String> {
        let t = text.trim();
        let value = match t.strip_suffix('%') {
            Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
            None => t.parse::<f64>(),
        }
        .map_err(|_| {
            format!(
                "expected a percentage such as \"0.1%\" or a fraction such as 0.001, got {text:?}"
            )
        })?;
        Fraction::check(value)
    }

    fn check(value: f64) -> Result<Fraction, String> {
        if (0.0..=1.0).contains(&value) {
            Ok(Fraction(value))
        } else {
            Err(format!(
                "expected a probability between 0% and 100%, got {value}"
            ))
        }
    }
}

impl Serialize for Fraction {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{}%", self.0 * 100.0))
    }
}

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fraction, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Fraction;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a percentage such as \"0.1%\" or a fraction such as 0.001")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Fraction, E> {
                Fraction::parse(v).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Fraction, E> {
                Fraction::check(v).map_err(E::custom)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Fraction, E> {
                Fraction::check(v as f64).map_err(E::custom)
            }
        }
        d.deserialize_any(V)
    }
}

/// A link rate in bits per second; `None` is unlimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub Option<u64>);

impl Rate {
    /// Parses tc-style rates: `"100Mbit"`, `"1.5Gbit"`, `"64kbit"`, `"9600bit"`, `"unlimited"`.
    pub fn parse(text: &str) -> Result<Rate, String> {
        let t = text.trim().to_ascii_lowercase();
        if t == "unlimited" || t == "none" {
            return Ok(Rate(None));
        }
        let t = t.trim_end_matches("/s").trim_end_matches("ps");
        let (number, scale) = [("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3), ("bit", 1.0)]
            .iter()
            .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n.trim(), *scale)))
            .ok_or_else(|| {
                format!(
                    "expected a rate such as \"100Mbit\", \"1Gbit\" or \"unlimited\", got {text:?}"
                )
            })?;
        let value: f64 = number
            .parse()
            .map_err(|_| format!("expected a rate such as \"100Mbit\", got {text:?}"))?;
        let bps = value * scale;
        if !(1.0..=1e12).contains(&bps) {
            return Err(format!(
                "expected a rate between 1bit and 1000Gbit, got {text:?}"
            ));
        }
        Ok(Rate(Some(bps.round() as u64)))
    }
}

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Some(bps) => s.serialize_str(&format!("{bps}bit")),
            None => s.serialize_str("unlimited"),
        }
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        let text = String::deserialize(d)?;
        Rate::parse(&text).map_err(de::Error::custom)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NetworkTable {
    backend: NetworkBackend,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    emulator: Option<EmulatorChoice>,
    #[serde(default)]
    mtu: Option<u32>,
    #[serde(default)]
    both: LinkOverrides,
    #[serde(default)]
    client_to_server: LinkOverrides,
    #[serde(default)]
    server_to_client: LinkOverrides,
}

impl<'de> Deserialize<'de> for Network {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Network, D::Error> {
        struct NetworkVisitor;
        impl<'de> Visitor<'de> for NetworkVisitor {
            type Value = Network;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a backend name (\"loopback\", \"netns\", \"emulated\") or a [network] table",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Network, E> {
                let backend = NetworkBackend::deserialize(de::value::StrDeserializer::<E>::new(v))?;
                Ok(Network {
                    backend,
                    ..Network::default()
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Network, A::Error> {
                let t = NetworkTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Network {
                    backend: t.backend,
                    profile: t.profile,
                    emulator: t.emulator.unwrap_or_default(),
                    mtu: t.mtu,
                    both: t.both,
                    client_to_server: t.client_to_server,
                    server_to_client: t.server_to_client,
                })
            }
        }
        deserializer.deserialize_any(NetworkVisitor)
    }
}

impl Network {
    /// Problems with the combination of fields, with paths under `network`.
    pub fn validate(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut problem = |path: &str, message: String| {
            problems.push(Problem {
                path: format!("network.{path}"),
                message,
            })
        };
        let overridden = !(self.both.is_empty()
            && self.client_to_server.is_empty()
            && self.server_to_client.is_empty());
        let backend = self.backend.as_str();
        match self.backend {
            NetworkBackend::Emulated => {
                if self.profile.is_none() {
                    problem(
                        "profile",
                        "expected a link profile name for backend \"emulated\" (lan, regional-wan, continental, lossy-mobile, satellite)".into(),
                    );
                }
            }
            NetworkBackend::Loopback | NetworkBackend::Netns => {
                if self.profile.is_some() {
                    problem(
                        "profile",
                        format!(
                            "a link profile only applies to backend \"emulated\", not {backend:?}"
                        ),
                    );
                }
                if overridden {
                    problem(
                        "both",
                        format!(
                            "link overrides only apply to backend \"emulated\", not {backend:?}"
                        ),
                    );
                }
                if self.emulator != EmulatorChoice::Auto {
                    problem(
                        "emulator",
                        format!(
                            "an emulator only applies to backend \"emulated\", not {backend:?}"
                        ),
                    );
                }
                if self.backend == NetworkBackend::Loopback && self.mtu.is_some() {
                    problem(
                        "mtu",
                        "loopback's MTU cannot be set; use backend \"netns\" or \"emulated\""
                            .into(),
                    );
                }
            }
        }
        if let Some(mtu) = self.mtu
            && !(576..=65_535).contains(&mtu)
        {
            problem("mtu", format!("expected 576 to 65535 bytes, got {mtu}"));
        }
        for (name, o) in [
            ("both", &self.both),
            ("client_to_server", &self.client_to_server),
            ("server_to_client", &self.server_to_client),
        ] {
            if o.delay.is_some_and(|d| d > Duration::from_secs(60)) {
                problem(&format!("{name}.delay"), "expected at most 60s".into());
            }
            if o.limit == Some(0) {
                problem(
                    &format!("{name}.limit"),
                    "expected at least 1 packet".into(),
                );
            }
        }
        problems
    }

    /// The link profile the campaign asks for: its named profile with the overrides applied.
    /// `None` unless the backend is `emulated`. Errors name the campaign field.
    pub fn link_profile(&self) -> Result<Option<LinkProfile>, String> {
        if self.backend != NetworkBackend::Emulated {
            return Ok(None);
        }
        let name = self
            .profile
            .as_deref()
            .ok_or("network.profile: expected a link profile name")?;
        let mut profile = profile_by_name(name)
            .map_err(|e| format!("network.profile: {e}"))?
            .with_overrides(
                &(&self.both).into(),
                &(&self.client_to_server).into(),
                &(&self.server_to_client).into(),
            );
        if let Some(mtu) = self.mtu {
            profile.mtu = mtu;
        }
        profile
            .validate()
            .map_err(|e| format!("network (profile {name} with overrides): {e}"))?;
        Ok(Some(profile))
    }

    /// The emulator backend this network needs on the host (`None` for loopback), with `auto`
    /// counted as userspace: it falls back to userspace where kernel netem is missing.
    pub fn needed_backend(&self) -> Option<BackendKind> {
        match self.backend {
            NetworkBackend::Loopback => None,
            NetworkBackend::Netns => Some(BackendKind::Netns),
            NetworkBackend::Emulated => Some(match self.emulator {
                EmulatorChoice::Kernel => BackendKind::Kernel,
                EmulatorChoice::Userspace | EmulatorChoice::Auto => BackendKind::Userspace,
            }),
        }
    }
}

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

    #[test]
    fn parses_rates_and_fractions() {
        assert_eq!(Rate::parse("100Mbit"), Ok(Rate(Some(100_000_000))));
        assert_eq!(Rate::parse("1.5gbit"), Ok(Rate(Some(1_500_000_000))));
        assert_eq!(Rate::parse("64 kbit"), Ok(Rate(Some(64_000))));
        assert_eq!(Rate::parse("unlimited"), Ok(Rate(None)));
        assert!(Rate::parse("100MB").unwrap_err().contains("\"100Mbit\""));
        assert_eq!(Fraction::parse("0.1%"), Ok(Fraction(0.001)));
        assert_eq!(Fraction::parse("0.25"), Ok(Fraction(0.25)));
        assert!(Fraction::parse("120%").is_err());
    }

    #[test]
    fn a_table_with_overrides_parses() {
        let text = r#"
backend = "emulated"
profile = "regional-wan"
emulator = "userspace"
[both]
loss = "0%"
[client_to_server]
rate = "50Mbit"
delay = "10ms"
"#;
        let n: Network = toml::from_str(text).unwrap();
        assert_eq!(n.backend, NetworkBackend::Emulated);
        assert_eq!(n.emulator, EmulatorChoice::Userspace);
        assert_eq!(n.both.loss, Some(Fraction(0.0)));
        assert_eq!(n.client_to_server.rate, Some(Rate(Some(50_000_000))));
        assert_eq!(n.client_to_server.delay, Some(Duration::from_millis(10)));
        assert!(n.validate().is_empty());
    }

    #[test]
    fn combinations_that_make_no_sense_are_refused() {
        let n: Network = toml::from_str("backend = \"emulated\"").unwrap();
        assert_eq!(n.validate()[0].path, "network.profile");
        let n: Network = toml::from_str("backend = \"netns\"\nprofile = \"lan\"\n").unwrap();
        assert!(
            n.validate()[0]
                .message
                .contains("only applies to backend \"emulated\"")
        );
        let n: Network = toml::from_str("backend = \"loopback\"\nmtu = 9000\n").unwrap();
        assert_eq!(n.validate()[0].path, "network.mtu");
    }

    #[test]
    fn applies_overrides_to_the_named_profile() {
        let n: Network = toml::from_str(
            "backend = \"emulated\"\nprofile = \"regional-wan\"\nmtu = 1400\n[both]\nloss = \"0%\"\n[client_to_server]\nrate = \"50Mbit\"\ndelay = \"10ms\"\ndistribution = \"normal\"\n",
        )
        .unwrap();
        let p = n.link_profile().unwrap().unwrap();
        assert_eq!(p.mtu, 1400);
        assert_eq!(p.client_to_server.delay_ns, 10_000_000);
        assert_eq!(p.client_to_server.rate_bps, Some(50_000_000));
        assert_eq!(p.client_to_server.distribution, DelayDistribution::Normal);
        assert_eq!(p.server_to_client.delay_ns, 15_000_000);
        assert_eq!(p.server_to_client.rate_bps, Some(100_000_000));
        assert_eq!(p.client_to_server.loss, LossModel::None);
        assert_eq!(p.server_to_client.jitter_ns, 2_000_000);
        assert_eq!(n.needed_backend(), Some(BackendKind::Userspace));
    }

    #[test]
    fn unknown_profiles_and_distributions_are_named_with_the_known_ones() {
        let n: Network = toml::from_str("backend = \"emulated\"\nprofile = \"mars\"\n").unwrap();
        let err = n.link_profile().unwrap_err();
        assert!(
            err.starts_with("network.profile:") && err.contains("regional-wan"),
            "{err}"
        );
        let loopback: Network = toml::from_str("backend = \"loopback\"").unwrap();
        assert_eq!(loopback.link_profile(), Ok(None));
        assert_eq!(loopback.needed_backend(), None);
        let err = toml::from_str::<Network>(
            "backend = \"emulated\"\nprofile = \"lan\"\n[both]\ndistribution = \"cauchy\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("pareto"), "{err}");
    }

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
