// The native framing of the quic and tcp stacks (docs/stacks.md "Native framing"): a frame is a
// 1-byte type, a 4-byte big-endian length and the body. This module encodes frames, parses a
// byte stream into frames (FrameParser, sans-I/O), batches outgoing frames (FrameBatch, flushed
// at 32 KiB like the Rust peer and HTTP/2 implementations), and reads frames from any source of
// byte chunks (FrameReader).
import { MAX_MESSAGE_BYTES } from '../workload.js';

export const FRAME = Object.freeze({ HEADER: 0x01, MESSAGE: 0x02, END: 0x03, STATUS: 0x04 });
export const FRAME_NAME = Object.freeze({ 1: 'HEADER', 2: 'MESSAGE', 3: 'END', 4: 'STATUS' });
export const HEADER_BYTES = 5;
/** Frames are flushed once this many bytes are buffered. */
export const WRITE_BATCH = 32 * 1024;

/** A malformed frame: an unknown type, an oversized body, or a stream that ends inside a frame. */
export class FramingError extends Error {}

/** The 5-byte prefix of a frame. */
export function frameHeader(type, length) {
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = type;
  header.writeUInt32BE(length, 1);
  return header;
}

/**
 * Parses frames out of a byte stream delivered in chunks of any size. `push` a chunk, then call
 * `next()` until it returns undefined (more bytes needed). Throws FramingError on a frame that
 * cannot be valid.
 */
export class FrameParser {
  constructor() {
    this.chunks = [];
    this.buffered = 0;
    this.pending = undefined; // {type, length} of a frame whose body has not fully arrived
  }

  push(chunk) {
    if (chunk.length > 0) {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
    }
  }

  /** Bytes received but not yet returned as frames. */
  get bufferedBytes() {
    return this.buffered;
  }

  take(n) {
    const first = this.chunks[0];
    if (first.length === n) {
      this.chunks.shift();
      this.buffered -= n;
      return first;
    }
    if (first.length > n) {
      this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.chunks[0];
      const want = n - filled;
      if (chunk.length <= want) {
        chunk.copy(out, filled);
        filled += chunk.length;
        this.chunks.shift();
      } else {
        chunk.copy(out, filled, 0, want);
        this.chunks[0] = chunk.subarray(want);
        filled += want;
      }
    }
    this.buffered -= n;
    return out;
  }

  /** The next complete frame `{type, body}`, or undefined. */
  next() {
    if (this.pending === undefined) {
      if (this.buffered < HEADER_BYTES) return undefined;
      const header = this.take(HEADER_BYTES);
      const type = header[0];
      const length = header.readUInt32BE(1);
      if (FRAME_NAME[type] === undefined) {
        throw new FramingError(`unknown frame type 0x${type.toString(16).padStart(2, '0')}`);
      }
      if (length > MAX_MESSAGE_BYTES) {
        throw new FramingError(`a ${FRAME_NAME[type]} frame of ${length} bytes is longer than ${MAX_MESSAGE_BYTES}`);
      }
      this.pending = { type, length };
    }
    const { type, length } = this.pending;
    if (this.buffered < length) return undefined;
    this.pending = undefined;
    return { type, body: length === 0 ? Buffer.alloc(0) : this.take(length) };
  }

  /** Whether a whole frame is buffered (a server flushes when none is). */
  hasFrame() {
    if (this.pending !== undefined) return this.buffered >= this.pending.length;
    if (this.buffered < HEADER_BYTES) return false;
    const header = this.chunks[0].length >= HEADER_BYTES ? this.chunks[0] : Buffer.concat(this.chunks).subarray(0, HEADER_BYTES);
    return this.buffered - HEADER_BYTES >= header.readUInt32BE(1);
  }

  /** The stream ended: an error if it ended inside a frame. */
  finish() {
    if (this.pending !== undefined || this.buffered > 0) {
      throw new FramingError('the stream ended inside a frame');
    }
  }
}

/**
 * Frames waiting to be written. `add` returns true once WRITE_BATCH bytes are buffered (the
 * caller flushes); `take` hands the batch over as one buffer.
 */
export class FrameBatch {
  constructor() {
    this.parts = [];
    this.bytes = 0;
  }

  add(type, body) {
    this.parts.push(frameHeader(type, body.length));
    if (body.length > 0) this.parts.push(body);
    this.bytes += HEADER_BYTES + body.length;
    return this.bytes >= WRITE_BATCH;
  }

  get empty() {
    return this.bytes === 0;
  }

  take() {
    const out = this.parts.length === 1 ? this.parts[0] : Buffer.concat(this.parts, this.bytes);
    this.parts = [];
    this.bytes = 0;
    return out;
  }
}

/**
 * Frames from a source of byte chunks. `source.read()` resolves to a Buffer, or null at the end
 * of the stream, and rejects when the transport fails. `next()` resolves to a frame, or null at
 * a clean end; it rejects with FramingError on malformed input, or with the transport's error.
 */
export class FrameReader {
  constructor(source) {
    this.source = source;
    this.parser = new FrameParser();
    this.ended = false;
  }

  async next() {
    for (;;) {
      const frame = this.parser.next();
      if (frame !== undefined) return frame;
      if (this.ended) {
        this.parser.finish();
        return null;
      }
      const chunk = await this.source.read();
      if (chunk === null) this.ended = true;
      else this.parser.push(chunk);
    }
  }

  /** Whether another whole frame is already here. */
  hasFrame() {
    return this.parser.hasFrame();
  }
}
