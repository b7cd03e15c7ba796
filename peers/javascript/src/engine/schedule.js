// The open model's intended start times (docs/peer-protocol.md "open"), fixed in advance: constant
// arrivals t0 + floor(i x 1e9 / R), computed from i (rounding never accumulates); Poisson
// arrivals t0 for the first, then exponential gaps of mean 1/R: gap = -ln(1 - U) / R with U
// uniform in [0, 1) from xoshiro128** seeded by splitmix64(--seed) (this peer's generator,
// documented in the README; the Rust peer uses ChaCha8, so the two draw different sequences of
// the same distribution). Pure: no clock.

const MASK64 = (1n << 64n) - 1n;

/** splitmix64: the standard seeder of the xoshiro family; returns the next state and output. */
export function splitmix64(state) {
  const next = (state + 0x9e3779b97f4a7c15n) & MASK64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK64;
  return [next, z ^ (z >> 31n)];
}

const rotl = (x, k) => (x << k) | (x >>> (32 - k));

/** xoshiro128** (Blackman and Vigna), 32-bit outputs. */
export class Xoshiro128 {
  /** @param {bigint} seed a u64 */
  constructor(seed) {
    let state = BigInt.asUintN(64, seed);
    let a;
    let b;
    [state, a] = splitmix64(state);
    [state, b] = splitmix64(state);
    this.s = new Uint32Array([Number(a & 0xffffffffn), Number(a >> 32n), Number(b & 0xffffffffn), Number(b >> 32n)]);
    if (this.s.every((w) => w === 0)) this.s[0] = 1;
  }

  nextU32() {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  /** Uniform in [0, 1) with 53 random bits. */
  nextDouble() {
    const hi = this.nextU32() >>> 5;
    const lo = this.nextU32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }
}

/** Intended start times of one window, in order, until the deadline. */
export class Arrivals {
  constructor({ t0, deadline, rate, arrival, seed }) {
    this.t0 = t0;
    this.deadline = deadline;
    this.gapNs = 1e9 / rate;
    this.poisson = arrival === 'poisson';
    this.rng = this.poisson ? new Xoshiro128(seed) : undefined;
    this.index = 0;
    this.offset = 0;
  }

  /** The next intended start, or -1 once it would be at or after the deadline. */
  next() {
    const offset = this.poisson ? this.offset : Math.floor(this.index * this.gapNs);
    const intended = this.t0 + offset;
    if (intended >= this.deadline || !Number.isFinite(offset)) return -1;
    if (this.poisson) this.offset += Math.floor(-Math.log(1 - this.rng.nextDouble()) * this.gapNs);
    this.index++;
    return intended;
  }
}

/**
 * How long before an intended start the pacer hands it to the event loop, which then waits for
 * the exact moment itself: 150 us at rates up to 1,333/s, less above (a fifth of the mean gap),
 * so the waiting never takes more than about 20% of a core.
 */
export function leadNs(rate) {
  return Math.min(150_000, 1e9 / rate / 5);
}
