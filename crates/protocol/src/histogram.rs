//! Latency histograms on the wire: HdrHistogram V2 compressed (DEFLATE), base64, nanoseconds.
//!
//! Every peer language has an HdrHistogram with this encoding (Java's
//! `encodeIntoCompressedByteBuffer`, Go's `Encode(V2CompressedEncodingCookieBase)`, JavaScript's
//! `encodeIntoCompressedBase64`), so the controller can merge and read any peer's histogram.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};

/// Smallest value recorded: 1 ns.
pub const LOWEST_NS: u64 = 1;
/// Largest value tracked: one hour; larger values are clamped to it.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits: 3, about 0.1% relative precision.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Why a histogram could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// Not valid base64.
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// Not a valid HdrHistogram V2 (compressed) encoding.
    #[error("histogram is not a valid HdrHistogram V2 compressed encoding: {0}")]
    Decode(String),
    /// Encoding failed.
    #[error("histogram could not be encoded: {0}")]
    Encode(String),
}

/// A new empty latency histogram with the protocol's bounds and precision.
pub fn new_latency_histogram() -> Histogram<u64> {
    // The bounds are constants known to be valid.
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS)
        .unwrap_or_else(|_| unreachable!("constant histogram bounds are valid"))
}

/// Encodes as HdrHistogram V2 compressed, base64 (standard alphabet, padded).
pub fn encode(histogram: &Histogram<u64>) -> Result<String, HistogramError> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(histogram, &mut bytes)
        .map_err(|e| HistogramError::Encode(format!("{e:?}")))?;
    Ok(STANDARD.encode(bytes))
}

/// Decodes a base64 HdrHistogram V2 (compressed or not).
pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = STANDARD.decode(text.trim())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::Decode(format!("{e:?}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_counts() {
        let mut h = new_latency_histogram();
        for v in 1..=10_000u64 {
            h.record(v * 1_000).unwrap();
        }
        let text = encode(&h).unwrap();
        let back = decode(&text).unwrap();
        assert_eq!(back.len(), 10_000);
        assert_eq!(back, h);
    }

    #[test]
    fn decodes_the_java_reference_cookie() {
        // V2 compressed encoding starts with cookie 0x1c849304 -> base64 "HISTFAAA..."
        let text = encode(&new_latency_histogram()).unwrap();
        assert!(text.starts_with("HISTFAAA"), "{text}");
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(matches!(decode("!!!"), Err(HistogramError::Base64(_))));
        assert!(matches!(decode("AAAA"), Err(HistogramError::Decode(_))));
    }
}
