// src/snapshot.mjs: Snapshot, a decoded view (ids, slot codes, row versions), and sequence order.
import { HAS_NATIVE_COMPARE, sameInts } from './util.mjs';

// Snapshots

export const SEQ_MASK = 0xffff;
export function newer(a, b) { const d = (a - b) & SEQ_MASK; return d > 0 && d < 0x8000; }
export function seqNewer(a, b) { return newer(a, b); }

/**
 * A decoded snapshot: `seq`, `ids` (ascending; numbers, BigInt from 2**53), `count`, and the slot
 * codes of each entity (`row(i)`, `code(i, slot)`), `values(i)` the decoded record.
 * Immutable: its properties are read-only at runtime (an assignment throws TypeError in strict
 * code), and its ids array, which the decoder shares between snapshots, must not be changed.
 */
export class Snapshot {
  constructor(schema, seq, ids, codes, big, ver = null) {
    this.schema = schema;
    this.ver = ver;            // row versions: equal versions mean equal rows (see PacketCoder)
    this.seq = seq;
    this.ids = ids;            // an Array (shared, do not modify)
    this.codes = codes;        // Int32Array or Float64Array(count * nslots): see PacketCoder.Codes
    this.big = big;            // Array of BigInt (count * nwide) or null
    // Read-only at runtime, as documented: the decoder keeps this snapshot as a baseline, so an
    // assignment to it would change what later packets decode against, unseen. (Its arrays are
    // not frozen: a frozen ids array made the decode 1.5-1.8x slower in bench.mjs, 2026-12-07,
    // and typed arrays cannot be; ids is a ReadonlyArray in quantcodec.d.mts, and code(), row()
    // and values() copy the codes out.)
    Object.freeze(this);
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
    // (the codes at once where the compare is native: as the C core's memcmp)
    if (!W && HAS_NATIVE_COMPARE && ArrayBuffer.isView(a) && a.constructor === b.constructor) return sameInts(a, b);
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
