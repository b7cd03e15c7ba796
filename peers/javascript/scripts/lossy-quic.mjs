// A debugging aid, not a measurement: the quic stack's client and server in one process on
// loopback, every datagram either end sends going through an in-process delay line (DELAY_MS
// one way) that drops a LOSS fraction of them. LANES lanes run SHAPE calls for SECONDS; a call
// still running after 3 s is reported with the state of the connection's streams on both ends
// (what found the lost FIN, README "Is @matrixai/quic able to carry the native framing?").
// Needs no root and no lock; the delay line reorders nothing.
//   node scripts/lossy-quic.mjs [SHAPE=unary] [LANES=4] [SECONDS=8] [LOSS=0.01] [DELAY_MS=15]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { QUICConnection, QUICSocket } from '@matrixai/quic';
import { QuicClient, startQuicServer } from '../src/stacks/quic.js';
import { KIND, SHAPES } from '../src/workload.js';

const [shape = 'unary', lanes = '4', seconds = '8', loss = '0.01', delay = '15'] = process.argv.slice(2);
if (!SHAPES.includes(shape)) throw new Error(`unknown shape ${shape}: one of ${SHAPES.join(', ')}`);
const LOSS = Number(loss);
const DELAY_MS = Number(delay);
const STUCK_MS = 3000;

let sent = 0;
let dropped = 0;
const send = QUICSocket.prototype.send_;
QUICSocket.prototype.send_ = function delayLine(...params) {
  sent++;
  if (Math.random() < LOSS) {
    dropped++;
    return Promise.resolve();
  }
  params[0] = Buffer.from(params[0]);
  setTimeout(() => send.apply(this, params).catch(() => {}), DELAY_MS);
  return Promise.resolve();
};
const serverConnections = new Set();
const recv = QUICConnection.prototype.recv;
QUICConnection.prototype.recv = function noteServer(...args) {
  if (this.type === 'server') serverConnections.add(this);
  return recv.apply(this, args);
};

function streamState(connection, id) {
  const stream = connection.streamMap.get(id);
  let capacity;
  try {
    capacity = connection.conn.streamCapacity(id);
  } catch (e) {
    capacity = e.message;
  }
  return {
    id,
    library: stream ? { readClosed: stream.readClosed, writeClosed: stream.writeClosed } : 'gone',
    readable: connection.conn.streamReadable(id),
    finished: connection.conn.streamFinished(id),
    capacity,
  };
}

const fixtures = path.join(path.dirname(fileURLToPath(import.meta.url)), '../test/fixtures');
const counters = { requests: 0, responses: 0, rpcs: 0, rejected: 0 };
const server = await startQuicServer({
  listen: { host: '127.0.0.1', port: 0 },
  certPem: fs.readFileSync(`${fixtures}/ip.pem`, 'utf8'),
  keyPem: fs.readFileSync(`${fixtures}/ip.key`, 'utf8'),
  counters,
});
const client = new QuicClient({
  server: { host: '127.0.0.1', port: Number(server.address.split(':').pop()) },
  serverName: '127.0.0.1',
  caPem: fs.readFileSync(`${fixtures}/ca.pem`, 'utf8'),
  work: { shape, kind: KIND.zeros, requestSize: 256, responseSize: 256, messages: 128 },
});
await client.connect();
const connection = client.client.connection;
const end = performance.now() + Number(seconds) * 1000;
let done = 0;
let stuck = 0;

async function lane(id) {
  for (let seq = 0; performance.now() < end; seq++) {
    const watchdog = setTimeout(() => {
      stuck++;
      const open = [...connection.streamMap.keys()];
      console.log(`lane ${id}: a call has run for ${STUCK_MS} ms; client streams`, JSON.stringify(open.map((s) => streamState(connection, s))));
      for (const c of serverConnections) console.log('  server', JSON.stringify(open.map((s) => streamState(c, s))));
    }, STUCK_MS);
    try {
      await client.call(id, seq);
    } catch (e) {
      console.log(`lane ${id}: ${e.message}`);
    }
    clearTimeout(watchdog);
    done++;
  }
}

await Promise.all(Array.from({ length: Number(lanes) }, (_, i) => lane(i)));
console.log(`${shape} x${lanes} lanes, ${seconds} s, loss ${LOSS}: ${done} calls, ${stuck} ran over ${STUCK_MS} ms; datagrams ${sent}, dropped ${dropped}`);
await client.close();
await server.close();
process.exit(stuck === 0 ? 0 : 1);
