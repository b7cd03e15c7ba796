// The native framing's client and server logic against each other over an in-memory pipe, and
// against a misbehaving peer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Request, Response, Status } from '../src/proto.js';
import { FRAME, FrameBatch, FrameReader } from '../src/stacks/framing.js';
import { ServerCounters, call, serveCall } from '../src/stacks/native.js';
import { KIND, request } from '../src/workload.js';
import { METHOD } from '../src/proto.js';

/** One direction of a pipe: write() queues chunks, read() takes them; end() closes it. */
class Pipe {
  constructor() {
    this.chunks = [];
    this.ended = false;
    this.wait = undefined;
  }

  write(chunk) {
    this.chunks.push(Buffer.from(chunk));
    this.wait?.();
    return Promise.resolve();
  }

  end() {
    this.ended = true;
    this.wait?.();
  }

  async read() {
    while (this.chunks.length === 0 && !this.ended) await new Promise((r) => { this.wait = r; });
    return this.chunks.length > 0 ? this.chunks.shift() : null;
  }
}

/** A connection carrying many calls (like tcp) to a server that serves until it breaks. */
function connection(counters) {
  const up = new Pipe();
  const down = new Pipe();
  const serverIo = { write: (b) => down.write(b), finish() {} };
  (async () => {
    const reader = new FrameReader(up);
    while (await serveCall(reader, serverIo, counters));
    down.end();
  })();
  return { reader: new FrameReader(down), io: { write: (b) => up.write(b), finish() {} }, up };
}

const work = (shape, kind) => ({ shape, kind, requestSize: 100, responseSize: 200, messages: 16 });

test('every shape and payload kind round-trips, many calls on one connection', async () => {
  const counters = new ServerCounters();
  const { reader, io } = connection(counters);
  for (const kind of [KIND.zeros, KIND.structured]) {
    for (const shape of ['unary', 'client_stream', 'server_stream', 'bidi']) {
      for (let seq = 0; seq < 3; seq++) {
        const outcome = await call(reader, io, work(shape, kind), seq, false);
        const n = 16;
        assert.deepEqual(outcome, {
          requests: shape === 'client_stream' || shape === 'bidi' ? n : 1,
          responses: shape === 'server_stream' || shape === 'bidi' ? n : 1,
        });
      }
    }
  }
  assert.equal(counters.rpcs, 24);
  assert.equal(counters.rejected, 0);
});

/** Raw frames from the client side, and what the server answers. */
async function rawCall(frames) {
  const counters = new ServerCounters();
  const { reader, up } = connection(counters);
  const batch = new FrameBatch();
  for (const [type, body] of frames) batch.add(type, body);
  await up.write(batch.take());
  const got = [];
  for (;;) {
    const frame = await reader.next();
    if (frame === null) break;
    got.push(frame);
    if (frame.type === FRAME.STATUS) break;
  }
  return { got, counters };
}

const header = (shape) => [FRAME.HEADER, Buffer.from(METHOD[shape])];
const message = (m) => [FRAME.MESSAGE, Request.encode(m).finish()];
const END = [FRAME.END, Buffer.alloc(0)];

function statusOf(frames) {
  const last = frames.at(-1);
  assert.equal(last.type, FRAME.STATUS);
  return Status.decode(last.body);
}

test('the server answers malformed calls with INVALID_ARGUMENT or UNIMPLEMENTED', async () => {
  const cases = [
    [[header('unary'), message({ seq: 1, payload: Buffer.from([0, 3]) }), END], 3, /byte 1/],
    [[header('bidi'), message(request(KIND.zeros, 0, 4, 4, 0)), message(request(KIND.zeros, 2, 4, 4, 0)), END], 3, /seq 2, expected 1/],
    [[header('client_stream'), END], 3, /at least one request/],
    [[header('server_stream'), message({ seq: 1, responseMessages: 0 }), END], 3, /response_messages 0/],
    [[header('unary'), message({ seq: 1, responseSize: 16 * 1024 * 1024 + 1 }), END], 3, /above the maximum/],
    [[[FRAME.HEADER, Buffer.from('/nope')], END], 12, /unknown method/],
    [[[FRAME.MESSAGE, Buffer.from([1])]], 3, /must start with a HEADER/],
  ];
  for (const [frames, code, pattern] of cases) {
    const { got, counters } = await rawCall(frames);
    const status = statusOf(got);
    assert.equal(status.code, code, status.message);
    assert.match(status.message, pattern);
    assert.equal(counters.rejected, 1);
  }
});

test('after a rejected call the connection serves the next one', async () => {
  const counters = new ServerCounters();
  const { reader, io, up } = connection(counters);
  const batch = new FrameBatch();
  for (const [t, b] of [header('unary'), message({ seq: 1, payload: Buffer.from([5]) }), END]) batch.add(t, b);
  await up.write(batch.take());
  assert.equal(statusOf([await reader.next()]).code, 3);
  assert.deepEqual(await call(reader, io, work('unary', KIND.zeros), 9, false), { requests: 1, responses: 1 });
});

/** A server that answers every call with `frames`. */
async function againstServer(frames, shape = 'unary') {
  const down = new Pipe();
  const batch = new FrameBatch();
  for (const [t, b] of frames) batch.add(t, b);
  await down.write(batch.take());
  down.end();
  const io = { write: () => Promise.resolve(), finish() {} };
  return call(new FrameReader(down), io, work(shape, KIND.zeros), 4, true);
}

test('the client fails a misbehaving server with the code of "Error codes"', async () => {
  const resp = (seq, size = 200) => [FRAME.MESSAGE, Response.encode({ seq, payload: Buffer.alloc(size) }).finish()];
  const ok = [FRAME.STATUS, Buffer.alloc(0)];
  const status = (c) => [FRAME.STATUS, Status.encode({ code: c, message: 'no' }).finish()];
  await assert.rejects(againstServer([resp(5), ok]), { code: 'invalid', message: /seq 5 but 4/ });
  await assert.rejects(againstServer([resp(4, 199), ok]), { code: 'invalid', message: /length 199/ });
  await assert.rejects(againstServer([resp(4), resp(4), ok]), { code: 'invalid', message: /more than one/ });
  await assert.rejects(againstServer([ok]), { code: 'invalid', message: /no response message/ });
  await assert.rejects(againstServer([status(13)]), { code: 'rpc', message: /status 13/ });
  await assert.rejects(againstServer([resp(4)]), { code: 'connect', message: /before sending STATUS/ });
  await assert.rejects(againstServer([resp(4), ok, resp(4)]), { code: 'invalid', message: /after STATUS/ });
  await assert.rejects(againstServer([[9, Buffer.alloc(0)]]), { code: 'invalid', message: /malformed frame/ });
  const stream = (count) => [...Array.from({ length: count }, (_, i) => resp(i)), ok];
  await assert.rejects(againstServer(stream(15), 'server_stream'), { code: 'invalid', message: /after 15 of 16/ });
  await assert.rejects(againstServer(stream(17), 'server_stream'), { code: 'invalid', message: /more than the 16/ });
  assert.deepEqual(await againstServer(stream(16), 'server_stream'), { requests: 1, responses: 16 });
});

/** An io like QUIC's: every write and finish is recorded; end() is the last write and the end. */
function recordingIo(pipe, log, who) {
  return {
    write: (b) => {
      log.push(`${who} write`);
      return pipe.write(b);
    },
    finish: () => {
      log.push(`${who} finish`);
      pipe.end();
    },
    end: async (b) => {
      log.push(`${who} end ${b.length}`);
      await pipe.write(b);
      pipe.end();
    },
  };
}

test('with io.end the last bytes and the end of the send side go together, never a bare finish', async () => {
  // quiche acknowledges a stream complete without its FIN frame when the FIN went alone
  // (stacks/quic.js, streamIo): the client's END and the server's STATUS must carry the end.
  for (const shape of ['unary', 'client_stream', 'server_stream', 'bidi']) {
    const up = new Pipe();
    const down = new Pipe();
    const log = [];
    const counters = new ServerCounters();
    const serving = serveCall(new FrameReader(up), recordingIo(down, log, 'server'), counters);
    const outcome = await call(new FrameReader(down), recordingIo(up, log, 'client'), work(shape, KIND.zeros), 0, true);
    assert.equal(await serving, true);
    assert.ok(outcome.requests >= 1, shape);
    assert.ok(!log.some((e) => e.endsWith('finish')), `${shape}: ${log.join(', ')}`);
    assert.equal(log.filter((e) => e.startsWith('client end')).length, 1, `${shape}: ${log.join(', ')}`);
    assert.equal(log.filter((e) => e.startsWith('server end')).length, 1, `${shape}: ${log.join(', ')}`);
    assert.ok(!log.some((e) => /end 0$/.test(e)), `${shape}: an empty end: ${log.join(', ')}`);
  }
});

/** `promise`, or a rejection naming `what` after `ms` (a server that reads ahead never answers). */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

test('pingpong: the bidi handler answers each request before the next one is sent', async () => {
  for (const kind of [KIND.zeros, KIND.structured]) {
    const counters = new ServerCounters();
    const { reader, up } = connection(counters);
    const n = 8;
    for (let i = 0; i < n; i++) {
      const batch = new FrameBatch();
      if (i === 0) batch.add(...header('bidi'));
      batch.add(...message(request(kind, i, 64, 80, 0)));
      await up.write(batch.take());
      const frame = await within(reader.next(), 2000, `response ${i} of a lock-step bidi stream`);
      assert.equal(frame.type, FRAME.MESSAGE);
      const response = Response.decode(frame.body);
      assert.equal(Number(response.seq), i);
    }
    const end = new FrameBatch();
    end.add(...END);
    await up.write(end.take());
    assert.equal(statusOf([await within(reader.next(), 2000, 'STATUS')]).code, 0);
    assert.deepEqual([counters.rpcs, counters.requests, counters.responses, counters.rejected], [1, n, n, 0]);
  }
});
