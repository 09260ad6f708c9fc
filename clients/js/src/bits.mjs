// src/bits.mjs: the bit layer (wire-format section 4): LSB-first reading and writing, the one
// Exp-Golomb reader (readEG) and Rice codes.
import { B2, BMASK, DecodeError, LITTLE, P2, ctz32, norm } from './util.mjs';

// Bits: LSB-first reading and writing

/**
 * EG(k, b) (section 4) at r's position, the client's one Exp-Golomb reader: e zeros, a one, e
 * bits m and k low bits are u = (2**e + m - 1) * 2**k + low; E = (b - k + 1) // 2 + 1 zeros are
 * the escape, then (with `alt`, one more bit: 1 is "no value", -1) u in b bits. A u of b bits or
 * more is malformed. A number, a BigInt from 2**53 (b > 53 only). Its common cases here (the whole
 * code, or the whole escape, within 25 bits: one unaligned little-endian load of the 4 bytes at
 * the position's byte, shifted by its bit, holds them), the others in egLong.
 * The compiled fast path splices this body as written (fastpath.mjs): keep it plain.
 */
export function readEG(r, k, b, alt) {
  const p = r.pos;
  const x = r.dv.getUint32(p >>> 3, true) >>> (p & 7);       // (at least the 25 bits at p)
  const e = 31 - Math.clz32(x & -x), n = 2 * e + 1 + k, E = ((b - k + 1) >> 1) + 1;
  if (x !== 0 && e < E && n <= 25 && p + n <= r.nbits) {
    const u = ((((1 << e) | ((x >>> (e + 1)) & ((1 << e) - 1))) - 1) << k) | ((x >>> (2 * e + 1)) & ((1 << k) - 1));
    if (b < 31 && u >= (1 << b)) r.tooWide(b, p);      // (n < 32: u < 2**31, only b < 31 can be exceeded)
    r.pos = p + n;
    return u;
  }
  // the escape (E zeros; with alt, a bit: 1 is no value; else u in b bits), whole within x
  if (E + b < 25 && (x & ((1 << E) - 1)) === 0) {
    const f = alt ? (x >>> E) & 1 : 0, m = alt ? E + 1 : E;
    if (f !== 0 && p + m <= r.nbits) {
      r.pos = p + m;
      return -1;
    }
    if (f === 0 && p + m + b <= r.nbits) {
      r.pos = p + m + b;
      return (x >>> m) & ((1 << b) - 1);
    }
  }
  return r.egLong(k, b, alt);
}

/** Reads an LSB-first bit stream. Reads past the end throw DecodeError('malformed'). */
export class BitReader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.u = null;
    this.w = null;
    this.dv = null;
    this.nbits = 0;
    this.pos = 0;
    this.reset(bytes, start, end);
  }
  /** Read bytes[start..end) from its start: a reader reused for packet after packet keeps its
   * buffer while they fit. */
  reset(bytes, start = 0, end = bytes.length) {
    const n = end - start;
    // padded with at least 8 zero bytes so that peeks never leave the array, and a whole number
    // of 32-bit words, read as little-endian words
    const room = ((n + 11) >> 2) << 2;
    if (this.u === null || this.u.length < room) {
      this.u = new Uint8Array(Math.max(room, 64));
      this.w = LITTLE ? new Uint32Array(this.u.buffer) : null;
      this.dv = new DataView(this.u.buffer);
    }
    this.u.set(bytes.subarray(start, end));
    this.u.fill(0, n, room);
    this.nbits = n * 8;
    this.pos = 0;
    return this;
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
  /** EG(k, b) (section 4): readEG at this reader's position. */
  eg(k, b, alt = false) { return readEG(this, k, b, alt); }
  /** eg's other cases: a code or an escape of more than 25 bits, the end of the packet. */
  egLong(k, b, alt) {
    const E = ((b - k + 1) >> 1) + 1, p = this.pos;
    let e = 0;
    while (e < E) {
      const w = this.peek32(p + e);
      if (w === 0) { e += 32; continue; }
      e += ctz32(w);
      break;
    }
    if (e >= E) {                      // the escape
      if (p + E > this.nbits) this.short('an Exp-Golomb code');
      this.pos = p + E;
      if (alt && this.read1()) return -1;
      return b <= 32 ? this.read(b) : norm(this.readBig(b));
    }
    if (p + e + 1 + e + k > this.nbits) this.short('an Exp-Golomb code');
    this.pos = p + e + 1;
    if (e + k <= 52) {
      const u = (P2[e] + this.read(e) - 1) * P2[k] + this.readNum(k);
      if (u >= P2[b]) this.tooWide(b, p);
      return u;
    }
    const u = ((B2[e] + BigInt(this.read(e)) - 1n) << BigInt(k)) | this.readBig(k);
    if (u >= B2[b]) this.tooWide(b, p);
    return norm(u);
  }
  tooWide(b, p) { throw new DecodeError(`snapshot packet: an Exp-Golomb value wider than ${b} bits at bit ${p}`); }
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
      if (q > qmax) throw new DecodeError(`snapshot packet: a Rice-coded gap runs past its set at bit ${this.pos}`);
    }
    if (q > qmax) throw new DecodeError(`snapshot packet: a Rice-coded gap runs past its set at bit ${this.pos}`);
    const g = q * P2[k] + this.read(k);
    if (g >= limit) throw new DecodeError(`snapshot packet: a Rice-coded gap runs past its set at bit ${this.pos}`);
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
