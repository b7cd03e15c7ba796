// Transport statistics of the client's connections over the window (the `sample` event's
// optional `transport` object, docs/peer-protocol.md "Transport statistics"). A driver that can
// read its connections has `transportReadings()` (the quic stack: quiche's statistics through
// @matrixai/quic); grpc-js and node:tls expose no TCP_INFO, so those stacks have none and the
// field is left out. `TransportTracker` (pure) turns the reading at START, the polls during the
// window and the reading at its end into the object: counters are end minus start per
// connection, summed; the congestion window is summed over connections at each poll (its minimum
// and mean over the polls); RTTs are means over connections at the end. `TransportPoller` is the
// thin shell that polls every POLL_INTERVAL_MS on the event loop.

/** How often the gauges are polled during the window, as the Rust peer: 5 ms. */
export const POLL_INTERVAL_MS = 5;

/**
 * A reading of one connection: `{ id, packetsSent, bytesSent, retransmitted, lost, cwndBytes,
 * srttNs, deliveryRateBps }`, each a number or undefined where the library gives nothing.
 */
export class TransportTracker {
  /** @param {string} transport `tcp` or `quic`; @param {object[]} start the reading at START */
  constructor(transport, start) {
    this.transport = transport;
    this.start = new Map(start.map((c) => [c.id, c]));
    this.polls = 0;
    this.cwndPolls = 0;
    this.cwndSum = 0;
    this.cwndMin = undefined;
  }

  /** One poll during the window. */
  observe(reading) {
    this.polls++;
    if (reading.length > 0 && reading.every((c) => c.cwndBytes !== undefined)) {
      const cwnd = reading.reduce((s, c) => s + c.cwndBytes, 0);
      this.cwndPolls++;
      this.cwndSum += cwnd;
      this.cwndMin = this.cwndMin === undefined ? cwnd : Math.min(this.cwndMin, cwnd);
    }
  }

  /** The window's `transport` object (counters as decimal strings), from the reading at its end. */
  finish(end) {
    this.observe(end);
    // End minus start per connection, summed; undefined when a connection lacks it (or there
    // is none). A connection new in the window counts from zero.
    const delta = (key) => {
      if (end.length === 0) return undefined;
      let sum = 0;
      for (const c of end) {
        if (c[key] === undefined) return undefined;
        const before = this.start.get(c.id);
        if (before !== undefined && before[key] === undefined) return undefined;
        sum += Math.max(0, c[key] - (before?.[key] ?? 0));
      }
      return sum;
    };
    const sum = (key) => (end.length === 0 || end.some((c) => c[key] === undefined)
      ? undefined
      : end.reduce((s, c) => s + c[key], 0));
    const mean = (key) => {
      const s = sum(key);
      return s === undefined ? undefined : Math.floor(s / end.length);
    };
    const fields = [
      ['packets_sent', delta('packetsSent')],
      ['bytes_sent', delta('bytesSent')],
      ['retransmitted', delta('retransmitted')],
      ['lost', delta('lost')],
      ['cwnd_bytes', sum('cwndBytes')],
      ['cwnd_min_bytes', this.cwndMin],
      ['cwnd_mean_bytes', this.cwndPolls > 0 ? Math.floor(this.cwndSum / this.cwndPolls) : undefined],
      ['srtt_ns', mean('srttNs')],
      ['delivery_rate_bps', sum('deliveryRateBps')],
    ];
    const out = { transport: this.transport, connections: String(end.length), polls: String(this.polls) };
    for (const [key, value] of fields) {
      if (value !== undefined) out[key] = String(value);
    }
    return out;
  }
}

/**
 * One QUIC connection's reading from @matrixai/quic's `conn.stats()` (quiche's connection
 * counters) and the active path of `conn.pathStats()`. The library's units: `rtt` in whole
 * milliseconds (its binding converts quiche's Duration with `as_millis`), `deliveryRate` in
 * bytes/s, `cwnd` and `sentBytes` in bytes; `sent`, `lost`, `retrans` are packets (`retrans`:
 * packets that carried retransmitted data).
 */
export function quicReading(id, stats, paths) {
  const path = paths.find((p) => p.active) ?? paths[0];
  const reading = {
    id,
    packetsSent: stats.sent,
    bytesSent: stats.sentBytes,
    retransmitted: stats.retrans,
    lost: stats.lost,
  };
  if (path !== undefined) {
    reading.cwndBytes = path.cwnd;
    reading.srttNs = path.rtt * 1_000_000;
    reading.deliveryRateBps = path.deliveryRate * 8;
  }
  return reading;
}

/** Polls a driver's readings through the window on the event loop. */
export class TransportPoller {
  /**
   * Reads the start and begins polling (call it when START arrives); undefined when the driver
   * cannot read its connections.
   */
  static start(driver) {
    if (typeof driver.transportReadings !== 'function') return undefined;
    const read = () => driver.transportReadings();
    let first;
    try {
      first = read();
    } catch {
      return undefined;
    }
    if (first === undefined) return undefined;
    return new TransportPoller(driver.transport, read, first);
  }

  constructor(transport, read, first) {
    this.read = read;
    this.tracker = new TransportTracker(transport, first);
    this.timer = setInterval(() => {
      try {
        this.tracker.observe(this.read());
      } catch {
        // A connection that just closed: the end reading says what is left.
      }
    }, POLL_INTERVAL_MS);
  }

  /** Stops polling and reads the end; undefined (the field is left out) when it cannot be read. */
  finish() {
    clearInterval(this.timer);
    try {
      return this.tracker.finish(this.read());
    } catch {
      return undefined;
    }
  }
}
