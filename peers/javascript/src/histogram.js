// Latency histograms on the wire (docs/peer-protocol.md "sample"): HdrHistogram V2 compressed,
// base64, nanoseconds, lowest discernible value 1, highest trackable value 3,600,000,000,000,
// 3 significant digits, from hdr-histogram-js.
//
// hdr-histogram-js's WebAssembly histograms are used: on this project's VMs a record takes about
// 150 ns there against 1.4 us in its pure-JavaScript 64-bit histogram. Their counts are 64-bit
// integers; values are numbers (exact far beyond one hour in nanoseconds). Per-second interval
// histograms start small and auto-resize, so thousands of them stay cheap.
//
// hdr-histogram-js writes two header fields of the V2 encoding differently from HdrHistogram's
// reference (Java) and from every other implementation: normalizingIndexOffset as 1 instead of
// 0, and integerToDoubleValueConversionRatio as the integer 1 instead of the double 1.0. Rust's
// hdrhistogram (the controller's) refuses both ("UnsupportedFeature"), so `encode` takes the
// library's uncompressed encoding, writes those two fields as the reference does (this library
// uses neither), and compresses it (zlib) and wraps it itself.
import zlib from 'node:zlib';
import hdr from 'hdr-histogram-js';

export const LOWEST_NS = 1;
export const HIGHEST_NS = 3_600_000_000_000;
export const SIGNIFICANT_DIGITS = 3;

let ready = false;

/** Loads the WebAssembly module (once). */
export function init() {
  if (!ready) {
    hdr.initWebAssemblySync();
    ready = true;
  }
}

/** A histogram covering the protocol's whole range (1 ns .. 1 h). */
export function latency() {
  init();
  return hdr.build({
    useWebAssembly: true,
    bitBucketSize: 64,
    autoResize: false,
    lowestDiscernibleValue: LOWEST_NS,
    highestTrackableValue: HIGHEST_NS,
    numberOfSignificantValueDigits: SIGNIFICANT_DIGITS,
  });
}

/** A small auto-resizing histogram (same precision), for intervals and per-stream tallies. */
export function small() {
  init();
  return hdr.build({
    useWebAssembly: true,
    bitBucketSize: 64,
    autoResize: true,
    lowestDiscernibleValue: LOWEST_NS,
    highestTrackableValue: 2048,
    numberOfSignificantValueDigits: SIGNIFICANT_DIGITS,
  });
}

/** Records `ns`, clamped to the protocol's range [1 ns, 1 h]. */
export function record(histogram, ns) {
  histogram.recordValue(ns < LOWEST_NS ? LOWEST_NS : ns > HIGHEST_NS ? HIGHEST_NS : Math.round(ns));
}

/** The cookie of the V2 compressed encoding (V2 compressed base 0x1c849304 with 0x10). */
export const COMPRESSED_COOKIE = 0x1c849314;

/** The V2 uncompressed encoding with the reference's header fields (see above). */
export function uncompressed(histogram) {
  const bytes = Buffer.from(histogram.encode());
  bytes.writeUInt32BE(0, 8); // normalizingIndexOffset
  bytes.writeDoubleBE(1.0, 32); // integerToDoubleValueConversionRatio
  return bytes;
}

/** HdrHistogram V2 compressed encoding, base64 (cookie 0x1c849314, text starts "HISTFAAA"). */
export function encode(histogram) {
  const compressed = zlib.deflateSync(uncompressed(histogram));
  const header = Buffer.allocUnsafe(8);
  header.writeUInt32BE(COMPRESSED_COOKIE, 0);
  header.writeUInt32BE(compressed.length, 4);
  return Buffer.concat([header, compressed]).toString('base64');
}

/** Decodes an encoded histogram (tests and the send-lag percentile). */
export function decode(text) {
  init();
  return hdr.decodeFromCompressedBase64(text, 64, true);
}
