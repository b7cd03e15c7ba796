import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TransportPoller, TransportTracker, quicReading } from '../src/transport.js';

const q = (sent, lost, cwnd) => ({
  id: 0, packetsSent: sent, bytesSent: sent * 1200, retransmitted: lost, lost, cwndBytes: cwnd, srttNs: 31_000_000, deliveryRateBps: 8_000_000,
});

test('counters are window differences, cwnd min and mean over the polls, decimal strings', () => {
  const t = new TransportTracker('quic', [q(10, 0, 12_000)]);
  t.observe([q(50, 1, 6_000)]);
  assert.deepEqual(t.finish([q(110, 2, 30_000)]), {
    transport: 'quic',
    connections: '1',
    polls: '2',
    packets_sent: '100',
    bytes_sent: '120000',
    retransmitted: '2',
    lost: '2',
    cwnd_bytes: '30000',
    cwnd_min_bytes: '6000',
    cwnd_mean_bytes: '18000',
    srtt_ns: '31000000',
    delivery_rate_bps: '8000000',
  });
});

test('sums over connections; one lacking a counter drops it; new connections count from zero', () => {
  const a = { id: 0, packetsSent: 10, bytesSent: 100, cwndBytes: 1, srttNs: 10 };
  const b = { id: 1, packetsSent: 10, cwndBytes: 3, srttNs: 21 };
  const s = new TransportTracker('quic', [{ id: 0, packetsSent: 4, bytesSent: 40, cwndBytes: 1, srttNs: 10 }]).finish([a, b]);
  assert.equal(s.packets_sent, '16');
  assert.equal(s.bytes_sent, undefined);
  assert.equal(s.cwnd_bytes, '4');
  assert.equal(s.srtt_ns, '15');
  assert.equal(s.lost, undefined);
  assert.ok(Object.values(s).every((v) => typeof v === 'string'));
});

test('no connections at the end still says so, without gauges', () => {
  assert.deepEqual(new TransportTracker('quic', []).finish([]), { transport: 'quic', connections: '0', polls: '1' });
});

test("quicReading converts @matrixai/quic's units (rtt ms, delivery rate bytes/s)", () => {
  const stats = { sent: 5, sentBytes: 6000, retrans: 1, lost: 2, recv: 9 };
  const paths = [
    { active: false, cwnd: 1, rtt: 99, deliveryRate: 1 },
    { active: true, cwnd: 13_500, rtt: 31, deliveryRate: 1_000_000 },
  ];
  assert.deepEqual(quicReading(0, stats, paths), {
    id: 0, packetsSent: 5, bytesSent: 6000, retransmitted: 1, lost: 2, cwndBytes: 13_500, srttNs: 31_000_000, deliveryRateBps: 8_000_000,
  });
  assert.equal(quicReading(0, stats, []).cwndBytes, undefined);
});

test('the poller polls on the event loop and leaves out what a driver cannot read', async () => {
  assert.equal(TransportPoller.start({}), undefined, 'grpc-js and node:tls: no statistics');
  assert.equal(TransportPoller.start({ transport: 'quic', transportReadings: () => undefined }), undefined);
  let sent = 0;
  const driver = { transport: 'quic', transportReadings: () => [{ ...q((sent += 10), 0, 1000) }] };
  const poller = TransportPoller.start(driver);
  await new Promise((resolve) => setTimeout(resolve, 60));
  const s = poller.finish();
  assert.ok(Number(s.polls) >= 3, `polls ${s.polls}`);
  assert.equal(Number(s.packets_sent), sent - 10);
  driver.transportReadings = () => {
    throw new Error('closed');
  };
  assert.equal(TransportPoller.start(driver), undefined);
});
