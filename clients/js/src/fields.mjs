// src/fields.mjs: a schema's slot table for the delta decoder (classes, components, validity)
// and the reading of one changed field (sections 7.3-7.4: the references, the differences, the
// quaternions and their one remap) or one new record; PacketCoder (packet.mjs) builds on it.
import { BMASK, DecodeError, P2, toBig } from './util.mjs';
import { NearlyZero } from './codecs.mjs';
import { C_FLAG, C_ORD, C_SMAG, C_QUAT, C_UVEC, C_ABS, CLS, extrapolate, addZz } from './rules.mjs';

/**
 * The slot table of a schema as the delta decoder reads it: slot classes and widths, the
 * components (each a difference of its own), the fields with their slots and components, the
 * validity of codes, and per packet each component's Exp-Golomb parameter (kk) and whether it
 * is extrapolated (pp). Its methods read one changed field or one new record at a reader.
 */
export class FieldReader {
  constructor(schema) {
    this.schema = schema;
    const S = this.S = schema.nslots;
    this.W = schema.nwide;
    this.slots = schema.slots;
    // each slot as messages name it (as the Python package and the C client do): field 'p'[1],
    // field 'v' (NearlyZero flag)
    this.slotNames = schema.slots.map((sl) => {
      const name = schema.fieldInfo[sl.field].name, rest = sl.path.slice(name.length);
      return `field '${name}'${rest === '.flag' ? ' (NearlyZero flag)' : rest}`;
    });
    this.eIds = null;           // the entity being read, for messages (entityAt)
    this.eI = 0;
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
    this.quatA = new Float64Array(4);     // quatEscape's scratch: the four component codes
    this.quatOut = new Float64Array(3);   // and the three new ones
    // Codes of schemas whose slots all have at most 32 bits are held in an Int32Array (the code's
    // low 32 bits: an unsigned code from 2**31 reads back negative, see Snapshot.code), others in a
    // Float64Array (exact up to 53 bits; wider slots in BigInt beside it).
    this.narrow = schema.slots.every((sl) => sl.bits <= 32);
    this.Codes = this.narrow ? Int32Array : Float64Array;
    this.pp = new Uint8Array(comps.length);
    this.slotValid = schema.slots.map((s) => (s.cls === 'flag' ? null : allValid(s.codec) ? null : s.codec));
    // numeric tables for the fast path (fields without wide slots or components over 32 bits)
    this.vkind = new Int8Array(S);          // 0 every code valid, 1 PowerCurve, 2 Enum, IntRange or midpoint Bounded (a top code), 3 Quat
    this.vlim = new Float64Array(S);        // PowerCurve: the negative zero code; Enum: n - 1; IntRange: hi - lo; Bounded: its top code
    this.signedS = new Uint8Array(S);
    this.cbitsS = new Int32Array(S);
    this.qtopS = new Float64Array(S);       // Quat: the mode's top component code (the remap's mirror)
    this.qshrunk = new Array(S).fill(null); // Quat: each component code's value shrunk by a step
    this.qsq = new Array(S).fill(null);     // Quat: its square's upper bound (quatSurelyValid)
    schema.slots.forEach((sl, i) => {
      this.signedS[i] = sl.signed ? 1 : 0;
      this.cbitsS[i] = sl.cbits;
      if (sl.codec && sl.codec.kind === 'Quat') this.qtopS[i] = sl.codec.top;
      const c = sl.codec;
      if (!c || allValid(c)) return;
      if (c.kind === 'PowerCurve') { this.vkind[i] = 1; this.vlim[i] = c.half; }
      else if (c.kind === 'Enum') { this.vkind[i] = 2; this.vlim[i] = c.n - 1; }
      else if (c.kind === 'Bounded') { this.vkind[i] = 2; this.vlim[i] = c.maxcode; }   // midpoint
      else if (c.kind === 'IntRange') { this.vkind[i] = 2; this.vlim[i] = Number(c.spanB); }   // codes 0 .. hi - lo
      else if (c.kind === 'Quat') {
        this.vkind[i] = 3;
        if (c.cbits <= 16) {
          const t = new Float64Array(2 ** c.cbits);
          // a code above the mode's top (midpoint: 2**b - 1) is no level: 2.0 fails every test
          for (let k = 0; k < t.length; k++) { const x = Math.abs(c.kept(k)) - c.st; t[k] = k > c.top ? 2.0 : x < 0.0 ? 0.0 : x; }
          this.qshrunk[i] = t;
          // and an upper bound of its square in units of 2**-32 (quatSurelyValid); 2**32 fails
          this.qsq[i] = Uint32Array.from(t, (x) => Math.min(4294967296 - 1, Math.ceil(x * x * 4294967296) + 1));
        }
      }
    });
    this.cb = Int32Array.from(comps.map((c) => c.b));
    this.fields.forEach((fd) => {
      fd.fast = true;
      for (let t = fd.s0; t < fd.s1; t++) if (schema.slots[t].wide) fd.fast = false;
      for (let c = fd.c0; c < fd.c1; c++) if (comps[c].b > 32) fd.fast = false;
    });
    this.allFast = this.fields.every((fd) => fd.fast);
  }

  /** Read a whole record of slot codes into codes/big at row o (each code checked). */
  readRecord(r, codes, big, o) {
    const S = this.S, W = this.W, slots = this.slots;
    for (let s = 0; s < S; s++) {
      const sl = slots[s];
      if (sl.wide) {
        let v = r.readBig(sl.bits);
        if (sl.signed) v = BigInt.asIntN(sl.bits, v);
        if (this.slotValid[s] && !this.slotValid[s].valid(v)) this.invalidCode(s, v, r.pos);
        big[o * W + sl.bigIndex] = v;
        codes[o * S + s] = 0;
        continue;
      }
      let v = sl.bits <= 32 ? r.read(sl.bits) : r.readNum(sl.bits);
      if (sl.signed && v >= P2[sl.bits - 1]) v -= P2[sl.bits];
      if (this.slotValid[s] && !this.slotValid[s].valid(v)) this.invalidCode(s, v, r.pos);
      codes[o * S + s] = v;
      if (sl.cls === 'flag' && v === 0) {
        for (let t = s + 1; t <= s + sl.span; t++) { if (slots[t].wide) big[o * W + slots[t].bigIndex] = 0n; else codes[o * S + t] = 0; }
        s += sl.span;
      }
    }
  }

  /**
   * readField for a field whose slots are all numbers (<= 53 bits) and whose components are
   * at most 32 bits: integer arithmetic only. bo/oo/po: row offsets (po -1: not in pred).
   */
  readFieldFast(r, fd, bcodes, bo, codes, oo, pcodes, po, num, den) {
    const cls = this.cls, kk = this.kk, pp = this.pp, cbA = this.cb, c0A = this.slotComp0;
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
        const u = r.eg(kk[c], b);
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
        const up = r.eg(kk[c], cb), uq = r.eg(kk[c + 1], cb);
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
        if (!ok) this.invalidCode(s, v, r.pos);
      }
      codes[oo + s] = v;
      if (codes[oo + s] !== bcode) diff = true;      // (as stored: an Int32Array wraps)
      s++;
    }
    return diff;
  }

  /** The entity whose fields or record are read next: ids[i] (for messages; entityAt(null, 0)
   * once the entities are read, so that no snapshot's ids are kept alive by it). */
  entityAt(ids, i) { this.eIds = ids; this.eI = i; }

  /** Where an error of the entity being read lies: its id, and the slot's or field's name. */
  at(name) {
    const id = this.eIds === null ? '?' : this.eIds[this.eI];
    this.eIds = null;
    return `snapshot packet: entity ${id}: ${name}`;
  }

  /** Throws the DecodeError of code v read for slot s (pos: the bit after it). */
  invalidCode(s, v, pos) {
    throw new DecodeError(`${this.at(this.slotNames[s])}: code ${v} is not valid for ${this.slots[s].codec} (at bit ${pos})`);
  }

  /** Throws the DecodeError of field f marked changed but read unchanged (pos: the bit after it). */
  unchangedField(f, pos) {
    throw new DecodeError(`${this.at(`field '${this.schema.fieldInfo[f].name}'`)}: marked changed but unchanged (at bit ${pos})`);
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

  /** A quaternion slot of at most 53 bits (cbits <= 17): its number code's parts, then readQuatParts. */
  readQuatFast(r, s, bcode, hasP, pcode, num, den) {
    const cb = this.cbitsS[s], M = P2[cb];
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
    return this.readQuatParts(r, s, bidx, ba, bb, bc, same, pa, pb, pc, num, den);
  }

  /**
   * A changed quaternion (section 7.4): the baseline's smallest-three parts (index bidx, kept
   * component codes ba, bb, bc) and, when `same` (pred has the same index), pred's for
   * extrapolation; three differences of the kept components, or the escape. The slot's code.
   */
  readQuatParts(r, s, bidx, ba, bb, bc, same, pa, pb, pc, num, den) {
    const cb = this.cbitsS[s], c0 = this.slotComp0[s], kk = this.kk, pp = this.pp;
    const u0 = r.eg(kk[c0], cb, true);
    if (u0 < 0) return this.quatEscape(r, s, bidx, ba, bb, bc);
    const a = addZz(same && pp[c0] ? extrapolate(ba, pa, cb, num, den) : ba, u0, cb);
    const b = addZz(same && pp[c0 + 1] ? extrapolate(bb, pb, cb, num, den) : bb, r.eg(kk[c0 + 1], cb), cb);
    const c = addZz(same && pp[c0 + 2] ? extrapolate(bc, pc, cb, num, den) : bc, r.eg(kk[c0 + 2], cb), cb);
    return this.slots[s].codec.pack(bidx, a, b, c);
  }

  /**
   * A quaternion whose first difference is the escape: sent whole, or remapped to another index
   * j (the client's one statement of the smallest-three remap): the kept components at the old
   * index's positions, the old largest (implied) at j's, each the reference of a difference,
   * negated (L - c, L the mode's top code) unless the new largest's code is in the upper half.
   */
  quatEscape(r, s, bidx, ba, bb, bc) {
    const sl = this.slots[s], cb = sl.cbits, c0 = this.slotComp0[s], kk = this.kk;
    if (r.read1() === 0) return sl.wide ? r.readBig(sl.bits) : r.readNum(sl.bits);
    const j = r.read(2);
    if (j === bidx) throw new DecodeError(`${this.at(this.slotNames[s])}: a smallest-three remap to the baseline's own index (at bit ${r.pos})`);
    const A = this.quatA, out = this.quatOut;        // (scratch: no allocation a quaternion)
    A[0] = bidx === 0 ? 0 : ba; A[1] = bidx === 0 ? ba : bidx === 1 ? 0 : bb;
    A[2] = bidx <= 1 ? bb : bidx === 2 ? 0 : bc; A[3] = bidx <= 2 ? bc : 0;
    const aj = A[j], top = aj >= P2[cb - 1], L = this.qtopS[s];
    for (let x = 0, t = 0; x < 4; x++) {
      if (x === j) continue;
      const ref = x === bidx ? aj : (top ? A[x] : L - A[x]);
      out[t] = addZz(ref, r.eg(kk[c0 + t], cb), cb);
      t++;
    }
    return sl.codec.pack(j, out[0], out[1], out[2]);
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
    let v = addZz(usep ? extrapolate(B, P, cp.b, ctx.num, ctx.den) : B, u, cp.b);
    if (cp.smag && v >= P2[cp.b - 1]) v = (v ^ (P2[cp.b - 1] - 1)) >>> 0;
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
        v = this.readQuat(ctx, sl, bcode, pr);
      } else {
        // ord, smag, uvec: each component a difference from its reference
        const c0 = this.slotComp0[s];
        const nc = cls === C_UVEC ? 2 : 1;
        const cp0 = comps[c0];
        if (nc === 1 && cp0.b > 32) {
          // a wide ordered slot: BigInt arithmetic, no extrapolation (only components <= 32 bits have it)
          const b = cp0.b;
          const u = toBig(r.eg(kk[c0], b));
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
        this.invalidCode(s, v, r.pos);
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

  readQuat(ctx, sl, bcode, pr) {
    const q = sl.codec;
    const [bidx, ba, bb, bc] = q.unpack(bcode);
    let pidx = -1, pa = 0, pb = 0, pc = 0;
    if (pr >= 0) [pidx, pa, pb, pc] = q.unpack(sl.wide ? ctx.pbig[pr * this.W + sl.bigIndex] : ctx.pcodes[pr * this.S + sl.index]);
    return this.readQuatParts(ctx.r, sl.index, bidx, ba, bb, bc, pr >= 0 && pidx === bidx, pa, pb, pc, ctx.num, ctx.den);
  }
}

/** Whether every code a slot's width can carry is valid for the codec (no check needed). */
function allValid(c) {
  switch (c.kind) {
    case 'Bounded': return c.mode !== 'midpoint';      // midpoint: 2**b - 1 is not a code
    case 'Angle': case 'UInt': case 'Int': case 'Half': case 'Grid': case 'UnitVector': case 'Bool': return true;
    case 'Fixed': return true;
    default: return false;        // PowerCurve (negative zero), Enum (codes >= n), IntRange (codes > hi - lo), Quat
  }
}
