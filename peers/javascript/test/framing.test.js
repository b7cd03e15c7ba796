import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Request, Response, Status } from '../src/proto.js';
import { FRAME, FrameBatch, FrameParser, FramingError, WRITE_BATCH } from '../src/stacks/framing.js';
import { METHOD } from '../src/proto.js';

test('the unary example of docs/stacks.md, byte for byte', () => {
  const batch = new FrameBatch();
  batch.add(FRAME.HEADER, Buffer.from(METHOD.unary));
  batch.add(FRAME.MESSAGE, Request.encode({ seq: 1 }).finish());
  batch.add(FRAME.END, Buffer.alloc(0));
  const client = batch.take().toString('hex');
  assert.equal(client, `0100000025${Buffer.from('/rpcarena.bench.v1.BenchService/Unary').toString('hex')}02000000020801` + '0300000000');
  batch.add(FRAME.MESSAGE, Response.encode({ seq: 1 }).finish());
  batch.add(FRAME.STATUS, Status.encode({ code: 0 }).finish());
  assert.equal(batch.take().toString('hex'), '02000000020801' + '0400000000');
});

test('frames parse across any chunk boundaries', () => {
  const batch = new FrameBatch();
  const bodies = [Buffer.from('abc'), Buffer.alloc(0), Buffer.alloc(70_000, 7), Buffer.from('z')];
  for (const body of bodies) batch.add(FRAME.MESSAGE, body);
  const wire = batch.take();
  for (const step of [1, 2, 5, 4096, wire.length]) {
    const parser = new FrameParser();
    const got = [];
    for (let i = 0; i < wire.length; i += step) {
      parser.push(wire.subarray(i, i + step));
      for (let f = parser.next(); f !== undefined; f = parser.next()) got.push(f);
    }
    assert.deepEqual(got.map((f) => f.body.toString('hex')), bodies.map((b) => b.toString('hex')), `step ${step}`);
    assert.doesNotThrow(() => parser.finish());
  }
});

test('unknown types, oversized frames and truncation are framing errors', () => {
  const unknown = new FrameParser();
  unknown.push(Buffer.from([9, 0, 0, 0, 0]));
  assert.throws(() => unknown.next(), FramingError);
  const huge = new FrameParser();
  huge.push(Buffer.from([2, 0x01, 0x00, 0x04, 0x01]));
  assert.throws(() => huge.next(), /longer than 16778240/);
  const cut = new FrameParser();
  cut.push(Buffer.from([2, 0, 0, 0, 9, 1, 2]));
  assert.equal(cut.next(), undefined);
  assert.throws(() => cut.finish(), /ended inside a frame/);
});

test('a batch asks for a flush at 32 KiB', () => {
  const batch = new FrameBatch();
  assert.equal(batch.add(FRAME.MESSAGE, Buffer.alloc(WRITE_BATCH - 10)), false);
  assert.equal(batch.add(FRAME.MESSAGE, Buffer.alloc(10)), true);
});
