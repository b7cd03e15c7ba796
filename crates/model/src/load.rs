//! Load models: how a client offers work (the payload kinds are the protocol's [`Payload`]).
//!
//! In a campaign, `workload.load` lists models, each a name or a table:
//!
//! ```toml
//! load = [
//!   "closed",                                        # concurrency lanes, one op in flight each
//!   { model = "window", in_flight = 100 },           # 100 ops outstanding on one connection
//!   { model = "backpressure", max_in_flight = 100000 },
//!   { model = "send-saturation", streams = 8, settle = "200ms" },  # client_stream or send
//!   { model = "open", rate = 1000, arrival = "poisson" },          # ops/s, from intended start
//! ]
//! ```

use crate::duration;
use rpcarena_protocol::event::load;
pub use rpcarena_protocol::workload::Payload;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::time::Duration;

/// A load model with its parameters.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
pub enum LoadSpec {
    /// `concurrency` lanes, each with one operation in flight.
    Closed,
    /// `in_flight` operations always outstanding on one connection.
    Window {
        /// Operations outstanding.
        #[serde(default = "default_in_flight")]
        in_flight: u32,
    },
    /// Submit until the transport pushes back; report the depth reached.
    Backpressure {
        /// Safety cap on operations in flight.
        #[serde(default = "default_max_in_flight")]
        max_in_flight: u32,
    },
    /// One-way messages on `streams` client streams; receive counts after a settle window.
    SendSaturation {
        /// Streams kept open.
        #[serde(default = "default_streams")]
        streams: u32,
        /// Quiet window after the deadline for the server's counts to arrive.
        #[serde(default = "default_settle", with = "duration")]
        settle: Duration,
    },
    /// Operations at a target rate, latency from each intended start time.
    Open {
        /// Target operations per second.
        rate: f64,
        /// Constant spacing or Poisson arrivals.
        #[serde(default)]
        arrival: Arrival,
    },
}

fn default_in_flight() -> u32 {
    100
}
fn default_max_in_flight() -> u32 {
    100_000
}
fn default_streams() -> u32 {
    8
}
fn default_settle() -> Duration {
    Duration::from_millis(200)
}

/// Arrival process of the open model.
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Arrival {
    /// Evenly spaced: the i-th operation is due at i / rate.
    #[default]
    Constant,
    /// Exponential gaps with mean 1 / rate (seeded).
    Poisson,
}

impl Arrival {
    /// The name used in arguments and keys.
    pub fn as_str(&self) -> &'static str {
        match self {
            Arrival::Constant => "constant",
            Arrival::Poisson => "poisson",
        }
    }
}

impl LoadSpec {
    /// The model's name, as peers advertise it in `load_models`.
    pub fn model(&self) -> &'static str {
        match self {
            LoadSpec::Closed => load::CLOSED,
            LoadSpec::Window { .. } => load::WINDOW,
            LoadSpec::Backpressure { .. } => load::BACKPRESSURE,
            LoadSpec::SendSaturation { .. } => load::SEND_SATURATION,
            LoadSpec::Open { .. } => load::OPEN,
        }
    }

    /// The concurrency this model fixes itself (window: in flight; send-saturation: streams),
    /// replacing `workload.concurrency`.
    pub fn fixed_concurrency(&self) -> Option<u32> {
        match self {
            LoadSpec::Window { in_flight } => Some(*in_flight),
            LoadSpec::SendSaturation { streams, .. } => Some(*streams),
            _ => None,
        }
    }

    /// Whether every admitted operation is a whole RPC of the shape (all but send-saturation).
    pub fn whole_operations(&self) -> bool {
        !matches!(self, LoadSpec::SendSaturation { .. })
    }

    /// Problems with the parameters, with paths under `path`.
    pub fn validate(&self, path: &str) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        match self {
            LoadSpec::Closed => {}
            LoadSpec::Window { in_flight } if !(1..=100_000).contains(in_flight) => {
                problems.push((
                    format!("{path}.in_flight"),
                    format!("expected 1 to 100000, got {in_flight}"),
                ));
            }
            LoadSpec::Backpressure { max_in_flight }
                if !(1..=1_000_000).contains(max_in_flight) =>
            {
                problems.push((
                    format!("{path}.max_in_flight"),
                    format!("expected 1 to 1000000, got {max_in_flight}"),
                ));
            }
            LoadSpec::SendSaturation { streams, .. } if !(1..=10_000).contains(streams) => {
                problems.push((
                    format!("{path}.streams"),
                    format!("expected 1 to 10000, got {streams}"),
                ));
            }
            LoadSpec::Open { rate, .. }
                if !(rate.is_finite() && *rate > 0.0 && *rate <= 10_000_000.0) =>
            {
                problems.push((
                    format!("{path}.rate"),
                    format!(
                        "expected operations per second above 0 and at most 10000000, got {rate}"
                    ),
                ));
            }
            _ => {}
        }
        problems
    }
}

/// Rates print without a trailing `.0` when whole: `1000`, `2.5`.
pub(crate) fn format_rate(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{}", rate as u64)
    } else {
        format!("{rate}")
    }
}

impl fmt::Display for LoadSpec {
    /// The short form used in configuration keys and sample ids: `closed`, `window-100`,
    /// `backpressure-100000`, `send-saturation-8`, `open-1000-poisson`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadSpec::Closed => f.write_str("closed"),
            LoadSpec::Window { in_flight } => write!(f, "window-{in_flight}"),
            LoadSpec::Backpressure { max_in_flight } => write!(f, "backpressure-{max_in_flight}"),
            LoadSpec::SendSaturation { streams, .. } => write!(f, "send-saturation-{streams}"),
            LoadSpec::Open { rate, arrival } => {
                write!(f, "open-{}-{}", format_rate(*rate), arrival.as_str())
            }
        }
    }
}

/// [`deserialize_loads`] for an optional list (a cell's own `load`).
pub(crate) fn deserialize_some_loads<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Vec<LoadSpec>>, D::Error> {
    deserialize_loads(d).map(Some)
}

/// Accepts a bare model name (parameters at their defaults) or a table with `model`.
pub(crate) fn deserialize_loads<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<LoadSpec>, D::Error> {
    struct Item(LoadSpec);
    impl<'de> Deserialize<'de> for Item {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Item, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = LoadSpec;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str(
                        "a load model name (closed, window, backpressure, send-saturation) or a table such as { model = \"open\", rate = 1000 }",
                    )
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<LoadSpec, E> {
                    match v {
                        "closed" => Ok(LoadSpec::Closed),
                        "window" => Ok(LoadSpec::Window {
                            in_flight: default_in_flight(),
                        }),
                        "backpressure" => Ok(LoadSpec::Backpressure {
                            max_in_flight: default_max_in_flight(),
                        }),
                        "send-saturation" => Ok(LoadSpec::SendSaturation {
                            streams: default_streams(),
                            settle: default_settle(),
                        }),
                        "open" => Err(E::custom(
                            "the open model needs a rate: write { model = \"open\", rate = 1000 }",
                        )),
                        other => Err(E::custom(format!(
                            "unknown load model {other:?}; expected closed, window, backpressure, send-saturation or open"
                        ))),
                    }
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LoadSpec, A::Error> {
                    LoadSpec::deserialize(de::value::MapAccessDeserializer::new(map))
                }
            }
            d.deserialize_any(V).map(Item)
        }
    }
    Ok(Vec::<Item>::deserialize(d)?
        .into_iter()
        .map(|i| i.0)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct W {
        #[serde(deserialize_with = "deserialize_loads")]
        load: Vec<LoadSpec>,
    }

    #[test]
    fn names_and_tables_parse() {
        let w: W = toml::from_str(
            r#"load = ["closed", "window", { model = "open", rate = 1000, arrival = "poisson" }, { model = "send-saturation", streams = 4, settle = "300ms" }]"#,
        )
        .unwrap();
        assert_eq!(w.load[0], LoadSpec::Closed);
        assert_eq!(w.load[1], LoadSpec::Window { in_flight: 100 });
        assert_eq!(w.load[2].to_string(), "open-1000-poisson");
        assert_eq!(
            w.load[3],
            LoadSpec::SendSaturation {
                streams: 4,
                settle: Duration::from_millis(300)
            }
        );
    }

    #[test]
    fn bad_models_explain_themselves() {
        let err = toml::from_str::<W>(r#"load = ["open"]"#)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("needs a rate"), "{err}");
        let err = toml::from_str::<W>(r#"load = ["turbo"]"#)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("unknown load model \"turbo\""), "{err}");
        let err = toml::from_str::<W>(r#"load = [{ model = "open", rate = 5, burst = 3 }]"#)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("burst"), "{err}");
        let bad = LoadSpec::Open {
            rate: 0.0,
            arrival: Arrival::Constant,
        };
        assert_eq!(
            bad.validate("workload.load[0]")[0].0,
            "workload.load[0].rate"
        );
    }
}
