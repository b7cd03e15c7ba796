//! Durations in campaign files are human strings: `"500ms"`, `"2s"`, `"1m 30s"`.

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// Parses a human duration with an error that shows an example.
pub fn parse(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("expected a duration such as \"500ms\" or \"2s\", got {text:?} ({e})"))
}

/// Formats a duration the way campaign files write it.
pub fn format(duration: &Duration) -> String {
    humantime::format_duration(*duration).to_string()
}

/// Serde: serializes as a human string.
pub fn serialize<S: Serializer>(value: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format(value))
}

/// Serde: deserializes from a human string.
pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(deserializer)?;
    parse(&text).map_err(serde::de::Error::custom)
}

/// Serde for an optional duration (`Option<Duration>`, absent when `None`).
pub mod option {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    /// Serializes `Some` as a human string (pair with `skip_serializing_if = "Option::is_none"`).
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(d) => super::serialize(d, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Deserializes a human string into `Some`.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(deserializer)?;
        super::parse(&text)
            .map(Some)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_formats() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("1m 30s"), Ok(Duration::from_secs(90)));
        assert_eq!(format(&Duration::from_millis(1500)), "1s 500ms");
        assert!(parse("5").unwrap_err().contains("\"500ms\""));
    }
}
