import { B2, BMASK, DecodeError, LITTLE, P2, ctz32, norm } from './util.mjs';

// Bits: LSB-first reading and writing

/** Reads an LSB-first bit stream. Reads past the end throw DecodeError('malformed'). */
export class BitReader {
  constructor(bytes, start = 0, end = bytes.length, scratch = null) {
    const n = end - start;
    // padded with at least 8 zero bytes so that peeks never leave the array, and a whole number
    // of 32-bit words, read as little-endian words (a scratch buffer may be lent)
    const room = ((n + 11) >> 2) << 2;
    if (scratch !== null && scratch.length >= room) { this.u = scratch; scratch.fill(0, n, room); } else this.u = new Uint8Array(room);
    this.u.set(bytes.subarray(start, end));
    this.w = LITTLE ? new Uint32Array(this.u.buffer, this.u.byteOffset, room >> 2) : null;
    this.nbits = n * 8;
    this.pos = 0;
  }
  get remaining() { return this.nbits - this.pos; }
  /** The 32 bits at bit p (zeros past the end), unsigned. */
  peek32(p) {
    const W = this.w;
    if (W !== null) {
      const i = p >>> 5, off = p & 31;
      return off === 0 ? W[i] : ((W[i] >>> off) | (W[i + 1] << (32 - off))) >>> 0;
    }
    const u = this.u, i = p >>> 3, off = p & 7;
    let w = (u[i] | (u[i + 1] << 8) | (u[i + 2] << 16) | (u[i + 3] << 24)) >>> off;
    if (off) w |= u[i + 4] << (32 - off);
    return w >>> 0;
  }
  short(what) { throw new DecodeError(`snapshot packet: truncated, a read runs past the end${what ? ' in ' + what : ''} at bit ${this.pos}`); }
  /** n bits, 0 <= n <= 32, as an unsigned number. */
  read(n) {
    if (n === 0) return 0;
    const p = this.pos;
    if (p + n > this.nbits) this.short();
    this.pos = p + n;
    const w = this.peek32(p);
    return n === 32 ? w : (w & ((1 << n) - 1)) >>> 0;
  }
  read1() {
    const p = this.pos;
    if (p >= this.nbits) this.short();
    this.pos = p + 1;
    return (this.u[p >>> 3] >>> (p & 7)) & 1;
  }
  /** n bits, 0 <= n <= 53, as a number. */
  readNum(n) {
    if (n <= 32) return this.read(n);
    const lo = this.read(32);
    return lo + this.read(n - 32) * 4294967296;
  }
  /** n bits, 0 <= n <= 64, as a BigInt. */
  readBig(n) {
    if (n <= 32) return BigInt(this.read(n));
    const lo = this.read(32);
    return BigInt(lo) | (BigInt(this.read(n - 32)) << 32n);
  }
  /** EG(k, b) for b <= 32 (section 4): the value, or -1 when `alt` and the escape's extra bit is 1. */
  eg(k, b, alt) {
    const E = ((b - k + 1) >> 1) + 1;
    const p = this.pos;
    const w = this.peek32(p);
    if (w !== 0) {
      const e = ctz32(w);
      if (e < E) {
        if (p + e + 1 + e + k > this.nbits) { this.pos = p; this.short('an Exp-Golomb code'); }
        this.pos = p + e + 1;
        const m = this.read(e);
        const low = this.read(k);
        const u = (P2[e] + m - 1) * P2[k] + low;
        if (u >= P2[b]) throw new DecodeError(`snapshot packet: an Exp-Golomb value wider than ${b} bits at bit ${p}`);
        return u;
      }
    }
    // escape: E zeros, (the extra bit), then u in b bits
    if (p + E > this.nbits) this.short('an Exp-Golomb code');
    this.pos = p + E;
    if (alt && this.read1()) return -1;
    return this.read(b);
  }
  /** EG(k, b) for b <= 32 with E = (b - k + 1) // 2 + 1 given: the common, inlined case. */
  egE(k, b, E) {
    const p = this.pos;
    const w = this.peek32(p);
    if (w !== 0) {
      const e = 31 - Math.clz32(w & -w);
      const n = 2 * e + 1 + k;
      if (e < E && n <= 32 && p + n <= this.nbits) {
        // the whole code is in w: e zeros, a one, e bits of x - 2**e, k low bits
        this.pos = p + n;
        // n <= 32: x = 2**e + m has e + 1 <= 16 bits, so (x - 1) << k fits 31 bits but when n = 32
        const x = (1 << e) | ((w >>> (e + 1)) & ((1 << e) - 1));
        const low = (w >>> (2 * e + 1)) & ((1 << k) - 1);
        const u = n < 32 ? (((x - 1) << k) | low) : (x - 1) * P2[k] + (low >>> 0);
        if (b < 31 ? u >= (1 << b) : u >= P2[b]) throw new DecodeError(`snapshot packet: an Exp-Golomb value wider than ${b} bits at bit ${p}`);
        return u;
      }
    }
    return this.eg(k, b, false);
  }
  /** EG(k, b) for b <= 32 whose escape carries one more bit: -1 for "no value". */
  egAlt(k, b, E) {
    const p = this.pos;
    const w = this.peek32(p);
    if (w !== 0) {
      const e = 31 - Math.clz32(w & -w);
      const n = 2 * e + 1 + k;
      if (e < E && n < 32 && p + n <= this.nbits) {
        this.pos = p + n;
        const x = (1 << e) | ((w >>> (e + 1)) & ((1 << e) - 1));
        const u = ((x - 1) << k) | ((w >>> (2 * e + 1)) & ((1 << k) - 1));
        if (b < 31 ? u >= (1 << b) : u >= P2[b]) throw new DecodeError(`snapshot packet: an Exp-Golomb value wider than ${b} bits at bit ${p}`);
        return u;
      }
    }
    return this.eg(k, b, true);
  }
  /** EG(k, b) for any b <= 64: a number when below 2**53, else a BigInt. */
  egWide(k, b) {
    if (b <= 32) return this.eg(k, b, false);
    const E = ((b - k + 1) >> 1) + 1;
    const p = this.pos;
    let zeros = 0;
    for (;;) {
      if (zeros >= E) break;
      const w = this.peek32(p + zeros);
      if (w === 0) { zeros += 32; continue; }
      zeros += ctz32(w);
      break;
    }
    if (zeros >= E) {
      if (p + E > this.nbits) this.short('an Exp-Golomb code');
      this.pos = p + E;
      return norm(this.readBig(b));
    }
    const e = zeros;
    if (p + e + 1 > this.nbits) this.short('an Exp-Golomb code');
    this.pos = p + e + 1;
    if (e + k <= 52) {
      const m = this.read(e);
      const low = this.readNum(k);
      return (P2[e] + m - 1) * P2[k] + low;
    }
    const m = BigInt(this.read(e));
    const low = this.readBig(k);
    const u = ((B2[e] + m - 1n) << BigInt(k)) | low;
    if (u >= B2[b]) throw new DecodeError(`snapshot packet: an Exp-Golomb value wider than ${b} bits at bit ${p}`);
    return norm(u);
  }
  /** Rice(k) of a value that must be < limit. */
  rice(k, limit) {
    const qmax = Math.floor(limit / P2[k]);
    let q = 0;
    for (;;) {
      if (this.pos >= this.nbits) this.short('a Rice code');
      const w = this.peek32(this.pos);
      if (w !== 0) {
        const z = ctz32(w);
        if (this.pos + z >= this.nbits) { this.pos = this.nbits; this.short('a Rice code'); }
        q += z;
        this.pos += z + 1;
        break;
      }
      const room = this.nbits - this.pos;
      if (room <= 32) { this.pos = this.nbits; this.short('a Rice code'); }
      q += 32;
      this.pos += 32;
      if (q > qmax) throw new DecodeError('snapshot packet: a Rice-coded gap runs past its set');
    }
    if (q > qmax) throw new DecodeError('snapshot packet: a Rice-coded gap runs past its set');
    const g = q * P2[k] + this.read(k);
    if (g >= limit) throw new DecodeError('snapshot packet: a Rice-coded gap runs past its set');
    return g;
  }
}

/** Writes an LSB-first bit stream. */
export class BitWriter {
  constructor() { this.bytes = []; this.acc = 0; this.nacc = 0; this.nbits = 0; }
  /** n bits (0..53) of a number, or (0..64) of a BigInt. */
  write(v, n) {
    if (typeof v === 'bigint') {
      v = BigInt.asUintN(64, v);
      for (let i = 0; i < n; i += 16) { const m = Math.min(16, n - i); this.write(Number((v >> BigInt(i)) & BMASK[m]), m); }
      return;
    }
    while (n > 0) {
      const take = Math.min(n, 8 - this.nacc);
      const part = v % P2[take];
      this.acc |= part << this.nacc;
      this.nacc += take; this.nbits += take;
      v = Math.floor(v / P2[take]); n -= take;
      if (this.nacc === 8) { this.bytes.push(this.acc); this.acc = 0; this.nacc = 0; }
    }
  }
  /** The bytes, padded with zero bits to a byte. */
  finish() { const out = this.bytes.slice(); if (this.nacc) out.push(this.acc); return Uint8Array.from(out); }
}
