// quantcodec.mjs: a dependency-free JavaScript client of the quantcodec wire format
// (docs/wire-format.md, docs/schema-format.md, docs/codecs.md). One ES module for Node >= 18 and
// current browsers: schemas and their fingerprint, every codec (dequantize, valid; quantize for the
// scalar, vector, quaternion and unit-vector codecs), one record, the snapshot stream decoder
// with the datagram layer (check, hello, fragments, history window, acks), and the session client
// (StreamClient: replies, keyed SipHash-2-4 checks, limits; wire-format sections 17-19).
//
// Numbers: codes of slots of at most 53 bits and ids below 2**53 are plain numbers; codes of wider
// slots (UInt/Int/Fixed/Grid/Quat/UnitVector of more than 53 bits) are always BigInt, and ids of
// 2**53 and above are BigInt (an id is a number exactly when it is a safe integer). Signed codes
// (Int, Fixed with signed=true) are signed; every other code is unsigned.

// ------------------------------------------------------------------------------------------------
// Errors

export class CodecError extends Error {
  constructor(message) { super(message); this.name = 'CodecError'; }
}
export class SchemaError extends CodecError {
  constructor(message) { super(message); this.name = 'SchemaError'; }
}
/** A value an exact codec cannot hold, a zero or non-finite quaternion/unit vector. */
export class ValueRangeError extends CodecError {
  constructor(message) { super(message); this.name = 'ValueRangeError'; }
}
// (`stale` is the server's, for replies only: no client refuses a datagram with it)
export const DECODE_ERROR_KINDS = Object.freeze(['no-hello', 'check', 'hello', 'schema', 'fragment', 'baseline', 'malformed', 'limits', 'stale']);
export class DecodeError extends CodecError {
  constructor(message, kind = 'malformed') {
    super(message);
    if (!DECODE_ERROR_KINDS.includes(kind)) throw new Error(`DecodeError: unknown kind ${kind}`);
    this.name = 'DecodeError';
    this.kind = kind;
  }
}

// ------------------------------------------------------------------------------------------------
// Small numeric helpers

const P2 = new Float64Array(65); for (let i = 0; i <= 64; i++) P2[i] = 2 ** i;
const B2 = []; for (let i = 0; i <= 64; i++) B2.push(1n << BigInt(i));
const BMASK = B2.map((v) => v - 1n);
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const SQRT1_2 = Math.SQRT1_2;          // 0.70710678118654752440 as a double, as the C core's QC_SQRT1_2

/** An integer (number or BigInt) as the canonical id/code representation: a number when safe. */
function norm(v) {
  if (typeof v === 'bigint') return (v <= 9007199254740991n && v >= -9007199254740991n) ? Number(v) : v;
  return v;
}
function toBig(v) { return typeof v === 'bigint' ? v : BigInt(v); }
function isInteger(v) { return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)); }
function ctz32(w) { return 31 - Math.clz32(w & -w); }     // w != 0

/** C's round(): half away from zero, exact. */
function roundHalfAway(v) {
  const t = Math.trunc(v);
  const f = v - t;                          // exact
  if (f >= 0.5) return t + 1;
  if (f <= -0.5) return t - 1;
  return t;
}

const F64 = new Float64Array(1);
const U32OF = new Uint32Array(F64.buffer);   // little-endian hosts: [lo, hi]
const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
function dblWords(x) { F64[0] = x; return LITTLE ? [U32OF[1], U32OF[0]] : [U32OF[0], U32OF[1]]; }
function wordsDbl(hi, lo) {
  if (LITTLE) { U32OF[1] = hi; U32OF[0] = lo; } else { U32OF[0] = hi; U32OF[1] = lo; }
  return F64[0];
}

/** Python's float.hex() of a double, exactly. */
export function floatHex(x) {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  const [hi, lo] = dblWords(x);
  const sign = hi >>> 31 ? '-' : '';
  let exp = (hi >>> 20) & 0x7ff;
  const mhi = hi & 0xfffff;
  if (exp === 0 && mhi === 0 && lo === 0) return sign + '0x0.0p+0';
  let lead = 1;
  if (exp === 0) { lead = 0; exp = -1022; } else exp -= 1023;
  const mant = mhi.toString(16).padStart(5, '0') + (lo >>> 0).toString(16).padStart(8, '0');
  return `${sign}0x${lead}.${mant}p${exp >= 0 ? '+' : '-'}${Math.abs(exp)}`;
}

/** The double written by Python's float.hex() (also 'inf', '-inf', 'nan'). */
export function parseFloatHex(s) {
  if (s === 'nan' || s === '-nan') return NaN;
  if (s === 'inf') return Infinity;
  if (s === '-inf') return -Infinity;
  const m = /^(-)?0x([0-9a-f]+)(?:\.([0-9a-f]*))?p([+-]?\d+)$/i.exec(s);
  if (!m) throw new SyntaxError(`not a float.hex() string: ${s}`);
  const digits = m[2] + (m[3] || '');
  let mant = BigInt('0x' + digits);
  let exp = parseInt(m[4], 10) - 4 * (m[3] || '').length;
  // exact: scale the integer mantissa by 2**exp with one rounding (Number(bigint) rounds to nearest)
  let v;
  if (exp >= 0) v = Number(mant << BigInt(exp));
  else {
    // keep the result exact down to subnormals: divide only by what the double can hold
    const sh = -exp;
    if (sh <= 1074 - 0) {
      v = Number(mant) * 2 ** -Math.min(sh, 1000);
      if (sh > 1000) v *= 2 ** -(sh - 1000);
    } else v = 0;
  }
  return m[1] ? -v : v;
}

// ------------------------------------------------------------------------------------------------
// SHA-256 (FIPS 180-4), synchronous, on bytes

const SHA_K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);

/** SHA-256 of bytes (Uint8Array) -> 32 bytes. */
export function sha256(data) {
  const n = data.length;
  const total = ((n + 9 + 63) >> 6) << 6;
  const m = new Uint8Array(total);
  m.set(data);
  m[n] = 0x80;
  const bits = n * 8;
  const dv = new DataView(m.buffer);
  dv.setUint32(total - 8, Math.floor(bits / 4294967296));
  dv.setUint32(total - 4, bits >>> 0);
  const H = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const W = new Uint32Array(64);
  for (let off = 0; off < total; off += 64) {
    for (let i = 0; i < 16; i++) W[i] = dv.getUint32(off + 4 * i);
    for (let i = 16; i < 64; i++) {
      const a = W[i - 15], b = W[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      W[i] = (W[i - 16] + s0 + W[i - 7] + s1) | 0;
    }
    let a = H[0], b = H[1], c = H[2], d = H[3], e = H[4], f = H[5], g = H[6], h = H[7];
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (h + S1 + ch + SHA_K[i] + W[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = (S0 + maj) | 0;
      h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
    }
    H[0] += a; H[1] += b; H[2] += c; H[3] += d; H[4] += e; H[5] += f; H[6] += g; H[7] += h;
  }
  const out = new Uint8Array(32);
  const ov = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) ov.setUint32(4 * i, H[i]);
  return out;
}

export function toHex(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += (bytes[i] < 16 ? '0' : '') + bytes[i].toString(16);
  return s;
}

/** ASCII/UTF-8 bytes of a string. */
function utf8(s) { return new TextEncoder().encode(s); }
function asciiBytes(s) {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// ------------------------------------------------------------------------------------------------
// CRC-32C (Castagnoli), table-driven, zlib's continuation convention

const CRC_TABLE = (() => {
  const t = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = (c & 1) ? ((c >>> 1) ^ 0x82F63B78) : (c >>> 1);
    t[n] = c;
  }
  return t;
})();

/** crc32c(data, seed): seed is the CRC of what came before (0 for none). Returns an unsigned 32-bit number. */
export function crc32c(data, seed = 0, start = 0, end = data.length) {
  let crc = ~seed;
  for (let i = start; i < end; i++) crc = CRC_TABLE[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (~crc) >>> 0;
}

// ------------------------------------------------------------------------------------------------
// SipHash-2-4 (Aumasson and Bernstein, 2012) and the keys of wire-format section 17. Synchronous
// and BigInt-free: each 64-bit word is two int32 halves (WebCrypto is asynchronous, and has no
// SipHash anyway).

let SIP_LO = 0, SIP_HI = 0;          // the result of sipCore: low and high 32 bits (unsigned)

/** A 16-byte SipHash key as its four little-endian u32 words [k0 lo, k0 hi, k1 lo, k1 hi]. */
function sipWords(key16) {
  const w = new Int32Array(4);
  for (let i = 0; i < 4; i++) w[i] = key16[4 * i] | (key16[4 * i + 1] << 8) | (key16[4 * i + 2] << 16) | (key16[4 * i + 3] << 24);
  return w;
}

/**
 * SipHash-2-4 of data[start..end) under the key words k; the result in SIP_LO, SIP_HI. Each
 * 64-bit word is a pair of int32 halves; one SipRound is
 *   v0 += v1; v1 = rotl(v1, 13) ^ v0; v0 = rotl(v0, 32); v2 += v3; v3 = rotl(v3, 16) ^ v2;
 *   v0 += v3; v3 = rotl(v3, 21) ^ v0; v2 += v1; v1 = rotl(v1, 17) ^ v2; v2 = rotl(v2, 32)
 * (a + b: the low halves' sum, and its carry out of bit 31 into the high halves').
 */
function sipCore(k, d, start, end) {
  let v0l = k[0] ^ 0x70736575, v0h = k[1] ^ 0x736f6d65;
  let v1l = k[2] ^ 0x6e646f6d, v1h = k[3] ^ 0x646f7261;
  let v2l = k[0] ^ 0x6e657261, v2h = k[1] ^ 0x6c796765;
  let v3l = k[2] ^ 0x79746573, v3h = k[3] ^ 0x74656462;
  const len = end - start, last = start + (len & ~7);
  let s = 0, t = 0, ml = 0, mh = 0;
  for (let i = start; i <= last; i += 8) {
    if (i < last) {
      ml = d[i] | (d[i + 1] << 8) | (d[i + 2] << 16) | (d[i + 3] << 24);
      mh = d[i + 4] | (d[i + 5] << 8) | (d[i + 6] << 16) | (d[i + 7] << 24);
    } else {                             // the last word: the tail bytes and the length's low byte
      ml = 0; mh = (len & 0xff) << 24;
      switch (end - i) {
        case 7: mh |= d[i + 6] << 16;    // falls through
        case 6: mh |= d[i + 5] << 8;     // falls through
        case 5: mh |= d[i + 4];          // falls through
        case 4: ml |= d[i + 3] << 24;    // falls through
        case 3: ml |= d[i + 2] << 16;    // falls through
        case 2: ml |= d[i + 1] << 8;     // falls through
        case 1: ml |= d[i];
      }
    }
    v3l ^= ml; v3h ^= mh;
    for (let r = 0; r < 2; r++) {
      s = (v0l + v1l) | 0; v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~s)) >>> 31)) | 0; v0l = s;
      t = (v1h << 13) | (v1l >>> 19); v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l; v1h = t ^ v0h;
      s = (v2l + v3l) | 0; v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~s)) >>> 31)) | 0; v2l = s;
      t = (v3h << 16) | (v3l >>> 16); v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l; v3h = t ^ v2h;
      t = v0l; v0l = v0h; v0h = t;
      s = (v0l + v3l) | 0; v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~s)) >>> 31)) | 0; v0l = s;
      t = (v3h << 21) | (v3l >>> 11); v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l; v3h = t ^ v0h;
      s = (v2l + v1l) | 0; v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~s)) >>> 31)) | 0; v2l = s;
      t = (v1h << 17) | (v1l >>> 15); v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l; v1h = t ^ v2h;
      t = v2l; v2l = v2h; v2h = t;
    }
    v0l ^= ml; v0h ^= mh;
  }
  v2l ^= 0xff;
  for (let r = 0; r < 4; r++) {
      s = (v0l + v1l) | 0; v0h = (v0h + v1h + (((v0l & v1l) | ((v0l | v1l) & ~s)) >>> 31)) | 0; v0l = s;
      t = (v1h << 13) | (v1l >>> 19); v1l = ((v1l << 13) | (v1h >>> 19)) ^ v0l; v1h = t ^ v0h;
      s = (v2l + v3l) | 0; v2h = (v2h + v3h + (((v2l & v3l) | ((v2l | v3l) & ~s)) >>> 31)) | 0; v2l = s;
      t = (v3h << 16) | (v3l >>> 16); v3l = ((v3l << 16) | (v3h >>> 16)) ^ v2l; v3h = t ^ v2h;
      t = v0l; v0l = v0h; v0h = t;
      s = (v0l + v3l) | 0; v0h = (v0h + v3h + (((v0l & v3l) | ((v0l | v3l) & ~s)) >>> 31)) | 0; v0l = s;
      t = (v3h << 21) | (v3l >>> 11); v3l = ((v3l << 21) | (v3h >>> 11)) ^ v0l; v3h = t ^ v0h;
      s = (v2l + v1l) | 0; v2h = (v2h + v1h + (((v2l & v1l) | ((v2l | v1l) & ~s)) >>> 31)) | 0; v2l = s;
      t = (v1h << 17) | (v1l >>> 15); v1l = ((v1l << 17) | (v1h >>> 15)) ^ v2l; v1h = t ^ v2h;
      t = v2l; v2l = v2h; v2h = t;
  }
  SIP_LO = (v0l ^ v1l ^ v2l ^ v3l) >>> 0;
  SIP_HI = (v0h ^ v1h ^ v2h ^ v3h) >>> 0;
}

function bytesOf(x, what) {
  if (typeof x === 'string') return asciiBytes(x);
  if (x instanceof Uint8Array) return x;
  if (x instanceof ArrayBuffer || ArrayBuffer.isView(x)) return new Uint8Array(x.buffer || x, x.byteOffset || 0, x.byteLength);
  throw new TypeError(`${what}: expected bytes (a Uint8Array), got ${x === null ? 'null' : typeof x}`);
}

/** SipHash-2-4 of `data` under a 16-byte key, as an unsigned 64-bit BigInt (the tag is its 8 little-endian bytes). */
export function siphash24(key, data) {
  const k = bytesOf(key, 'siphash24 key');
  if (k.length !== 16) throw new RangeError(`siphash24: the key must be 16 bytes, got ${k.length}`);
  const d = bytesOf(data, 'siphash24 data');
  sipCore(sipWords(k), d, 0, d.length);
  return (BigInt(SIP_HI) << 32n) | BigInt(SIP_LO);
}

/** Two SipHash results under key words w, of msg || 0 and msg || 1 (or 1 || msg, 2 || msg), as 16 bytes. */
function sipPair(w, msg, prefix) {
  const out = new Uint8Array(16), b = new Uint8Array(msg.length + 1);
  for (let j = 0; j < 2; j++) {
    if (prefix) { b[0] = j + 1; b.set(msg, 1); } else { b.set(msg); b[msg.length] = j; }
    sipCore(w, b, 0, b.length);
    for (let i = 0; i < 4; i++) { out[8 * j + i] = SIP_LO >>> (8 * i); out[8 * j + 4 + i] = SIP_HI >>> (8 * i); }
  }
  return out;
}
const MAC_Z = sipWords(asciiBytes('quantcodec mac k'));

/** Check a shared key (1 to 255 bytes) and return it as a Uint8Array. */
function sharedKey(key, who) {
  if (typeof key === 'string') throw new TypeError(`${who}: the key must be bytes (a Uint8Array), not a string (encode a text key with TextEncoder, a hex one with a hex decoder)`);
  const k = bytesOf(key, `${who}: key`);
  if (k.length < 1 || k.length > 255) throw new RangeError(`${who}: the key must be 1 to 255 bytes, got ${k.length}`);
  return k;
}

/** The master key mk of a shared key (section 17): u64le(SipHash(Z, 01 || key)) || u64le(SipHash(Z, 02 || key)). */
export function masterKey(key) {
  return sipPair(MAC_Z, sharedKey(key, 'masterKey'), true);
}

/** sub(L) under a master key: u64le(SipHash(mk, L || 00)) || u64le(SipHash(mk, L || 01)) (section 17). */
function subKey(mk, label) { return sipPair(sipWords(mk), label, false); }

/**
 * The tag key of a label under a shared key (section 17): macKey(key, K + 'P') is kP,
 * macKey(key, 'quantcodec hello') is kH. `label`: bytes, or an ASCII string.
 */
export function macKey(key, label) {
  return subKey(masterKey(key), bytesOf(label, 'macKey label'));
}

function u32le(b, o) { return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0; }
function u16le(b, o) { return b[o] | (b[o + 1] << 8); }
function u64le(b, o) { return BigInt(u32le(b, o)) | (BigInt(u32le(b, o + 4)) << 32n); }

// ------------------------------------------------------------------------------------------------
// JSON: a parser that keeps integers beyond 2**53 exact (as BigInt) and tells integer literals
// from float literals (as Python's json does), and Python's json.dumps(ensure_ascii=True) of strings.

/** A float literal of a JSON document (Python reads it as a float, not an int). */
export class JsonFloat {
  constructor(value) { this.value = value; }
  valueOf() { return this.value; }
}

/**
 * Parse JSON text. Integer literals become numbers (BigInt beyond the safe range); float literals
 * become numbers, or JsonFloat objects with `{tagFloats: true}`. NaN, Infinity and -Infinity are
 * accepted as Python's json accepts them.
 */
export function parseJSON(text, { tagFloats = false, noDuplicates = false } = {}) {
  let i = 0;
  const n = text.length;
  const fail = (what) => { throw new SyntaxError(`JSON: ${what} at character ${i}`); };
  const ws = () => { while (i < n) { const c = text.charCodeAt(i); if (c === 32 || c === 9 || c === 10 || c === 13) i++; else break; } };
  const mkFloat = (v) => (tagFloats ? new JsonFloat(v) : v);
  let depth = 0;
  function value() {
    ws();
    if (i >= n) fail('unexpected end');
    const c = text[i];
    if (c === '{') {
      if (++depth > 500) fail('nested too deeply');
      i++; const obj = {}; ws();
      if (text[i] === '}') { i++; depth--; return obj; }
      for (;;) {
        ws(); if (text[i] !== '"') fail('expected a key');
        const k = str(); ws(); if (text[i] !== ':') fail("expected ':'"); i++;
        if (noDuplicates && Object.prototype.hasOwnProperty.call(obj, k)) fail(`duplicate key ${JSON.stringify(k)}`);
        const v = value();
        Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; depth--; return obj; }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      if (++depth > 500) fail('nested too deeply');
      i++; const arr = []; ws();
      if (text[i] === ']') { i++; depth--; return arr; }
      for (;;) {
        arr.push(value()); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; depth--; return arr; }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    if (text.startsWith('NaN', i)) { i += 3; return mkFloat(NaN); }
    if (text.startsWith('Infinity', i)) { i += 8; return mkFloat(Infinity); }
    if (text.startsWith('-Infinity', i)) { i += 9; return mkFloat(-Infinity); }
    const m = /^-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i, i + 400));
    if (!m) fail('unexpected character');
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const v = Number(m[0]);
      return Number.isSafeInteger(v) ? v : BigInt(m[0]);
    }
    return mkFloat(Number(m[0]));
  }
  function str() {
    i++;
    let out = '';
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text[i++];
      if (c === '"') return out;
      if (c === '\\') {
        const e = text[i++];
        if (e === 'u') {
          const h = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad \\u escape');
          out += String.fromCharCode(parseInt(h, 16)); i += 4;
        } else {
          const map = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (!(e in map)) fail('bad escape');
          out += map[e];
        }
      } else {
        if (c.charCodeAt(0) < 0x20) fail('control character in a string');
        out += c;
      }
    }
  }
  const v = value();
  ws();
  if (i !== n) fail('extra data');
  return v;
}

/** A string as Python's json.dumps(..., ensure_ascii=True) writes it. */
function pyJsonString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
}

/** json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True), where floats
 * are already their float.hex() strings (instances of HexFloat below). */
class HexFloat { constructor(v) { this.v = v; } }
function canonJson(o) {
  if (o === null) return 'null';
  if (o === true) return 'true';
  if (o === false) return 'false';
  if (o instanceof HexFloat) return pyJsonString(floatHex(o.v));
  if (typeof o === 'number' || typeof o === 'bigint') return String(o);
  if (typeof o === 'string') return pyJsonString(o);
  if (Array.isArray(o)) return '[' + o.map(canonJson).join(',') + ']';
  const keys = Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return '{' + keys.map((k) => pyJsonString(k) + ':' + canonJson(o[k])).join(',') + '}';
}


// ------------------------------------------------------------------------------------------------
// Parameters

function isFloatLike(v) { return v instanceof JsonFloat || typeof v === 'number' || typeof v === 'bigint'; }
function floatParam(owner, name, v) {
  if (typeof v === 'boolean' || !isFloatLike(v)) throw new SchemaError(`${owner}: ${name} must be a number, got ${show(v)}`);
  const f = Number(v instanceof JsonFloat ? v.value : v);
  if (!Number.isFinite(f)) throw new SchemaError(`${owner}: ${name} must be finite, got ${show(v)}`);
  return f + 0.0;     // -0.0 -> 0.0, as Python
}
function intParam(owner, name, v, lo, hi) {
  if (typeof v === 'boolean' || v instanceof JsonFloat || !isInteger(v)) throw new SchemaError(`${owner}: ${name} must be an integer, got ${show(v)}`);
  if (v < lo || v > hi) throw new SchemaError(`${owner}: ${name} must be in ${lo}..${hi}, got ${v}`);
  return Number(v);
}
function show(v) {
  if (v instanceof JsonFloat) return String(v.value);
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return String(v);
  try { return JSON.stringify(v) ?? String(v); } catch { return String(v); }
}
function pyRepr(x) {      // a float as Python's repr writes it (close enough for messages)
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return x.toFixed(1);
  return String(x);
}

// pow(x, y) for PowerCurve's exponents other than 1 and 2, through double-double log and exp:
// the correctly rounded result but within ~2**-90 of a rounding tie. glibc's pow (Python's) is
// within 0.52 ulp: the two agree on all but about 1 in 1000 values (where glibc misrounds), while
// the JavaScript engine's Math.pow differs on about 1 in 10.
const SPLIT = 134217729;          // 2**27 + 1
let TH = 0, TL = 0;               // results of the helpers below
function twoSum(a, b) { const s = a + b; const bb = s - a; TL = (a - (s - bb)) + (b - bb); TH = s; }
function fastTwoSum(a, b) { const s = a + b; TL = b - (s - a); TH = s; }
function twoProd(a, b) {
  const p = a * b;
  let t = SPLIT * a; const ah = t - (t - a), al = a - ah;
  t = SPLIT * b; const bh = t - (t - b), bl = b - bh;
  TL = ((ah * bh - p) + ah * bl + al * bh) + al * bl; TH = p;
}
function ddAdd(ah, al, bh, bl) { twoSum(ah, bh); const e = TL + al + bl; fastTwoSum(TH, e); }
function ddMul(ah, al, bh, bl) { twoProd(ah, bh); const e = TL + (ah * bl + al * bh); fastTwoSum(TH, e); }
function ddDiv(ah, al, bh, bl) {
  const q1 = ah / bh;
  ddMul(q1, 0, bh, bl);                      // q1 * b
  ddAdd(ah, al, -TH, -TL);                   // a - q1 * b
  const q2 = TH / bh;
  fastTwoSum(q1, q2);
}
const LN2H = 0.6931471805599453, LN2L = 2.3190468138462996e-17;
const DF64 = new Float64Array(1), DU32 = new Uint32Array(DF64.buffer);
const DHI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;

/** ln(x) as a double-double in (TH, TL), x > 0 finite. */
function ddLog(x) {
  let e = 0;
  if (x < 2.2250738585072014e-308) { x *= 18446744073709551616; e = -64; }    // subnormal: scale by 2**64
  DF64[0] = x;
  e += ((DU32[DHI] >>> 20) & 0x7ff) - 1023;
  DU32[DHI] = (DU32[DHI] & 0x800fffff) | 0x3ff00000;                              // m in [1, 2)
  let m = DF64[0];
  if (m > Math.SQRT2) { m /= 2; e += 1; }                                      // m in [0.707, 1.414]
  twoSum(m, 1);                                                                // m + 1 exactly
  ddDiv(m - 1, 0, TH, TL);                                                     // f = (m - 1) / (m + 1)
  const fh = TH, fl = TL;
  ddMul(fh, fl, fh, fl);
  const f2h = TH, f2l = TL;
  let th = fh, tl = fl, sh = fh, sl = fl;
  for (let k = 3; k <= 61; k += 2) {
    ddMul(th, tl, f2h, f2l); th = TH; tl = TL;
    if (Math.abs(th) < 1e-40 * Math.abs(sh)) break;
    ddDiv(th, tl, k, 0);
    ddAdd(sh, sl, TH, TL); sh = TH; sl = TL;
  }
  // ln x = e * ln2 + 2 * s
  twoProd(e, LN2H); const ph = TH, pl = TL + e * LN2L;
  ddAdd(ph, pl, 2 * sh, 2 * sl);
}

/** exp of the double-double (zh, zl) into (TH, TL) as a double-double, times 2**k in K. */
let K = 0;
function ddExp(zh, zl) {
  const k = Math.round(zh / LN2H);
  twoProd(k, LN2H); const ph = TH, pl = TL + k * LN2L;
  ddAdd(zh, zl, -ph, -pl);                       // r = z - k ln2, |r| <= ~0.35
  let rh = TH / 1024, rl = TL / 1024;            // r / 2**10
  // Taylor: 1 + r + r^2/2! + ... (r <= 3.4e-4: 11 terms reach 2**-110)
  let sh = 1, sl = 0, th = 1, tl = 0;
  for (let n = 1; n <= 14; n++) {
    ddMul(th, tl, rh, rl); ddDiv(TH, TL, n, 0); th = TH; tl = TL;
    ddAdd(sh, sl, th, tl); sh = TH; sl = TL;
  }
  for (let i = 0; i < 10; i++) { ddMul(sh, sl, sh, sl); sh = TH; sl = TL; }
  TH = sh; TL = sl; K = k;
}

function ddPow(x, y) {
  if (!(x > 0) || !Number.isFinite(x) || !Number.isFinite(y)) return Math.pow(x, y);
  if (y === 1) return x;
  if (x === 1 || y === 0) return 1;
  ddLog(x);
  ddMul(TH, TL, y, 0);
  const zh = TH, zl = TL;
  if (!(zh > -700 && zh < 700)) return Math.pow(x, y);      // (results near the ends of the range)
  ddExp(zh, zl);
  const v = TH + TL;
  return v * 2 ** K;                                          // exact: v * 2**K is a normal double here
}

// ------------------------------------------------------------------------------------------------
// Codecs
//
// Every codec: kind, bits, spec(), valid(code), dequantize(code); the float codecs also
// quantize(x). Slot classes for the delta coder: 'flag', 'ord', 'smag', 'quat', 'uvec', 'abs'.

const KIND_CODES = { Bounded: 1, Fixed: 2, Angle: 3, PowerCurve: 4, Half: 5, UInt: 6, Int: 7, Bool: 8, Enum: 9, Quat: 10, UnitVector: 11, Vector: 12, Grid: 13, NearlyZero: 14, IntRange: 15 };
const KIND_NAMES = Object.fromEntries(Object.entries(KIND_CODES).map(([k, v]) => [v, k]));

/** A code argument as an exact integer: a number, a BigInt (or null when it is no integer). */
function intCode(c) {
  if (typeof c === 'bigint') return c;
  if (typeof c === 'number' && Number.isInteger(c)) return c;
  if (typeof c === 'boolean') return c ? 1 : 0;
  return null;
}
/** The code as the slot stores it: a number when bits <= 53, else a BigInt. */
function slotCode(bits, v) { return bits > 53 ? toBig(v) : Number(v); }

export class Codec {
  get isScalar() { return true; }
  /** The canonical-JSON tree of the spec (floats marked). */
  _canon() { return this.spec(); }
  toString() {
    const s = this.spec();
    const parts = Object.entries(s).filter(([k]) => k !== 'kind').map(([k, v]) => `${k}=${typeof v === 'string' ? `'${v}'` : (typeof v === 'number' && FLOAT_KEYS.has(k) ? pyRepr(v) : typeof v === 'boolean' ? (v ? 'True' : 'False') : JSON.stringify(v))}`);
    return `${s.kind}(${parts.join(', ')})`;
  }
}
const FLOAT_KEYS = new Set(['min', 'max', 'step', 'offset', 'pow', 'cell_size', 'threshold']);

export class Bounded extends Codec {
  constructor(min, max, bits, mode = 'endpoints') {
    super();
    const lo = floatParam('Bounded', 'min', min), hi = floatParam('Bounded', 'max', max);
    const b = intParam('Bounded', 'bits', bits, 1, 32);
    if (!(lo < hi)) throw new SchemaError(`Bounded: min must be less than max, got min=${pyRepr(lo)}, max=${pyRepr(hi)}`);
    if (!Number.isFinite(hi - lo)) throw new SchemaError(`Bounded: the range max - min overflows, got min=${pyRepr(lo)}, max=${pyRepr(hi)}`);
    if (mode !== 'endpoints' && mode !== 'bins' && mode !== 'midpoint') throw new SchemaError(`Bounded: mode must be 'endpoints', 'bins' or 'midpoint', got ${show(mode)}`);
    if (mode === 'midpoint' && b < 2) throw new SchemaError(`Bounded: mode='midpoint' needs bits >= 2 (2**bits - 2 intervals), got bits=${b}`);
    if (!Number.isFinite((hi - lo) * 2 ** b)) throw new SchemaError(`Bounded: the range max - min times 2**bits overflows (valid codes would decode to inf), got min=${pyRepr(lo)}, max=${pyRepr(hi)}, bits=${b}`);
    this.kind = 'Bounded'; this.bits = b; this.min = lo; this.max = hi; this.mode = mode;
    this.R = hi - lo; this.L = modeL(mode, b); this.m = MODE[mode];
    this.maxcode = mode === 'midpoint' ? 2 ** b - 2 : 2 ** b - 1; this.cls = 'ord'; this.signed = false;
  }
  spec() { return { kind: 'Bounded', min: this.min, max: this.max, bits: this.bits, mode: this.mode }; }
  _canon() { return { kind: 'Bounded', min: new HexFloat(this.min), max: new HexFloat(this.max), bits: this.bits, mode: this.mode }; }
  get step() { return this.R / this.L; }
  get maxError() { return this.step / 2; }
  quantize(x) { return Math.trunc(boundedQt((+x - this.min) / this.R, this.L, this.m)); }
  dequantize(code) { return boundedDq(checkedNumber(this, code), this.min, this.max, this.R, this.L, this.m); }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= this.maxcode; }
}

// The Bounded modes: endpoints (L = 2**b - 1), bins (L = 2**b), midpoint (endpoints' rule with
// L = 2**b - 2, so the middle code L / 2 decodes to exactly the centre; 2**b - 1 is not a code).
const M_ENDPOINTS = 0, M_BINS = 1, M_MIDPOINT = 2;
const MODE = { endpoints: M_ENDPOINTS, bins: M_BINS, midpoint: M_MIDPOINT };
function modeL(mode, b) { return mode === 'bins' ? 2 ** b : mode === 'midpoint' ? 2 ** b - 2 : 2 ** b - 1; }
function boundedQt(t, L, mode) {
  if (mode !== M_BINS) {
    t = t > 0.0 ? t : 0.0;
    t = t < 1.0 ? t : 1.0;
    return t * L + 0.5;
  }
  t = t * L;
  t = t > 0.0 ? t : 0.0;
  return t < L ? t : L - 1.0;
}
function boundedDq(cd, lo, hi, R, L, mode) {
  if (mode !== M_BINS) {
    if (cd === 0) return lo;
    if (cd === L) return hi;
    if (mode === M_MIDPOINT && cd + cd === L) return (lo + hi) * 0.5;
    return lo + (cd * R) / L;
  }
  return lo + ((cd + 0.5) * R) / L;
}

/** A valid code as a number (throws DecodeError otherwise). */
function checkedNumber(codec, code) {
  if (!codec.valid(code)) throw new DecodeError(`${codec}: code ${code} is not a valid code`);
  return Number(code);
}
function checkedInt(codec, code) {
  if (!codec.valid(code)) throw new DecodeError(`${codec}: code ${code} is not a valid code`);
  return intCode(code);
}

export class Fixed extends Codec {
  constructor(step, bits, { signed = true, offset = 0.0 } = {}) {
    super();
    const st = floatParam('Fixed', 'step', step);
    if (st <= 0) throw new SchemaError(`Fixed: step must be positive, got ${pyRepr(st)}`);
    const b = intParam('Fixed', 'bits', bits, 1, 64);
    const off = floatParam('Fixed', 'offset', offset);
    if (typeof signed !== 'boolean') throw new SchemaError(`Fixed: signed must be True or False, got ${show(signed)}`);
    const ends = signed ? [-(B2[b - 1]), B2[b - 1] - 1n] : [0n, B2[b] - 1n];
    for (const ec of ends) {
      if (!Number.isFinite(off + Number(ec) * st)) throw new SchemaError(`Fixed: code ${ec} would decode to a non-finite value (offset + code * step overflows), got step=${pyRepr(st)}, bits=${b}, offset=${pyRepr(off)}`);
    }
    this.kind = 'Fixed'; this.bits = b; this.stepSize = st; this.offset = off; this.signed = signed;
    this.smin = ends[0]; this.smax = ends[1];
    this.fmin = signed ? -(2 ** (b - 1)) : 0; this.fmax = signed ? 2 ** (b - 1) : 2 ** b;
    this.cls = 'ord';
  }
  spec() { return { kind: 'Fixed', step: this.stepSize, bits: this.bits, signed: this.signed, offset: this.offset }; }
  _canon() { return { kind: 'Fixed', step: new HexFloat(this.stepSize), bits: this.bits, signed: this.signed, offset: new HexFloat(this.offset) }; }
  get step() { return this.stepSize; }
  get maxError() { return this.stepSize / 2; }
  quantize(x) {
    const v = (+x - this.offset) / this.stepSize;
    if (v !== v) return 0;
    const r = roundHalfAway(v);
    let c;
    if (r < this.fmin) c = this.smin;
    else if (r >= this.fmax) c = this.smax;
    else c = BigInt(r);
    return this.bits > 53 ? c : Number(c);
  }
  dequantize(code) { return this.offset + Number(checkedInt(this, code)) * this.stepSize; }
  valid(code) { const c = intCode(code); return c !== null && c >= this.smin && c <= this.smax; }
}

export class Angle extends Codec {
  constructor(bits, { signed = false, unit = 'rad' } = {}) {
    super();
    const b = intParam('Angle', 'bits', bits, 1, 32);
    if (unit !== 'rad' && unit !== 'deg') throw new SchemaError(`Angle: unit must be 'rad' or 'deg', got ${show(unit)}`);
    if (typeof signed !== 'boolean') throw new SchemaError(`Angle: signed must be True or False, got ${show(signed)}`);
    this.kind = 'Angle'; this.bits = b; this.signedAngle = signed; this.unit = unit;
    this.full = unit === 'rad' ? 2.0 * Math.PI : 360.0; this.L = 2 ** b; this.maxcode = 2 ** b - 1;
    this.cls = 'ord'; this.signed = false;
  }
  spec() { return { kind: 'Angle', bits: this.bits, signed: this.signedAngle, unit: this.unit }; }
  get step() { return this.full / this.L; }
  get maxError() { return this.step / 2; }
  quantize(x) {
    x = +x;
    if (!Number.isFinite(x)) return 0;
    let w = Math.abs(x) < this.full ? x : x % this.full;      // % is C's fmod
    if (w < 0.0) w = w + this.full;
    return Math.trunc(w / this.full * this.L + 0.5) % this.L;
  }
  dequantize(code) {
    let c = checkedNumber(this, code);
    if (this.signedAngle && c > Math.floor(this.maxcode / 2)) c = c - this.maxcode - 1;
    return (c * this.full) / this.L;
  }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= this.maxcode; }
}

export class PowerCurve extends Codec {
  constructor(max, pow, bits) {
    super();
    const m = floatParam('PowerCurve', 'max', max), p = floatParam('PowerCurve', 'pow', pow);
    const b = intParam('PowerCurve', 'bits', bits, 2, 32);
    if (m <= 0) throw new SchemaError(`PowerCurve: max must be positive, got ${pyRepr(m)}`);
    if (p < 1) throw new SchemaError(`PowerCurve: pow must be at least 1, got ${pyRepr(p)}`);
    this.kind = 'PowerCurve'; this.bits = b; this.max = m; this.pow = p; this.invPow = 1.0 / p;
    this.L = 2 ** (b - 1) - 1; this.maxcode = 2 ** b - 1; this.half = 2 ** (b - 1);
    this.cls = 'smag'; this.signed = false;
  }
  spec() { return { kind: 'PowerCurve', max: this.max, pow: this.pow, bits: this.bits }; }
  _canon() { return { kind: 'PowerCurve', max: new HexFloat(this.max), pow: new HexFloat(this.pow), bits: this.bits }; }
  get step() { const L = this.L; return this.max * (1.0 - ((L - 1.0) / L) ** this.pow); }
  get maxError() { const L = this.L; return this.max * (1.0 - ((L - 0.5) / L) ** this.pow); }
  quantize(x) {
    x = +x;
    let a = Math.abs(x);
    if (a !== a) return 0;
    if (a > this.max) a = this.max;
    const t = a / this.max;
    const r = this.pow === 1.0 ? t : this.pow === 2.0 ? Math.sqrt(t) : ddPow(t, this.invPow);
    const m = Math.trunc(r * this.L + 0.5);
    if (m === 0) return 0;
    return x < 0.0 ? this.half + m : m;
  }
  dequantize(code) {
    const c = checkedNumber(this, code);
    const m = c % this.half;
    if (m === 0) return 0.0;
    const r = m / this.L;
    const v = this.max * (this.pow === 1.0 ? r : this.pow === 2.0 ? r * r : ddPow(r, this.pow));
    return c >= this.half ? -v : v;
  }
  valid(code) {
    const c = intCode(code);
    if (c === null || c < 0 || c > this.maxcode) return false;
    return !(Number(c) === this.half);
  }
}

export class Half extends Codec {
  constructor() { super(); this.kind = 'Half'; this.bits = 16; this.cls = 'smag'; this.signed = false; }
  spec() { return { kind: 'Half' }; }
  get step() { return 32.0; }
  get maxError() { return 16.0; }
  quantize(x) { return halfQ(+x); }
  dequantize(code) { return halfDq(checkedNumber(this, code)); }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= 0xffff; }
}

/** NumPy's float64 -> float16 conversion (npy_halffloat.c), on the double's bits. */
function halfQ(x) {
  const [hi, lo] = dblWords(x);
  let d = (BigInt(hi) << 32n) | BigInt(lo >>> 0);
  const hSgn = Number((d & 0x8000000000000000n) >> 48n);
  let dExp = d & 0x7ff0000000000000n;
  let dSig;
  if (dExp >= 0x40f0000000000000n) {
    if (dExp === 0x7ff0000000000000n) {
      dSig = d & 0x000fffffffffffffn;
      if (dSig !== 0n) {
        let ret = 0x7c00 + Number(dSig >> 42n);
        if (ret === 0x7c00) ret += 1;
        return hSgn + ret;
      }
    }
    return hSgn + 0x7c00;
  }
  if (dExp <= 0x3f00000000000000n) {
    if (dExp < 0x3e60000000000000n) return hSgn;
    dExp >>= 52n;
    dSig = 0x0010000000000000n + (d & 0x000fffffffffffffn);
    dSig = (dSig << (dExp - 998n)) & 0xffffffffffffffffn;
    if ((dSig & 0x003fffffffffffffn) !== 0x0010000000000000n) dSig += 0x0010000000000000n;
    return hSgn + Number(dSig >> 53n);
  }
  const hExp = (dExp - 0x3f00000000000000n) >> 42n;
  dSig = d & 0x000fffffffffffffn;
  if ((dSig & 0x000007ffffffffffn) !== 0x0000020000000000n) dSig += 0x0000020000000000n;
  return hSgn + Number(hExp + (dSig >> 42n));
}
function halfDq(h) {
  const hExp = h & 0x7c00;
  const sgn = (h & 0x8000) ? 0x80000000 : 0;
  if (hExp === 0) {
    let sig = h & 0x03ff;
    if (sig === 0) return wordsDbl(sgn, 0);
    sig <<= 1;
    let e = 0;
    while ((sig & 0x0400) === 0) { sig <<= 1; e++; }
    // exponent 1023 - 15 - e, mantissa (sig & 0x3ff) << 42
    return wordsDbl((sgn | ((1023 - 15 - e) << 20) | ((sig & 0x03ff) << 10)) >>> 0, 0);
  }
  if (hExp === 0x7c00) return wordsDbl((sgn | 0x7ff00000 | ((h & 0x03ff) << 10)) >>> 0, 0);
  // ((h & 0x7fff) + 0xfc000) << 42
  return wordsDbl((sgn | (((h & 0x7fff) + 0xfc000) << 10)) >>> 0, 0);
}

export class Grid extends Codec {
  constructor(cellSize, cellBits, offsetBits) {
    super();
    const cs = floatParam('Grid', 'cell_size', cellSize);
    if (cs <= 0) throw new SchemaError(`Grid: cell_size must be positive, got ${pyRepr(cs)}`);
    const cb = intParam('Grid', 'cell_bits', cellBits, 1, 63), ob = intParam('Grid', 'offset_bits', offsetBits, 1, 63);
    if (cb + ob > 64) throw new SchemaError(`Grid: cell_bits + offset_bits must be at most 64, got ${cb} + ${ob} = ${cb + ob}`);
    for (const [ecell, eoff] of [[-(2 ** (cb - 1)), 0], [2 ** (cb - 1) - 1, 2 ** ob - 1]]) {
      if (!Number.isFinite((ecell + (eoff + 0.5) / 2 ** ob) * cs)) throw new SchemaError(`Grid: cell_size * 2**(cell_bits - 1) overflows (cell ${ecell} would decode to a non-finite value), got cell_size=${pyRepr(cs)}, cell_bits=${cb}, offset_bits=${ob}`);
    }
    this.kind = 'Grid'; this.cellSize = cs; this.cellBits = cb; this.offsetBits = ob; this.bits = cb + ob;
    this.L = 2 ** ob; this.fmin = -(2 ** (cb - 1)); this.fmax = 2 ** (cb - 1);
    this.cls = 'ord'; this.signed = false;
  }
  spec() { return { kind: 'Grid', cell_size: this.cellSize, cell_bits: this.cellBits, offset_bits: this.offsetBits }; }
  _canon() { return { kind: 'Grid', cell_size: new HexFloat(this.cellSize), cell_bits: this.cellBits, offset_bits: this.offsetBits }; }
  get step() { return this.cellSize / this.L; }
  get maxError() { return this.step / 2; }
  quantize(x) {
    const u = +x / this.cellSize;
    const ob = BigInt(this.offsetBits), cmask = BMASK[this.cellBits];
    let c;
    if (u !== u) c = 0n;
    else if (u < this.fmin) c = (BigInt(this.fmin) & cmask) << ob;
    else {
      const cell = Math.floor(u);
      if (cell >= this.fmax) c = ((BigInt(this.fmax - 1) & cmask) << ob) | BMASK[this.offsetBits];
      else {
        const t = u - cell, v = t * this.L;
        const off = v >= this.L ? BMASK[this.offsetBits] : BigInt(Math.trunc(v));
        c = ((BigInt(cell) & cmask) << ob) | off;
      }
    }
    return slotCode(this.bits, c);
  }
  dequantize(code) {
    const c = toBig(checkedInt(this, code));
    const cell = BigInt.asIntN(this.cellBits, c >> BigInt(this.offsetBits));
    const off = c & BMASK[this.offsetBits];
    return (Number(cell) + (Number(off) + 0.5) / this.L) * this.cellSize;
  }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= (this.bits > 53 ? BMASK[this.bits] : 2 ** this.bits - 1); }
}

export class UInt extends Codec {
  constructor(bits) {
    super(); this.kind = 'UInt'; this.bits = intParam('UInt', 'bits', bits, 1, 64); this.cls = 'ord'; this.signed = false;
    this.hi = this.bits > 53 ? BMASK[this.bits] : 2 ** this.bits - 1;
  }
  spec() { return { kind: 'UInt', bits: this.bits }; }
  get step() { return 1; }
  get maxError() { return 0.0; }
  quantize(x) { return exactQ(this, x, 0, this.hi); }
  dequantize(code) { return slotCode(this.bits, checkedInt(this, code)); }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= this.hi; }
}
export class Int extends Codec {
  constructor(bits) {
    super(); this.kind = 'Int'; this.bits = intParam('Int', 'bits', bits, 1, 64); this.cls = 'ord'; this.signed = true;
    this.lo = this.bits > 53 ? -B2[this.bits - 1] : -(2 ** (this.bits - 1));
    this.hi = this.bits > 53 ? B2[this.bits - 1] - 1n : 2 ** (this.bits - 1) - 1;
  }
  spec() { return { kind: 'Int', bits: this.bits }; }
  get step() { return 1; }
  get maxError() { return 0.0; }
  quantize(x) { return exactQ(this, x, this.lo, this.hi); }
  dequantize(code) { return slotCode(this.bits, checkedInt(this, code)); }
  valid(code) { const c = intCode(code); return c !== null && c >= this.lo && c <= this.hi; }
}
/** An exact integer in [lo, hi]: (hi - lo).bit_length() bits, code = value - lo (slot class
 * 'ord'); values outside are refused, codes above hi - lo are not valid. */
export class IntRange extends Codec {
  constructor(lo, hi) {
    super(); this.kind = 'IntRange'; this.cls = 'ord'; this.signed = false;
    for (const [nm, v] of [['lo', lo], ['hi', hi]]) {
      if (typeof v === 'boolean' || v instanceof JsonFloat || !isInteger(v)) throw new SchemaError(`IntRange: ${nm} must be an integer, got ${show(v)}`);
      if (toBig(v) < -B2[63] || toBig(v) >= B2[63]) throw new SchemaError(`IntRange: ${nm} must be within int64, got ${v}`);
    }
    const l = toBig(lo), h = toBig(hi);
    if (l >= h) throw new SchemaError(`IntRange: lo must be less than hi, got lo=${l}, hi=${h}`);
    if (h - l >= B2[63]) throw new SchemaError(`IntRange: hi - lo must be below 2**63, got ${h - l} (lo=${l}, hi=${h})`);
    this.loB = l; this.hiB = h; this.spanB = h - l;
    this.lo = norm(l); this.hi = norm(h);
    this.bits = this.spanB.toString(2).length;
    this.span = slotCode(this.bits, this.spanB);
  }
  spec() { return { kind: 'IntRange', lo: this.lo, hi: this.hi }; }
  toString() { return `IntRange(lo=${this.loB}, hi=${this.hiB})`; }
  get step() { return 1; }
  get maxError() { return 0.0; }
  quantize(x) {
    let v = x;
    if (typeof v === 'boolean') v = v ? 1 : 0;
    if (typeof v === 'number' && !Number.isInteger(v)) throw new ValueRangeError(`${this}: ${v} is not an integer`);
    if (typeof v !== 'number' && typeof v !== 'bigint') throw new TypeError(`IntRange: expected an integer, got ${typeof v}`);
    const b = toBig(v);
    if (b < this.loB || b > this.hiB) throw new ValueRangeError(`${this}: value ${b} outside ${this.loB}..${this.hiB}`);
    return slotCode(this.bits, b - this.loB);
  }
  /** lo + code: a number when safe, else a BigInt. */
  dequantize(code) { return norm(this.loB + toBig(checkedInt(this, code))); }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && toBig(c) <= this.spanB; }
}
function exactQ(codec, x, lo, hi) {
  let v = x;
  if (typeof v === 'boolean') v = v ? 1 : 0;
  if (typeof v === 'number' && !Number.isInteger(v)) throw new ValueRangeError(`${codec}: ${v} is not an integer`);
  if (typeof v !== 'number' && typeof v !== 'bigint') throw new TypeError(`${codec.kind}: expected an integer, got ${typeof v}`);
  if (typeof v === 'number' && !Number.isSafeInteger(v)) v = BigInt(v);
  if (v < lo || v > hi) throw new ValueRangeError(`${codec}: value ${v} outside ${lo}..${hi}`);
  return slotCode(codec.bits, v);
}
export class Bool extends Codec {
  constructor() { super(); this.kind = 'Bool'; this.bits = 1; this.cls = 'abs'; this.signed = false; }
  spec() { return { kind: 'Bool' }; }
  toString() { return 'Bool()'; }
  get step() { return 1; }
  get maxError() { return 0.0; }
  quantize(x) { return exactQ(this, x, 0, 1); }
  dequantize(code) { return checkedNumber(this, code) === 1; }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= 1; }
}
export class Enum extends Codec {
  constructor(labelsOrCount) {
    super();
    let n, labels = null;
    if (isInteger(labelsOrCount) && typeof labelsOrCount !== 'boolean') n = intParam('Enum', 'count', labelsOrCount, 1, 2 ** 32);
    else if (Array.isArray(labelsOrCount)) {
      labels = labelsOrCount.slice();
      n = labels.length;
      if (n === 0) throw new SchemaError('Enum: labels must not be empty');
      for (const l of labels) if (typeof l !== 'string') throw new SchemaError(`Enum: labels must be strings, got ${show(l)}`);
      if (new Set(labels).size !== n) {
        const dup = [...new Set(labels.filter((l, i) => labels.indexOf(l) !== i))].sort();
        throw new SchemaError(`Enum: duplicate labels ${JSON.stringify(dup)}`);
      }
    } else throw new SchemaError(`Enum: expected a list of labels or a count, got ${show(labelsOrCount)}`);
    this.kind = 'Enum'; this.n = n; this.labels = labels;
    this.bits = n <= 1 ? 0 : 32 - Math.clz32(n - 1);
    if (n > 2 ** 31) this.bits = 32;
    this.cls = 'abs'; this.signed = false;
  }
  spec() { return this.labels ? { kind: 'Enum', labels: this.labels.slice() } : { kind: 'Enum', count: this.n }; }
  toString() { return this.labels ? `Enum(${JSON.stringify(this.labels)})` : `Enum(${this.n})`; }
  get step() { return 1; }
  get maxError() { return 0.0; }
  quantize(x) {
    if (typeof x === 'string') {
      const i = this.labels ? this.labels.indexOf(x) : -1;
      if (i < 0) throw new ValueRangeError(`${this}: unknown label ${JSON.stringify(x)}`);
      return i;
    }
    if (typeof x === 'number' && Number.isInteger(x)) {
      if (x >= 0 && x < this.n) return x;
      throw new ValueRangeError(`${this}: index ${x} outside 0..${this.n - 1}`);
    }
    throw new TypeError(`Enum: expected a label or an index, got ${typeof x}`);
  }
  /** The label (the index for Enum(n)). */
  dequantize(code) { const c = checkedNumber(this, code); return this.labels ? this.labels[c] : c; }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= this.n - 1; }
}

export class Quat extends Codec {
  constructor(bits = 9, mode = 'endpoints') {
    super();
    const b = intParam('Quat', 'bits', bits, 2, 20);
    if (mode !== 'endpoints' && mode !== 'bins' && mode !== 'midpoint') throw new SchemaError(`Quat: mode must be 'endpoints', 'bins' or 'midpoint', got ${show(mode)}`);
    this.kind = 'Quat'; this.componentBits = b; this.cbits = b; this.bits = 2 + 3 * b; this.mode = mode;
    this.lo = -SQRT1_2; this.hi = SQRT1_2; this.R = SQRT1_2 - (-SQRT1_2);
    this.L = modeL(mode, b); this.m = MODE[mode];
    this.top = mode === 'midpoint' ? 2 ** b - 2 : 2 ** b - 1;   // the top component code (the remap's mirror)
    this.st = this.R / this.L; this.cls = 'quat'; this.signed = false; this.cmask = 2 ** b - 1;
  }
  get isScalar() { return false; }
  spec() { return { kind: 'Quat', bits: this.componentBits, mode: this.mode }; }
  get step() { return this.R / this.L; }
  /** (x, y, z, w) -> code. ValueRangeError for a zero or non-finite quaternion. */
  quantize(q) {
    let [x0, x1, x2, x3] = Array.from(q, Number);
    if (!(Number.isFinite(x0) && Number.isFinite(x1) && Number.isFinite(x2) && Number.isFinite(x3))) throw new ValueRangeError('Quat.quantize: non-finite quaternion');
    if (x0 === 0 && x1 === 0 && x2 === 0 && x3 === 0) throw new ValueRangeError('Quat.quantize: zero quaternion');
    let m = Math.abs(x0) > 0.0 ? Math.abs(x0) : 0.0;
    m = Math.abs(x1) > m ? Math.abs(x1) : m;
    m = Math.abs(x2) > m ? Math.abs(x2) : m;
    m = Math.abs(x3) > m ? Math.abs(x3) : m;
    x0 = x0 / m; x1 = x1 / m; x2 = x2 / m; x3 = x3 / m;
    const n = Math.sqrt(((x0 * x0 + x1 * x1) + x2 * x2) + x3 * x3);
    x0 = x0 / n; x1 = x1 / n; x2 = x2 / n; x3 = x3 / n;
    let best = Math.abs(x0), big = x0, a = x1, b = x2, c = x3, idx = 0;
    if (Math.abs(x1) > best) { best = Math.abs(x1); big = x1; a = x0; idx = 1; }
    if (Math.abs(x2) > best) { best = Math.abs(x2); big = x2; a = x0; b = x1; idx = 2; }
    if (Math.abs(x3) > best) { big = x3; a = x0; b = x1; c = x2; idx = 3; }
    if (big < 0.0) { a = -a; b = -b; c = -c; }
    const q3 = (v) => Math.trunc(boundedQt((v - this.lo) / this.R, this.L, this.m));
    return this.pack(idx, q3(a), q3(b), q3(c));
  }
  pack(idx, a, b, c) {
    const cb = this.cbits;
    if (this.bits > 53) return (((((BigInt(idx) << BigInt(cb)) | BigInt(a)) << BigInt(cb)) | BigInt(b)) << BigInt(cb)) | BigInt(c);
    return ((idx * P2[cb] + a) * P2[cb] + b) * P2[cb] + c;
  }
  /** [index, a, b, c] of a code (number or BigInt). */
  unpack(code) {
    const cb = this.cbits;
    if (typeof code === 'bigint') {
      const m = BMASK[cb];
      return [Number(code >> BigInt(3 * cb)), Number((code >> BigInt(2 * cb)) & m), Number((code >> BigInt(cb)) & m), Number(code & m)];
    }
    return [Math.floor(code / P2[3 * cb]), Math.floor(code / P2[2 * cb]) % P2[cb], Math.floor(code / P2[cb]) % P2[cb], code % P2[cb]];
  }
  kept(k) { return boundedDq(k, this.lo, this.hi, this.R, this.L, this.m); }
  /** code -> [x, y, z, w]. */
  dequantize(code) {
    if (!this.valid(code)) throw new DecodeError(`${this}: code ${code} is not a valid code`);
    const [idx, ka, kb, kc] = this.unpack(intCode(code));
    return quatRebuild(idx, this.kept(ka), this.kept(kb), this.kept(kc));
  }
  validParts(ka, kb, kc) {
    if (ka > this.top || kb > this.top || kc > this.top) return false;    // midpoint: 2**b - 1 is no level
    const st = this.st;
    const sh = (x) => { x = Math.abs(x) - st; return x < 0.0 ? 0.0 : x; };
    const a = sh(this.kept(ka)), b = sh(this.kept(kb)), c = sh(this.kept(kc));
    const s = (a * a + b * b) + c * c;
    let big = c > 0.0 ? c : 0.0;
    big = b > big ? b : big;
    big = a > big ? a : big;
    return !(s > 1.0) && Math.sqrt(1.0 - s) >= big;
  }
  valid(code) {
    const c = intCode(code);
    if (c === null || c < 0 || c > (this.bits > 53 ? BMASK[this.bits] : 2 ** this.bits - 1)) return false;
    const [, ka, kb, kc] = this.unpack(c);
    return this.validParts(ka, kb, kc);
  }
}
function quatRebuild(idx, a, b, c) {
  const s = (a * a + b * b) + c * c;
  const w = Math.sqrt(1.0 - s > 0.0 ? 1.0 - s : 0.0);
  let q;
  if (idx === 0) q = [w, a, b, c];
  else if (idx === 1) q = [a, w, b, c];
  else if (idx === 2) q = [a, b, w, c];
  else q = [a, b, c, w];
  const n = Math.sqrt(((q[0] * q[0] + q[1] * q[1]) + q[2] * q[2]) + q[3] * q[3]);
  return [q[0] / n, q[1] / n, q[2] / n, q[3] / n];
}

export class UnitVector extends Codec {
  constructor(bits) {
    super();
    const b = intParam('UnitVector', 'bits', bits, 2, 32);
    this.kind = 'UnitVector'; this.componentBits = b; this.cbits = b; this.bits = 2 * b;
    this.L = 2 ** b - 1; this.cls = 'uvec'; this.signed = false;
  }
  get isScalar() { return false; }
  spec() { return { kind: 'UnitVector', bits: this.componentBits }; }
  get step() { return 2.0 / this.L; }
  /** (x, y, z) -> code. ValueRangeError for a zero or non-finite vector. */
  quantize(v) {
    let [x, y, z] = Array.from(v, Number);
    if (!(Number.isFinite(x) && Number.isFinite(y) && Number.isFinite(z))) throw new ValueRangeError('UnitVector.quantize: non-finite vector');
    if (x === 0 && y === 0 && z === 0) throw new ValueRangeError('UnitVector.quantize: zero vector');
    let m = Math.abs(x);
    m = Math.abs(y) > m ? Math.abs(y) : m;
    m = Math.abs(z) > m ? Math.abs(z) : m;
    x = x / m; y = y / m; z = z / m;
    const s = (Math.abs(x) + Math.abs(y)) + Math.abs(z);
    let p = x / s, q = y / s;
    if (z < 0.0) {
      const p2 = (1.0 - Math.abs(q)) * (p >= 0.0 ? 1.0 : -1.0);
      const q2 = (1.0 - Math.abs(p)) * (q >= 0.0 ? 1.0 : -1.0);
      p = p2; q = q2;
    }
    const kp = Math.trunc(boundedQt((p - -1.0) / 2.0, this.L, M_ENDPOINTS));
    const kq = Math.trunc(boundedQt((q - -1.0) / 2.0, this.L, M_ENDPOINTS));
    if (this.bits > 53) return (BigInt(kp) << BigInt(this.cbits)) | BigInt(kq);
    return kp * P2[this.cbits] + kq;
  }
  dequantize(code) {
    if (!this.valid(code)) throw new DecodeError(`${this}: code ${code} is not a valid code`);
    const c = intCode(code);
    let kp, kq;
    if (typeof c === 'bigint') { kp = Number(c >> BigInt(this.cbits)); kq = Number(c & BMASK[this.cbits]); } else { kp = Math.floor(c / P2[this.cbits]); kq = c % P2[this.cbits]; }
    let p = boundedDq(kp, -1.0, 1.0, 2.0, this.L, M_ENDPOINTS), q = boundedDq(kq, -1.0, 1.0, 2.0, this.L, M_ENDPOINTS);
    const z = (1.0 - Math.abs(p)) - Math.abs(q);
    if (z < 0.0) {
      const p2 = (1.0 - Math.abs(q)) * (p >= 0.0 ? 1.0 : -1.0);
      const q2 = (1.0 - Math.abs(p)) * (q >= 0.0 ? 1.0 : -1.0);
      p = p2; q = q2;
    }
    const n = Math.sqrt((p * p + q * q) + z * z);
    return [p / n, q / n, z / n];
  }
  valid(code) { const c = intCode(code); return c !== null && c >= 0 && c <= (this.bits > 53 ? BMASK[this.bits] : 2 ** this.bits - 1); }
}

export class Vector extends Codec {
  constructor(...codecs) {
    super();
    if (codecs.length === 1 && Array.isArray(codecs[0])) codecs = codecs[0];
    if (!codecs.length) throw new SchemaError('Vector: needs at least one component codec');
    codecs.forEach((c, i) => { if (!(c instanceof Codec) || !c.isScalar || c instanceof Vector || c instanceof NearlyZero) throw new SchemaError(`Vector: component ${i} must be a scalar codec, got ${c}`); });
    const signed = codecs.some((c) => c.signed);
    if (signed && codecs.some((c) => !c.signed && c.bits === 64 && (c.kind === 'UInt' || c.kind === 'Grid' || c.kind === 'Fixed'))) {
      throw new SchemaError('Vector: a 64-bit unsigned component cannot share one code array with signed components; use separate fields');
    }
    this.kind = 'Vector'; this.codecs = codecs; this.bits = codecs.reduce((s, c) => s + c.bits, 0);
  }
  get isScalar() { return false; }
  spec() { return { kind: 'Vector', codecs: this.codecs.map((c) => c.spec()) }; }
  _canon() { return { kind: 'Vector', codecs: this.codecs.map((c) => c._canon()) }; }
  toString() { return `Vector(${this.codecs.join(', ')})`; }
  quantize(x) { return this.codecs.map((c, i) => c.quantize(x[i])); }
  dequantize(code) {
    if (!this.valid(code)) throw new DecodeError(`${this}: code ${show(code)} is not a valid code`);
    return this.codecs.map((c, i) => c.dequantize(code[i]));
  }
  valid(code) { return Array.isArray(code) && code.length === this.codecs.length && this.codecs.every((c, i) => c.valid(code[i])); }
}

export class NearlyZero extends Codec {
  constructor(inner, threshold) {
    super();
    if (!(inner instanceof Codec) || inner instanceof NearlyZero || inner instanceof Quat || inner instanceof UnitVector) throw new SchemaError(`NearlyZero: inner must be a scalar codec or a Vector, got ${inner}`);
    const t = floatParam('NearlyZero', 'threshold', threshold);
    if (t < 0) throw new SchemaError(`NearlyZero: threshold must be non-negative, got ${pyRepr(t)}`);
    this.kind = 'NearlyZero'; this.inner = inner; this.threshold = t; this.bits = 1 + inner.bits;
    this.isVec = inner instanceof Vector; this.k = this.isVec ? inner.codecs.length : 1;
  }
  get isScalar() { return false; }
  spec() { return { kind: 'NearlyZero', inner: this.inner.spec(), threshold: this.threshold }; }
  _canon() { return { kind: 'NearlyZero', inner: this.inner._canon(), threshold: new HexFloat(this.threshold) }; }
  toString() { return `NearlyZero(${this.inner}, threshold=${pyRepr(this.threshold)})`; }
  /** value -> [flag, inner code] (inner all zeros when the flag is 0). */
  quantize(x) {
    const vals = this.isVec ? Array.from(x, Number) : [Number(x)];
    if (vals.every((v) => Math.abs(v) <= this.threshold)) return [0, this.isVec ? vals.map(() => 0) : 0];
    return [1, this.inner.quantize(x)];
  }
  dequantize(code) {
    if (!this.valid(code)) throw new DecodeError(`${this}: code ${show(code)} is not a valid code`);
    if (Number(code[0]) === 0) return this.isVec ? new Array(this.k).fill(0.0) : 0.0;
    return this.inner.dequantize(code[1]);
  }
  valid(code) {
    if (!Array.isArray(code) || code.length !== 2) return false;
    const f = intCode(code[0]);
    if (f === null || (f != 0 && f != 1)) return false;
    if (f == 0) {
      if (this.isVec) return Array.isArray(code[1]) && code[1].length === this.k && code[1].every((v) => intCode(v) !== null && v == 0);
      return intCode(code[1]) !== null && code[1] == 0;
    }
    return this.inner.valid(code[1]);
  }
}

const NOT_SCALAR = ['Vector', 'NearlyZero', 'Quat', 'UnitVector'];
function nestedKind(spec) { return spec && typeof spec === 'object' && !Array.isArray(spec) ? spec.kind : undefined; }

/** A codec from its spec (as codec.spec() / the schema JSON writes it). */
export function codecFromSpec(spec) {
  if (spec instanceof Codec) return spec;
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new SchemaError(`codec spec must be a dict, got ${Array.isArray(spec) ? 'list' : typeof spec}`);
  const d = { ...spec };
  const kind = d.kind;
  delete d.kind;
  if (!(kind in KIND_CODES)) throw new SchemaError(`unknown codec kind ${show(kind)}; expected one of ${Object.keys(KIND_CODES).join(', ')}`);
  const take = (key, dflt) => {
    if (key in d) { const v = d[key]; delete d[key]; return v; }
    if (dflt === undefined) throw new SchemaError(`${kind} spec is missing '${key}'`);
    return dflt;
  };
  const done = () => {
    const extra = Object.keys(d).sort();
    if (extra.length) throw new SchemaError(`${kind} spec has unknown keys ${JSON.stringify(extra)}`);
  };
  let c;
  switch (kind) {
    case 'Bounded': { const mn = take('min'), mx = take('max'), b = take('bits'), mode = take('mode', 'endpoints'); done(); c = new Bounded(mn, mx, b, mode); break; }
    case 'Fixed': { const st = take('step'), b = take('bits'), signed = take('signed', true), off = take('offset', 0.0); done(); c = new Fixed(st, b, { signed, offset: off }); break; }
    case 'Angle': { const b = take('bits'), signed = take('signed', false), unit = take('unit', 'rad'); done(); c = new Angle(b, { signed, unit }); break; }
    case 'PowerCurve': { const mx = take('max'), p = take('pow'), b = take('bits'); done(); c = new PowerCurve(mx, p, b); break; }
    case 'Half': done(); c = new Half(); break;
    case 'UInt': { const b = take('bits'); done(); c = new UInt(b); break; }
    case 'Int': { const b = take('bits'); done(); c = new Int(b); break; }
    case 'IntRange': { const l = take('lo'), h = take('hi'); done(); c = new IntRange(l, h); break; }
    case 'Bool': done(); c = new Bool(); break;
    case 'Enum': { const v = 'labels' in d ? take('labels') : take('count'); done(); c = new Enum(v); break; }
    case 'Quat': { const b = take('bits', 9), mode = take('mode', 'endpoints'); done(); c = new Quat(b, mode); break; }
    case 'UnitVector': { const b = take('bits'); done(); c = new UnitVector(b); break; }
    case 'Grid': { const cs = take('cell_size'), cb = take('cell_bits'), ob = take('offset_bits'); done(); c = new Grid(cs, cb, ob); break; }
    case 'Vector': {
      const codecs = take('codecs'); done();
      if (!Array.isArray(codecs)) throw new SchemaError(`Vector: codecs must be a list of codec specs, got ${typeof codecs}`);
      codecs.forEach((s, i) => { const k = nestedKind(s); if (NOT_SCALAR.includes(k)) throw new SchemaError(`Vector: component ${i} must be a scalar codec, got a ${k} spec`); });
      c = new Vector(codecs.map(codecFromSpec));
      break;
    }
    case 'NearlyZero': {
      const k = nestedKind(d.inner);
      if (NOT_SCALAR.includes(k) && k !== 'Vector') throw new SchemaError(`NearlyZero: inner must be a scalar codec or a Vector, got a ${k} spec`);
      const inner = codecFromSpec(take('inner'));
      const t = take('threshold'); done();
      c = new NearlyZero(inner, t);
      break;
    }
  }
  return c;
}

// ------------------------------------------------------------------------------------------------
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

// ------------------------------------------------------------------------------------------------
// Schema

const ID_RE = /^[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*$/u;

/** One slot of the schema's layout (wire-format section 2). */
class Slot {
  constructor(index, cls, bits, field, span, cbits, signed, codec, path) {
    Object.assign(this, { index, cls, bits, field, span, cbits, signed, codec, path });
    this.wide = bits > 53;
  }
}

export class Schema {
  /**
   * new Schema(name, fields, {version}) with fields a list of [name, codec] pairs, of
   * {name, codec} tables, or an object {name: codec} (codecs or spec objects).
   */
  constructor(name, fields, { version = 1 } = {}) {
    if (typeof name !== 'string' || !name) throw new SchemaError(`schema name must be a non-empty string, got ${show(name)}`);
    if (typeof version === 'boolean' || version instanceof JsonFloat || !isInteger(version) || version < 0) throw new SchemaError(`schema version must be a non-negative integer, got ${show(version)}`);
    let items;
    if (Array.isArray(fields)) {
      items = fields.map((item, i) => {
        if (item && typeof item === 'object' && !Array.isArray(item) && !(item instanceof Codec)) {
          const keys = Object.keys(item);
          const extra = keys.filter((k) => k !== 'name' && k !== 'codec');
          if (extra.length || !('name' in item) || !('codec' in item)) throw new SchemaError(`field ${i}: expected keys 'name' and 'codec', got ${JSON.stringify(keys.sort())}`);
          return [item.name, item.codec];
        }
        if (Array.isArray(item) && item.length === 2) return [item[0], item[1]];
        throw new SchemaError(`field ${i}: expected a (name, codec) pair, got ${show(item)}`);
      });
    } else if (fields && typeof fields === 'object') items = Object.entries(fields);
    else throw new SchemaError(`fields must be a dict or a list of (name, codec) pairs, got ${typeof fields}`);
    if (!items.length) throw new SchemaError('a schema needs at least one field');
    const seen = new Set();
    this.fields = items.map(([fname, codec]) => {
      if (typeof fname !== 'string' || !ID_RE.test(fname)) throw new SchemaError(`field names must be identifiers (letters, digits and _, not starting with a digit), got ${show(fname)}`);
      if (seen.has(fname)) throw new SchemaError(`duplicate field name '${fname}'`);
      seen.add(fname);
      if (!(codec instanceof Codec)) {
        if (!codec || typeof codec !== 'object' || Array.isArray(codec)) throw new SchemaError(`field '${fname}': expected a codec (or a codec spec dict), got ${show(codec)}`);
        try { codec = codecFromSpec(codec); } catch (e) { if (e instanceof SchemaError) throw new SchemaError(`field '${fname}': ${e.message}`); throw e; }
      }
      return { name: fname, codec };
    });
    this.name = name;
    this.version = norm(toBig(version));
    this.names = this.fields.map((f) => f.name);
    this.canonicalJson = canonJson({ name, version: this.version, fields: this.fields.map((f) => ({ name: f.name, codec: f.codec._canon() })) });
    this.fingerprint = toHex(sha256(asciiBytes(this.canonicalJson))).slice(0, 16);
    this._layout();
  }

  static fromSpec(spec) {
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new SchemaError(`schema spec must be a dict, got ${typeof spec}`);
    const extra = Object.keys(spec).filter((k) => !['name', 'version', 'fields'].includes(k)).sort();
    if (extra.length) throw new SchemaError(`schema spec has unknown keys ${JSON.stringify(extra)} (expected name, version, fields)`);
    for (const k of ['name', 'fields']) if (!(k in spec)) throw new SchemaError(`schema spec is missing '${k}'`);
    return new Schema(spec.name, spec.fields, { version: 'version' in spec ? spec.version : 1 });
  }

  /** A schema from its JSON text (schema.to_json(), docs/schema-format.md). */
  static fromJSON(text) {
    let spec;
    // (a key given twice is refused, as Python refuses it: two readers must not build two schemas)
    try { spec = parseJSON(text, { tagFloats: true, noDuplicates: true }); } catch (e) { throw new SchemaError(`not a valid schema JSON document: ${e.message}`); }
    return Schema.fromSpec(spec);
  }

  spec() { return { name: this.name, version: this.version, fields: this.fields.map((f) => ({ name: f.name, codec: f.codec.spec() })) }; }

  /** Throws SchemaError unless the peer's fingerprint equals this one (case-insensitive). */
  checkFingerprint(fp) {
    if (String(fp).toLowerCase() !== this.fingerprint) throw new SchemaError(`schema fingerprint mismatch: this end has '${this.name}' version ${this.version} with fingerprint ${this.fingerprint}, the peer has ${fp}`);
  }

  _layout() {
    const slots = [];
    const fieldInfo = [];
    this.fields.forEach((f, fi) => {
      const s0 = slots.length;
      const c = f.codec;
      const scalar = (codec, path) => {
        if (codec.cls === 'quat' || codec.cls === 'uvec') slots.push(new Slot(slots.length, codec.cls, codec.bits, fi, 0, codec.cbits, false, codec, path));
        else slots.push(new Slot(slots.length, codec.cls, codec.bits, fi, 0, 0, !!codec.signed, codec, path));
      };
      const vec = (v, path) => v.codecs.forEach((cc, i) => scalar(cc, `${path}[${i}]`));
      if (c instanceof Vector) vec(c, f.name);
      else if (c instanceof NearlyZero) {
        slots.push(new Slot(slots.length, 'flag', 1, fi, c.k, 0, false, null, `${f.name}.flag`));
        if (c.isVec) vec(c.inner, f.name); else scalar(c.inner, f.name);
      } else scalar(c, f.name);
      fieldInfo.push({ index: fi, name: f.name, codec: c, s0, s1: slots.length });
    });
    this.slots = slots;
    this.fieldInfo = fieldInfo;
    this.nslots = slots.length;
    let w = 0;
    for (const s of slots) s.bigIndex = s.wide ? w++ : -1;
    this.nwide = w;
  }

  /** The slot table as [kind, bits, field, span, cbits, signed] rows (as tests/golden/snapshot/packets.json). */
  slotTable() { return this.slots.map((s) => [s.cls, s.bits, s.field, s.span, s.cbits, s.signed]); }

  get bits() { return this.fields.reduce((a, f) => a + f.codec.bits, 0); }

  // -- codes <-> slot rows ------------------------------------------------------------------

  /** A record's codes (one entry per field: a code; an array for a Vector; [flag, inner] for a
   * NearlyZero) -> the flat row of slot codes. Throws ValueRangeError for an invalid code. */
  slotsOf(codes) {
    if (!Array.isArray(codes) || codes.length !== this.fields.length) throw new ValueRangeError(`expected ${this.fields.length} field codes, got ${show(codes)}`);
    const row = [];
    this.fields.forEach((f, i) => {
      const c = f.codec, v = codes[i];
      if (!c.valid(v)) throw new ValueRangeError(`field '${f.name}': code ${show(v)} is not a valid code for ${c}`);
      if (c instanceof Vector) c.codecs.forEach((cc, j) => row.push(slotCode(cc.bits, intCode(v[j]))));
      else if (c instanceof NearlyZero) {
        row.push(Number(v[0]));
        if (c.isVec) c.inner.codecs.forEach((cc, j) => row.push(slotCode(cc.bits, intCode(v[1][j]))));
        else row.push(slotCode(c.inner.bits, intCode(v[1])));
      } else row.push(slotCode(c.bits, intCode(v)));
    });
    return row;
  }

  /** The flat row of slot codes -> the record's codes, per field. */
  codesOf(row) {
    return this.fieldInfo.map((fi) => {
      const c = fi.codec;
      if (c instanceof Vector) return row.slice(fi.s0, fi.s1);
      if (c instanceof NearlyZero) return [row[fi.s0], c.isVec ? row.slice(fi.s0 + 1, fi.s1) : row[fi.s0 + 1]];
      return row[fi.s0];
    });
  }

  /** The decoded values of a row of slot codes, as an object {field: value}. */
  valuesOf(row) {
    const out = {};
    this.fieldInfo.forEach((fi, i) => { out[fi.name] = this.fields[i].codec.dequantize(this.codesOf(row)[i]); });
    return out;
  }

  /** Quantize a record (an object with the field names, or an array in field order) -> codes per field. */
  quantize(record) {
    return this.fields.map((f, i) => {
      const v = Array.isArray(record) ? record[i] : record[f.name];
      if (v === undefined) throw new SchemaError(`missing field '${f.name}'`);
      return f.codec.quantize(v);
    });
  }

  /** codes per field -> decoded values {field: value}. */
  dequantize(codes) {
    const out = {};
    this.fields.forEach((f, i) => { out[f.name] = f.codec.dequantize(codes[i]); });
    return out;
  }

  valid(codes) {
    return Array.isArray(codes) && codes.length === this.fields.length && this.fields.every((f, i) => f.codec.valid(codes[i]));
  }

  // -- one record (wire-format section 3) ---------------------------------------------------------

  _writeRow(w, row) {
    for (let s = 0; s < this.nslots; s++) {
      const sl = this.slots[s];
      let v = row[s];
      if (sl.signed) v = sl.wide || typeof v === 'bigint' ? BigInt.asUintN(sl.bits, toBig(v)) : (v < 0 ? v + P2[sl.bits] : v);
      w.write(v, sl.bits);
      if (sl.cls === 'flag' && v === 0) s += sl.span;
    }
  }

  /** The record bytes of codes per field (padded to a byte). ValueRangeError for an invalid code. */
  encodeCodes(codes) {
    const w = new BitWriter();
    this._writeRow(w, this.slotsOf(codes));
    return w.finish();
  }

  /** Quantize and encode a record. */
  encode(record) { return this.encodeCodes(this.quantize(record)); }

  /** Read one record's slot codes at the reader's position, each checked; DecodeError naming the field and bit. */
  _readRow(r, where = '') {
    const S = this.nslots;
    const row = new Array(S);
    for (let s = 0; s < S; s++) {
      const sl = this.slots[s];
      const at = r.pos;
      if (at + sl.bits > r.nbits) {
        throw new DecodeError(`${where}field '${this.fields[sl.field].name}': message too short: the code needs ${sl.bits} bits at bit ${at}, the message has ${r.nbits} bits (${r.nbits / 8} bytes)`);
      }
      let v = sl.wide ? r.readBig(sl.bits) : r.readNum(sl.bits);
      if (sl.signed) v = sl.wide ? BigInt.asIntN(sl.bits, v) : (v >= P2[sl.bits - 1] ? v - P2[sl.bits] : v);
      if (sl.cls !== 'flag' && !sl.codec.valid(v)) throw new DecodeError(`${where}field '${this.fields[sl.field].name}': code ${v} is not valid for ${sl.codec} at bit ${at}`);
      row[s] = v;
      if (sl.cls === 'flag' && v === 0) {
        for (let t = s + 1; t <= s + sl.span; t++) row[t] = this.slots[t].wide ? 0n : 0;
        s += sl.span;
      }
    }
    return row;
  }

  /** Decode one record's bytes to its codes per field: only a canonical message (no extra bytes,
   * zero padding) is accepted; DecodeError otherwise. */
  decodeCodes(bytes) {
    const r = new BitReader(bytes);
    const row = this._readRow(r);
    const left = r.nbits - r.pos;
    if (left >= 8) throw new DecodeError(`message too long: ${bytes.length} bytes, but the record ends at bit ${r.pos} (${Math.ceil(r.pos / 8)} bytes): ${Math.floor(left / 8)} extra bytes after the last field '${this.fields[this.fields.length - 1].name}'`);
    if (r.read(left) !== 0) throw new DecodeError(`padding bits after the record are not zero (at bit ${r.pos - left})`);
    return this.codesOf(row);
  }

  /** Decode one record's bytes to its values {field: value}. */
  decode(bytes) { return this.dequantize(this.decodeCodes(bytes)); }

  /** Field summaries as a hello carries them: [{name, kind, bits, h}]. */
  summaries() {
    return this.fields.map((f) => {
      const d = sha256(asciiBytes(canonJson(f.codec._canon())));
      return { name: f.name, kind: f.codec.kind, bits: f.codec.bits, h: u32le(d, 0) };
    });
  }
}

// ------------------------------------------------------------------------------------------------
// Snapshots

const SEQ_MASK = 0xffff;
function newer(a, b) { const d = (a - b) & SEQ_MASK; return d > 0 && d < 0x8000; }
export function seqNewer(a, b) { return newer(a, b); }

/**
 * A decoded snapshot: `seq`, `ids` (ascending; numbers, BigInt from 2**53), `count`, and the slot
 * codes of each entity (`row(i)`, `code(i, slot)`), `values(i)` the decoded record.
 * Immutable: the decoder shares arrays between snapshots.
 */
export class Snapshot {
  constructor(schema, seq, ids, codes, big, ver = null) {
    this.schema = schema;
    this.ver = ver;            // row versions: equal versions mean equal rows (see PacketCoder)
    this.seq = seq;
    this.ids = ids;            // an Array (shared, do not modify)
    this.codes = codes;        // Int32Array or Float64Array(count * nslots): see PacketCoder.Codes
    this.big = big;            // Array of BigInt (count * nwide) or null
  }
  get count() { return this.ids.length; }
  /** The code of slot s of entity i. */
  code(i, s) {
    const sl = this.schema.slots[s];
    if (sl.wide) return this.big[i * this.schema.nwide + sl.bigIndex];
    const v = this.codes[i * this.schema.nslots + s];
    return (v < 0 && !sl.signed) ? v + 4294967296 : v;      // (an Int32Array holds 32-bit codes wrapped)
  }
  /** The slot codes of entity i. */
  row(i) {
    const S = this.schema.nslots, out = new Array(S);
    for (let s = 0; s < S; s++) out[s] = this.code(i, s);
    return out;
  }
  rows() { const out = []; for (let i = 0; i < this.ids.length; i++) out.push(this.row(i)); return out; }
  /** The index of entity `id`, or -1. */
  indexOf(id) {
    let lo = 0, hi = this.ids.length - 1;
    while (lo <= hi) {
      const m = (lo + hi) >> 1, v = this.ids[m];
      if (v === id || v == id) return m;       // (== compares a number with a BigInt exactly)
      if (v < id) lo = m + 1; else hi = m - 1;
    }
    return -1;
  }
  /** The codes of entity i per field (as Schema.codesOf). */
  fieldCodes(i) { return this.schema.codesOf(this.row(i)); }
  /** The decoded record of entity i: {field: value}. */
  values(i) { return this.schema.dequantize(this.fieldCodes(i)); }
  /** Whether two snapshots hold the same ids and codes. */
  sameAs(o) {
    const n = this.ids.length;
    if (n !== o.ids.length) return false;
    if (this.ids !== o.ids) for (let i = 0; i < n; i++) if (this.ids[i] !== o.ids[i]) return false;
    const a = this.codes, b = o.codes, S = this.schema.nslots, W = this.schema.nwide;
    const va = this.ver, vb = o.ver;
    for (let i = 0; i < n; i++) {
      if (va !== null && vb !== null && va[i] === vb[i]) continue;      // one lineage: equal rows
      for (let t = i * S; t < (i + 1) * S; t++) if (a[t] !== b[t]) return false;
      if (W) for (let t = i * W; t < (i + 1) * W; t++) if (this.big[t] !== o.big[t]) return false;
    }
    return true;
  }
  /** The runner's line: {"seq":S,"ids":[...],"codes":[[...],...]}. */
  toJSONLine() {
    const S = this.schema.nslots;
    const rows = [];
    for (let i = 0; i < this.ids.length; i++) {
      const r = new Array(S);
      for (let s = 0; s < S; s++) r[s] = String(this.code(i, s));
      rows.push('[' + r.join(',') + ']');
    }
    return `{"seq":${this.seq},"ids":[${this.ids.map(String).join(',')}],"codes":[${rows.join(',')}]}`;
  }
}

// The delta decoder of one packet (sections 6-7), with the schema's tables.
const C_FLAG = 0, C_ORD = 1, C_SMAG = 2, C_QUAT = 3, C_UVEC = 4, C_ABS = 5;
const CLS = { flag: C_FLAG, ord: C_ORD, smag: C_SMAG, quat: C_QUAT, uvec: C_UVEC, abs: C_ABS };

/** The extrapolated reference of a component of width b <= 32 (section 7.3): B + t mod 2**b. */
function extrapolate(B, P, b, num, den) {
  let s = B - P;
  s = b === 32 ? (s | 0) : ((s << (32 - b)) >> (32 - b));
  let t;
  if (den === 1) t = s * num;
  else if (s >= 0) t = Math.floor((2 * s * num + den) / (2 * den));
  else t = -Math.floor((2 * -s * num + den) / (2 * den));
  // (B + t is an integer below 2**53 in magnitude: ToInt32 takes it mod 2**32 exactly)
  return b === 32 ? ((B + t) >>> 0) : (((B + t) & (P2[b] - 1)) >>> 0);
}

/** (ref + unzigzag(u)) mod 2**b, for b <= 32. */
function addZz(ref, u, b) {
  if (b < 32) return (ref + ((u >>> 1) ^ -(u & 1))) & ((1 << b) - 1) & 0x7fffffff;   // u < 2**31
  const d = (u & 1) ? -((u - 1) / 2) - 1 : u / 2;
  return (ref + d) >>> 0;
}

// Row versions: every row a packet decodes (a new entity, a changed one) gets a new number; a
// row copied unchanged from the baseline keeps the baseline's. Equal versions therefore mean
// equal rows, which spares comparing them (the contexts of 7.3, duplicates).
let ROW_VERSION = 0;

class PacketCoder {
  constructor(schema) {
    this.schema = schema;
    const S = this.S = schema.nslots;
    this.W = schema.nwide;
    this.slots = schema.slots;
    this.cls = Int8Array.from(schema.slots.map((s) => CLS[s.cls]));
    this.sbits = Int32Array.from(schema.slots.map((s) => s.bits));
    // components
    const comps = [];
    schema.slots.forEach((s, i) => {
      if (s.cls === 'ord' || s.cls === 'smag') comps.push({ slot: i, shift: 0, b: s.bits, smag: s.cls === 'smag' });
      else if (s.cls === 'quat') for (const sh of [2 * s.cbits, s.cbits, 0]) comps.push({ slot: i, shift: sh, b: s.cbits, smag: false });
      else if (s.cls === 'uvec') for (const sh of [s.cbits, 0]) comps.push({ slot: i, shift: sh, b: s.cbits, smag: false });
    });
    comps.forEach((c) => { c.pred = c.b <= 32; });
    this.comps = comps;
    this.slotComp0 = new Int32Array(S).fill(-1);
    comps.forEach((c, i) => { if (this.slotComp0[c.slot] < 0) this.slotComp0[c.slot] = i; });
    this.fields = schema.fieldInfo.map((fi) => {
      const cs = comps.map((c, i) => i).filter((i) => schema.slots[comps[i].slot].field === fi.index);
      const one = fi.s1 - fi.s0 === 1 ? schema.slots[fi.s0] : null;
      return {
        s0: fi.s0, s1: fi.s1, c0: cs.length ? cs[0] : 0, c1: cs.length ? cs[cs.length - 1] + 1 : 0,
        implied: fi.codec instanceof NearlyZero,
        flip: !!one && one.cls === 'abs' && one.bits === 1,
      };
    });
    this.F = this.fields.length;
    this.kk = new Int32Array(comps.length);
    this.scratch = {};         // reusable buffers, grown as needed (a coder decodes one packet at a time)
    this.joinWith = null;      // a held snapshot whose equal rows a full packet's rows join (row versions)
    this.limit = null;         // (N) => void, throws DecodeError('limits'): section 19's check 2
    // Codes of schemas whose slots all have at most 32 bits are held in an Int32Array (the code's
    // low 32 bits: an unsigned code from 2**31 reads back negative, see Snapshot.code), others in a
    // Float64Array (exact up to 53 bits; wider slots in BigInt beside it).
    this.narrow = schema.slots.every((sl) => sl.bits <= 32);
    this.Codes = this.narrow ? Int32Array : Float64Array;
    this.pp = new Uint8Array(comps.length);
    this.slotValid = schema.slots.map((s) => (s.cls === 'flag' ? null : allValid(s.codec) ? null : s.codec));
    // numeric tables for the fast path (fields without wide slots or components over 32 bits)
    this.vkind = new Int8Array(S);          // 0 every code valid, 1 PowerCurve, 2 Enum or midpoint Bounded (a top code), 3 Quat
    this.vlim = new Float64Array(S);        // PowerCurve: the negative zero code; Enum: n - 1; Bounded: its top code
    this.signedS = new Uint8Array(S);
    this.cbitsS = new Int32Array(S);
    this.qtopS = new Float64Array(S);       // Quat: the mode's top component code (the remap's mirror)
    this.qshrunk = new Array(S).fill(null); // Quat: each component code's value shrunk by a step
    schema.slots.forEach((sl, i) => {
      this.signedS[i] = sl.signed ? 1 : 0;
      this.cbitsS[i] = sl.cbits;
      if (sl.codec && sl.codec.kind === 'Quat') this.qtopS[i] = sl.codec.top;
      const c = sl.codec;
      if (!c || allValid(c)) return;
      if (c.kind === 'PowerCurve') { this.vkind[i] = 1; this.vlim[i] = c.half; }
      else if (c.kind === 'Enum') { this.vkind[i] = 2; this.vlim[i] = c.n - 1; }
      else if (c.kind === 'Bounded') { this.vkind[i] = 2; this.vlim[i] = c.maxcode; }   // midpoint
      else if (c.kind === 'Quat') {
        this.vkind[i] = 3;
        if (c.cbits <= 16) {
          const t = new Float64Array(2 ** c.cbits);
          // a code above the mode's top (midpoint: 2**b - 1) is no level: 2.0 fails every test
          for (let k = 0; k < t.length; k++) { const x = Math.abs(c.kept(k)) - c.st; t[k] = k > c.top ? 2.0 : x < 0.0 ? 0.0 : x; }
          this.qshrunk[i] = t;
        }
      }
    });
    this.cb = Int32Array.from(comps.map((c) => c.b));
    this.E = new Int32Array(comps.length);
    this.fields.forEach((fd) => {
      fd.fast = true;
      for (let t = fd.s0; t < fd.s1; t++) if (schema.slots[t].wide) fd.fast = false;
      for (let c = fd.c0; c < fd.c1; c++) if (comps[c].b > 32) fd.fast = false;
    });
    this.allFast = this.fields.every((fd) => fd.fast);
  }

  /** A reusable typed array of at least n elements (contents undefined). */
  buf(name, n, Type) {
    let b = this.scratch[name];
    if (b === undefined || b.length < n) { b = new Type(Math.max(n, 64, b ? 2 * b.length : 0)); this.scratch[name] = b; }
    return b;
  }

  /** A SET(M) (section 4) -> the ascending members, in `out` (Int32Array of room M); returns the count. */
  readSet(r, M, out) {
    const mode = r.read(2);
    if (mode === 0) return 0;
    const cb = 32 - Math.clz32(M - 1);
    if (mode === 1 || mode === 2) {
      const cnt = r.read(cb) + (mode === 1 ? 1 : 0);
      if (cnt > M || (mode === 2 && cnt === M)) throw new DecodeError('snapshot packet: a set count above its range');
      if (mode === 1) { this.readList(r, out, 0, cnt, M); return cnt; }
      if (cnt === 0) { for (let i = 0; i < M; i++) out[i] = i; return M; }
      const tmp = this.buf('setTmp', cnt, Int32Array);
      this.readList(r, tmp, 0, cnt, M);
      let j = 0, n = 0;
      for (let i = 0; i < M; i++) { if (j < cnt && tmp[j] === i) { j++; continue; } out[n++] = i; }
      return n;
    }
    let n = 0;
    for (let ws = 0; ws < M; ws += 32) {
      const bits = Math.min(32, M - ws);
      let w = r.read(bits);
      while (w !== 0) { const t = ctz32(w); out[n++] = ws + t; w = (w & (w - 1)) >>> 0; }
    }
    if (n === 0) throw new DecodeError('snapshot packet: an empty bit mask set');
    return n;
  }
  readList(r, out, o, cnt, M) {
    const k = r.read(5);
    let prev = -1;
    for (let i = 0; i < cnt; i++) { prev = prev + 1 + r.rice(k, M - prev - 1); out[o + i] = prev; }
  }

  /** Read a whole record of slot codes into codes/big at row o (each code checked). */
  readRecord(r, codes, big, o) {
    const S = this.S, W = this.W, slots = this.slots;
    for (let s = 0; s < S; s++) {
      const sl = slots[s];
      if (sl.wide) {
        let v = r.readBig(sl.bits);
        if (sl.signed) v = BigInt.asIntN(sl.bits, v);
        if (this.slotValid[s] && !this.slotValid[s].valid(v)) throw new DecodeError(`snapshot packet: a new entity's code ${v} is not valid for ${sl.codec}`);
        big[o * W + sl.bigIndex] = v;
        codes[o * S + s] = 0;
        continue;
      }
      let v = sl.bits <= 32 ? r.read(sl.bits) : r.readNum(sl.bits);
      if (sl.signed && v >= P2[sl.bits - 1]) v -= P2[sl.bits];
      if (this.slotValid[s] && !this.slotValid[s].valid(v)) throw new DecodeError(`snapshot packet: a new entity's code ${v} is not valid for ${sl.codec}`);
      codes[o * S + s] = v;
      if (sl.cls === 'flag' && v === 0) {
        for (let t = s + 1; t <= s + sl.span; t++) { if (slots[t].wide) big[o * W + slots[t].bigIndex] = 0n; else codes[o * S + t] = 0; }
        s += sl.span;
      }
    }
  }

  /**
   * Decode a packet (the bytes of P, start..end of `bytes`) against base (and pred) snapshots as
   * named by its header, which the caller resolved: `lookup(seqNumber, isBaseline)` returns the
   * Snapshot or throws DecodeError('baseline'). Returns the new Snapshot; throws DecodeError.
   */
  decode(bytes, start, end, lookup) {
    const r = new BitReader(bytes, start, end, this.buf('reader', end - start + 12, Uint8Array));
    const schema = this.schema, S = this.S, W = this.W;
    const seq = r.read(16);
    let bdist = 0, pdist = 0, base = null, pred = null;
    if (r.read1()) {
      const v = r.eg(2, 16, false);
      if (v >= 0x7fff) throw new DecodeError('snapshot packet: sequence distance outside 1..32767');
      bdist = v + 1;
      if (r.read1()) {
        const w = r.eg(2, 16, false);
        if (w + 1 + bdist > 0x7fff) throw new DecodeError('snapshot packet: sequence distance outside 1..32767');
        pdist = w + 1;
      }
      base = lookup((seq - bdist) & SEQ_MASK, true);
      if (pdist) pred = lookup((seq - bdist - pdist) & SEQ_MASK, false);
    }
    const m = base ? base.ids.length : 0;
    // removed
    let removed = null, nrem = 0;
    if (base && m) {
      removed = this.buf('removed', m, Int32Array);
      nrem = this.readSet(r, m, removed);
    }
    // new entities
    const nnew = r.eg(0, 32, false);
    if (nnew > r.remaining || nnew > 0xffffffff - (m - nrem)) throw new DecodeError('snapshot packet: count of new entities larger than the packet can hold');
    // limits (section 19, check 2): here, once N = kept + n is known, before anything is allocated
    if (this.limit !== null) this.limit(m - nrem + nnew);
    let nids = null, ncodes = null, nbig = null;
    if (nnew) {
      const kid = r.read(6);
      nids = new Array(nnew);
      let prev = 0;
      for (let i = 0; i < nnew; i++) {
        let g = r.egWide(kid, 64);
        if (i) {
          if (typeof prev === 'number' && typeof g === 'number' && prev + 1 + g <= MAX_SAFE) g = prev + 1 + g;
          else {
            const v = toBig(prev) + 1n + toBig(g);
            if (v > BMASK[64]) throw new DecodeError('snapshot packet: new entity id beyond 2**64 - 1');
            g = norm(v);
          }
        }
        nids[i] = g; prev = g;
      }
      ncodes = new this.Codes(nnew * S);
      nbig = W ? new Array(nnew * W) : null;
      for (let i = 0; i < nnew; i++) this.readRecord(r, ncodes, nbig, i);
    }
    const kept = m - nrem;
    const nout = kept + nnew;
    let ids, codes, big = null, ver;
    // kept base indices, in order
    let keptIdx = null;
    if (base) {
      if (nrem) {
        keptIdx = this.buf('keptIdx', kept, Int32Array);
        let j = 0, n = 0;
        for (let i = 0; i < m; i++) { if (j < nrem && removed[j] === i) { j++; continue; } keptIdx[n++] = i; }
      }
    }
    // merge kept and new, by id
    let outOfKept = null;        // output row of each kept entity (by kept rank)
    if (base && nrem === 0 && nnew === 0) {
      ids = base.ids;
      codes = base.codes.slice();
      big = base.big ? base.big.slice() : null;
      ver = base.ver.slice();
    } else {
      ids = new Array(nout);
      codes = new this.Codes(nout * S);
      big = W ? new Array(nout * W) : null;
      ver = new Float64Array(nout);
      outOfKept = this.buf('outOfKept', kept, Int32Array);
      let a = 0, b = 0, o = 0;
      const bids = base ? base.ids : null;
      while (a < kept || b < nnew) {
        const bi = a < kept ? (keptIdx ? keptIdx[a] : a) : -1;
        if (a < kept && (b >= nnew || bids[bi] < nids[b])) {
          // a run of kept rows
          let run = 1;
          while (a + run < kept && (keptIdx ? keptIdx[a + run] === bi + run : true) && (b >= nnew || bids[bi + run] < nids[b])) run++;
          for (let t = 0; t < run; t++) { ids[o + t] = bids[bi + t]; outOfKept[a + t] = o + t; ver[o + t] = base.ver[bi + t]; }
          codes.set(base.codes.subarray(bi * S, (bi + run) * S), o * S);
          if (W) for (let t = 0; t < run * W; t++) big[o * W + t] = base.big[bi * W + t];
          a += run; o += run;
        } else {
          if (a < kept && bids[bi] === nids[b]) throw new DecodeError(`snapshot packet: entity ${nids[b]}: a new entity has the id of a kept one`);
          ids[o] = nids[b];
          ver[o] = ++ROW_VERSION;
          codes.set(ncodes.subarray(b * S, (b + 1) * S), o * S);
          if (W) for (let t = 0; t < W; t++) big[o * W + t] = nbig[b * W + t];
          b++; o++;
        }
      }
    }
    if (base) this.decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver);
    else if (this.joinWith !== null && this.joinWith.ver !== null) ids = this.joinFull(ids, codes, big, ver, this.joinWith);
    // the end: fewer than 8 bits left, all zero
    const left = r.remaining;
    if (left >= 8) throw new DecodeError('snapshot packet: unexpected data after the end of the packet');
    if (r.read(left) !== 0) throw new DecodeError('snapshot packet: padding bits are not zero');
    return new Snapshot(schema, seq, ids, codes, big, ver);
  }

  decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver) {
    if (kept === 0) return;
    const S = this.S, W = this.W, F = this.F;
    const bcodes = base.codes, bbig = base.big, bids = base.ids;
    // which kept entities changed (by kept rank)
    const chg = this.buf('chg', kept, Int32Array);
    let C = 0;
    let predRow = null;          // pred row of each kept entity (by kept rank), -1 when not in pred
    if (pred) {
      predRow = this.buf('predRow', kept, Int32Array);
      const bver = base.ver, pver = pred.ver;
      const pids = pred.ids, pn = pids.length;
      const ctx = this.buf('ctx', kept, Uint8Array);
      let j = 0, k1 = 0;
      const sameIds = pids === bids;
      for (let a = 0; a < kept; a++) {
        const bi = keptIdx ? keptIdx[a] : a;
        let pr = -1;
        if (sameIds) pr = bi;
        else {
          const id = bids[bi];
          while (j < pn && pids[j] < id) j++;
          if (j < pn && pids[j] === id) pr = j;
        }
        predRow[a] = pr;
        let c = 1;
        if (pr >= 0 && bver[bi] === pver[pr]) c = 0;        // one lineage: equal rows
        else if (pr >= 0) {
          c = 0;
          const bo = bi * S, po = pr * S, pc = pred.codes;
          for (let s = 0; s < S; s++) if (bcodes[bo + s] !== pc[po + s]) { c = 1; break; }
          if (!c && W) for (let t = 0; t < W; t++) if (bbig[bi * W + t] !== pred.big[pr * W + t]) { c = 1; break; }
        }
        ctx[a] = c;
        k1 += c;
      }
      const k0 = kept - k1;
      const cls1 = this.buf('cls1', k1, Int32Array), cls0 = this.buf('cls0', k0, Int32Array);
      for (let a = 0, i1 = 0, i0 = 0; a < kept; a++) { if (ctx[a]) cls1[i1++] = a; else cls0[i0++] = a; }
      const set1 = this.buf('set1', k1, Int32Array), set0 = this.buf('set0', k0, Int32Array);
      const m1 = k1 ? this.readSet(r, k1, set1) : 0;
      const m0 = k0 ? this.readSet(r, k0, set0) : 0;
      let a1 = 0, a0 = 0;
      while (a1 < m1 || a0 < m0) {
        if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[C++] = cls1[set1[a1++]];
        else chg[C++] = cls0[set0[a0++]];
      }
    } else {
      C = this.readSet(r, kept, chg);
    }
    if (C === 0) return;
    // which fields
    const fch = this.buf('fch', C * F, Uint8Array);
    fch.fill(0, 0, C * F);
    const any = this.buf('any', F, Uint8Array);
    any.fill(0, 0, F);
    const tmp = this.buf('fieldSet', C, Int32Array);
    for (let f = 0; f < F; f++) {
      const n = this.readSet(r, C, tmp);
      if (n) any[f] = 1;
      for (let i = 0; i < n; i++) fch[tmp[i] * F + f] = 1;
    }
    // parameters
    const kk = this.kk, pp = this.pp, comps = this.comps;
    for (let f = 0; f < F; f++) {
      if (!any[f]) continue;
      const fd = this.fields[f];
      for (let c = fd.c0; c < fd.c1; c++) {
        const cp = comps[c];
        pp[c] = (pdist && cp.pred) ? r.read1() : 0;
        const k = r.read(32 - Math.clz32(cp.b));
        if (k > cp.b) throw new DecodeError('snapshot packet: Exp-Golomb parameter above the code width');
        kk[c] = k;
        this.E[c] = ((cp.b - k + 1) >> 1) + 1;
      }
    }
    // the extrapolation ratio in lowest terms
    let num = bdist, den = pdist || 1;
    if (pdist) { let a = bdist, b = pdist; while (b) { const t = a % b; a = b; b = t; } num = bdist / a; den = pdist / a; }
    const ctx = { r, num, den, pcodes: pred ? pred.codes : null, pbig: pred ? pred.big : null };
    for (let e = 0; e < C; e++) {
      const a = chg[e];
      const bi = keptIdx ? keptIdx[a] : a;
      const oi = outOfKept ? outOfKept[a] : a;
      ver[oi] = ++ROW_VERSION;
      const pr = predRow ? predRow[a] : -1;
      if (this.allFast) {
        if (!this.readEntityFast(r, fch, e, F, bcodes, bi * S, codes, oi * S, ctx.pcodes, pr >= 0 ? pr * S : -1, num, den)) {
          throw new DecodeError(`snapshot packet: entity ${bids[bi]}: an entity marked changed has no changed field`);
        }
        if (pr >= 0) this.joinLineage(codes, big, oi, pred, pr, ver);
        continue;
      }
      let anyField = false;
      for (let f = 0; f < F; f++) {
        if (!fch[e * F + f]) continue;
        anyField = true;
        const fd = this.fields[f];
        if (!(fd.fast ? this.readFieldFast(r, fd, bcodes, bi * S, codes, oi * S, ctx.pcodes, pr >= 0 ? pr * S : -1, num, den)
          : this.readField(ctx, fd, bcodes, bbig, bi, codes, big, oi, pr))) {
          throw new DecodeError(`snapshot packet: entity ${bids[bi]}: a field marked changed is unchanged`);
        }
      }
      if (!anyField) throw new DecodeError(`snapshot packet: entity ${bids[bi]}: an entity marked changed has no changed field`);
      if (pr >= 0) this.joinLineage(codes, big, oi, pred, pr, ver);
    }
  }

  /** The rows of a full packet equal to the same entity's row in `other` (the decoder's latest)
   * take its version: a stream's first packets, all full until acks arrive, then share lineages. */
  joinFull(ids, codes, big, ver, other) {
    const S = this.S, W = this.W, oids = other.ids, oc = other.codes, n = ids.length, on = oids.length;
    let sameIds = n === on;
    for (let i = 0, j = 0; i < n; i++) {
      const id = ids[i];
      while (j < on && oids[j] < id) j++;
      if (j >= on) { sameIds = false; break; }
      if (oids[j] !== id) { sameIds = false; continue; }
      if (i !== j) sameIds = false;
      let eq = true;
      for (let s = 0; s < S; s++) if (codes[i * S + s] !== oc[j * S + s]) { eq = false; break; }
      if (eq && W) for (let t = 0; t < W; t++) if (big[i * W + t] !== other.big[j * W + t]) { eq = false; break; }
      if (eq) ver[i] = other.ver[j];
    }
    return sameIds ? oids : ids;       // (the same ids: share the array, as deltas do)
  }

  /** A changed row equal to its row in pred takes pred's version: the lineages of the snapshots
   * decoded against different baselines meet again once an entity is at rest. */
  joinLineage(codes, big, oi, pred, pr, ver) {
    const S = this.S, W = this.W, pc = pred.codes;
    for (let o = oi * S, p = pr * S, end = o + S; o < end; o++, p++) if (codes[o] !== pc[p]) return;
    if (W) for (let t = 0; t < W; t++) if (big[oi * W + t] !== pred.big[pr * W + t]) return;
    ver[oi] = pred.ver[pr];
  }

  /**
   * readField for a field whose slots are all numbers (<= 53 bits) and whose components are
   * at most 32 bits: integer arithmetic only. bo/oo/po: row offsets (po -1: not in pred).
   */
  readFieldFast(r, fd, bcodes, bo, codes, oo, pcodes, po, num, den) {
    const cls = this.cls, kk = this.kk, pp = this.pp, E = this.E, cbA = this.cb, c0A = this.slotComp0;
    let diff = false;
    let s = fd.s0;
    const end = fd.s1;
    while (s < end) {
      const k = cls[s];
      const bcode = bcodes[bo + s];
      let v;
      if (k === C_FLAG) {
        v = (fd.implied && bcode === 0) ? 1 : r.read1();
        codes[oo + s] = v;
        if (codes[oo + s] !== bcode) diff = true;      // (as stored: an Int32Array wraps)
        if (v === 0) {
          const span = this.slots[s].span;
          for (let t = s + 1; t <= s + span; t++) { if (bcodes[bo + t] !== 0) diff = true; codes[oo + t] = 0; }
          s += span + 1;
        } else s += 1;
        continue;
      }
      if (k === C_ORD || k === C_SMAG) {
        const c = c0A[s], b = cbA[c];
        const u = r.egE(kk[c], b, E[c]);
        let B = bcode < 0 ? bcode + P2[b] : bcode;
        const half = P2[b - 1];
        if (k === C_SMAG && B >= half) B = B ^ (half - 1);
        let ref = B;
        if (pp[c] && po >= 0) {
          let P = pcodes[po + s];
          if (P < 0) P += P2[b];
          if (k === C_SMAG && P >= half) P = P ^ (half - 1);
          ref = extrapolate(B, P, b, num, den);
        }
        let w = addZz(ref, u, b);
        if (k === C_SMAG && w >= half) w = (w ^ (half - 1)) >>> 0;
        v = (this.signedS[s] && w >= half) ? w - P2[b] : w;
      } else if (k === C_ABS) {
        v = this.fields[this.slots[s].field].flip ? (bcode ^ 1) : r.read(this.sbits[s]);
      } else if (k === C_QUAT) {
        v = this.readQuatFast(r, s, bcode, po >= 0, po >= 0 ? pcodes[po + s] : 0, num, den);
      } else {   // C_UVEC
        const c = c0A[s], cb = this.cbitsS[s];
        const up = r.egE(kk[c], cb, E[c]), uq = r.egE(kk[c + 1], cb, E[c + 1]);
        const bu = bcode < 0 ? bcode + 4294967296 : bcode, Bp = Math.floor(bu / P2[cb]), Bq = bu - Bp * P2[cb];
        let rp = Bp, rq = Bq;
        if (po >= 0) {
          const pcode = pcodes[po + s];
          const pu = pcode < 0 ? pcode + 4294967296 : pcode, Pp = Math.floor(pu / P2[cb]), Pq = pu - Pp * P2[cb];
          if (pp[c]) rp = extrapolate(Bp, Pp, cb, num, den);
          if (pp[c + 1]) rq = extrapolate(Bq, Pq, cb, num, den);
        }
        v = addZz(rp, up, cb) * P2[cb] + addZz(rq, uq, cb);
      }
      const vk = this.vkind[s];
      if (vk !== 0) {
        let ok;
        if (vk === 1) ok = v !== this.vlim[s];
        else if (vk === 2) ok = v <= this.vlim[s];
        else ok = this.quatValidNum(s, v);
        if (!ok) throw new DecodeError(`snapshot packet: code ${v} is not valid for ${this.slots[s].codec}`);
      }
      codes[oo + s] = v;
      if (codes[oo + s] !== bcode) diff = true;      // (as stored: an Int32Array wraps)
      s++;
    }
    return diff;
  }

  /** The changed fields of one entity (every field fast): whether it had one; DecodeError when a
   * field marked changed is unchanged. */
  readEntityFast(r, fch, e, F, bcodes, bo, codes, oo, pcodes, po, num, den) {
    const cls = this.cls, kk = this.kk, pp = this.pp, E = this.E, cbA = this.cb, c0A = this.slotComp0, fields = this.fields;
    let anyField = false;
    for (let f = 0; f < F; f++) {
      if (fch[e * F + f] === 0) continue;
      anyField = true;
      const fd = fields[f];
      let diff = false;
      let s = fd.s0;
      const end = fd.s1;
      while (s < end) {
        const k = cls[s];
        const bcode = bcodes[bo + s];
        let v;
        if (k === C_FLAG) {
          v = (fd.implied && bcode === 0) ? 1 : r.read1();
          codes[oo + s] = v;
          if (v !== bcode) diff = true;
          if (v === 0) {
            const span = this.slots[s].span;
            for (let t = s + 1; t <= s + span; t++) { if (bcodes[bo + t] !== 0) diff = true; codes[oo + t] = 0; }
            s += span + 1;
          } else s += 1;
          continue;
        }
        if ((k === C_ORD || k === C_SMAG) && cbA[c0A[s]] < 32) {
          // a component under 32 bits: int32 arithmetic throughout
          const c = c0A[s], b = cbA[c], mask = (1 << b) - 1, half = 1 << (b - 1);
          const u = r.egE(kk[c], b, E[c]);
          let B = bcode & mask;                       // (a signed code: its b-bit two's complement)
          if (k === C_SMAG && B >= half) B ^= half - 1;
          let ref = B;
          if (pp[c] && po >= 0) {
            let P = pcodes[po + s] & mask;
            if (k === C_SMAG && P >= half) P ^= half - 1;
            const sh = 32 - b;
            const st = ((B - P) << sh) >> sh;
            ref = den === 1 ? ((B + Math.imul(st, num)) & mask) : extrapolate(B, P, b, num, den);
          }
          let w = (ref + ((u >>> 1) ^ -(u & 1))) & mask;
          if (k === C_SMAG && w >= half) w ^= half - 1;
          v = (this.signedS[s] && w >= half) ? w - (mask + 1) : w;
        } else if (k === C_ORD || k === C_SMAG) {
          const c = c0A[s], b = cbA[c];
          const u = r.egE(kk[c], b, E[c]);
          let B = bcode < 0 ? bcode + P2[b] : bcode;
          const half = P2[b - 1];
          if (k === C_SMAG && B >= half) B = B ^ (half - 1);
          let ref = B;
          if (pp[c] && po >= 0) {
            let P = pcodes[po + s];
            if (P < 0) P += P2[b];
            if (k === C_SMAG && P >= half) P = P ^ (half - 1);
            ref = extrapolate(B, P, b, num, den);
          }
          let w = addZz(ref, u, b);
          if (k === C_SMAG && w >= half) w = (w ^ (half - 1)) >>> 0;
          v = (this.signedS[s] && w >= half) ? w - P2[b] : w;
        } else if (k === C_ABS) {
          v = this.fields[this.slots[s].field].flip ? (bcode ^ 1) : r.read(this.sbits[s]);
        } else if (k === C_QUAT) {
          v = this.readQuatFast(r, s, bcode, po >= 0, po >= 0 ? pcodes[po + s] : 0, num, den);
        } else {   // C_UVEC
          const c = c0A[s], cb = this.cbitsS[s];
          const up = r.egE(kk[c], cb, E[c]), uq = r.egE(kk[c + 1], cb, E[c + 1]);
          const bu = bcode < 0 ? bcode + 4294967296 : bcode, Bp = Math.floor(bu / P2[cb]), Bq = bu - Bp * P2[cb];
          let rp = Bp, rq = Bq;
          if (po >= 0) {
            const pcode = pcodes[po + s];
            const pu = pcode < 0 ? pcode + 4294967296 : pcode, Pp = Math.floor(pu / P2[cb]), Pq = pu - Pp * P2[cb];
            if (pp[c]) rp = extrapolate(Bp, Pp, cb, num, den);
            if (pp[c + 1]) rq = extrapolate(Bq, Pq, cb, num, den);
          }
          v = addZz(rp, up, cb) * P2[cb] + addZz(rq, uq, cb);
        }
        const vk = this.vkind[s];
        if (vk !== 0) {
          let ok;
          if (vk === 1) ok = v !== this.vlim[s];
          else if (vk === 2) ok = v <= this.vlim[s];
          else ok = this.quatValidNum(s, v);
          if (!ok) throw new DecodeError(`snapshot packet: code ${v} is not valid for ${this.slots[s].codec}`);
        }
        codes[oo + s] = v;
        if (codes[oo + s] !== bcode) diff = true;      // (as stored: an Int32Array wraps)
        s++;
      }
      if (!diff) throw new DecodeError('snapshot packet: a field marked changed is unchanged');
    }
    return anyField;
  }

  quatValidNum(s, v) {
    const t = this.qshrunk[s];
    if (t === null) return this.quatValid(this.slots[s], v);
    const cb = this.cbitsS[s];
    let a, b, c;
    if (cb <= 10) {                 // a code of at most 32 bits: integer shifts
      const mask = (1 << cb) - 1;
      c = v & mask; b = (v >>> cb) & mask; a = (v >>> (2 * cb)) & mask;
    } else {
      const M = P2[cb];
      const hi = Math.floor(v / M);
      c = v - hi * M;
      const hi2 = Math.floor(hi / M);
      b = hi - hi2 * M;
      a = hi2 - Math.floor(hi2 / M) * M;
    }
    const x = t[a], y = t[b], z = t[c];
    const sum = (x * x + y * y) + z * z;
    let big = z > 0.0 ? z : 0.0;
    big = y > big ? y : big;
    big = x > big ? x : big;
    return !(sum > 1.0) && Math.sqrt(1.0 - sum) >= big;
  }

  readQuatFast(r, s, bcode, hasP, pcode, num, den) {
    const cb = this.cbitsS[s], M = P2[cb];
    const c0 = this.slotComp0[s], kk = this.kk, pp = this.pp, E = this.E;
    let ba, bb, bc, bidx, same = false, pa = 0, pb = 0, pc = 0;
    if (cb <= 10) {                 // codes of at most 32 bits: integer shifts
      const mask = M - 1;
      bc = bcode & mask; bb = (bcode >>> cb) & mask; ba = (bcode >>> (2 * cb)) & mask; bidx = bcode >>> (3 * cb);
      if (hasP) {
        pc = pcode & mask; pb = (pcode >>> cb) & mask; pa = (pcode >>> (2 * cb)) & mask;
        same = (pcode >>> (3 * cb)) === bidx;
      }
    } else {
      let hi = Math.floor(bcode / M);
      bc = bcode - hi * M;
      let hi2 = Math.floor(hi / M);
      bb = hi - hi2 * M;
      bidx = Math.floor(hi2 / M);
      ba = hi2 - bidx * M;
      if (hasP) {
        hi = Math.floor(pcode / M);
        pc = pcode - hi * M;
        hi2 = Math.floor(hi / M);
        pb = hi - hi2 * M;
        const pidx = Math.floor(hi2 / M);
        pa = hi2 - pidx * M;
        same = pidx === bidx;
      }
    }
    const u0 = r.egAlt(kk[c0], cb, E[c0]);
    if (u0 >= 0) {
      const a = addZz(same && pp[c0] ? extrapolate(ba, pa, cb, num, den) : ba, u0, cb);
      const u1 = r.egE(kk[c0 + 1], cb, E[c0 + 1]);
      const b = addZz(same && pp[c0 + 1] ? extrapolate(bb, pb, cb, num, den) : bb, u1, cb);
      const u2 = r.egE(kk[c0 + 2], cb, E[c0 + 2]);
      const c = addZz(same && pp[c0 + 2] ? extrapolate(bc, pc, cb, num, den) : bc, u2, cb);
      return cb <= 10 ? ((((bidx << cb | a) << cb | b) << cb | c) >>> 0) : ((bidx * M + a) * M + b) * M + c;
    }
    if (r.read1() === 0) return r.readNum(this.sbits[s]);
    const j = r.read(2);
    if (j === bidx) throw new DecodeError('snapshot packet: a quaternion remapped to its own index');
    const A0 = bidx === 0 ? 0 : ba, A1 = bidx === 0 ? ba : bidx === 1 ? 0 : bb;
    const A2 = bidx <= 1 ? bb : bidx === 2 ? 0 : bc, A3 = bidx <= 2 ? bc : 0;
    const A = [A0, A1, A2, A3];
    const aj = A[j], top = aj >= P2[cb - 1], L = this.qtopS[s];
    let code = j, t = 0;
    for (let x = 0; x < 4; x++) {
      if (x === j) continue;
      const ref = x === bidx ? aj : (top ? A[x] : L - A[x]);
      code = code * M + addZz(ref, r.egE(kk[c0 + t], cb, E[c0 + t]), cb);
      t++;
    }
    return code;
  }

  /** A component's linear value (order map applied) of a slot code (number or BigInt). */
  compOf(code, cp, sl) {
    let w;
    if (typeof code === 'bigint') w = Number((BigInt.asUintN(sl.bits, code) >> BigInt(cp.shift)) & BMASK[cp.b]);
    else {
      if (code < 0) code += P2[sl.bits];
      if (code < 4294967296 && cp.shift + cp.b <= 32) w = cp.b === 32 ? code : (code >>> cp.shift) & (P2[cp.b] - 1);
      else w = Math.floor(code / P2[cp.shift]) % P2[cp.b];
    }
    if (cp.smag && w >= P2[cp.b - 1]) w = w ^ (P2[cp.b - 1] - 1);   // b <= 32 for smag
    return w >>> 0;
  }

  /** The new linear value of a component of width <= 32: its reference and a zigzagged difference. */
  applyComp(ctx, cp, B, P, usep, u) {
    const b = cp.b;
    let ref = B;
    if (usep) {
      let s = B - P;
      s = b === 32 ? (s | 0) : ((s << (32 - b)) >> (32 - b));
      let t;
      if (ctx.den === 1) t = s * ctx.num;
      else if (s >= 0) t = Math.floor((2 * s * ctx.num + ctx.den) / (2 * ctx.den));
      else t = -Math.floor((2 * -s * ctx.num + ctx.den) / (2 * ctx.den));
      ref = B + t;
      ref = ((ref % P2[b]) + P2[b]) % P2[b];
    }
    const d = (u % 2) ? -((u - 1) / 2) - 1 : u / 2;
    let v = ref + d;
    v = b === 32 ? (v >>> 0) : ((v & (P2[b] - 1)) >>> 0);
    if (cp.smag && v >= P2[b - 1]) v = (v ^ (P2[b - 1] - 1)) >>> 0;
    return v;
  }

  /** Decode one changed field of one entity into the output row. Returns whether it differs from the baseline. */
  readField(ctx, fd, bcodes, bbig, bi, codes, big, oi, pr) {
    const r = ctx.r, S = this.S, W = this.W, slots = this.slots, comps = this.comps, kk = this.kk, pp = this.pp;
    const bo = bi * S, oo = oi * S, po = pr * S;
    let diff = false;
    let s = fd.s0;
    const end = fd.s1;
    while (s < end) {
      const sl = slots[s];
      const cls = this.cls[s];
      if (cls === C_FLAG) {
        const bflag = bcodes[bo + s];
        const v = (fd.implied && bflag === 0) ? 1 : r.read1();
        codes[oo + s] = v;
        if (v !== bflag) diff = true;
        if (v === 0) {
          for (let t = s + 1; t <= s + sl.span; t++) {
            const st = slots[t];
            if (st.wide) { if (bbig[bi * W + st.bigIndex] !== 0n) diff = true; big[oi * W + st.bigIndex] = 0n; } else { if (bcodes[bo + t] !== 0) diff = true; codes[oo + t] = 0; }
          }
          s += sl.span + 1;
        } else s += 1;
        continue;
      }
      const bcode = sl.wide ? bbig[bi * W + sl.bigIndex] : bcodes[bo + s];
      let v;
      if (cls === C_ABS) {
        v = fd.flip ? (bcode ^ 1) : r.read(sl.bits);
      } else if (cls === C_QUAT) {
        v = this.readQuat(ctx, sl, bcode, pr, bi);
      } else {
        // ord, smag, uvec: each component a difference from its reference
        const c0 = this.slotComp0[s];
        const nc = cls === C_UVEC ? 2 : 1;
        const cp0 = comps[c0];
        if (nc === 1 && cp0.b > 32) {
          // a wide ordered slot: BigInt arithmetic, no extrapolation (only components <= 32 bits have it)
          const b = cp0.b;
          const u = toBig(r.egWide(kk[c0], b));
          const d = (u & 1n) ? -(u >> 1n) - 1n : (u >> 1n);
          let w = BigInt.asUintN(b, BigInt.asUintN(b, toBig(bcode)) + d);
          if (sl.signed) w = BigInt.asIntN(b, w);
          v = sl.wide ? w : Number(w);
        } else {
          let acc = sl.wide ? 0n : 0;
          for (let q = 0; q < nc; q++) {
            const c = c0 + q, cp = comps[c];
            const u = r.eg(kk[c], cp.b, false);
            const B = this.compOf(bcode, cp, sl);
            const usep = pp[c] && pr >= 0;
            const P = usep ? this.compOf(sl.wide ? ctx.pbig[pr * W + sl.bigIndex] : ctx.pcodes[pr * S + s], cp, sl) : 0;
            const nv = this.applyComp(ctx, cp, B, P, usep, u);
            if (sl.wide) acc |= BigInt(nv) << BigInt(cp.shift);
            else acc += nv * P2[cp.shift];
          }
          v = acc;
          if (sl.signed) {
            if (sl.wide) v = BigInt.asIntN(sl.bits, v);
            else if (v >= P2[sl.bits - 1]) v -= P2[sl.bits];
          }
        }
      }
      const cv = this.slotValid[s];
      if (cv !== null && !(cls === C_QUAT ? this.quatValid(sl, v) : cv.valid(v))) {
        throw new DecodeError(`snapshot packet: entity ${''}: code ${v} is not valid for ${sl.codec}`);
      }
      if (sl.wide) big[oi * W + sl.bigIndex] = v; else codes[oo + s] = v;
      if (v !== bcode) diff = true;
      s++;
    }
    return diff;
  }

  quatValid(sl, v) {
    const q = sl.codec;
    if (typeof v === 'bigint' ? (v < 0n || v > BMASK[q.bits]) : (v < 0 || v >= P2[q.bits])) return false;
    const [, a, b, c] = q.unpack(v);
    return q.validParts(a, b, c);
  }

  readQuat(ctx, sl, bcode, pr, bi) {
    const r = ctx.r, q = sl.codec, cb = sl.cbits, comps = this.comps, kk = this.kk, pp = this.pp;
    const c0 = this.slotComp0[sl.index];
    const [bidx, ba, bb, bc] = q.unpack(bcode);
    let pidx = -1, pa = 0, pb = 0, pc = 0;
    if (pr >= 0) {
      const pcode = sl.wide ? ctx.pbig[pr * this.W + sl.bigIndex] : ctx.pcodes[pr * this.S + sl.index];
      [pidx, pa, pb, pc] = q.unpack(pcode);
    }
    const same = pr >= 0 && pidx === bidx;
    const u0 = r.eg(kk[c0], cb, true);
    if (u0 >= 0) {
      const a = this.applyComp(ctx, comps[c0], ba, pa, same && pp[c0], u0);
      const b = this.applyComp(ctx, comps[c0 + 1], bb, pb, same && pp[c0 + 1], r.eg(kk[c0 + 1], cb, false));
      const c = this.applyComp(ctx, comps[c0 + 2], bc, pc, same && pp[c0 + 2], r.eg(kk[c0 + 2], cb, false));
      return q.pack(bidx, a, b, c);
    }
    if (r.read1() === 0) return sl.wide ? r.readBig(sl.bits) : r.readNum(sl.bits);
    const j = r.read(2);
    if (j === bidx) throw new DecodeError('snapshot packet: a quaternion remapped to its own index');
    const L = q.top;                // the mode's top component code: a negated value's code is L - c
    const A = [0, 0, 0, 0];
    { const kept3 = [ba, bb, bc]; let t = 0; for (let x = 0; x < 4; x++) if (x !== bidx) A[x] = kept3[t++]; }
    const aj = A[j];
    const out = [];
    let t = 0;
    for (let x = 0; x < 4; x++) {
      if (x === j) continue;
      const ref = x === bidx ? aj : (aj >= P2[cb - 1] ? A[x] : L - A[x]);
      const u = r.eg(kk[c0 + t], cb, false);
      const d = (u % 2) ? -((u - 1) / 2) - 1 : u / 2;
      out.push((((ref + d) % P2[cb]) + P2[cb]) % P2[cb]);
      t++;
    }
    return q.pack(j, out[0], out[1], out[2]);
  }
}

/** Whether every code a slot's width can carry is valid for the codec (no check needed). */
function allValid(c) {
  switch (c.kind) {
    case 'Bounded': return c.mode !== 'midpoint';      // midpoint: 2**b - 1 is not a code
    case 'Angle': case 'UInt': case 'Int': case 'Half': case 'Grid': case 'UnitVector': case 'Bool': return true;
    case 'Fixed': return true;
    default: return false;        // PowerCurve (negative zero), Enum (codes >= n), Quat
  }
}

// ------------------------------------------------------------------------------------------------
// The datagram layer (sections 11-15) and the client's state (section 10)

const MAGIC = [0x51, 0x43, 0x48, 0x4c];   // QCHL
const SEED_H = crc32c(asciiBytes('quantcodec hello'));
const FORMAT_VERSION = 1;
const MIN_DATAGRAM = 64, MAX_DATAGRAM = 65507, MAX_FRAGMENTS = 256, FRAGMENT_HEADER = 8;
const HELLO_BASE = 51;             // the smallest hello without its check: an empty name, no field summary
/** The bound on what a client holds when none is given (section 19): 256 MiB. */
export const DEFAULT_MAX_BYTES = 268435456;
const SNAPSHOT_OVERHEAD = 256;     // section 19's cost model: a snapshot costs 256 + n * (8 + 8 * S)

/**
 * One kind of check (sections 11, 17): crc32c(bytes, seed) in 4 bytes, or with a shared key the
 * 8-byte SipHash-2-4 tag under that kind's tag key. `holds(d, n)`: whether the last T bytes of
 * d[0..n) are the check of the bytes before them; `seal(out, n)` writes the check of out[0..n) at n.
 */
class Check {
  constructor(seed, tagKey = null) {
    this.seed = seed;
    this.words = tagKey === null ? null : sipWords(tagKey);
    this.T = tagKey === null ? 4 : 8;
  }
  holds(d, n) {
    if (this.words === null) return crc32c(d, this.seed, 0, n - 4) === u32le(d, n - 4);
    sipCore(this.words, d, 0, n - 8);
    return SIP_LO === u32le(d, n - 8) && SIP_HI === u32le(d, n - 4);
  }
  seal(out, n) {
    let lo, hi = 0;
    if (this.words === null) lo = crc32c(out, this.seed, 0, n);
    else { sipCore(this.words, out, 0, n); lo = SIP_LO; hi = SIP_HI; }
    for (let i = 0; i < 4; i++) out[n + i] = lo >>> (8 * i);
    if (this.words !== null) for (let i = 0; i < 4; i++) out[n + 4 + i] = hi >>> (8 * i);
  }
}
const SEED_Q = crc32c(asciiBytes('quantcodec hello request'));
const LABEL_H = asciiBytes('quantcodec hello'), LABEL_Q = asciiBytes('quantcodec hello request');

/** The checks that need no stream: the hello's and the hello request's, for a shared key's mk or none. */
function streamlessChecks(mk) {
  return mk === null
    ? { T: 4, H: new Check(SEED_H), Q: new Check(SEED_Q) }
    : { T: 8, H: new Check(0, subKey(mk, LABEL_H)), Q: new Check(0, subKey(mk, LABEL_Q)) };
}
/** The checks of one stream (stream key K): whole packets, fragments, replies. */
function streamChecks(mk, K) {
  const label = (c) => { const b = new Uint8Array(K.length + 1); b.set(K); b[K.length] = c.charCodeAt(0); return b; };
  if (mk === null) return { P: new Check(seedOf(K, 'P')), F: new Check(seedOf(K, 'F')), R: new Check(seedOf(K, 'R')) };
  return { P: new Check(0, subKey(mk, label('P'))), F: new Check(0, subKey(mk, label('F'))), R: new Check(0, subKey(mk, label('R'))) };
}
const UNKEYED = streamlessChecks(null);
/** The stream-less checks for a `{key}` option (none: CRC-32C). */
function checksFor(key) { return key === undefined || key === null ? UNKEYED : streamlessChecks(masterKey(key)); }

/** A `maxBytes` option: a positive integer (number or bigint), DEFAULT_MAX_BYTES when null. */
function maxBytesOption(v, who) {
  if (v === undefined || v === null) return DEFAULT_MAX_BYTES;
  if (typeof v === 'bigint' && v >= 1n) return Number(v);
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1) return v;
  throw new RangeError(`${who}: maxBytes must be a positive integer (bytes), got ${typeof v === 'bigint' ? v + 'n' : typeof v === 'string' ? `'${v}'` : v}`);
}

/** The 40-byte stream key K (section 11). */
export function streamKey(fingerprint, history, predict, maxDatagram, streamId) {
  const k = new Uint8Array(40);
  k.set(asciiBytes('quantcodec'), 0);
  k[10] = FORMAT_VERSION;
  k.set(asciiBytes(fingerprint), 11);
  k[27] = history & 0xff; k[28] = history >> 8;
  k[29] = predict ? 1 : 0;
  k[30] = maxDatagram & 0xff; k[31] = maxDatagram >> 8;
  let id = toBig(streamId);
  for (let i = 0; i < 8; i++) { k[32 + i] = Number(id & 0xffn); id >>= 8n; }
  return k;
}
function seedOf(key, letter) {
  const b = new Uint8Array(key.length + 1);
  b.set(key); b[key.length] = letter.charCodeAt(0);
  return crc32c(b);
}


/**
 * Parse a hello datagram (section 13) whose magic and check hold. Returns {version, predict,
 * history, maxDatagram, streamId (BigInt), started (BigInt), fingerprint, schemaVersion,
 * schemaName, nfields, fields: [{name, kind, bits, h}]}; DecodeError('hello') when malformed.
 */
export function parseHello(d, { key = null } = {}) {
  const ck = checksFor(key);
  if (!helloHolds(d, ck)) throw new DecodeError(`hello: not a hello (too short, no QCHL magic, or its ${ck.T === 8 ? 'SipHash tag under this key' : 'check'} fails)`, 'check');
  return readHello(d, ck.T);
}

/** The fields of a hello whose magic and check (of T bytes) hold; DecodeError('hello') when malformed. */
function readHello(d, T) {
  const n = d.length;
  const bad = (msg) => new DecodeError('hello: ' + msg, 'hello');
  const version = d[4], flags = d[5], history = u16le(d, 6), maxDatagram = u16le(d, 8);
  const streamId = u64le(d, 10), started = u64le(d, 18);
  if (version !== FORMAT_VERSION) throw bad(`format version ${version}, this library reads version ${FORMAT_VERSION}`);
  if (flags & ~1) throw bad(`unknown flags 0x${flags.toString(16).padStart(2, '0')}`);
  if (!(history >= 1 && history <= 0x7fff)) throw bad(`history ${history} outside 1..32767`);
  if (!(maxDatagram >= MIN_DATAGRAM && maxDatagram <= MAX_DATAGRAM) || n > maxDatagram) throw bad(`max_datagram ${maxDatagram} outside ${MIN_DATAGRAM}..${MAX_DATAGRAM} or smaller than the hello (${n} bytes)`);
  const fpBytes = d.subarray(26, 42);
  for (const c of fpBytes) if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) throw bad('the fingerprint is not 16 lowercase hex digits');
  const fingerprint = String.fromCharCode(...fpBytes);
  const schemaVersion = u32le(d, 42);
  const end = n - T;
  let pos = 46;
  const take = (k, what) => {
    if (pos + k > end) throw bad(`truncated in ${what} at byte ${pos}`);
    const out = d.subarray(pos, pos + k); pos += k; return out;
  };
  const dec = new TextDecoder('utf-8', { fatal: true });
  const text = (what) => {
    const len = take(1, what)[0];
    const raw = take(len, what);
    try { return dec.decode(raw); } catch { throw bad(`${what} is not UTF-8`); }
  };
  const schemaName = text('the schema name');
  const counts = take(4, 'the field counts');
  const nf = u16le(counts, 0), ns = u16le(counts, 2);
  if (ns > nf) throw bad(`${ns} field summaries for ${nf} fields`);
  const fields = [];
  for (let i = 0; i < ns; i++) {
    const name = text(`field ${i}'s name`);
    const f = take(7, `field ${i}`);
    fields.push({ name, kind: KIND_NAMES[f[0]] || `kind ${f[0]}`, bits: u16le(f, 1), h: u32le(f, 3) });
  }
  if (pos !== end) throw bad(`${end - pos} bytes after the last field summary`);
  return { version, predict: !!(flags & 1), history, maxDatagram, streamId, started, fingerprint, schemaVersion, schemaName, nfields: nf, fields, bytes: d.slice() };
}

/** Whether d is a hello whose magic and check hold (with `{key}`: its SipHash tag under kH). */
export function isHello(d, { key = null } = {}) { return helloHolds(d, checksFor(key)); }
function helloHolds(d, ck) {
  return d.length >= HELLO_BASE + ck.T && d[0] === MAGIC[0] && d[1] === MAGIC[1] && d[2] === MAGIC[2] && d[3] === MAGIC[3] && ck.H.holds(d, d.length);
}

function utf8Prefix(text, limit) {
  let raw = utf8(text);
  if (raw.length <= limit) return text;
  raw = raw.subarray(0, limit);
  return new TextDecoder('utf-8').decode(raw).replace(/\uFFFD+$/u, '');
}

/** What differs between `schema` and the schema a hello describes: a list of sentences (empty when the fingerprints are equal). */
export function helloDifferences(schema, hello) {
  if (hello.fingerprint === schema.fingerprint) return [];
  const out = [`fingerprint ${schema.fingerprint} here, ${hello.fingerprint} in the hello`];
  const myName = utf8Prefix(schema.name, 255);
  // (a hello's name may be cut to fit a small datagram budget: a prefix of ours is ours)
  if (hello.schemaName !== myName && !(utf8(hello.schemaName).length < 255 && myName.startsWith(hello.schemaName))) out.push(`schema name '${schema.name}' here, '${hello.schemaName}' in the hello`);
  if (hello.schemaVersion !== Number(toBig(schema.version) & 0xffffffffn)) out.push(`schema version ${schema.version} here, ${hello.schemaVersion} in the hello`);
  const mine = new Map(schema.summaries().map((s) => [s.name, s]));
  const theirs = new Map(hello.fields.map((s) => [s.name, s]));
  const complete = hello.fields.length === hello.nfields;
  for (const [name, s] of mine) {
    const t = theirs.get(name);
    if (!t) { if (complete) out.push(`field '${name}' is not in the server's schema`); continue; }
    if (t.kind !== s.kind) out.push(`field '${name}': ${s.kind} here, ${t.kind} on the server`);
    else if (t.bits !== s.bits) out.push(`field '${name}': ${s.bits} bits here, ${t.bits} on the server`);
    else if (t.h !== s.h) out.push(`field '${name}': same kind (${s.kind}) and bits, other parameters (range, step, labels...)`);
  }
  for (const name of theirs.keys()) if (!mine.has(name)) out.push(`field '${name}' of the server's schema is missing here`);
  if (complete && [...mine.keys()].every((k) => theirs.has(k)) && [...theirs.keys()].every((k) => mine.has(k))) {
    const here = [...mine.keys()], there = hello.fields.map((s) => s.name);
    if (here.join('\0') !== there.join('\0')) out.push(`field order ${JSON.stringify(here)} here, ${JSON.stringify(there)} on the server`);
  }
  if (!complete) out.push(`(the hello summarizes ${hello.fields.length} of the server's ${hello.nfields} fields)`);
  return out;
}

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The partial packets of one stream (section 12). */
class Reassembly {
  constructor(maxDatagram, history, T) {
    this.size = maxDatagram - FRAGMENT_HEADER - T;      // C (sections 12, 17)
    this.limit = MAX_FRAGMENTS * maxDatagram;
    this.history = history;
    this.parts = new Map();       // key -> {seq, count, pcheck, chunks: Map(index -> bytes)} in insertion order
    this.held = 0;
  }
  clear() { this.parts.clear(); this.held = 0; }
  _drop(key) {
    const p = this.parts.get(key);
    this.held -= this.size * p.chunks.size;     // every chunk counts as a full one (section 12, rule 4)
    this.parts.delete(key);
  }
  /** Validate a fragment body (the datagram without its check): returns its header, or throws DecodeError('fragment'). */
  check(body) {
    if (body.length <= FRAGMENT_HEADER) throw new DecodeError(`fragment: ${body.length} bytes before the check, no chunk`, 'fragment');
    const seq = u16le(body, 0), index = body[2], count1 = body[3], pcheck = u32le(body, 4);
    const count = count1 + 1, clen = body.length - FRAGMENT_HEADER;
    if (count1 === 0) throw new DecodeError(`fragment of packet ${seq}: a count of 1 (a packet that fits is sent whole)`, 'fragment');
    if (index >= count) throw new DecodeError(`fragment of packet ${seq}: index ${index} of ${count}`, 'fragment');
    const last = index === count - 1;
    if (last ? !(clen >= 1 && clen <= this.size) : clen !== this.size) throw new DecodeError(`fragment ${index} of ${count} of packet ${seq}: a chunk of ${clen} bytes (${last ? 'at most ' : ''}${this.size} expected)`, 'fragment');
    return { seq, index, count, pcheck };
  }
  /** Keep a checked fragment. Returns {seq, packet, pcheck} when it completes a packet, else null. */
  add(body, h, latest) {
    const { seq, index, count, pcheck } = h;
    const chunk = body.slice(FRAGMENT_HEADER);
    if (latest !== null) {
      const old = (s) => { const d = (latest - s) & SEQ_MASK; return d >= this.history && d < 0x8000; };
      for (const [key, p] of [...this.parts]) if (old(p.seq)) this._drop(key);
      if (old(seq)) return null;
    }
    const key = `${seq}/${count}/${pcheck}`;
    let part = this.parts.get(key);
    if (part && part.chunks.has(index)) return null;
    while (this.parts.size && this.held + this.size > this.limit) {
      this._drop(this.parts.keys().next().value);
      part = this.parts.get(key);
    }
    if (!part) { part = { seq, count, pcheck, chunks: new Map() }; this.parts.set(key, part); }
    part.chunks.set(index, chunk);
    this.held += this.size;
    if (part.chunks.size < count) return null;
    this._drop(key);
    let total = 0;
    for (let i = 0; i < count; i++) total += part.chunks.get(i).length;
    const packet = new Uint8Array(total);
    for (let i = 0, o = 0; i < count; i++) { const c = part.chunks.get(i); packet.set(c, o); o += c.length; }
    return { seq, packet, pcheck };
  }
}

/**
 * A snapshot stream's client (sections 10-19). `decode(datagram)` returns the Snapshot a datagram
 * completes, or null (a fragment, a hello); it throws DecodeError (with `.kind`) for a refused
 * datagram, which changes nothing. After each datagram that returned a Snapshot, acknowledge
 * `decoder.latest` to the server (StreamClient makes the ack datagram).
 *
 * Options: `history` (until a hello gives the stream's own), `key` (a shared secret of 1 to 255
 * bytes: every check is then an 8-byte SipHash-2-4 tag, section 17), `maxBytes` (the bound of
 * section 19 on what the decoder holds, in its cost model; DEFAULT_MAX_BYTES when not given).
 */
export class SnapshotDecoder {
  constructor(schema, { history = 64, key = null, maxBytes = null } = {}) {
    if (!(schema instanceof Schema)) throw new TypeError('SnapshotDecoder: expected a Schema');
    if (!Number.isInteger(history) || history < 1 || history > 0x7fff) throw new RangeError(`SnapshotDecoder: history must be in 1..32767, got ${history}`);
    this.schema = schema;
    this.coder = new PacketCoder(schema);
    this.maxBytes = maxBytesOption(maxBytes, 'SnapshotDecoder');
    this.mk = key === null || key === undefined ? null : masterKey(sharedKey(key, 'SnapshotDecoder'));
    this.checks = streamlessChecks(this.mk);     // H, Q; P, F, R once a stream is adopted
    this.T = this.checks.T;
    this.rowCost = 8 + 8 * schema.nslots;        // section 19: an id and a 64-bit code a slot
    this.stream = null;         // the adopted hello
    this._setHistory(history);
    this.held = new Map();      // seq -> Snapshot
    this.heldCost = 0;          // section 19's cost of the snapshots in `held`
    this.ambiguous = new Set();
    this._latest = -1;
    this.reassembly = null;
    this._limitFn = (N) => this._limit(N);
  }
  _setHistory(h) { this.history = h; this.keep = Math.min(2 * h - 1, 0x8000); }

  /**
   * A decoder that adopted the stream of `hello` (SchemaError, saying what differs, for another
   * schema; DecodeError of kind `limits` for a hello whose parameters could not fit maxBytes).
   */
  static fromHello(schema, hello, options = {}) {
    const dec = new SnapshotDecoder(schema, options);
    const h = parseHello(hello, { key: options.key });
    const diffs = helloDifferences(schema, h);
    if (diffs.length) throw new SchemaError(`the stream's schema differs from this end's: ${diffs.join('; ')}`);
    dec._checkHello(h);
    dec._adopt(h);
    return dec;
  }

  /** The newest sequence number decoded (null before the first): what to acknowledge. */
  get latest() { return this._latest >= 0 ? this._latest : null; }
  /** The adopted stream's parameters (the parsed hello), or null. */
  get hello() { return this.stream; }
  /**
   * What this decoder holds in section 19's cost model: its snapshots (256 + n * (8 + 8 * S)
   * bytes each) and, once a hello is adopted, reassembly's bound (256 * max_datagram). Never more
   * than maxBytes.
   */
  get heldBytes() { return this.heldCost + (this.stream === null ? 0 : MAX_FRAGMENTS * this.stream.maxDatagram); }

  /** Limits, check 1 (section 19): a window of empty snapshots and full reassembly must fit. */
  _checkHello(h) {
    const need = (2 * h.history - 1) * SNAPSHOT_OVERHEAD + MAX_FRAGMENTS * h.maxDatagram;
    if (need > this.maxBytes) {
      throw new DecodeError(`hello: history ${h.history} and max_datagram ${h.maxDatagram} need ${need} bytes held ((2 * history - 1) * 256 + 256 * max_datagram), more than maxBytes ${this.maxBytes}`, 'limits');
    }
  }
  /** Limits, check 2 (section 19): called by the packet coder once the new snapshot's N entities are known. */
  _limit(N) {
    const snap = SNAPSHOT_OVERHEAD + N * this.rowCost;
    const need = this.heldCost + snap + MAX_FRAGMENTS * this.stream.maxDatagram;
    if (need > this.maxBytes) {
      throw new DecodeError(`snapshot packet: a snapshot of ${N} entities (${snap} bytes) beside the ${this.held.size} held (${this.heldCost} bytes) and reassembly (${MAX_FRAGMENTS * this.stream.maxDatagram}) would hold ${need} bytes, more than maxBytes ${this.maxBytes}`, 'limits');
    }
  }

  _adopt(h) {
    this.stream = h;
    this._setHistory(h.history);
    const key = streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId);
    const sc = streamChecks(this.mk, key);
    this.seedP = seedOf(key, 'P');       // pcheck (section 12) is this CRC-32C, with a key too (section 17)
    this.checkP = sc.P;
    this.checkF = sc.F;
    this.checkR = sc.R;
    this.held.clear();
    this.heldCost = 0;
    this.ambiguous.clear();
    this._latest = -1;
    this.reassembly = new Reassembly(h.maxDatagram, h.history, this.T);
  }

  /** The held snapshot `seq` (a possible baseline), or null. */
  get(seq) { return this._latest >= 0 && this._recent(seq) ? (this.held.get(seq) || null) : null; }
  _recent(s) { return ((this._latest - s) & SEQ_MASK) < this.history; }

  /** Decode one datagram (Uint8Array). */
  decode(d) {
    if (!(d instanceof Uint8Array)) d = new Uint8Array(d);
    const n = d.length, T = this.T;
    const bound = this.stream !== null;
    // (section 14, with T the check's length: 4, or 8 with a key, section 17)
    if (bound && n >= 1 + T && this.checkP.holds(d, n)) return this._packet(d, 0, n - T);
    if (bound && n >= 9 + T && this.checkF.holds(d, n)) return this._fragment(d.subarray(0, n - T));
    if (helloHolds(d, this.checks)) return this._hello(d);
    const keyed = this.mk !== null ? ' (with a key: its SipHash tag under this key does not hold)' : '';
    if (!bound) throw new DecodeError(`snapshot stream: no hello adopted yet, so no datagram can be checked${keyed}`, 'no-hello');
    throw new DecodeError(`snapshot stream: a datagram that is no datagram of this stream (damaged, stray, or of another stream)${keyed}`, 'check');
  }

  _hello(d) {
    const h = readHello(d, this.T);
    const diffs = helloDifferences(this.schema, h);
    if (diffs.length) throw new DecodeError(`hello of another schema: ${diffs.join('; ')}`, 'schema');
    const cur = this.stream;
    if (cur !== null) {
      if (h.streamId === cur.streamId) {
        if (!sameBytes(h.bytes, cur.bytes)) throw new DecodeError(`snapshot stream: a hello of stream ${h.streamId.toString(16).padStart(16, '0')} with other parameters than the one adopted`, 'hello');
        return null;                 // the current stream's hello again
      }
      if (h.started <= cur.started) throw new DecodeError(`snapshot stream: a hello of an older stream ${h.streamId.toString(16).padStart(16, '0')} (started ${h.started}, the current one ${cur.started})`, 'hello');
    }
    this._checkHello(h);
    this._adopt(h);
    return null;
  }

  _fragment(body) {
    const ra = this.reassembly;
    const h = ra.check(body);
    const done = ra.add(body, h, this.latest);
    if (done === null) return null;
    const P = done.packet;
    if (crc32c(P, this.seedP) !== done.pcheck || P.length < 2 || u16le(P, 0) !== done.seq) {
      throw new DecodeError(`fragments of packet ${done.seq}: the reassembled packet fails its check`, 'fragment');
    }
    // (a completed packet is forgotten before it is decoded, as Python's decoder does: a refusal
    // here leaves its chunks dropped)
    return this._packet(P, 0, P.length);
  }

  _lookup(s, seq, baseline) {
    const snap = this.held.get(s);
    if (snap !== undefined && (!baseline || this._recent(s))) return snap;
    if (this.ambiguous.has(s)) throw new DecodeError(`snapshot packet ${seq}: the snapshot ${s} it is coded against is ambiguous (two different snapshots were decoded under that number)`, 'baseline');
    if (baseline) throw new DecodeError(`snapshot packet ${seq}: its baseline ${s} is not held`, 'baseline');
    throw new DecodeError(`snapshot packet ${seq}: the snapshot ${s} it extrapolates from is not held`, 'baseline');
  }

  /** Decode a packet whose check held; update the state (section 10). */
  _packet(bytes, start, end) {
    const seqOf = end - start >= 2 ? u16le(bytes, start) : 0;
    this.coder.joinWith = this._latest >= 0 ? (this.held.get(this._latest) || null) : null;
    this.coder.limit = this._limitFn;
    let snap;
    try {
      snap = this.coder.decode(bytes, start, end, (s, baseline) => this._lookup(s, seqOf, baseline));
    } finally {
      this.coder.joinWith = null;
      this.coder.limit = null;
    }
    const seq = snap.seq;
    if (this._latest < 0 || newer(seq, this._latest)) {
      this._store(seq, snap);
      this._latest = seq;
      if (this.ambiguous.size) for (const k of [...this.ambiguous]) if (((seq - k) & SEQ_MASK) >= this.keep) this.ambiguous.delete(k);
    } else if (this.held.has(seq)) {
      const prev = this.held.get(seq);
      if (prev !== snap && !prev.sameAs(snap)) {
        this._drop(seq);
        this.ambiguous.add(seq);
      }
    } else if (!this.ambiguous.has(seq)) {
      this._store(seq, snap);
    }
    return snap;
  }

  _store(seq, snap) {
    const held = this.held, hist = this.keep;
    if (this._latest >= 0) {
      const nw = this._latest;
      if (!newer(seq, nw)) {
        if (((nw - seq) & SEQ_MASK) < hist) this._put(seq, snap);
        return;
      }
      for (const k of [...held.keys()]) if (((seq - k) & SEQ_MASK) >= hist) this._drop(k);
    }
    this._put(seq, snap);
  }
  _cost(snap) { return SNAPSHOT_OVERHEAD + snap.ids.length * this.rowCost; }
  _put(seq, snap) {
    const prev = this.held.get(seq);
    if (prev !== undefined) this.heldCost -= this._cost(prev);
    this.held.set(seq, snap);
    this.heldCost += this._cost(snap);
  }
  _drop(seq) {
    const prev = this.held.get(seq);
    if (prev === undefined) return;
    this.heldCost -= this._cost(prev);
    this.held.delete(seq);
  }

  /** (latest, held baselines newest first). */
  state() {
    const ref = this._latest;
    if (ref < 0) return [null, []];
    return [ref, [...this.held.keys()].filter((k) => this._recent(k)).sort((a, b) => ((ref - a) & SEQ_MASK) - ((ref - b) & SEQ_MASK))];
  }

  /** Forget every decoded snapshot (keep the adopted stream). */
  reset() { this.held.clear(); this.heldCost = 0; this.ambiguous.clear(); this._latest = -1; if (this.reassembly) this.reassembly.clear(); }
}

// ------------------------------------------------------------------------------------------------
// The session client (SPEC section 8; wire-format section 18): one decoder, and the replies

const ACK = 0x41, HELLO_REQUEST = 0x48;

function randomU32() {
  const c = globalThis.crypto;
  if (c && typeof c.getRandomValues === 'function') return c.getRandomValues(new Uint32Array(1))[0];
  return Math.floor(Math.random() * 0x100000000) >>> 0;
}

/**
 * The client of a session (StreamServer on the other end): `receive(datagram)` decodes what the
 * server sends (a Snapshot, or null for a hello or a fragment; DecodeError with `.kind` for a
 * refused datagram, which changes nothing), and `reply()` says what to send back now: an ack, a
 * hello request, or null. Call `reply()` after every datagram, or once a tick, and send what it
 * returns; replies need no reliability (each ack repeats the 32 numbers before its latest). A
 * new client's first reply, due before anything arrives, is a hello request: send it to connect.
 *
 * Options: `key` (the shared secret of section 17, 1 to 255 bytes: every check both ways is then
 * a SipHash-2-4 tag), `maxBytes` (section 19's bound on what the client holds, default
 * DEFAULT_MAX_BYTES), `nonce` (this client's 32-bit incarnation id; random when not given: a
 * client that restarts must draw a new one), `history` (until a hello gives the stream's own).
 */
export class StreamClient {
  constructor(schema, { key = null, maxBytes = null, nonce = null, history = 64 } = {}) {
    this.decoder = new SnapshotDecoder(schema, { key, maxBytes, history });
    if (nonce === null || nonce === undefined) nonce = randomU32();
    else if (!(Number.isInteger(nonce) && nonce >= 0 && nonce <= 0xffffffff)) throw new RangeError(`StreamClient: nonce must be an integer in 0..2**32-1, got ${nonce}`);
    this.nonce = nonce;
    this.rseq = 0;              // the number of the next reply (mod 2**32)
    // whether a reply is due (section 18): from the start, whose reply is a hello request (the
    // word that asks a server to connect this client), then after what the due rule names
    this.due = true;
    this._fp = asciiBytes(schema.fingerprint);
    this._view = null;
  }
  get schema() { return this.decoder.schema; }
  /**
   * The newest view received on the current stream (what to render), or null: a late packet's
   * view is returned by receive() but does not replace a newer one; a new stream clears it.
   */
  get view() { return this._view; }
  /** What the client holds in section 19's cost model (at most maxBytes). */
  get heldBytes() { return this.decoder.heldBytes; }
  get maxBytes() { return this.decoder.maxBytes; }
  /** The newest sequence number decoded on the adopted stream, or null. */
  get latest() { return this.decoder.latest; }
  /** The adopted stream's hello, or null. */
  get hello() { return this.decoder.hello; }

  /**
   * Decode one datagram from the server. A view, an adopted hello (a new stream), or a refusal
   * of kind `no-hello` or `baseline` make a reply due; nothing else does (junk cannot make a
   * client send).
   */
  receive(datagram) {
    const dec = this.decoder, stream = dec.stream;
    let view;
    try {
      view = dec.decode(datagram);
    } catch (e) {
      if (e instanceof DecodeError && (e.kind === 'no-hello' || e.kind === 'baseline')) this.due = true;
      throw e;
    }
    if (view !== null) {
      this.due = true;
      if (this._view === null || view.seq === dec.latest || dec.stream !== stream) this._view = view;
    } else if (dec.stream !== stream) {
      this.due = true;
      this._view = null;
    }
    return view;
  }

  /**
   * The reply to send now (a Uint8Array), or null when none is due: a hello request when no
   * stream is adopted, else an ack of `latest` and the 32 numbers before it (section 18).
   */
  reply() {
    if (!this.due) return null;
    this.due = false;
    const dec = this.decoder, T = dec.T, h = dec.stream;
    let out;
    if (h === null) {
      out = new Uint8Array(26 + T);
      out[0] = HELLO_REQUEST;
      out[1] = 0;
      putU32(out, 2, this.nonce);
      putU32(out, 6, this.rseq);
      out.set(this._fp, 10);
      dec.checks.Q.seal(out, 26);
    } else {
      out = new Uint8Array(16 + T);
      out[0] = ACK;
      putU32(out, 2, this.nonce);
      putU32(out, 6, this.rseq);
      const latest = dec._latest;
      if (latest >= 0) {
        out[1] = 1;
        out[10] = latest & 0xff; out[11] = latest >> 8;
        let acks = 0;
        const n = Math.min(32, dec.history - 1);     // possible baselines: less than history older than latest
        for (let i = 0; i < n; i++) if (dec.held.has((latest - 1 - i) & SEQ_MASK)) acks |= 1 << i;
        putU32(out, 12, acks >>> 0);
      }
      dec.checkR.seal(out, 16);
    }
    this.rseq = (this.rseq + 1) >>> 0;
    return out;
  }
}
function putU32(b, o, v) { b[o] = v & 0xff; b[o + 1] = (v >>> 8) & 0xff; b[o + 2] = (v >>> 16) & 0xff; b[o + 3] = (v >>> 24) & 0xff; }

/** Decode a bare packet (no datagram check) against explicitly held snapshots: for tests and tools. */
export function decodePacket(schema, packet, held = new Map()) {
  const coder = new PacketCoder(schema);
  const p = packet instanceof Uint8Array ? packet : new Uint8Array(packet);
  return coder.decode(p, 0, p.length, (s, baseline) => {
    const snap = held.get(s);
    if (!snap) throw new DecodeError(`snapshot packet: ${baseline ? 'its baseline' : 'the snapshot it extrapolates from'} ${s} is not held`, 'baseline');
    return snap;
  });
}

/**
 * The runner's output line for one datagram (docs: clients/<lang>/qc-decode). With a StreamClient
 * (`--replies`), the line ends in the key "reply": the hex of what reply() returned after the
 * datagram, or null.
 */
export function runnerLine(decoder, datagram) {
  const client = decoder instanceof StreamClient;
  let line;
  try {
    const snap = client ? decoder.receive(datagram) : decoder.decode(datagram);
    line = snap === null ? '{"pending":true}' : snap.toJSONLine();
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    line = `{"error":"${e.kind}"}`;
  }
  if (!client) return line;
  const r = decoder.reply();
  return `${line.slice(0, -1)},"reply":${r === null ? 'null' : `"${toHex(r)}"`}}`;
}

/** Split a DATAGRAMS.bin (each datagram as a u32 LE length and its bytes) into datagrams. */
export function splitDatagrams(bytes) {
  const out = [];
  let o = 0;
  while (o < bytes.length) {
    if (o + 4 > bytes.length) throw new Error(`datagram file: a length cut short at byte ${o}`);
    const n = u32le(bytes, o);
    o += 4;
    if (o + n > bytes.length) throw new Error(`datagram file: a datagram of ${n} bytes at byte ${o} runs past the end (${bytes.length} bytes)`);
    out.push(bytes.subarray(o, o + n));
    o += n;
  }
  return out;
}
