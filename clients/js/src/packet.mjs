// src/packet.mjs: one snapshot packet (wire-format sections 5-9): PacketCoder reads the header,
// the sets, new records and the changed entities' fields into a Snapshot (the interpreted path;
// fastpath.mjs compiles the common schemas).
import { BMASK, DecodeError, MAX_SAFE, P2, ctz32, norm, toBig } from './util.mjs';
import { NearlyZero } from './codecs.mjs';
import { BitReader } from './bits.mjs';
import { C_FLAG, C_ORD, C_SMAG, C_QUAT, C_UVEC, C_ABS, CLS, extrapolate, addZz } from './rules.mjs';
import { makeEntityReader } from './fastpath.mjs';
import { SEQ_MASK, Snapshot } from './snapshot.mjs';

// Row versions: every row a packet decodes (a new entity, a changed one) gets a new number; a
// row copied unchanged from the baseline keeps the baseline's. Equal versions therefore mean
// equal rows, which spares comparing them (the contexts of 7.3, duplicates).
let ROW_VERSION = 0;
const SLAB_BYTES = 256 * 1024;

export class PacketCoder {
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
    this.reader = new BitReader(new Uint8Array(0));   // reused: a coder decodes one packet at a time
    this.ident = null;         // identity(): 0, 1, 2, ...
    this.quatA = new Float64Array(4);     // quatEscape's scratch: the four component codes
    this.quatOut = new Float64Array(3);   // and the three new ones
    this.slab = null;          // the ArrayBuffer that new snapshots' arrays are cut from (alloc)
    this.slabUsed = 0;
    this.markSlab = null;      // the slab and its use before the last decode (releaseLast)
    this.markUsed = 0;
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
    this.entityGen = makeEntityReader(this);
  }

  /**
   * A new typed array of n elements for a snapshot (its codes, its row versions; contents
   * undefined: the caller writes every element): a view into a slab, an ArrayBuffer of at least
   * SLAB_BYTES that this coder's snapshots share (a slab lives as long as a view of it). A new
   * ArrayBuffer for every array would cost its allocation, fresh pages and its collection for
   * each snapshot: the bulk of a packet that changes little. Only the last packet's arrays are
   * ever given back (releaseLast), when nothing else can hold them.
   */
  alloc(Type, n) {
    const bytes = n * Type.BYTES_PER_ELEMENT;
    if (bytes <= 64) return new Type(n);                 // (V8 keeps these on its heap)
    let off = this.slabUsed;
    if (this.slab === null || off + bytes > this.slab.byteLength) {
      this.slab = new ArrayBuffer(Math.max(SLAB_BYTES, 4 * bytes));
      off = 0;
    }
    this.slabUsed = off + ((bytes + 7) & ~7);            // (8-aligned: Float64Array views)
    return new Type(this.slab, off, n);
  }

  /** Give back the slab space of the snapshot the last decode made, which the caller dropped
   * (a duplicate equal to the snapshot held under its number): the next packet's arrays reuse it. */
  releaseLast() {
    if (this.slab === this.markSlab) this.slabUsed = this.markUsed;
  }

  /** 0, 1, ..., n - 1 (and beyond): a shared table, not to be written. */
  identity(n) {
    if (this.ident === null || this.ident.length < n) {
      this.ident = new Int32Array(Math.max(n, 2 * (this.ident ? this.ident.length : 32)));
      for (let i = 0; i < this.ident.length; i++) this.ident[i] = i;
    }
    return this.ident;
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
      if (cnt === 0) { out.set(this.identity(M).subarray(0, M)); return M; }
      const tmp = this.buf('setTmp', cnt, Int32Array);
      this.readList(r, tmp, 0, cnt, M);
      let n = 0, from = 0;                 // every member but the listed ones: the runs between them
      for (let j = 0; j < cnt; j++) {
        const x = tmp[j];
        for (let i = from; i < x; i++) out[n++] = i;
        from = x + 1;
      }
      for (let i = from; i < M; i++) out[n++] = i;
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
    this.markSlab = this.slab;              // (releaseLast: what this packet's snapshot takes)
    this.markUsed = this.slabUsed;
    const r = this.reader.reset(bytes, start, end);
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
        let g = r.eg(kid, 64);
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
      codes = this.alloc(this.Codes, base.codes.length);
      codes.set(base.codes);
      big = base.big ? base.big.slice() : null;
      ver = this.alloc(Float64Array, base.ver.length);
      ver.set(base.ver);
    } else {
      ids = new Array(nout);
      codes = this.alloc(this.Codes, nout * S);
      big = W ? new Array(nout * W) : null;
      ver = this.alloc(Float64Array, nout);
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
    if (base) {
      const j = this.joinWith;
      this.decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver, j !== null && j.ids === ids && j.ver !== null ? j : null);
    }
    else if (this.joinWith !== null && this.joinWith.ver !== null) ids = this.joinFull(ids, codes, big, ver, this.joinWith);
    // the end: fewer than 8 bits left, all zero
    const left = r.remaining;
    if (left >= 8) throw new DecodeError('snapshot packet: unexpected data after the end of the packet');
    if (r.read(left) !== 0) throw new DecodeError('snapshot packet: padding bits are not zero');
    return new Snapshot(schema, seq, ids, codes, big, ver);
  }

  decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver, join) {
    if (kept === 0) return;
    const S = this.S, W = this.W, F = this.F;
    const bcodes = base.codes, bbig = base.big, bids = base.ids;
    // which kept entities changed (by kept rank)
    const chg = this.buf('chg', kept, Int32Array);
    let C = 0;
    let predRow = null;          // pred row of each kept entity (by kept rank), -1 when not in pred
    if (pred) {
      const bver = base.ver, pver = pred.ver;
      const pids = pred.ids, pn = pids.length;
      // the context of each kept entity (section 7.3): 1 when its rows in base and pred differ
      // (or it is not in pred), its kept rank listed in cls1, else in cls0
      const cls1 = this.buf('cls1', kept, Int32Array), cls0 = this.buf('cls0', kept, Int32Array);
      let j = 0, k1 = 0, k0 = 0;
      const sameIds = pids === bids, pc = pred.codes;
      if (sameIds && keptIdx === null) predRow = this.identity(kept);    // (the common case: the rank)
      else {
        predRow = this.buf('predRow', kept, Int32Array);
        for (let a = 0; a < kept; a++) {
          const bi = keptIdx !== null ? keptIdx[a] : a;
          let pr = -1;
          if (sameIds) pr = bi;
          else {
            const id = bids[bi];
            while (j < pn && pids[j] < id) j++;
            if (j < pn && pids[j] === id) pr = j;
          }
          predRow[a] = pr;
        }
      }
      for (let a = 0; a < kept; a++) {
        const bi = keptIdx !== null ? keptIdx[a] : a, pr = predRow[a];
        let c = 1;
        if (pr >= 0) {
          c = 0;
          if (bver[bi] !== pver[pr]) {                   // (equal versions: one lineage, equal rows)
            const bo = bi * S, po = pr * S;
            for (let s = 0; s < S; s++) if (bcodes[bo + s] !== pc[po + s]) { c = 1; break; }
            if (!c && W) for (let t = 0; t < W; t++) if (bbig[bi * W + t] !== pred.big[pr * W + t]) { c = 1; break; }
          }
        }
        if (c) cls1[k1++] = a; else cls0[k0++] = a;
      }
      const set1 = this.buf('set1', k1, Int32Array), set0 = this.buf('set0', k0, Int32Array);
      const m1 = k1 ? this.readSet(r, k1, set1) : 0;
      const m0 = k0 ? this.readSet(r, k0, set0) : 0;
      let a1 = 0, a0 = 0;
      if (m0 === 0) for (; a1 < m1; a1++) chg[C++] = cls1[set1[a1]];         // (one side: no merging)
      else if (m1 === 0) for (; a0 < m0; a0++) chg[C++] = cls0[set0[a0]];
      while (a1 < m1 || a0 < m0) {
        if (a0 >= m0 || (a1 < m1 && cls1[set1[a1]] < cls0[set0[a0]])) chg[C++] = cls1[set1[a1++]];
        else chg[C++] = cls0[set0[a0++]];
      }
    } else {
      C = this.readSet(r, kept, chg);
    }
    if (C === 0) return;
    // which fields: fch[f * C + e], whether the e-th changed entity changed field f
    const fch = this.buf('fch', C * F, Uint8Array);
    fch.fill(0, 0, C * F);
    const any = this.buf('any', F, Uint8Array);
    any.fill(0, 0, F);
    const tmp = this.buf('fieldSet', C, Int32Array);
    for (let f = 0; f < F; f++) {
      const n = this.readSet(r, C, tmp);
      if (n) any[f] = 1;
      if (n === C) fch.fill(1, f * C, f * C + C);        // (every member: a set of C members of 0..C-1)
      else for (let i = 0; i < n; i++) fch[f * C + tmp[i]] = 1;
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
      }
    }
    // the extrapolation ratio in lowest terms
    let num = bdist, den = pdist || 1;
    if (pdist) { let a = bdist, b = pdist; while (b) { const t = a % b; a = b; b = t; } num = (bdist / a) | 0; den = (pdist / a) | 0; }
    const ctx = { r, num, den, pcodes: pred ? pred.codes : null, pbig: pred ? pred.big : null };
    const rv0 = ROW_VERSION;
    if (this.entityGen !== null) {
      ROW_VERSION = this.entityGen(this, r, C, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, ctx.pcodes, pred ? pred.ver : null, ver, num, den, bids, ROW_VERSION);
    } else this.readChanged(ctx, C, chg, keptIdx, outOfKept, predRow, fch, base, pred, codes, big, ver);
    if (join !== null) this.joinLatest(C, chg, outOfKept, codes, big, ver, join, rv0);
  }

  /** The interpreted path of the changed entities' fields (entityGen's, when there is none). */
  readChanged(ctx, C, chg, keptIdx, outOfKept, predRow, fch, base, pred, codes, big, ver) {
    const S = this.S, F = this.F, r = ctx.r, num = ctx.num, den = ctx.den;
    const bcodes = base.codes, bbig = base.big, bids = base.ids;
    for (let e = 0; e < C; e++) {
      const a = chg[e];
      const bi = keptIdx ? keptIdx[a] : a;
      const oi = outOfKept ? outOfKept[a] : a;
      ver[oi] = ++ROW_VERSION;
      const pr = predRow ? predRow[a] : -1;
      let anyField = false;
      for (let f = 0; f < F; f++) {
        if (!fch[f * C + e]) continue;
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

  /** The changed rows (versions above rv0) equal to their row in `other` (the decoder's latest,
   * with the same ids) take its version: the snapshots of a stream are decoded against different
   * baselines, so an entity that comes to rest changes in each of them, and only this meeting
   * spares the next packets comparing its rows (the contexts) and the duplicates theirs (sameAs). */
  joinLatest(C, chg, outOfKept, codes, big, ver, other, rv0) {
    const S = this.S, W = this.W, oc = other.codes, ov = other.ver;
    for (let e = 0; e < C; e++) {
      const i = outOfKept !== null ? outOfKept[chg[e]] : chg[e];
      if (ver[i] <= rv0) continue;                       // (joined to pred's)
      let eq = true;
      for (let o = i * S, end = o + S; o < end; o++) if (codes[o] !== oc[o]) { eq = false; break; }
      if (eq && W) for (let t = i * W; t < (i + 1) * W; t++) if (big[t] !== other.big[t]) { eq = false; break; }
      if (eq) ver[i] = ov[i];
    }
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
        if (!ok) throw new DecodeError(`snapshot packet: code ${v} is not valid for ${this.slots[s].codec}`);
      }
      codes[oo + s] = v;
      if (codes[oo + s] !== bcode) diff = true;      // (as stored: an Int32Array wraps)
      s++;
    }
    return diff;
  }

  invalidCode(s, v) { throw new DecodeError(`snapshot packet: code ${v} is not valid for ${this.slots[s].codec}`); }

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
    if (j === bidx) throw new DecodeError('snapshot packet: a quaternion remapped to its own index');
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
    default: return false;        // PowerCurve (negative zero), Enum (codes >= n), Quat
  }
}
