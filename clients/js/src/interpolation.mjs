// src/interpolation.mjs: snapshot interpolation (docs/interpolation.md): Interpolator, a buffer of
// views keyed by tick, sampled at a render time.
import { SchemaError, describe, fixed, getOwn, optionsArg, setOwn } from './util.mjs';
import { Snapshot } from './snapshot.mjs';
import { NearlyZero, Quat, UnitVector, Vector, show } from './codecs.mjs';
import { Schema } from './schema.mjs';


const R_LINEAR = 0, R_ANGLE = 1, R_QUAT = 2, R_UNIT = 3, R_STEP = 4;
const LINEAR_KINDS = new Set(['Bounded', 'Fixed', 'PowerCurve', 'Half', 'Grid']);
const STEP_KINDS = new Set(['UInt', 'Int', 'IntRange', 'Enum', 'Bool']);

/** [rule, full turn, low end] of a scalar codec. */
function scalarRule(c) {
  if (LINEAR_KINDS.has(c.kind)) return [R_LINEAR, 0.0, 0.0];
  if (STEP_KINDS.has(c.kind)) return [R_STEP, 0.0, 0.0];
  if (c.kind === 'Angle') return [R_ANGLE, c.full, c.signedAngle ? -c.full / 2.0 : 0.0];
  throw new SchemaError(`no interpolation rule for ${c.kind}`);
}
/** A scalar slot's code -> its value as the interpolator holds it (Bool 0/1, Enum its index). */
function scalarValue(c, code) {
  if (c.kind === 'Bool' || c.kind === 'Enum') return Number(code);
  return c.dequantize(code);
}

/**
 * The plan of one field: its width (components: 3 for a Vector of 3, 4 for a Quat), its rule per
 * component, the slots it reads and whether its column must be a plain Array (an exact code wider
 * than 53 bits, held as a BigInt).
 */
function fieldPlan(schema, fi) {
  const c = fi.codec;
  let inner = c, flag = -1, s0 = fi.s0;
  if (c instanceof NearlyZero) { inner = c.inner; flag = fi.s0; s0 = fi.s0 + 1; }
  const plan = { name: fi.name, flag, s0, kind: 'scalar', width: 1, rules: null, full: null, lo: null, comps: null, exact: false };
  if (inner instanceof Quat || inner instanceof UnitVector) {
    plan.kind = inner instanceof Quat ? 'quat' : 'unit';
    plan.width = inner instanceof Quat ? 4 : 3;
    plan.comps = [inner];
    return plan;
  }
  const comps = inner instanceof Vector ? inner.codecs : [inner];
  plan.comps = comps;
  plan.width = comps.length;
  const rr = comps.map(scalarRule);
  plan.rules = Int8Array.from(rr, (r) => r[0]);
  plan.full = Float64Array.from(rr, (r) => r[1]);
  plan.lo = Float64Array.from(rr, (r) => r[2]);
  plan.exact = comps.some((cc, k) => rr[k][0] === R_STEP && cc.bits > 53);
  return plan;
}

function ipShort(d, full) { return d - full * Math.floor(d / full + 0.5); }
function ipWrap(v, full, lo) { return v - full * Math.floor((v - lo) / full); }

/** nlerp of rows x0 (at o0) and x1 (at o1) of width w into out (at oo); docs/interpolation.md. */
function ipNlerp(x0, o0, x1, o1, w, alpha, hemisphere, out, oo) {
  let neg = false;
  if (hemisphere) {
    let dot = 0.0;
    for (let k = 0; k < w; k++) dot = dot + x0[o0 + k] * x1[o1 + k];
    neg = dot < 0.0;
  }
  let n = 0.0;
  for (let k = 0; k < w; k++) {
    const a = x0[o0 + k], b = neg ? -x1[o1 + k] : x1[o1 + k];
    const q = a + (b - a) * alpha;
    out[oo + k] = q;
    n = n + q * q;
  }
  n = Math.sqrt(n);
  if (n === 0.0) { for (let k = 0; k < w; k++) out[oo + k] = x0[o0 + k]; return; }
  for (let k = 0; k < w; k++) out[oo + k] = out[oo + k] / n;
}

/**
 * What Interpolator.sample gives: `ids` (view a's, ascending), `columns` ({field: Float64Array of
 * count * width values, row-major}; a plain Array for a field holding codes wider than 53 bits),
 * `width` ({field: components per entity}), `a` and `b` (the views' unwrapped ticks; b null when
 * held or extrapolated) and `alpha` (the blend; for extrapolation the x of docs/interpolation.md;
 * 0 when held).
 */
export class InterpolatedSample {
  constructor(schema, ids, columns, width, a, b, alpha) {
    Object.assign(this, { schema, ids, columns, width, a, b, alpha });
  }
  get count() { return this.ids.length; }
  /** The values of entity i as {field: value}: a number for a scalar field, an Array for a
   * Vector, Quat or UnitVector (Bool as 0/1, Enum as its index). */
  values(i) {
    const out = {};
    for (const f of this.schema.fields) {
      const w = getOwn(this.width, f.name), col = getOwn(this.columns, f.name);
      setOwn(out, f.name, w === 1 && !(f.codec instanceof Vector) && !(f.codec instanceof NearlyZero && f.codec.isVec)
        ? col[i] : Array.prototype.slice.call(col, i * w, (i + 1) * w));
    }
    return out;
  }
  /** The index of entity `id` in this sample, or -1. */
  indexOf(id) {
    let lo = 0, hi = this.ids.length - 1;
    while (lo <= hi) {
      const m = (lo + hi) >> 1, v = this.ids[m];
      if (v == id) return m;
      if (v < id) lo = m + 1; else hi = m - 1;
    }
    return -1;
  }
}

/**
 * Snapshot interpolation (docs/interpolation.md, the reference quantcodec/interpolation.py): a
 * buffer of decoded views keyed by their unwrapped tick, sampled at a render time in ticks.
 * `new Interpolator(schema, {capacity = 32, maxExtrapolation = 2.0})`; `push(view)` -> false when
 * dropped (a duplicate tick, or older than every view of a full buffer); `sample(t)` -> an
 * InterpolatedSample; `reset()` for a new stream; `stats` {pushed, dropped, late, extrapolated,
 * early}.
 */
export class Interpolator {
  constructor(schema, options) {
    const { capacity = 32, maxExtrapolation = 2.0 } = optionsArg(options, ['capacity', 'maxExtrapolation'], 'Interpolator');
    if (!(schema instanceof Schema)) throw new TypeError('Interpolator: expected a Schema');
    // (numbers only, both alike: a string, null or an array is a TypeError, not coerced)
    if (typeof capacity !== 'number') throw new TypeError(`Interpolator: capacity must be an integer of at least 2, got ${describe(capacity)}`);
    if (!Number.isInteger(capacity) || capacity < 2) throw new RangeError(`Interpolator: capacity must be an integer of at least 2, got ${show(capacity)}`);
    if (typeof maxExtrapolation !== 'number') throw new TypeError(`Interpolator: maxExtrapolation must be a finite number >= 0 (ticks), got ${describe(maxExtrapolation)}`);
    const mx = maxExtrapolation;
    if (!(mx >= 0.0 && mx < Infinity)) throw new RangeError(`Interpolator: maxExtrapolation must be finite and >= 0, got ${show(maxExtrapolation)}`);
    // (read-only: an assignment to capacity could let the buffer grow without bound)
    fixed(this, { schema, capacity, maxExtrapolation: mx, stats: { pushed: 0, dropped: 0, late: 0, extrapolated: 0, early: 0 } });
    this.plans = schema.fieldInfo.map((fi) => fieldPlan(schema, fi));
    this.width = {};
    for (const p of this.plans) setOwn(this.width, p.name, p.width);
    this.views = [];           // {tick, ids, cols: [column per field]} ascending by tick
    this.lastT = null;
  }
  #newest = null;
  /** The newest tick pushed (unwrapped), or null; read-only (tick() unwraps against it). */
  get newest() { return this.#newest; }

  get size() { return this.views.length; }
  get oldest() { return this.views.length ? this.views[0].tick : null; }

  /**
   * The unwrapped tick of a 16-bit seq, against the newest view pushed. An integer only (a number
   * or a bigint, taken mod 2**16): TypeError for anything else, RangeError for NaN, an infinity or
   * a fraction (Python's int(seq) refuses NaN and the infinities too).
   */
  tick(seq) {
    if (typeof seq === 'bigint') seq = Number(BigInt.asUintN(16, seq));
    else if (typeof seq !== 'number') throw new TypeError(`Interpolator.tick: seq must be an integer, got ${describe(seq)}`);
    else if (!Number.isInteger(seq)) throw new RangeError(`Interpolator.tick: seq must be an integer, got ${seq}`);
    seq = seq & 0xffff;
    if (this.newest === null) return seq;
    const d = (seq - this.newest) & 0xffff;
    return this.newest + (d >= 0x8000 ? d - 0x10000 : d);
  }

  /**
   * Forget every view and the latest render time (`stats` go on counting): the next view pushed
   * starts a new timeline, its tick its seq. Call it when the client adopts a new stream
   * (`StreamClient.streamId` changes): a restarted server counts its ticks from its own start,
   * and its views, unwrapped against the old stream's newest, would be older than every held view
   * of a full buffer and dropped.
   */
  reset() {
    this.views = [];
    this.#newest = null;
    this.lastT = null;
  }

  /** Add a decoded view (a Snapshot, as StreamClient.receive returns); false when dropped. */
  push(view) {
    // (everything that can refuse the view comes before anything changes: the stats too)
    if (!(view instanceof Snapshot)) throw new TypeError(`Interpolator.push: expected a view (a Snapshot, as StreamClient.receive returns), got ${describe(view)}`);
    const vs = view.schema;
    if (vs !== this.schema && vs.fingerprint !== this.schema.fingerprint) {
      throw new SchemaError(`Interpolator.push: a view of schema '${vs.name}' in the buffer of schema '${this.schema.name}' (their fingerprints differ)`);
    }
    const t = this.tick(view.seq);
    const V = this.views;
    let i = 0;
    while (i < V.length && V[i].tick < t) i++;
    if ((i < V.length && V[i].tick === t) || (V.length >= this.capacity && t < V[0].tick)) {
      this.stats.dropped++;
      return false;
    }
    const entry = { tick: t, ids: Array.from(view.ids), cols: this._columns(view) };
    if (this.lastT !== null && t <= this.lastT) this.stats.late++;
    V.splice(i, 0, entry);
    if (V.length > this.capacity) V.shift();
    if (this.#newest === null || t > this.#newest) this.#newest = t;
    this.stats.pushed++;
    return true;
  }

  /** Every field's values of a view, dequantized from its codes. */
  _columns(view) {
    const n = view.ids.length;
    return this.plans.map((p) => {
      const w = p.width, col = p.exact ? new Array(n * w) : new Float64Array(n * w);
      for (let i = 0; i < n; i++) {
        const o = i * w;
        if (p.flag >= 0 && Number(view.code(i, p.flag)) === 0) { for (let k = 0; k < w; k++) col[o + k] = 0.0; continue; }
        if (p.kind !== 'scalar') {
          const v = p.comps[0].dequantize(view.code(i, p.s0));
          for (let k = 0; k < w; k++) col[o + k] = v[k];
          continue;
        }
        for (let k = 0; k < w; k++) {
          const v = scalarValue(p.comps[k], view.code(i, p.s0 + k));
          col[o + k] = p.exact ? v : Number(v);
        }
      }
      return col;
    });
  }

  /** Every entity's values at render time t (in ticks, a double). */
  sample(t) {
    if (typeof t !== 'number') throw new TypeError(`Interpolator.sample: the render time must be a number of ticks, got ${t === null ? 'null' : typeof t}`);
    if (!this.views.length) throw new Error('Interpolator.sample: no view pushed yet');
    if (t === t) this.lastT = this.lastT === null || t > this.lastT ? t : this.lastT;     // (a NaN is no render time)
    const V = this.views;
    let ia = -1;
    for (let i = 0; i < V.length; i++) if (V[i].tick <= t) ia = i;
    if (ia < 0) {
      this.stats.early++;
      return this._out(V[0], null, null, 0.0, 0);
    }
    const A = V[ia];
    if (ia + 1 < V.length) {
      const B = V[ia + 1];
      return this._out(A, B, B.tick, (t - A.tick) / (B.tick - A.tick), 1);
    }
    if (ia === 0 || t === A.tick) return this._out(A, null, null, 0.0, 0);
    this.stats.extrapolated++;
    const P = V[ia - 1];
    const e = Math.min(t - A.tick, this.maxExtrapolation);
    return this._out(A, P, null, e / (A.tick - P.tick), 2);
  }

  // how: 0 held, 1 between A and O (alpha x), 2 extrapolating from A away from O (x)
  _out(A, O, b, x, how) {
    const ids = A.ids, n = ids.length;
    // the row of each of A's entities in O, or -1 (both ascending: a merge)
    let pos = null;
    if (how !== 0) {
      pos = new Int32Array(n);
      const oi = O.ids, m = oi.length;
      let j = 0;
      for (let k = 0; k < n; k++) {
        const id = ids[k];
        while (j < m && oi[j] < id) j++;
        pos[k] = j < m && oi[j] == id ? j : -1;
      }
    }
    const columns = {};
    this.plans.forEach((p, f) => {
      const w = p.width, ca = A.cols[f];
      const out = p.exact ? ca.slice() : new Float64Array(ca);
      setOwn(columns, p.name, out);
      if (how === 0) return;
      const co = O.cols[f];
      if (p.kind !== 'scalar') {
        if (how === 2) return;                              // rotations and unit vectors held
        const hemi = p.kind === 'quat';
        for (let k = 0; k < n; k++) if (pos[k] >= 0) ipNlerp(ca, k * w, co, pos[k] * w, w, x, hemi, out, k * w);
        return;
      }
      const R = p.rules, full = p.full, lo = p.lo;
      for (let k = 0; k < n; k++) {
        const j = pos[k];
        if (j < 0) continue;
        const oa = k * w, oo = j * w;
        for (let c = 0; c < w; c++) {
          const r = R[c];
          if (r === R_STEP) continue;
          const xa = ca[oa + c], xo = co[oo + c];
          if (how === 1) {
            out[oa + c] = r === R_LINEAR ? xa + (xo - xa) * x : ipWrap(xa + ipShort(xo - xa, full[c]) * x, full[c], lo[c]);
          } else {
            out[oa + c] = r === R_LINEAR ? xa + (xa - xo) * x : ipWrap(xa + ipShort(xa - xo, full[c]) * x, full[c], lo[c]);
          }
        }
      }
    });
    return new InterpolatedSample(this.schema, ids.slice(), columns, this.width, A.tick, b, x);
  }
}
