import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Request, Response, Structured, Summary } from '../src/proto.js';
import {
  KIND, MAX_PAYLOAD, SummaryBuilder, checkRequest, checkResponse, checkSummary, request, responseTo,
  streamHead, structured, structuredLength,
} from '../src/workload.js';

const VECTOR = '0a0b62636465666768696a6b6c1081d095ffbc311a20080112066974656d2d3019000000000000d03f'
  + '220562656e636822047461673022080a03736571120131';

test('Structured(1, 64) encodes to the test vector of docs/peer-protocol.md', () => {
  assert.equal(Buffer.from(Structured.encode(structured(1, 64)).finish()).toString('hex'), VECTOR);
});

test('every structured size from 0 to 600 encodes exactly, and the computed length agrees', () => {
  for (const seq of [0, 1, 7, 25, 99, 12345, 999_999_999, 2 ** 40]) {
    for (let size = 0; size <= 600; size++) {
      if (size === 1 || size === 2) continue;
      const body = structured(seq, size);
      const encoded = Structured.encode(body).finish();
      assert.equal(encoded.length, size, `seq ${seq} size ${size}`);
      assert.equal(structuredLength(Structured.decode(encoded)), size, `decoded seq ${seq} size ${size}`);
    }
  }
});

test('large structured sizes up to 16 MiB are exact', () => {
  for (const size of [4096, 65_537, 1_000_003, MAX_PAYLOAD]) {
    assert.equal(Structured.encode(structured(3, size)).finish().length, size);
  }
});

test('a client accepts a correct response of either kind and names what is wrong otherwise', () => {
  for (const kind of [KIND.zeros, KIND.structured]) {
    const req = Request.decode(Request.encode(request(kind, 5, 100, 200, 0)).finish());
    const resp = Response.decode(Response.encode(responseTo(req, 5)).finish());
    assert.equal(checkResponse(resp, kind, 5, 200), null);
    assert.match(checkResponse(resp, kind, 6, 200), /seq 5 but 6/);
  }
  const zeros = Response.decode(Response.encode({ seq: 1, payload: Buffer.from([0, 0, 9]) }).finish());
  assert.match(checkResponse(zeros, KIND.zeros, 1, 3), /byte 2 is 0x09/);
  assert.match(checkResponse(zeros, KIND.zeros, 1, 4), /length 3 but 4/);
  const wrongBody = Response.decode(Response.encode({ seq: 1, body: structured(2, 64) }).finish());
  assert.match(checkResponse(wrongBody, KIND.structured, 1, 64), /differs .* in title/);
  assert.match(checkResponse(wrongBody, KIND.zeros, 1, 0), /structured body where zero bytes/);
});

test('a client checks the summary counts, bytes, last seq and payload', () => {
  const builder = new SummaryBuilder();
  for (let i = 0; i < 4; i++) builder.add(request(KIND.zeros, i, 10, 7, 0));
  const summary = Summary.decode(Summary.encode(builder.finish()).finish());
  assert.equal(checkSummary(summary, KIND.zeros, 4, 10, 7), null);
  assert.match(checkSummary(summary, KIND.zeros, 5, 10, 7), /counts 4 messages but 5/);
  assert.match(checkSummary(summary, KIND.zeros, 4, 11, 7), /40 payload bytes but 44/);
  assert.match(checkSummary(summary, KIND.zeros, 4, 10, 8), /length 7 but 8/);
});

test('a server refuses every malformed request with a reason', () => {
  const decode = (message) => Request.decode(Request.encode(message).finish());
  const ok = decode(request(KIND.structured, 3, 64, 64, 0));
  assert.equal(checkRequest(ok, 'unary'), null);
  assert.match(checkRequest(decode({ seq: 1, payload: Buffer.from([0, 1]) }), 'unary'), /byte 1 is 0x01/);
  const corrupted = structured(3, 64);
  corrupted.title = corrupted.title.replace(/^./, 'z');
  assert.match(checkRequest(decode({ seq: 3, body: corrupted, payloadKind: KIND.structured }), 'unary'), /differs/);
  assert.match(checkRequest(decode({ seq: 1, responseSize: MAX_PAYLOAD + 1 }), 'unary'), /above the maximum/);
  assert.match(checkRequest(decode({ seq: 1, responseSize: 2, payloadKind: 1 }), 'unary'), /cannot be built/);
  assert.match(checkRequest(decode({ seq: 1, responseMessages: 0 }), 'server_stream'), /response_messages 0/);
  assert.match(checkRequest(decode({ seq: 1, payloadKind: 5 }), 'unary'), /payload_kind 5/);
  assert.match(checkRequest(decode({ seq: 2 ** 53 + 2 }), 'unary'), /above 2\^53/);
  const first = decode(request(KIND.zeros, 0, 8, 8, 0));
  const head = streamHead(first);
  assert.equal(checkRequest(first, 'bidi', 0), null);
  assert.match(checkRequest(decode(request(KIND.zeros, 7, 8, 8, 0)), 'bidi', 1, head), /request 1: seq 7, expected 1/);
  assert.match(checkRequest(decode(request(KIND.zeros, 1, 9, 8, 0)), 'client_stream', 1, head), /payload length 9 but the stream started with 8/);
  assert.match(checkRequest(decode(request(KIND.zeros, 1, 8, 9, 0)), 'client_stream', 1, head), /response_size 9/);
});
