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

/// The latency figures rpcarena reports, in nanoseconds.
///
/// Percentiles are the upper bounds of HdrHistogram's buckets (as in the published reference), so
/// they are at most 0.1% above any value recorded in the bucket.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LatencySummary {
    /// Values recorded.
    pub count: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest value.
    pub max_ns: u64,
}

impl LatencySummary {
    /// Summarizes a histogram.
    pub fn of(histogram: &Histogram<u64>) -> LatencySummary {
        LatencySummary {
            count: histogram.len(),
            mean_ns: histogram.mean(),
            p50_ns: histogram.value_at_quantile(0.50),
            p90_ns: histogram.value_at_quantile(0.90),
            p99_ns: histogram.value_at_quantile(0.99),
            p999_ns: histogram.value_at_quantile(0.999),
            max_ns: histogram.max(),
        }
    }
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
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        let s = LatencySummary::of(&back);
        // p50 of 1..10000 us is 5000 us, reported as its bucket's upper bound (within 0.1%)
        assert!(s.p50_ns >= 5_000_000 && s.p50_ns <= 5_005_000, "{s:?}");
        assert!(s.p99_ns >= 9_900_000 && s.p99_ns <= 9_910_000, "{s:?}");
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
