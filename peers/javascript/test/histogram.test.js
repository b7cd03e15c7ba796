import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as hist from '../src/histogram.js';

test('the encoding is HdrHistogram V2 compressed with cookie 0x1c849314 and round-trips', () => {
  const h = hist.latency();
  for (let v = 1; v <= 10_000; v++) hist.record(h, v * 1000);
  hist.record(h, hist.HIGHEST_NS);
  const text = hist.encode(h);
  assert.ok(text.startsWith('HISTFAAA'), text.slice(0, 12));
  assert.equal(Buffer.from(text, 'base64').readUInt32BE(0), 0x1c849314);
  // The header as HdrHistogram's reference writes it (Rust's hdrhistogram refuses anything else).
  const raw = hist.uncompressed(h);
  assert.equal(raw.readUInt32BE(0), 0x1c849313);
  assert.equal(raw.readUInt32BE(8), 0, 'normalizingIndexOffset');
  assert.equal(raw.readUInt32BE(12), 3, 'significant digits');
  assert.equal(raw.readBigUInt64BE(16), 1n, 'lowest');
  assert.equal(raw.readBigUInt64BE(24), 3_600_000_000_000n, 'highest');
  assert.equal(raw.readDoubleBE(32), 1.0, 'integerToDoubleValueConversionRatio');
  const back = hist.decode(text);
  assert.equal(back.totalCount, 10_001);
  assert.equal(back.getValueAtPercentile(50), h.getValueAtPercentile(50));
  assert.ok(back.maxValue >= hist.HIGHEST_NS && back.maxValue <= hist.HIGHEST_NS * 1.001);
  const p50 = back.getValueAtPercentile(50);
  assert.ok(p50 >= 5_000_000 && p50 <= 5_005_000, `${p50}`);
});

test('values outside 1 ns .. 1 h are clamped, and small histograms grow', () => {
  const h = hist.small();
  hist.record(h, 0);
  hist.record(h, 7_200_000_000_000);
  assert.equal(h.totalCount, 2);
  assert.equal(h.minNonZeroValue, 1);
  assert.ok(h.maxValue >= hist.HIGHEST_NS);
  assert.equal(hist.decode(hist.encode(h)).totalCount, 2);
});
