// src/util.mjs: errors and small numeric helpers (powers of two, float hex, rounding).

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

export const P2 = new Float64Array(65); for (let i = 0; i <= 64; i++) P2[i] = 2 ** i;
export const B2 = []; for (let i = 0; i <= 64; i++) B2.push(1n << BigInt(i));
export const BMASK = B2.map((v) => v - 1n);
export const MAX_SAFE = Number.MAX_SAFE_INTEGER;
export const SQRT1_2 = Math.SQRT1_2;          // 0.70710678118654752440 as a double, as the C core's QC_SQRT1_2

// Node's Buffer.compare, a native memcmp, where there is one (a page's client compares in JS)
const NATIVE_COMPARE = typeof Buffer === 'function' && typeof Buffer.compare === 'function' ? Buffer.compare : null;
export const HAS_NATIVE_COMPARE = NATIVE_COMPARE !== null;
/** Whether two integer typed arrays of one type hold the same elements: their bytes compared at
 * once where Node's native compare is (the C core's memcmp), else element by element. */
export function sameInts(a, b) {
  if (a.length !== b.length) return false;
  if (NATIVE_COMPARE !== null) {
    return NATIVE_COMPARE(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength)) === 0;
  }
  return sameIntsJS(a, b);
}
/** sameInts without the native compare (a page's). */
export function sameIntsJS(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** An integer (number or BigInt) as the canonical id/code representation: a number when safe. */
export function norm(v) {
  if (typeof v === 'bigint') return (v <= 9007199254740991n && v >= -9007199254740991n) ? Number(v) : v;
  return v;
}
export function toBig(v) { return typeof v === 'bigint' ? v : BigInt(v); }
export function isInteger(v) { return typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)); }
export function ctz32(w) { return 31 - Math.clz32(w & -w); }     // w != 0

/** C's round(): half away from zero, exact. */
export function roundHalfAway(v) {
  const t = Math.trunc(v);
  const f = v - t;                          // exact
  if (f >= 0.5) return t + 1;
  if (f <= -0.5) return t - 1;
  return t;
}

const F64 = new Float64Array(1);
const U32OF = new Uint32Array(F64.buffer);   // little-endian hosts: [lo, hi]
export const LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
export function dblWords(x) { F64[0] = x; return LITTLE ? [U32OF[1], U32OF[0]] : [U32OF[0], U32OF[1]]; }
export function wordsDbl(hi, lo) {
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
// Arguments

/** What a value is, for a TypeError's message: 'null', 'a string', 'an array', 'a DataView'... */
export function describe(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') {
    const name = v.constructor && v.constructor.name;
    return name && name !== 'Object' ? `a ${name}` : 'an object';
  }
  if (typeof v === 'number' || typeof v === 'bigint') return `the ${typeof v} ${typeof v === 'bigint' ? v + 'n' : v}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? v.slice(0, 40) + '...' : v)}`;
  return typeof v === 'undefined' ? 'undefined' : `a ${typeof v}`;
}

const NO_OPTIONS = Object.freeze({});
/**
 * An options argument: undefined or null are no options ({}); otherwise an object whose every
 * own key is one of `known` (a misspelt option is a TypeError naming it and the known ones, as
 * Python refuses an unexpected keyword argument).
 */
export function optionsArg(o, known, who) {
  if (o === undefined || o === null) return NO_OPTIONS;
  if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${who}: options must be an object {${known.join(', ')}}, got ${describe(o)}`);
  for (const k of Object.keys(o)) {
    if (!known.includes(k)) throw new TypeError(`${who}: unknown option '${k}' (the options are ${known.join(', ')})`);
  }
  return o;
}

/**
 * Bytes given as an argument: a Uint8Array (a Node Buffer is one) as it is; an ArrayBuffer or
 * SharedArrayBuffer, or any typed array or DataView, as the bytes it covers; an array of byte
 * values (0..255) copied. Anything else is a TypeError naming `who` and what it got (`noun`:
 * what the bytes are, 'one datagram' or 'one record').
 */
export function bytesArg(d, who, noun) {
  if (d instanceof Uint8Array) return d;
  if (d instanceof ArrayBuffer || (typeof SharedArrayBuffer !== 'undefined' && d instanceof SharedArrayBuffer)) return new Uint8Array(d);
  if (ArrayBuffer.isView(d)) return new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  const what = d === null ? 'null' : Array.isArray(d) ? 'an array' : typeof d === 'object' ? (d.constructor && d.constructor.name) || 'an object' : typeof d;
  if (d !== null && typeof d === 'object' && Number.isInteger(d.length) && d.length >= 0) {
    const out = new Uint8Array(d.length);
    for (let i = 0; i < d.length; i++) {
      const x = d[i];
      if (!(Number.isInteger(x) && x >= 0 && x <= 255)) {
        const many = x !== null && typeof x === 'object' && (x instanceof Uint8Array || x instanceof ArrayBuffer || Array.isArray(x));
        throw new TypeError(`${who}: expected ${noun} as bytes, got ${what} whose item ${i} is ${many ? `${noun === 'one datagram' ? 'a datagram' : 'a list of bytes'}: it takes ${noun} at a time` : 'no byte value (0..255)'}`);
      }
      out[i] = x;
    }
    return out;
  }
  const blob = typeof Blob !== 'undefined' && d instanceof Blob;
  throw new TypeError(`${who}: expected ${noun} as bytes (a Uint8Array, an ArrayBuffer, a Buffer or an array of byte values), got ${what}` +
    (blob ? ": a browser's WebSocket hands over Blobs unless ws.binaryType = 'arraybuffer'" : ''));
}

/**
 * Make `props` read-only properties of `obj` (set once: an assignment throws TypeError in strict
 * code, as ES modules are): a limit, key or check a later assignment could switch off.
 */
export function fixed(obj, props) {
  for (const [k, value] of Object.entries(props)) Object.defineProperty(obj, k, { value, writable: false, enumerable: true, configurable: false });
}

// A field named '__proto__' (an ASCII identifier, so a valid field name) is an own property of a
// record object like any other: plain assignment would set the object's prototype instead.
/** o[k] = v as an own, enumerable data property, '__proto__' included. */
export function setOwn(o, k, v) {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v;
}
/** o[k] when it is o's own property ('__proto__' included), else undefined for '__proto__'. */
export function getOwn(o, k) { return k === '__proto__' && !Object.hasOwn(o, k) ? undefined : o[k]; }
