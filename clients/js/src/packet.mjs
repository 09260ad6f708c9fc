// src/packet.mjs: one snapshot packet (wire-format sections 5-9): PacketCoder reads the header,
// the sets, the new entities and the contexts, merges kept and new rows into a Snapshot (its
// arrays, row versions) and has the changed entities' fields read (fastpath.mjs compiled, else
// fields.mjs).
import { BMASK, DecodeError, HAS_NATIVE_COMPARE, MAX_SAFE, ctz32, norm, sameInts, toBig } from './util.mjs';
import { BitReader } from './bits.mjs';
import { makeEntityReader, runEntities } from './fastpath.mjs';
import { SEQ_MASK, Snapshot } from './snapshot.mjs';
import { FieldReader } from './fields.mjs';

// Row versions: every row a packet decodes (a new entity, a changed one) gets a new number; a
// row copied unchanged from the baseline keeps the baseline's. Equal versions therefore mean
// equal rows, which spares comparing them (the contexts of 7.3, duplicates).
let ROW_VERSION = 0;
const SLAB_BYTES = 256 * 1024;

export class PacketCoder extends FieldReader {
  constructor(schema) {
    super(schema);
    this.reader = new BitReader(new Uint8Array(0));   // reused: a coder decodes one packet at a time
    this.ident = null;         // identity(): 0, 1, 2, ...
    this.slab = null;          // the ArrayBuffer that new snapshots' arrays are cut from (alloc)
    this.slabUsed = 0;
    this.markSlab = null;      // the slab and its use before the last decode (releaseLast)
    this.markUsed = 0;
    this.scratch = {};         // reusable buffers, grown as needed (a coder decodes one packet at a time)
    this.joinWith = null;      // a held snapshot whose equal rows a full packet's rows join (row versions)
    this.limit = null;         // (N) => void, throws DecodeError('limits'): section 19's check 2
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
      if (cnt > M || (mode === 2 && cnt === M)) throw new DecodeError(`snapshot packet: a set count above its range at bit ${r.pos}`);
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
    if (n === 0) throw new DecodeError(`snapshot packet: an empty bit mask set at bit ${r.pos}`);
    return n;
  }
  readList(r, out, o, cnt, M) {
    const k = r.read(5);
    let prev = -1;
    for (let i = 0; i < cnt; i++) { prev = prev + 1 + r.rice(k, M - prev - 1); out[o + i] = prev; }
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
      if (v >= 0x7fff) throw new DecodeError(`snapshot packet: sequence distance outside 1..32767 at bit ${r.pos}`);
      bdist = v + 1;
      if (r.read1()) {
        const w = r.eg(2, 16, false);
        if (w + 1 + bdist > 0x7fff) throw new DecodeError(`snapshot packet: sequence distance outside 1..32767 at bit ${r.pos}`);
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
    if (nnew > r.remaining || nnew > 0xffffffff - (m - nrem)) throw new DecodeError(`snapshot packet: count of new entities larger than the packet can hold at bit ${r.pos}`);
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
            if (v > BMASK[64]) throw new DecodeError(`snapshot packet: new entity id beyond 2**64 - 1 at bit ${r.pos}`);
            g = norm(v);
          }
        }
        nids[i] = g; prev = g;
      }
      ncodes = new this.Codes(nnew * S);
      nbig = W ? new Array(nnew * W) : null;
      for (let i = 0; i < nnew; i++) {
        this.entityAt(nids, i);
        this.readRecord(r, ncodes, nbig, i);
      }
      this.entityAt(null, 0);
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
      this.decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver, j !== null && j.ids === ids && j.ver !== null ? j : null, j !== null && j.seq === seq);
    }
    else if (this.joinWith !== null && this.joinWith.ver !== null) ids = this.joinFull(ids, codes, big, ver, this.joinWith);
    // the end: fewer than 8 bits left, all zero
    const left = r.remaining;
    if (left >= 8) throw new DecodeError(`snapshot packet: unexpected data after the end of the packet at bit ${r.pos}`);
    if (r.read(left) !== 0) throw new DecodeError(`snapshot packet: padding bits are not zero at bit ${r.pos - left}`);
    return new Snapshot(schema, seq, ids, codes, big, ver);
  }

  decodeChanged(r, base, pred, bdist, pdist, kept, keptIdx, outOfKept, codes, big, ver, join, again) {
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
      if (sameIds && keptIdx === null && !W) {
        // (the common case: base's and pred's rows one for one, the kept rank; the same rule)
        for (let a = 0; a < kept; a++) {
          let c = 0;
          if (bver[a] !== pver[a]) for (let o = a * S, end = o + S; o < end; o++) if (bcodes[o] !== pc[o]) { c = 1; break; }
          if (c) cls1[k1++] = a; else cls0[k0++] = a;
        }
      } else for (let a = 0; a < kept; a++) {
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
        if (k > cp.b) throw new DecodeError(`snapshot packet: Exp-Golomb parameter above the code width at bit ${r.pos}`);
        kk[c] = k;
      }
    }
    // the extrapolation ratio in lowest terms
    let num = bdist, den = pdist || 1;
    if (pdist) { let a = bdist, b = pdist; while (b) { const t = a % b; a = b; b = t; } num = (bdist / a) | 0; den = (pdist / a) | 0; }
    const ctx = { r, num, den, pcodes: pred ? pred.codes : null, pbig: pred ? pred.big : null };
    const rv0 = ROW_VERSION;
    if (this.entityGen !== null) {         // (joinLatest's work too, each row as it is decoded)
      // a packet of the latest snapshot's number again (a duplicate, a resend against another
      // baseline) is that snapshot: its rows compared all at once after (memcmp), not row by row
      const whole = join !== null && again && HAS_NATIVE_COMPARE && this.W === 0;
      ROW_VERSION = runEntities(this.entityGen, this, r, C, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, ctx.pcodes, pred ? pred.ver : null, ver, num, den, bids, ROW_VERSION,
        join !== null && !whole ? join.codes : null, join !== null ? join.ver : null);
      if (whole) {
        if (sameInts(codes, join.codes)) ver.set(join.ver);        // (every row equal: any of its versions)
        else this.joinLatest(C, chg, outOfKept, codes, big, ver, join, rv0);
      }
    } else {
      this.readChanged(ctx, C, chg, keptIdx, outOfKept, predRow, fch, base, pred, codes, big, ver);
      if (join !== null) this.joinLatest(C, chg, outOfKept, codes, big, ver, join, rv0);
    }
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
      this.entityAt(bids, bi);
      for (let f = 0; f < F; f++) {
        if (!fch[f * C + e]) continue;
        anyField = true;
        const fd = this.fields[f];
        if (!(fd.fast ? this.readFieldFast(r, fd, bcodes, bi * S, codes, oi * S, ctx.pcodes, pr >= 0 ? pr * S : -1, num, den)
          : this.readField(ctx, fd, bcodes, bbig, bi, codes, big, oi, pr))) this.unchangedField(f, r.pos);
      }
      if (!anyField) throw new DecodeError(`${this.at('marked changed')}, but none of its fields is (at bit ${r.pos})`);
      if (pr >= 0) this.joinLineage(codes, big, oi, pred, pr, ver);
    }
    this.entityAt(null, 0);
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

}
