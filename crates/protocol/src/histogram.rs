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

/// Bytes of the V2 header inside the deflated part: cookie, payload length, normalizing index
/// offset and significant digits (4 bytes each), lowest and highest trackable values (8 each),
/// the integer-to-double ratio (an IEEE double, 8).
const V2_HEADER: usize = 40;
/// Longest encoding of one count in the payload (ZigZag LEB128-64b9B).
const MAX_COUNT_BYTES: u64 = 9;

/// Decodes a base64 HdrHistogram V2 compressed encoding. A wrong cookie (outside, or of the
/// deflated payload) is named with the expected and the received value. What it inflates to is
/// bounded before it is inflated: a payload longer than its histogram's counts can take, or
/// bounds with more counts than the protocol's histogram, are refused (see [`inflate_bounded`]).
pub fn decode(text: &str) -> Result<Histogram<u64>, HistogramError> {
    let bytes = STANDARD.decode(text.trim())?;
    let v2 = inflate_bounded(&bytes)?;
    Deserializer::new()
        .deserialize(&mut v2.as_slice())
        .map_err(|e| HistogramError::Decode(format!("{e:?}")))
}

/// The deflated V2 encoding inside `bytes` (a V2 compressed encoding), inflated no further than
/// its header allows. The library inflated whatever the stream held and allocated the payload
/// length its header declared (up to 4 GiB) before reading it: a line under 1 MiB could make
/// the controller allocate gigabytes. Here the 40-byte header is inflated first; its bounds
/// give the number of counts (at most [`max_counts`], the protocol's histogram's), each of at
/// most 9 bytes, and a declared payload longer than that is refused before anything more is
/// inflated; then exactly the declared payload is inflated, never more.
fn inflate_bounded(bytes: &[u8]) -> Result<Vec<u8>, HistogramError> {
    let fail = |text: String| Err(HistogramError::Decode(text));
    check_outer_cookie(bytes)?;
    let Some(declared) = bytes.get(4..8).map(|b| be_u32(b) as usize) else {
        return fail(format!(
            "{} bytes, too short for the compressed header (cookie and deflated length: 8 bytes)",
            bytes.len()
        ));
    };
    let zlib = &bytes[8..];
    if declared > zlib.len() {
        return fail(format!(
            "the compressed header declares {declared} deflated bytes but {} follow",
            zlib.len()
        ));
    }
    let mut inflater = flate2::read::ZlibDecoder::new(&zlib[..declared]);
    let mut v2 = vec![0u8; V2_HEADER];
    inflater.read_exact(&mut v2).map_err(|e| {
        HistogramError::Decode(format!(
            "the deflated part does not hold the {V2_HEADER}-byte V2 header: {e}"
        ))
    })?;
    let payload = payload_bound(&v2)?;
    v2.reserve_exact(payload);
    let read = inflater
        .take(payload as u64)
        .read_to_end(&mut v2)
        .map_err(|e| HistogramError::Decode(format!("inflating the V2 payload: {e}")))?;
    if read < payload {
        return fail(format!(
            "the V2 payload ends after {read} of the {payload} bytes its header declares"
        ));
    }
    Ok(v2)
}

/// The payload length a V2 header declares, checked against what its bounds allow.
fn payload_bound(header: &[u8]) -> Result<usize, HistogramError> {
    let fail = |text: String| Err(HistogramError::Decode(text));
    let cookie = be_u32(&header[0..4]);
    if cookie != PAYLOAD_COOKIE {
        return fail(format!(
            "the deflated payload's cookie {cookie:#010x} received, {PAYLOAD_COOKIE:#010x} expected (V2 encoding)"
        ));
    }
    let declared = u64::from(be_u32(&header[4..8]));
    let digits = be_u32(&header[12..16]);
    let (low, high) = (be_u64(&header[16..24]), be_u64(&header[24..32]));
    let Some(counts) = counts_len(low, high, digits) else {
        return fail(format!(
            "invalid bounds in the V2 header: lowest {low}, highest {high}, {digits} significant digits (expected lowest >= 1, highest >= 2 x lowest, at most 5 digits)"
        ));
    };
    let most = max_counts();
    if counts > most {
        return fail(format!(
            "the V2 header's bounds (lowest {low}, highest {high}, {digits} significant digits) make {counts} counts, more than the protocol's histogram ({LOWEST_NS} to {HIGHEST_NS} ns, {SIGNIFICANT_DIGITS} digits: {most} counts)"
        ));
    }
    let bound = counts * MAX_COUNT_BYTES;
    if declared > bound {
        return fail(format!(
            "the V2 header declares a payload of {declared} bytes, more than its {counts} counts can take ({bound} bytes at {MAX_COUNT_BYTES} per count); refused before inflating it"
        ));
    }
    Ok(declared as usize)
}

/// How many counts a histogram with these bounds has (HdrHistogram's bucket structure, as
/// `Histogram::new_with_bounds` sizes it), without allocating them; `None` for bounds it
/// refuses.
fn counts_len(low: u64, high: u64, digits: u32) -> Option<u64> {
    if !(1..=u64::MAX / 2).contains(&low) || high < 2 * low || digits > 5 {
        return None;
    }
    // Single-unit resolution up to 2 x 10^digits, in a power-of-two number of sub-buckets;
    // computed in floating point as the library computes it (for a `low` just under a power of
    // two it rounds up).
    let largest = 2 * 10_u32.pow(digits);
    let sub_bucket_magnitude = f64::from(largest).log2().ceil() as u32;
    let unit_magnitude = (low as f64).log2().floor() as u32;
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    let sub_bucket_count = 1_u64 << sub_bucket_magnitude;
    let mut smallest_untrackable = sub_bucket_count << unit_magnitude;
    let mut buckets = 1;
    while smallest_untrackable <= high {
        if smallest_untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (sub_bucket_count / 2))
}

/// The counts of the protocol's histogram ([`LOWEST_NS`], [`HIGHEST_NS`],
/// [`SIGNIFICANT_DIGITS`]): 33,792. No peer's histogram may have more.
fn max_counts() -> u64 {
    counts_len(LOWEST_NS, HIGHEST_NS, u32::from(SIGNIFICANT_DIGITS))
        .unwrap_or_else(|| unreachable!("constant histogram bounds are valid"))
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be_u64(b: &[u8]) -> u64 {
    u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// The outer cookie, checked before anything is inflated (the library's error names neither
/// value).
fn check_outer_cookie(bytes: &[u8]) -> Result<(), HistogramError> {
    match bytes.get(..4).map(be_u32) {
        None => Err(HistogramError::Decode(format!(
            "{} bytes, too short for the cookie {COMPRESSED_COOKIE:#010x}",
            bytes.len()
        ))),
        Some(COMPRESSED_COOKIE) => Ok(()),
        Some(other) => Err(HistogramError::Decode(format!(
            "cookie {other:#010x} received, {COMPRESSED_COOKIE:#010x} expected (V2 compressed: the base 0x1c849304 with the word-size bits 0x10)"
        ))),
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

    /// A V2 compressed encoding of `header` (40 bytes) then `zeros` zero bytes, deflated in
    /// chunks (never held whole), in base64.
    pub(super) fn hostile(header: &[u8], zeros: usize) -> String {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        std::io::Write::write_all(&mut z, header).unwrap();
        let chunk = vec![0u8; 1 << 20];
        let mut left = zeros;
        while left > 0 {
            let n = left.min(chunk.len());
            std::io::Write::write_all(&mut z, &chunk[..n]).unwrap();
            left -= n;
        }
        let zlib = z.finish().unwrap();
        let mut bytes = COMPRESSED_COOKIE.to_be_bytes().to_vec();
        bytes.extend_from_slice(&(zlib.len() as u32).to_be_bytes());
        bytes.extend_from_slice(&zlib);
        STANDARD.encode(bytes)
    }

    /// A V2 header declaring `payload` bytes of counts for these bounds.
    pub(super) fn header(payload: u32, low: u64, high: u64, digits: u32) -> Vec<u8> {
        let mut h = PAYLOAD_COOKIE.to_be_bytes().to_vec();
        h.extend_from_slice(&payload.to_be_bytes());
        h.extend_from_slice(&0u32.to_be_bytes());
        h.extend_from_slice(&digits.to_be_bytes());
        h.extend_from_slice(&low.to_be_bytes());
        h.extend_from_slice(&high.to_be_bytes());
        h.extend_from_slice(&1.0f64.to_be_bytes());
        h
    }

    #[test]
    fn counts_are_sized_as_the_library_sizes_them_without_allocating() {
        assert_eq!(max_counts(), 33_792);
        let lows = [1, 2, 3, 1000, 1 << 20, u64::MAX / 4];
        let highs = [2, 7, 2048, 3_600_000_000_000, u64::MAX / 2, u64::MAX];
        for low in lows {
            for high in highs {
                for digits in 0..=6u32 {
                    let ours = counts_len(low, high, digits);
                    // Only bounds of modest size are built, to compare.
                    if ours.is_some_and(|c| c > 1 << 20) {
                        continue;
                    }
                    let library = Histogram::<u8>::new_with_bounds(low, high, digits as u8)
                        .ok()
                        .map(|h| h.distinct_values() as u64);
                    assert_eq!(ours, library, "low {low}, high {high}, {digits} digits");
                }
            }
        }
    }

    #[test]
    fn a_payload_longer_than_its_counts_allow_is_refused_before_it_is_inflated() {
        // Before the fix the library allocated the declared length and inflated into it:
        // 256 MiB of zeros from a 350 KB line (here, and up to 4 GiB from a few bytes).
        let started = std::time::Instant::now();
        let text = hostile(&header(256 << 20, 1, HIGHEST_NS, 3), 256 << 20);
        assert!(text.len() < 1 << 20, "{} bytes", text.len());
        let made = started.elapsed();
        let err = decode(&text).unwrap_err().to_string();
        assert!(
            err.contains("declares a payload of 268435456 bytes, more than its 33792 counts can take (304128 bytes"),
            "{err}"
        );
        assert!(started.elapsed() - made < std::time::Duration::from_millis(100));
        let err = decode(&hostile(&header(u32::MAX, 1, HIGHEST_NS, 3), 16))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("declares a payload of 4294967295 bytes"),
            "{err}"
        );
    }

    #[test]
    fn bounds_with_more_counts_than_the_protocol_are_refused_and_bad_ones_named() {
        // 5 digits up to u64::MAX: 6 million counts, a 48 MiB array before the fix.
        let err = decode(&hostile(&header(100, 1, u64::MAX, 5), 100))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("make 6291456 counts, more than the protocol's histogram (1 to 3600000000000 ns, 3 digits: 33792 counts)"),
            "{err}"
        );
        let err = decode(&hostile(&header(0, 0, 10, 3), 0))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("invalid bounds in the V2 header: lowest 0"),
            "{err}"
        );
        // Fewer counts than the protocol's are fine (a peer may track less).
        let mut small = Histogram::<u64>::new_with_bounds(1, 2048, 2).unwrap();
        small.record(7).unwrap();
        assert_eq!(decode(&encode(&small).unwrap()).unwrap(), small);
    }

    #[test]
    fn a_payload_shorter_than_declared_or_a_cut_stream_is_refused() {
        let err = decode(&hostile(&header(100, 1, HIGHEST_NS, 3), 10))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("the V2 payload ends after 10 of the 100 bytes its header declares"),
            "{err}"
        );
        let mut bytes = STANDARD
            .decode(encode(&new_latency_histogram()).unwrap())
            .unwrap();
        bytes.truncate(bytes.len() - 4);
        let err = decode(&STANDARD.encode(&bytes)).unwrap_err().to_string();
        assert!(err.contains("deflated bytes but"), "{err}");
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(matches!(decode("!!!"), Err(HistogramError::Base64(_))));
        assert!(matches!(decode("AAAA"), Err(HistogramError::Decode(_))));
    }
}
