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
//! granularity = "packet"     # emulated: packet (default) | offload (GSO bundles as one unit)
//! [network.both]             # optional overrides of the profile, both directions
//! loss = "0%"
//! [network.client_to_server] # then per direction
//! rate = "50Mbit"
//! ```
//!
//! [`Network::link_profile`] turns the table into the emulator's [`LinkProfile`]: the named
//! profile with the overrides applied, checked before anything runs. What a run actually built
//! is recorded in the manifest as a [`NetworkDescription`].

mod description;

use crate::campaign::Problem;
pub use description::{NETWORK_DESCRIPTION_VERSION, NetworkDescription};
use rpcarena_netem_core::{
    BackendKind, DirectionOverrides, Granularity, LinkProfile, LossModel, profile_by_name,
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
    /// What the emulator decides on: wire packets (default) or offload bundles (emulated only).
    #[serde(skip_serializing_if = "Granularity::is_packet")]
    pub granularity: Granularity,
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
    #[serde(default)]
    granularity: Granularity,
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
                    granularity: t.granularity,
                })
            }
        }
        deserializer.deserialize_any(NetworkVisitor)
    }
}

/// The problems [`Network::validate`] found, in the order found.
#[derive(Default)]
struct NetworkProblems(Vec<Problem>);

impl NetworkProblems {
    /// A problem with the field at `path` under `network`.
    fn add(&mut self, path: &str, message: String) {
        self.0.push(Problem {
            path: format!("network.{path}"),
            message,
        });
    }
}

impl Network {
    /// Problems with the combination of fields, with paths under `network`.
    pub fn validate(&self) -> Vec<Problem> {
        let mut problems = NetworkProblems::default();
        match self.backend {
            NetworkBackend::Emulated => {
                if self.profile.is_none() {
                    problems.add(
                        "profile",
                        "expected a link profile name for backend \"emulated\" (lan, regional-wan, continental, lossy-mobile, satellite)".into(),
                    );
                }
            }
            NetworkBackend::Loopback | NetworkBackend::Netns => {
                self.validate_unemulated(&mut problems);
            }
        }
        if let Some(mtu) = self.mtu
            && !(576..=65_535).contains(&mtu)
        {
            problems.add("mtu", format!("expected 576 to 65535 bytes, got {mtu}"));
        }
        self.validate_overrides(&mut problems);
        self.validate_link_profile(&mut problems);
        problems.0
    }

    /// A backend that emulates nothing takes no profile, overrides, emulator or granularity,
    /// and loopback no MTU.
    fn validate_unemulated(&self, problems: &mut NetworkProblems) {
        let backend = self.backend.as_str();
        let only_emulated = |what: &str| format!("{what} to backend \"emulated\", not {backend:?}");
        let overridden = !(self.both.is_empty()
            && self.client_to_server.is_empty()
            && self.server_to_client.is_empty());
        if self.profile.is_some() {
            problems.add("profile", only_emulated("a link profile only applies"));
        }
        if overridden {
            problems.add("both", only_emulated("link overrides only apply"));
        }
        if self.emulator != EmulatorChoice::Auto {
            problems.add("emulator", only_emulated("an emulator only applies"));
        }
        if !self.granularity.is_packet() {
            problems.add(
                "granularity",
                only_emulated("a loss granularity only applies"),
            );
        }
        if self.backend == NetworkBackend::Loopback && self.mtu.is_some() {
            problems.add(
                "mtu",
                "loopback's MTU cannot be set; use backend \"netns\" or \"emulated\"".into(),
            );
        }
    }

    /// Each direction's overrides within bounds.
    fn validate_overrides(&self, problems: &mut NetworkProblems) {
        for (name, o) in [
            ("both", &self.both),
            ("client_to_server", &self.client_to_server),
            ("server_to_client", &self.server_to_client),
        ] {
            if o.delay.is_some_and(|d| d > Duration::from_secs(60)) {
                problems.add(&format!("{name}.delay"), "expected at most 60s".into());
            }
            if o.limit == Some(0) {
                problems.add(
                    &format!("{name}.limit"),
                    "expected at least 1 packet".into(),
                );
            }
        }
    }

    /// What `run` builds, checked now: an unknown profile name, or overrides the profile
    /// cannot take, are refused before anything starts.
    fn validate_link_profile(&self, problems: &mut NetworkProblems) {
        if self.backend == NetworkBackend::Emulated
            && self.profile.is_some()
            && let Err(e) = self.link_profile()
        {
            let message = e
                .strip_prefix("network.profile: ")
                .unwrap_or(&e)
                .to_string();
            problems.add("profile", message);
        }
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
        profile.granularity = self.granularity;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granularity_reaches_the_profile_and_only_applies_to_emulated_links() {
        let n: Network = toml::from_str(
            "backend = \"emulated\"\nprofile = \"regional-wan\"\ngranularity = \"offload\"\n",
        )
        .unwrap();
        assert!(n.validate().is_empty());
        let profile = n.link_profile().unwrap().unwrap();
        assert_eq!(profile.granularity, Granularity::Offload);
        let default: Network =
            toml::from_str("backend = \"emulated\"\nprofile = \"regional-wan\"\n").unwrap();
        assert_eq!(
            default.link_profile().unwrap().unwrap().granularity,
            Granularity::Packet
        );
        let netns: Network =
            toml::from_str("backend = \"netns\"\ngranularity = \"offload\"\n").unwrap();
        assert_eq!(netns.validate()[0].path, "network.granularity");
        assert!(
            toml::from_str::<Network>("backend = \"emulated\"\ngranularity = \"gso\"\n").is_err()
        );
    }

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
}
