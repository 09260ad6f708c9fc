// src/codecs.mjs: every codec (docs/codecs.md): quantize, dequantize, valid; their parameters and
// the double-double pow of PowerCurve.
import { B2, BMASK, DecodeError, P2, SQRT1_2, SchemaError, ValueRangeError, dblWords, isInteger, norm, roundHalfAway, toBig, wordsDbl } from './util.mjs';
import { HexFloat, JsonFloat } from './json.mjs';

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
export function show(v) {
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
export const KIND_NAMES = Object.fromEntries(Object.entries(KIND_CODES).map(([k, v]) => [v, k]));

/** A code argument as an exact integer: a number, a BigInt (or null when it is no integer). */
export function intCode(c) {
  if (typeof c === 'bigint') return c;
  if (typeof c === 'number' && Number.isInteger(c)) return c;
  if (typeof c === 'boolean') return c ? 1 : 0;
  return null;
}
/** The code as the slot stores it: a number when bits <= 53, else a BigInt. */
export function slotCode(bits, v) { return bits > 53 ? toBig(v) : Number(v); }

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

/**
 * The largest magnitude a value of `c` decodes to, in doubles, or null where there is none to
 * check against (Angle, Half, Grid, Enum): rule R6 of docs/schema-format.md, as the reference's
 * _reach (quantcodec/_codecs.pyx). A Vector: the largest of its components', null if any is null.
 */
function reach(c) {
  if (c instanceof Vector) {
    let m = -Infinity;
    for (const x of c.codecs) { const r = reach(x); if (r === null) return null; m = r > m ? r : m; }
    return m;
  }
  if (c instanceof Bounded) return Math.max(Math.abs(c.min), Math.abs(c.max));
  if (c instanceof PowerCurve) return c.max;
  if (c instanceof Fixed) {
    // (Python's offset + lo * step: the int code rounded to a double, times step, plus offset)
    const lo = Number(c.smin) * c.stepSize, hi = Number(c.smax) * c.stepSize;
    return Math.max(Math.abs(c.offset + lo), Math.abs(c.offset + hi));
  }
  if (c instanceof UInt) return Number(B2[c.bits] - 1n);
  if (c instanceof Int) return Number(B2[c.bits - 1]);
  if (c instanceof Bool) return 1.0;
  if (c instanceof IntRange) { const a = c.loB < 0n ? -c.loB : c.loB, b = c.hiB < 0n ? -c.hiB : c.hiB; return Number(a > b ? a : b); }
  return null;
}

export class NearlyZero extends Codec {
  constructor(inner, threshold) {
    super();
    if (!(inner instanceof Codec) || inner instanceof NearlyZero || inner instanceof Quat || inner instanceof UnitVector) throw new SchemaError(`NearlyZero: inner must be a scalar codec or a Vector, got ${inner}`);
    const t = floatParam('NearlyZero', 'threshold', threshold);
    if (t < 0) throw new SchemaError(`NearlyZero: threshold must be non-negative, got ${pyRepr(t)}`);
    const r = reach(inner);
    if (r !== null && t >= r) throw new SchemaError(`NearlyZero: threshold ${pyRepr(t)} covers the whole range of ${inner} (no decoded value is farther than ${pyRepr(r)} from zero): every value would be sent as zero; the threshold must be below that`);
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
function nestedKind(spec) { return spec && typeof spec === 'object' && !Array.isArray(spec) && Object.hasOwn(spec, 'kind') ? spec.kind : undefined; }

/** A codec from its spec (as codec.spec() / the schema JSON writes it). */
export function codecFromSpec(spec) {
  if (spec instanceof Codec) return spec;
  if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new SchemaError(`codec spec must be a dict, got ${Array.isArray(spec) ? 'list' : typeof spec}`);
  // (own properties only, here and in take(): a kind or key such as 'constructor' or '__proto__'
  // names an Object.prototype member, which is no codec kind and no parameter)
  const d = new Map(Object.entries(spec));
  const kind = d.get('kind');
  d.delete('kind');
  if (typeof kind !== 'string' || !Object.hasOwn(KIND_CODES, kind)) throw new SchemaError(`unknown codec kind ${show(kind)}; expected one of ${Object.keys(KIND_CODES).join(', ')}`);
  const take = (key, dflt) => {
    if (d.has(key)) { const v = d.get(key); d.delete(key); return v; }
    if (dflt === undefined) throw new SchemaError(`${kind} spec is missing '${key}'`);
    return dflt;
  };
  const done = () => {
    const extra = [...d.keys()].sort();
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
    case 'Enum': { const v = d.has('labels') ? take('labels') : take('count'); done(); c = new Enum(v); break; }
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
      const k = nestedKind(d.get('inner'));
      if (NOT_SCALAR.includes(k) && k !== 'Vector') throw new SchemaError(`NearlyZero: inner must be a scalar codec or a Vector, got a ${k} spec`);
      const inner = codecFromSpec(take('inner'));
      const t = take('threshold'); done();
      c = new NearlyZero(inner, t);
      break;
    }
  }
  return c;
}
