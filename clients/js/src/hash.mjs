// src/hash.mjs: SHA-256 (schema fingerprints), CRC-32C (datagram checks) and SipHash-2-4 with the
// key derivation of wire-format section 17; little-endian byte helpers.

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
export function utf8(s) { return new TextEncoder().encode(s); }
export function asciiBytes(s) {
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

// slicing-by-8 (Intel's): eight tables, eight bytes a step (a datagram's check is ~4x faster than
// a byte a step)
const CRC8 = (() => {
  const t = new Int32Array(8 * 256);
  t.set(CRC_TABLE);
  for (let n = 0; n < 256; n++) {
    let c = CRC_TABLE[n];
    for (let k = 1; k < 8; k++) { c = CRC_TABLE[c & 0xff] ^ (c >>> 8); t[k * 256 + n] = c; }
  }
  return t;
})();

/** crc32c(data, seed): seed is the CRC of what came before (0 for none). Returns an unsigned 32-bit number. */
export function crc32c(data, seed = 0, start = 0, end = data.length) {
  let crc = ~seed, i = start;
  const T = CRC8;
  for (; i + 8 <= end; i += 8) {
    const lo = crc ^ (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24));
    crc = T[1792 + (lo & 0xff)] ^ T[1536 + ((lo >>> 8) & 0xff)] ^ T[1280 + ((lo >>> 16) & 0xff)] ^ T[1024 + (lo >>> 24)]
      ^ T[768 + data[i + 4]] ^ T[512 + data[i + 5]] ^ T[256 + data[i + 6]] ^ T[data[i + 7]];
  }
  for (; i < end; i++) crc = CRC_TABLE[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (~crc) >>> 0;
}

// ------------------------------------------------------------------------------------------------
// SipHash-2-4 (Aumasson and Bernstein, 2012) and the keys of wire-format section 17. Synchronous
// and BigInt-free: each 64-bit word is two int32 halves (WebCrypto is asynchronous, and has no
// SipHash anyway).

export let SIP_LO = 0, SIP_HI = 0;          // the result of sipCore: low and high 32 bits (unsigned)

/** A 16-byte SipHash key as its four little-endian u32 words [k0 lo, k0 hi, k1 lo, k1 hi]. */
export function sipWords(key16) {
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
export function sipCore(k, d, start, end) {
  let v0l = k[0] ^ 0x70736575, v0h = k[1] ^ 0x736f6d65;
  let v1l = k[2] ^ 0x6e646f6d, v1h = k[3] ^ 0x646f7261;
  let v2l = k[0] ^ 0x6e657261, v2h = k[1] ^ 0x6c796765;
  let v3l = k[2] ^ 0x79746573, v3h = k[3] ^ 0x74656462;
  const len = end - start, last = start + (len & ~7);
  let s = 0, t = 0, ml = 0, mh = 0;
  // each 8-byte word m (the last one: the tail bytes and the length's low byte): v3 ^= m, two
  // rounds, v0 ^= m; then the finalization: v2 ^= 0xff, four rounds (one statement of the round)
  for (let i = start, rounds = 2; rounds === 2; i += 8) {
    if (i < last) {
      ml = d[i] | (d[i + 1] << 8) | (d[i + 2] << 16) | (d[i + 3] << 24);
      mh = d[i + 4] | (d[i + 5] << 8) | (d[i + 6] << 16) | (d[i + 7] << 24);
    } else if (i === last) {
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
    } else {
      ml = 0; mh = 0; v2l ^= 0xff; rounds = 4;
    }
    v3l ^= ml; v3h ^= mh;
    for (let r = 0; r < rounds; r++) {
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
export function sharedKey(key, who) {
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
export function subKey(mk, label) { return sipPair(sipWords(mk), label, false); }

/**
 * The tag key of a label under a shared key (section 17): macKey(key, K + 'P') is kP,
 * macKey(key, 'quantcodec hello') is kH. `label`: bytes, or an ASCII string.
 */
export function macKey(key, label) {
  return subKey(masterKey(key), bytesOf(label, 'macKey label'));
}

export function u32le(b, o) { return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0; }
export function u16le(b, o) { return b[o] | (b[o + 1] << 8); }
export function u64le(b, o) { return BigInt(u32le(b, o)) | (BigInt(u32le(b, o + 4)) << 32n); }
