//! Link profiles: what each direction of an emulated link does, as plain serializable data.
//!
//! Units are fixed and visible in the field names so that a manifest can be read without
//! this crate: durations are integer nanoseconds (`*_ns`), rates bits per second (`rate_bps`),
//! sizes bytes, probabilities fractions in `[0, 1]` (0.001 is 0.1 %), queue limits packets.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ProfileError;

/// Per-packet framing overhead added to the IP packet length for the rate computation.
///
/// Kernel netem on a veth sees Ethernet frames (14 header bytes), TUN packets carry no link
/// header, so the userspace emulator adds 14 bytes to match what `tc ... netem rate` does on
/// a veth. At 100 Mbit/s and MTU 1500 a full UDP datagram then carries
/// `100 * 1472 / 1514 = 97.2` Mbit/s of payload.
pub const DEFAULT_OVERHEAD_BYTES: u32 = 14;

/// netem's own default queue limit in packets.
pub const DEFAULT_LIMIT_PACKETS: u32 = 1000;

/// The largest jitter kernel netem accepts (it stores jitter as a signed 32-bit nanosecond count).
pub const MAX_JITTER_NS: u64 = i32::MAX as u64;

/// The largest base delay accepted; anything larger is surely a unit mistake.
pub const MAX_DELAY_NS: u64 = 60 * 1_000_000_000;

/// Shape of the jitter around the base delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DelayDistribution {
    /// netem's default: uniform on `[delay - jitter, delay + jitter)`.
    #[default]
    Uniform,
    /// netem's `distribution normal` table: a normal with sd `jitter`, clipped at 4 sd.
    Normal,
    /// netem's `distribution pareto` table (shape 3, shifted and scaled by `jitter`).
    Pareto,
}

impl DelayDistribution {
    /// The name profiles and campaigns use: `uniform`, `normal`, `pareto`.
    pub fn as_str(self) -> &'static str {
        match self {
            DelayDistribution::Uniform => "uniform",
            DelayDistribution::Normal => "normal",
            DelayDistribution::Pareto => "pareto",
        }
    }

    /// The name `tc ... netem distribution NAME` uses, `None` for the built-in uniform.
    pub fn netem_name(self) -> Option<&'static str> {
        match self {
            DelayDistribution::Uniform => None,
            DelayDistribution::Normal => Some("normal"),
            DelayDistribution::Pareto => Some("pareto"),
        }
    }
}

/// How packets are lost, decided first for every arriving packet (before the queue limit).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossModel {
    /// No random loss.
    #[default]
    None,
    /// Independent loss with the given probability (netem `loss random P`).
    Random {
        /// Loss probability per packet, a fraction in `[0, 1]`.
        probability: f64,
    },
    /// Gilbert-Elliott two-state loss, exactly netem's `loss gemodel p r 1-h 1-k`.
    ///
    /// Every packet first moves the chain (good to bad with `p`, bad to good with `r`) and is
    /// then lost with the loss probability of the state it was in before that move, as
    /// `loss_gilb_ell()` in `sch_netem.c` does. The long-run loss rate is
    /// `(r * one_minus_k + p * one_minus_h) / (p + r)`.
    GilbertElliott {
        /// Probability of moving from the good to the bad state.
        p: f64,
        /// Probability of moving from the bad to the good state.
        r: f64,
        /// Loss probability in the bad state (netem's `1-h`; 1.0 is the classic Gilbert model).
        one_minus_h: f64,
        /// Loss probability in the good state (netem's `1-k`; usually 0).
        one_minus_k: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets this model loses.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None => 0.0,
            LossModel::Random { probability } => probability,
            LossModel::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => {
                if p + r == 0.0 {
                    // The chain never leaves the good state it starts in.
                    one_minus_k
                } else {
                    (r * one_minus_k + p * one_minus_h) / (p + r)
                }
            }
        }
    }

    /// Variance of the loss indicator summed over n packets, divided by n, for large n.
    ///
    /// For random loss this is the binomial `m (1 - m)`; for Gilbert-Elliott the correlation
    /// between neighbouring packets inflates it (losses come in bursts), which netcheck uses to
    /// widen the interval it judges a measured loss rate against.
    pub fn asymptotic_variance(&self) -> f64 {
        let m = self.mean_loss();
        match *self {
            LossModel::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } if p + r > 0.0 => {
                let pi_bad = p / (p + r);
                let pi_good = 1.0 - pi_bad;
                let lambda = 1.0 - p - r;
                let diff = one_minus_h - one_minus_k;
                let covariance_sum = if lambda.abs() < 1.0 {
                    diff * diff * pi_bad * pi_good * lambda / (1.0 - lambda)
                } else {
                    0.0
                };
                (m * (1.0 - m) + 2.0 * covariance_sum).max(0.0)
            }
            _ => m * (1.0 - m),
        }
    }
}

/// netem's `reorder P gap G`: every G-th packet (G = 1: any packet) is sent at once with
/// probability P instead of being delayed. Needs a non-zero delay, as tc does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reorder {
    /// Probability that an eligible packet skips the delay, a fraction in `[0, 1]`.
    pub probability: f64,
    /// Distance between reorder candidates (netem's `gap`, tc's default 1).
    #[serde(default = "default_gap")]
    pub gap: u32,
}

fn default_gap() -> u32 {
    1
}

fn default_overhead() -> u32 {
    DEFAULT_OVERHEAD_BYTES
}

fn default_limit() -> u32 {
    DEFAULT_LIMIT_PACKETS
}

/// Everything one direction of the link does to packets, in netem's terms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectionSpec {
    /// Base one-way delay `mu`, nanoseconds.
    pub delay_ns: u64,
    /// Jitter `sigma`, nanoseconds: the half-width of the uniform distribution, or the sd of
    /// the table distributions. Default 0.
    #[serde(default)]
    pub jitter_ns: u64,
    /// Jitter distribution. Default uniform.
    #[serde(default)]
    pub distribution: DelayDistribution,
    /// Loss model. Default none.
    #[serde(default)]
    pub loss: LossModel,
    /// Link rate in bits per second; `None` means no rate limit (and then jitter reorders).
    #[serde(default)]
    pub rate_bps: Option<u64>,
    /// Bytes added to each IP packet's length for the rate computation. Default 14
    /// ([`DEFAULT_OVERHEAD_BYTES`]).
    #[serde(default = "default_overhead")]
    pub overhead_bytes: u32,
    /// Queue limit in packets, counting every held packet. Default 1000 (netem's default).
    #[serde(default = "default_limit")]
    pub limit_packets: u32,
    /// Optional netem-style reordering. Default none.
    #[serde(default)]
    pub reorder: Option<Reorder>,
}

impl Default for DirectionSpec {
    fn default() -> Self {
        DirectionSpec {
            delay_ns: 0,
            jitter_ns: 0,
            distribution: DelayDistribution::Uniform,
            loss: LossModel::None,
            rate_bps: None,
            overhead_bytes: DEFAULT_OVERHEAD_BYTES,
            limit_packets: DEFAULT_LIMIT_PACKETS,
            reorder: None,
        }
    }
}

impl DirectionSpec {
    /// A direction that forwards everything at once: no delay, rate, loss; a deep queue.
    pub fn passthrough() -> Self {
        DirectionSpec {
            limit_packets: 100_000,
            ..DirectionSpec::default()
        }
    }

    /// Time the link needs to serialize an IP packet of `ip_len` bytes, `None` without a rate.
    ///
    /// Integer nanoseconds, truncated, as `packet_time_ns()` in `sch_netem.c`.
    pub fn serialization_ns(&self, ip_len: usize) -> Option<u64> {
        self.rate_bps.map(|rate| {
            let bits = (ip_len as u128 + self.overhead_bytes as u128) * 8;
            (bits * 1_000_000_000 / rate.max(1) as u128) as u64
        })
    }

    /// Packets per second the rate admits for IP packets of `ip_len` bytes.
    pub fn packets_per_second(&self, ip_len: usize) -> Option<f64> {
        self.rate_bps
            .map(|rate| rate as f64 / ((ip_len as f64 + self.overhead_bytes as f64) * 8.0))
    }

    /// Checks every field; `path` prefixes field names in errors (e.g. `"client_to_server"`).
    ///
    /// Checks run in field order (timing, loss, link, reorder), so the first bad field is the one
    /// reported.
    pub fn validate(&self, path: &str) -> Result<(), ProfileError> {
        let path = FieldPath(path);
        self.validate_timing(path)?;
        validate_loss(&self.loss, path)?;
        self.validate_link(path)?;
        self.validate_reorder(path)
    }

    /// Delay and jitter within what netem can represent.
    fn validate_timing(&self, path: FieldPath) -> Result<(), ProfileError> {
        if self.delay_ns > MAX_DELAY_NS {
            return Err(ProfileError::OutOfRange {
                field: path.field("delay_ns"),
                value: self.delay_ns.to_string(),
                expected: format!("at most {MAX_DELAY_NS} ns (60 s); the unit is nanoseconds"),
            });
        }
        if self.jitter_ns > MAX_JITTER_NS {
            return Err(ProfileError::OutOfRange {
                field: path.field("jitter_ns"),
                value: self.jitter_ns.to_string(),
                expected: format!(
                    "at most {MAX_JITTER_NS} ns, the largest jitter netem can represent"
                ),
            });
        }
        Ok(())
    }

    /// Rate, per-packet overhead and queue limit.
    fn validate_link(&self, path: FieldPath) -> Result<(), ProfileError> {
        if let Some(rate) = self.rate_bps
            && rate < 8
        {
            return Err(ProfileError::OutOfRange {
                field: path.field("rate_bps"),
                value: rate.to_string(),
                expected: "at least 8 bit/s, or no rate_bps at all for an unlimited link"
                    .to_string(),
            });
        }
        if self.overhead_bytes > 65_535 {
            return Err(ProfileError::OutOfRange {
                field: path.field("overhead_bytes"),
                value: self.overhead_bytes.to_string(),
                expected: "at most 65535 bytes".to_string(),
            });
        }
        if self.limit_packets == 0 {
            return Err(ProfileError::OutOfRange {
                field: path.field("limit_packets"),
                value: "0".to_string(),
                expected: "at least 1 packet (netem's default is 1000)".to_string(),
            });
        }
        Ok(())
    }

    /// Reordering: a probability, a gap of at least 1, and a delay to reorder against.
    fn validate_reorder(&self, path: FieldPath) -> Result<(), ProfileError> {
        let Some(reorder) = self.reorder else {
            return Ok(());
        };
        path.check_probability("reorder.probability", reorder.probability)?;
        if reorder.gap == 0 {
            return Err(ProfileError::OutOfRange {
                field: path.field("reorder.gap"),
                value: "0".to_string(),
                expected: "at least 1 (1 makes every packet a candidate)".to_string(),
            });
        }
        if self.delay_ns == 0 {
            return Err(ProfileError::ReorderWithoutDelay {
                field: path.field("reorder"),
            });
        }
        Ok(())
    }

    /// Applies the fields an override sets.
    pub fn apply(&mut self, overrides: &DirectionOverrides) {
        if let Some(v) = overrides.delay_ns {
            self.delay_ns = v;
        }
        if let Some(v) = overrides.jitter_ns {
            self.jitter_ns = v;
        }
        if let Some(v) = overrides.distribution {
            self.distribution = v;
        }
        if let Some(v) = overrides.loss {
            self.loss = v;
        }
        if let Some(v) = overrides.rate_bps {
            // An explicit 0 in an override removes the rate limit.
            self.rate_bps = (v != 0).then_some(v);
        }
        if let Some(v) = overrides.overhead_bytes {
            self.overhead_bytes = v;
        }
        if let Some(v) = overrides.limit_packets {
            self.limit_packets = v;
        }
        if let Some(v) = overrides.reorder {
            self.reorder = Some(v);
        }
    }

    /// The equivalent `tc qdisc ... netem` arguments.
    ///
    /// `overhead_adjust` is added to `overhead_bytes` for the rate's packet overhead: kernel
    /// netem on a veth already counts the 14-byte Ethernet header, so the kernel backend passes
    /// -14 there to charge the same wire size as the userspace emulator.
    pub fn netem_args(&self, overhead_adjust: i64) -> Vec<String> {
        let mut args = vec!["limit".to_string(), self.limit_packets.to_string()];
        if self.delay_ns > 0 || self.jitter_ns > 0 {
            args.push("delay".to_string());
            args.push(format_tc_time(self.delay_ns));
            if self.jitter_ns > 0 {
                args.push(format_tc_time(self.jitter_ns));
                if let Some(name) = self.distribution.netem_name() {
                    args.push("distribution".to_string());
                    args.push(name.to_string());
                }
            }
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Random { probability } => {
                args.extend(["loss".into(), "random".into(), format_percent(probability)]);
            }
            LossModel::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => {
                args.extend(["loss".into(), "gemodel".into()]);
                args.extend([p, r, one_minus_h, one_minus_k].map(format_percent));
            }
        }
        if let Some(reorder) = self.reorder {
            args.extend([
                "reorder".into(),
                format_percent(reorder.probability),
                "gap".into(),
                reorder.gap.to_string(),
            ]);
        }
        if let Some(rate) = self.rate_bps {
            args.extend([
                "rate".into(),
                format!("{rate}bit"),
                (self.overhead_bytes as i64 + overhead_adjust).to_string(),
            ]);
        }
        args
    }
}

/// Every probability of a loss model is a fraction.
fn validate_loss(loss: &LossModel, path: FieldPath) -> Result<(), ProfileError> {
    match *loss {
        LossModel::None => Ok(()),
        LossModel::Random { probability } => {
            path.check_probability("loss.probability", probability)
        }
        LossModel::GilbertElliott {
            p,
            r,
            one_minus_h,
            one_minus_k,
        } => {
            path.check_probability("loss.p", p)?;
            path.check_probability("loss.r", r)?;
            path.check_probability("loss.one_minus_h", one_minus_h)?;
            path.check_probability("loss.one_minus_k", one_minus_k)
        }
    }
}

/// The prefix `validate` puts before field names in its errors (empty for none).
#[derive(Clone, Copy)]
struct FieldPath<'a>(&'a str);

impl FieldPath<'_> {
    /// `name` under this prefix, e.g. `client_to_server.delay_ns`.
    fn field(self, name: &str) -> String {
        if self.0.is_empty() {
            name.to_string()
        } else {
            format!("{}.{name}", self.0)
        }
    }

    /// `value` is a finite fraction in [0, 1].
    fn check_probability(self, name: &str, value: f64) -> Result<(), ProfileError> {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            Ok(())
        } else {
            Err(ProfileError::OutOfRange {
                field: self.field(name),
                value: value.to_string(),
                expected: "a fraction in [0, 1] (0.001 means 0.1 %)".to_string(),
            })
        }
    }
}

/// tc parses fractional microseconds everywhere; nanosecond suffixes are not universal.
fn format_tc_time(ns: u64) -> String {
    if ns.is_multiple_of(1000) {
        format!("{}us", ns / 1000)
    } else {
        format!("{:.3}us", ns as f64 / 1000.0)
    }
}

fn format_percent(fraction: f64) -> String {
    let s = format!("{:.6}", fraction * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

fn human_time(ns: u64) -> String {
    if ns >= 1_000_000 && ns.is_multiple_of(1_000) {
        let ms = ns as f64 / 1e6;
        format!("{}ms", trim_float(ms))
    } else if ns >= 1_000 {
        format!("{}us", trim_float(ns as f64 / 1e3))
    } else {
        format!("{ns}ns")
    }
}

fn human_rate(bps: u64) -> String {
    if bps >= 1_000_000_000 && bps.is_multiple_of(1_000_000) {
        format!("{}Gbit", trim_float(bps as f64 / 1e9))
    } else if bps >= 1_000_000 {
        format!("{}Mbit", trim_float(bps as f64 / 1e6))
    } else if bps >= 1_000 {
        format!("{}kbit", trim_float(bps as f64 / 1e3))
    } else {
        format!("{bps}bit")
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

impl fmt::Display for DirectionSpec {
    /// netem-like one-line summary, e.g. `delay 15ms 2ms loss 0.1% rate 100Mbit limit 1000`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delay {}", human_time(self.delay_ns))?;
        if self.jitter_ns > 0 {
            write!(f, " {}", human_time(self.jitter_ns))?;
            if let Some(name) = self.distribution.netem_name() {
                write!(f, " distribution {name}")?;
            }
        }
        match self.loss {
            LossModel::None => {}
            LossModel::Random { probability } => {
                write!(f, " loss {}", format_percent(probability))?
            }
            LossModel::GilbertElliott {
                p,
                r,
                one_minus_h,
                one_minus_k,
            } => write!(
                f,
                " loss gemodel {} {} {} {}",
                format_percent(p),
                format_percent(r),
                format_percent(one_minus_h),
                format_percent(one_minus_k)
            )?,
        }
        if let Some(reorder) = self.reorder {
            write!(
                f,
                " reorder {} gap {}",
                format_percent(reorder.probability),
                reorder.gap
            )?;
        }
        if let Some(rate) = self.rate_bps {
            write!(f, " rate {}", human_rate(rate))?;
            if self.overhead_bytes != DEFAULT_OVERHEAD_BYTES {
                write!(f, " overhead {}", self.overhead_bytes)?;
            }
        }
        write!(f, " limit {}", self.limit_packets)
    }
}

/// Optional per-field replacements for a [`DirectionSpec`], as a campaign file gives them.
///
/// `rate_bps = 0` removes the rate limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DirectionOverrides {
    #[serde(default)]
    pub delay_ns: Option<u64>,
    #[serde(default)]
    pub jitter_ns: Option<u64>,
    #[serde(default)]
    pub distribution: Option<DelayDistribution>,
    #[serde(default)]
    pub loss: Option<LossModel>,
    #[serde(default)]
    pub rate_bps: Option<u64>,
    #[serde(default)]
    pub overhead_bytes: Option<u32>,
    #[serde(default)]
    pub limit_packets: Option<u32>,
    #[serde(default)]
    pub reorder: Option<Reorder>,
}

/// Which way a packet travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// From the client namespace to the server namespace.
    ClientToServer,
    /// From the server namespace to the client namespace.
    ServerToClient,
}

impl Direction {
    /// Both directions, client to server first.
    pub const BOTH: [Direction; 2] = [Direction::ClientToServer, Direction::ServerToClient];

    /// Short label used in logs and thread names: `c2s` or `s2c`.
    pub fn label(self) -> &'static str {
        match self {
            Direction::ClientToServer => "c2s",
            Direction::ServerToClient => "s2c",
        }
    }
}

/// A link: the MTU both namespaces use and one [`DirectionSpec`] per direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkProfile {
    /// Profile name (`regional-wan`, ...) for reports; `None` for a hand-made profile.
    #[serde(default)]
    pub name: Option<String>,
    /// MTU of the devices in both namespaces, bytes.
    pub mtu: u32,
    /// What happens to packets from client to server.
    pub client_to_server: DirectionSpec,
    /// What happens to packets from server to client.
    pub server_to_client: DirectionSpec,
    /// What the emulator loses, delays and queues as one unit: every wire packet (default), or
    /// every offload bundle the kernel hands over, as kernel netem does on a veth with TSO/GSO.
    #[serde(default, skip_serializing_if = "Granularity::is_packet")]
    pub granularity: Granularity,
}

/// The unit the emulator decides on (docs/network-emulation.md, "Granularity").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Granularity {
    /// Every wire packet on its own, as on a physical link: the TUN devices take no offloads,
    /// so TCP segments and UDP datagrams arrive at most one MTU each.
    #[default]
    Packet,
    /// Every offload bundle as one unit: the TUN devices take TSO/USO and checksum offloads
    /// (`IFF_VNET_HDR`, `TUNSETOFFLOAD`), the kernel hands over GSO bundles of up to 64 KiB, and
    /// a bundle is lost, delayed, rate-limited and queued whole, the way kernel netem treats a
    /// GSO packet on a veth with offloads on. The rate still charges every segment's bytes.
    Offload,
}

impl Granularity {
    /// Whether this is the default, [`Granularity::Packet`].
    pub fn is_packet(&self) -> bool {
        *self == Granularity::Packet
    }

    /// The name used in campaigns, manifests and reports.
    pub fn as_str(&self) -> &'static str {
        match self {
            Granularity::Packet => "packet",
            Granularity::Offload => "offload",
        }
    }
}

/// Names accepted by [`profile_by_name`], in the order they are documented.
pub const PROFILE_NAMES: [&str; 5] = [
    "lan",
    "regional-wan",
    "continental",
    "lossy-mobile",
    "satellite",
];

const MS: u64 = 1_000_000;
const MBIT: u64 = 1_000_000;

/// Looks a named profile up; the error lists the known names.
///
/// | name | each way | loss | rate | limit |
/// |---|---|---|---|---|
/// | `lan` | 0.25 ms | none | 10 Gbit/s | 10000 |
/// | `regional-wan` | 15 ms +- 2 ms | 0.1 % | 100 Mbit/s | 1000 |
/// | `continental` | 40 ms +- 4 ms | 0.1 % | 1 Gbit/s | 10000 |
/// | `lossy-mobile` | 35 ms +- 15 ms | Gilbert-Elliott, 2 % | 20 Mbit/s | 500 |
/// | `satellite` | 300 ms | 0.5 % | 50 Mbit/s | 2500 |
///
/// All use MTU 1500, uniform jitter and 14 bytes of overhead.
pub fn profile_by_name(name: &str) -> Result<LinkProfile, ProfileError> {
    let spec = match name {
        "lan" => DirectionSpec {
            delay_ns: MS / 4,
            rate_bps: Some(10_000 * MBIT),
            // About 12 ms of queue at 10 Gbit/s: a switch-sized buffer.
            limit_packets: 10_000,
            ..DirectionSpec::default()
        },
        "regional-wan" => DirectionSpec {
            delay_ns: 15 * MS,
            jitter_ns: 2 * MS,
            loss: LossModel::Random { probability: 0.001 },
            rate_bps: Some(100 * MBIT),
            limit_packets: 1000,
            ..DirectionSpec::default()
        },
        "continental" => DirectionSpec {
            delay_ns: 40 * MS,
            jitter_ns: 4 * MS,
            loss: LossModel::Random { probability: 0.001 },
            rate_bps: Some(1000 * MBIT),
            // 44 ms at line rate holds ~3600 packets; 10000 leaves ~77 ms of queue and gives
            // the same 121 ms of buffer time as regional-wan's 1000 packets at 100 Mbit/s.
            limit_packets: 10_000,
            ..DirectionSpec::default()
        },
        "lossy-mobile" => DirectionSpec {
            delay_ns: 35 * MS,
            jitter_ns: 15 * MS,
            // Classic Gilbert: bad state loses everything, mean loss p / (p + r) = 2 %,
            // mean burst 1 / r ~ 2 packets.
            loss: LossModel::GilbertElliott {
                p: 0.01,
                r: 0.49,
                one_minus_h: 1.0,
                one_minus_k: 0.0,
            },
            rate_bps: Some(20 * MBIT),
            limit_packets: 500,
            ..DirectionSpec::default()
        },
        "satellite" => DirectionSpec {
            delay_ns: 300 * MS,
            loss: LossModel::Random { probability: 0.005 },
            rate_bps: Some(50 * MBIT),
            // 300 ms at line rate holds ~1240 packets; 2500 adds ~300 ms of queue.
            limit_packets: 2500,
            ..DirectionSpec::default()
        },
        _ => {
            return Err(ProfileError::UnknownProfile {
                name: name.to_string(),
                known: PROFILE_NAMES.join(", "),
            });
        }
    };
    Ok(LinkProfile::symmetric(Some(name), 1500, spec))
}

impl LinkProfile {
    /// The same spec in both directions.
    pub fn symmetric(name: Option<&str>, mtu: u32, spec: DirectionSpec) -> Self {
        LinkProfile {
            name: name.map(str::to_string),
            mtu,
            client_to_server: spec.clone(),
            server_to_client: spec,
            granularity: Granularity::Packet,
        }
    }

    /// The spec for one direction.
    pub fn direction(&self, direction: Direction) -> &DirectionSpec {
        match direction {
            Direction::ClientToServer => &self.client_to_server,
            Direction::ServerToClient => &self.server_to_client,
        }
    }

    /// Mutable access to one direction's spec.
    pub fn direction_mut(&mut self, direction: Direction) -> &mut DirectionSpec {
        match direction {
            Direction::ClientToServer => &mut self.client_to_server,
            Direction::ServerToClient => &mut self.server_to_client,
        }
    }

    /// A copy with overrides applied: `both` first, then the per-direction ones.
    pub fn with_overrides(
        &self,
        both: &DirectionOverrides,
        client_to_server: &DirectionOverrides,
        server_to_client: &DirectionOverrides,
    ) -> LinkProfile {
        let mut out = self.clone();
        out.client_to_server.apply(both);
        out.client_to_server.apply(client_to_server);
        out.server_to_client.apply(both);
        out.server_to_client.apply(server_to_client);
        out
    }

    /// A copy with `f` applied to both directions (netcheck uses it to switch loss off etc.).
    pub fn map_directions(&self, mut f: impl FnMut(&mut DirectionSpec)) -> LinkProfile {
        let mut out = self.clone();
        f(&mut out.client_to_server);
        f(&mut out.server_to_client);
        out
    }

    /// Checks the MTU and both directions.
    pub fn validate(&self) -> Result<(), ProfileError> {
        if !(576..=65_535).contains(&self.mtu) {
            return Err(ProfileError::OutOfRange {
                field: "mtu".to_string(),
                value: self.mtu.to_string(),
                expected: "576..=65535 bytes (IPv4 needs at least 576)".to_string(),
            });
        }
        self.client_to_server.validate("client_to_server")?;
        self.server_to_client.validate("server_to_client")
    }

    /// Display name: the profile name or `custom`.
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or("custom")
    }
}

impl fmt::Display for LinkProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (mtu {}): ", self.display_name(), self.mtu)?;
        if self.client_to_server == self.server_to_client {
            write!(f, "each way {}", self.client_to_server)
        } else {
            write!(
                f,
                "client->server {}; server->client {}",
                self.client_to_server, self.server_to_client
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_profile_validates() {
        for name in PROFILE_NAMES {
            let p = profile_by_name(name).unwrap();
            p.validate().unwrap();
            assert_eq!(p.name.as_deref(), Some(name));
        }
    }

    #[test]
    fn unknown_profile_lists_known_names() {
        let err = profile_by_name("moon").unwrap_err().to_string();
        assert!(err.contains("moon"), "{err}");
        for name in PROFILE_NAMES {
            assert!(err.contains(name), "{err}");
        }
    }

    #[test]
    fn regional_wan_is_the_published_profile() {
        let p = profile_by_name("regional-wan").unwrap();
        assert_eq!(
            p.client_to_server.to_string(),
            "delay 15ms 2ms loss 0.1% rate 100Mbit limit 1000"
        );
        assert_eq!(p.mtu, 1500);
        // 1514 wire bytes at 100 Mbit/s.
        assert_eq!(p.client_to_server.serialization_ns(1500), Some(121_120));
    }

    #[test]
    fn lossy_mobile_loses_about_two_percent() {
        let p = profile_by_name("lossy-mobile").unwrap();
        assert!((p.client_to_server.loss.mean_loss() - 0.02).abs() < 1e-12);
    }

    #[test]
    fn serde_round_trip_uses_snake_case_and_defaults() {
        let p = profile_by_name("lossy-mobile").unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.contains("\"model\":\"gilbert_elliott\""), "{json}");
        assert!(json.contains("\"client_to_server\""), "{json}");
        let back: LinkProfile = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p);

        let minimal: DirectionSpec = serde_json::from_str(r#"{"delay_ns": 5}"#).unwrap();
        assert_eq!(minimal.limit_packets, 1000);
        assert_eq!(minimal.overhead_bytes, 14);
        assert!(serde_json::from_str::<DirectionSpec>(r#"{"delay_ns": 5, "dealy": 1}"#).is_err());
    }

    #[test]
    fn validation_names_the_field() {
        let mut p = profile_by_name("regional-wan").unwrap();
        p.server_to_client.loss = LossModel::Random { probability: 1.5 };
        let err = p.validate().unwrap_err().to_string();
        assert!(err.contains("server_to_client.loss.probability"), "{err}");

        let mut p = profile_by_name("regional-wan").unwrap();
        p.client_to_server.limit_packets = 0;
        assert!(
            p.validate()
                .unwrap_err()
                .to_string()
                .contains("limit_packets")
        );

        let spec = DirectionSpec {
            reorder: Some(Reorder {
                probability: 0.1,
                gap: 1,
            }),
            ..DirectionSpec::default()
        };
        assert!(matches!(
            spec.validate("x"),
            Err(ProfileError::ReorderWithoutDelay { .. })
        ));

        let p = LinkProfile::symmetric(None, 100, DirectionSpec::default());
        assert!(p.validate().unwrap_err().to_string().contains("mtu"));
    }

    #[test]
    fn netem_args_match_tc_syntax() {
        let p = profile_by_name("regional-wan").unwrap();
        assert_eq!(
            p.client_to_server.netem_args(-14).join(" "),
            "limit 1000 delay 15000us 2000us loss random 0.1% rate 100000000bit 0"
        );
        let m = profile_by_name("lossy-mobile").unwrap();
        assert!(
            m.client_to_server
                .netem_args(0)
                .join(" ")
                .contains("loss gemodel 1% 49% 100% 0%")
        );
    }

    #[test]
    fn overrides_apply_in_order() {
        let p = profile_by_name("regional-wan").unwrap();
        let both = DirectionOverrides {
            delay_ns: Some(5 * MS),
            ..Default::default()
        };
        let s2c = DirectionOverrides {
            rate_bps: Some(0),
            ..Default::default()
        };
        let q = p.with_overrides(&both, &DirectionOverrides::default(), &s2c);
        assert_eq!(q.client_to_server.delay_ns, 5 * MS);
        assert_eq!(q.server_to_client.delay_ns, 5 * MS);
        assert_eq!(q.client_to_server.rate_bps, Some(100 * MBIT));
        assert_eq!(q.server_to_client.rate_bps, None);
    }

    #[test]
    fn gilbert_elliott_variance_exceeds_binomial() {
        let ge = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.49,
            one_minus_h: 1.0,
            one_minus_k: 0.0,
        };
        let m = ge.mean_loss();
        assert!(ge.asymptotic_variance() > m * (1.0 - m));
        let random = LossModel::Random { probability: 0.02 };
        assert!((random.asymptotic_variance() - 0.02 * 0.98).abs() < 1e-15);
    }
}
