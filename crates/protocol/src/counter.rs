//! 64-bit counters as decimal strings.
//!
//! JSON numbers are doubles in JavaScript, exact only up to 2^53. Counters that may exceed that
//! (operations, messages, bytes, nanoseconds) travel as decimal strings so that every peer
//! language keeps them exact.

use serde::{Deserialize, Deserializer, Serializer};

/// Serializes a `u64` as a decimal string.
pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Deserializes a `u64` from a decimal string (a JSON number is refused: the protocol says string).
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse(&text).map_err(serde::de::Error::custom)
}

/// Parses a decimal counter, with an error that quotes the bad text.
pub fn parse(text: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "expected a decimal string of digits for a 64-bit counter, got {text:?}"
        ));
    }
    text.parse::<u64>()
        .map_err(|_| format!("counter {text:?} does not fit in 64 bits"))
}

/// One counter as a value of its own, for lists of counters (`armed.warmup_segments`): a
/// decimal string on the wire, a number in the artifacts (`From<Counter> for u64`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counter(pub u64);

impl serde::Serialize for Counter {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serialize(&self.0, serializer)
    }
}

impl<'de> Deserialize<'de> for Counter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Counter, D::Error> {
        deserialize(deserializer).map(Counter)
    }
}

impl From<Counter> for u64 {
    fn from(counter: Counter) -> u64 {
        counter.0
    }
}

/// The same for `Option<u64>`: absent or null means `None`.
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes `Some(v)` as a decimal string and `None` as null.
    pub fn serialize<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => serializer.collect_str(v),
            None => serializer.serialize_none(),
        }
    }

    /// Deserializes an optional decimal string.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<u64>, D::Error> {
        match Option::<String>::deserialize(deserializer)? {
            Some(text) => super::parse(&text)
                .map(Some)
                .map_err(serde::de::Error::custom),
            None => Ok(None),
        }
    }
}

/// The same for maps from a name to a counter.
pub mod map {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    /// Serializes every value as a decimal string.
    pub fn serialize<S: Serializer>(
        value: &BTreeMap<String, u64>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let strings: BTreeMap<&str, String> = value
            .iter()
            .map(|(k, v)| (k.as_str(), v.to_string()))
            .collect();
        strings.serialize(serializer)
    }

    /// Deserializes a map of decimal strings.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<String, u64>, D::Error> {
        let strings = BTreeMap::<String, String>::deserialize(deserializer)?;
        strings
            .into_iter()
            .map(|(k, v)| super::parse(&v).map(|n| (k, n)))
            .collect::<Result<_, _>>()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_values_beyond_2_pow_53() {
        assert_eq!(parse("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse("9007199254740993"), Ok(9_007_199_254_740_993));
    }

    #[test]
    fn refuses_signs_blanks_and_overflow() {
        for bad in ["", "-1", "+1", " 1", "1.0", "1e3", "18446744073709551616"] {
            assert!(parse(bad).is_err(), "{bad:?} should be refused");
        }
    }
}
