//! Latency histograms on the wire: HdrHistogram V2 compressed (DEFLATE), base64, nanoseconds.
//!
//! Every peer language has an HdrHistogram with this encoding (Java's
//! `encodeIntoCompressedByteBuffer`, Go's `Encode(V2CompressedEncodingCookieBase)`, JavaScript's
//! `encodeIntoCompressedBase64`), so the controller can merge and read any peer's histogram.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use std::io::Read;

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

/// The cookie of the V2 compressed encoding on the wire (the base `0x1c849304` with the word-size
/// bits `0x10`, as every HdrHistogram library writes it).
pub const COMPRESSED_COOKIE: u32 = 0x1c84_9314;
/// The cookie of the V2 payload inside the deflated part.
pub const PAYLOAD_COOKIE: u32 = 0x1c84_9313;

/// Decodes a base64 HdrHistogram V2 compressed encoding. A wrong cookie (outside, or of the
/// deflated payload) is named with the expected and the received value.
pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = STANDARD.decode(text.trim())?;
    check_cookies(&bytes)?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| HistogramError::Decode(format!("{e:?}")))
}

/// The two cookies, checked before the library decodes (its error names neither value).
fn check_cookies(bytes: &[u8]) -> Result<(), HistogramError> {
    let cookie = |b: &[u8]| {
        b.get(..4)
            .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
    };
    match cookie(bytes) {
        None => {
            return Err(HistogramError::Decode(format!(
                "{} bytes, too short for the cookie {COMPRESSED_COOKIE:#010x}",
                bytes.len()
            )));
        }
        Some(COMPRESSED_COOKIE) => {}
        Some(other) => {
            return Err(HistogramError::Decode(format!(
                "cookie {other:#010x} received, {COMPRESSED_COOKIE:#010x} expected (V2 compressed: the base 0x1c849304 with the word-size bits 0x10)"
            )));
        }
    }
    // The compressed header: cookie, the deflated length, then the zlib stream.
    let mut head = [0u8; 4];
    let inflated = bytes
        .get(8..)
        .map(|zlib| flate2::read::ZlibDecoder::new(zlib).read_exact(&mut head));
    if let Some(Ok(())) = inflated
        && u32::from_be_bytes(head) != PAYLOAD_COOKIE
    {
        return Err(HistogramError::Decode(format!(
            "the deflated payload's cookie {:#010x} received, {PAYLOAD_COOKIE:#010x} expected (V2 encoding)",
            u32::from_be_bytes(head)
        )));
    }
    Ok(())
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
        // V2 compressed encoding starts with cookie 0x1c849314 -> base64 "HISTFAAA..."
        let text = encode(&new_latency_histogram()).unwrap();
        assert!(text.starts_with("HISTFAAA"), "{text}");
    }

    #[test]
    fn a_wrong_cookie_is_named_with_both_values() {
        let good = STANDARD
            .decode(encode(&new_latency_histogram()).unwrap())
            .unwrap();
        // the cookie base, as the 1.0 page wrongly gave it
        let mut bad = good.clone();
        bad[..4].copy_from_slice(&0x1c84_9304u32.to_be_bytes());
        let err = decode(&STANDARD.encode(&bad)).unwrap_err().to_string();
        assert!(
            err.contains("cookie 0x1c849304 received, 0x1c849314 expected"),
            "{err}"
        );
        // a wrong cookie inside the deflated payload
        let mut inner = Vec::new();
        let payload = {
            let mut z = flate2::read::ZlibDecoder::new(&good[8..]);
            let mut p = Vec::new();
            z.read_to_end(&mut p).unwrap();
            p
        };
        let mut payload = payload;
        payload[..4].copy_from_slice(&0x1c84_9312u32.to_be_bytes());
        let mut enc = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut enc, &payload).unwrap();
        let zlib = enc.finish().unwrap();
        inner.extend_from_slice(&COMPRESSED_COOKIE.to_be_bytes());
        inner.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
        inner.extend_from_slice(&zlib);
        let err = decode(&STANDARD.encode(&inner)).unwrap_err().to_string();
        assert!(
            err.contains("cookie 0x1c849312 received, 0x1c849313 expected"),
            "{err}"
        );
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(matches!(decode("!!!"), Err(HistogramError::Base64(_))));
        assert!(matches!(decode("AAAA"), Err(HistogramError::Decode(_))));
    }
}
