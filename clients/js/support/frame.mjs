// Datagram framing for the tests, written from docs/wire-format.md sections 11-13 and 17 apart
// from the module's own (it uses only the exported crc32c, siphash24, macKey, streamKey and
// parseHello): seal packets, fragments and hellos with CRC-32C or, with a key, SipHash-2-4 tags;
// and turn a kit stream into the same events framed with a key.
import * as qc from '../quantcodec.mjs';

const ascii = (s) => new TextEncoder().encode(s);
const cat = (...parts) => { const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0)); let o = 0; for (const p of parts) { out.set(p, o); o += p.length; } return out; };
const u32 = (b, o) => (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0;
const le32 = (v) => Uint8Array.of(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
const le64 = (v) => { const out = new Uint8Array(8); let x = BigInt(v); for (let i = 0; i < 8; i++) { out[i] = Number(x & 0xffn); x >>= 8n; } return out; };

/** A check of one kind: `tag(body)` -> its T bytes; `holds(d)`. label: 'P', 'F', 'R' (with K), 'H', 'Q'. */
export function checker(label, { K = null, key = null } = {}) {
  const L = label === 'H' ? ascii('quantcodec hello') : label === 'Q' ? ascii('quantcodec hello request') : cat(K, ascii(label));
  if (key) {
    const k = qc.macKey(key, L);
    const tag = (body) => le64(qc.siphash24(k, body));
    return { T: 8, tag, holds: (d) => d.length >= 8 && tag(d.subarray(0, d.length - 8)).every((b, i) => b === d[d.length - 8 + i]) };
  }
  const seed = label === 'H' || label === 'Q' ? qc.crc32c(L) : qc.crc32c(L);
  const tag = (body) => le32(qc.crc32c(body, seed));
  return { T: 4, tag, holds: (d) => d.length >= 4 && qc.crc32c(d, seed, 0, d.length - 4) === u32(d, d.length - 4) };
}

/** The framing of one stream (its hello's parameters) with or without a key. */
export function framer(hello, key = null) {
  const K = qc.streamKey(hello.fingerprint, hello.history, hello.predict, hello.maxDatagram, hello.streamId);
  const P = checker('P', { K, key }), F = checker('F', { K, key }), R = checker('R', { K, key });
  const seedP = qc.crc32c(cat(K, ascii('P')));
  const T = P.T, md = hello.maxDatagram;
  return {
    K, T, P, F, R,
    /** The whole datagram of packet p. */
    whole: (p) => cat(p, P.tag(p)),
    /** Packet p as the encoder sends it: whole when it fits, else its fragments in order (C = max_datagram - 8 - T). */
    datagrams(p) {
      if (p.length + T <= md) return [cat(p, P.tag(p))];
      const C = md - 8 - T, count = Math.ceil(p.length / C);
      if (count > 256) throw new Error(`a packet of ${p.length} bytes needs ${count} fragments`);
      const pcheck = le32(qc.crc32c(p, seedP));
      const out = [];
      for (let i = 0; i < count; i++) {
        const body = cat(p.subarray(0, 2), Uint8Array.of(i, count - 1), pcheck, p.subarray(i * C, (i + 1) * C));
        out.push(cat(body, F.tag(body)));
      }
      return out;
    },
    /** A fragment of arbitrary fields, sealed. */
    fragment: (seq, index, count1, pcheck, chunk) => { const body = cat(Uint8Array.of(seq & 0xff, seq >> 8, index, count1), le32(pcheck), chunk); return cat(body, F.tag(body)); },
  };
}

/** A hello body (without its check) resealed: `edit(bytes)` may change fields of the body first. */
export function resealHello(helloDatagram, { key = null, fromKey = null, edit = null } = {}) {
  const Tin = fromKey ? 8 : 4;
  const body = helloDatagram.slice(0, helloDatagram.length - Tin);
  if (edit) edit(body);
  return cat(body, checker('H', { key }).tag(body));
}

/**
 * The events of an unkeyed kit stream: each hello, each whole packet, each packet completed by
 * its last fragment (in the order they complete), each datagram that is none of these (junk,
 * left as is): [{kind: 'hello'|'packet'|'junk', bytes, hello}], `hello` the parsed hello of the
 * stream a packet belongs to.
 */
export function events(datagrams) {
  const streams = [];           // [{hello, P, F, parts}]
  const out = [];
  const H = checker('H');
  for (const d of datagrams) {
    if (d.length >= 55 && d[0] === 0x51 && d[1] === 0x43 && d[2] === 0x48 && d[3] === 0x4c && H.holds(d)) {
      let h = null;
      try { h = qc.parseHello(d); } catch { /* a malformed hello: resealed as it is */ }
      if (h) {
        if (!streams.some((s) => s.hello.streamId === h.streamId && s.hello.started === h.started)) {
          const K = qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId);
          streams.push({ hello: h, P: checker('P', { K }), F: checker('F', { K }), parts: new Map() });
        }
      }
      out.push({ kind: 'hello', bytes: d, hello: h });
      continue;
    }
    const s = streams.find((x) => d.length >= 5 && x.P.holds(d));
    if (s) { out.push({ kind: 'packet', bytes: d.slice(0, d.length - 4), hello: s.hello }); continue; }
    const f = streams.find((x) => d.length >= 13 && x.F.holds(d));
    if (f) {
      const key = `${d[0] | (d[1] << 8)}/${d[3]}/${u32(d, 4)}`;
      const count = d[3] + 1, index = d[2];
      if (!f.parts.has(key)) f.parts.set(key, new Map());
      const chunks = f.parts.get(key);
      chunks.set(index, d.slice(8, d.length - 4));
      if (chunks.size === count && [...Array(count).keys()].every((i) => chunks.has(i))) {
        f.parts.delete(key);
        out.push({ kind: 'packet', bytes: cat(...[...Array(count).keys()].map((i) => chunks.get(i))), hello: f.hello });
      }
      continue;
    }
    out.push({ kind: 'junk', bytes: d, hello: null });
  }
  return out;
}

/** Frame events (from `events`) with a key (or none): a list of datagram lists, one per event. */
export function frameEvents(evs, key = null) {
  const framers = new Map();
  const fr = (h) => { const id = `${h.streamId}/${h.started}`; if (!framers.has(id)) framers.set(id, framer(h, key)); return framers.get(id); };
  return evs.map((e) => {
    if (e.kind === 'hello') return [resealHello(e.bytes, { key })];
    if (e.kind === 'packet') return fr(e.hello).datagrams(e.bytes);
    return [e.bytes];
  });
}

export { cat, le32, le64, u32 };

/**
 * A hello (section 13) for `schema` with no field summaries (ns = 0), sealed with CRC-32C or a
 * key's tag: {history, maxDatagram, streamId, started, predict}.
 */
export function helloFor(schema, { history = 64, maxDatagram = 1200, streamId = 0x1234n, started = 1n, predict = true } = {}, key = null) {
  const name = new TextEncoder().encode(schema.name);
  const body = cat(ascii('QCHL'), Uint8Array.of(1, predict ? 1 : 0, history & 0xff, history >> 8, maxDatagram & 0xff, maxDatagram >> 8),
    le64(streamId), le64(started), ascii(schema.fingerprint), le32(Number(BigInt(schema.version) & 0xffffffffn)),
    Uint8Array.of(name.length), name, Uint8Array.of(schema.fields.length & 0xff, schema.fields.length >> 8, 0, 0));
  return cat(body, checker('H', { key }).tag(body));
}

/** Exp-Golomb EG(k, b) of u without the escape (section 4), for values that do not reach it. */
export function putEG(w, u, k) {
  const x = Math.floor(u / 2 ** k) + 1;
  const e = 31 - Math.clz32(x);
  w.write(0, e); w.write(1, 1); w.write(x - 2 ** e, e); w.write(u % 2 ** k, k);
}
/** A full packet (section 7, no baseline) of the ids 0..n-1, every slot's code 0 (bits: the slots' widths). */
export function fullPacket(seq, n, slotBits) {
  const w = new qc.BitWriter();
  w.write(seq, 16); w.write(0, 1);
  putEG(w, n, 0);
  if (n) {
    w.write(0, 6);
    for (let i = 0; i < n; i++) w.write(1, 1);          // EG(0, 64) of 0: the first id, then gaps of 0
    for (let i = 0; i < n; i++) for (const b of slotBits) w.write(0, b);
  }
  return w.finish();
}
/** A delta (no pred) against seq - bdist where nothing changed: no entity removed, none new, none changed. */
export function unchangedDelta(seq, bdist, baseCount) {
  const w = new qc.BitWriter();
  w.write(seq, 16); w.write(1, 1); putEG(w, bdist - 1, 2); w.write(0, 1);
  if (baseCount) w.write(0, 2);          // removed: SET mode 0
  putEG(w, 0, 0);                        // no new entity
  if (baseCount) w.write(0, 2);          // changed: SET mode 0
  return w.finish();
}
