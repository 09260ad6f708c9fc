// Fuzz: random, bit-flipped, truncated and extended datagrams mixed into valid streams of the kit.
// Never a crash or a hang; every refusal is a DecodeError that leaves the state exactly as it was;
// the valid datagrams still decode to exactly the expected lines. Then datagrams that pass the
// check (mutated packets and hellos sealed with the stream's own key) reach the packet and hello
// parsers: each decodes or is refused without a trace.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT, readJSON, readBytes } from '../support/helpers.mjs';
import { events, frameEvents, framer, checker } from '../support/frame.mjs';

const present = fs.existsSync(path.join(KIT, 'manifest.json'));
const manifest = present ? readJSON(path.join(KIT, 'manifest.json')) : { streams: [] };

const ROUNDS = Number(process.env.QC_FUZZ_ROUNDS || 25);

function rng(seed) {        // xorshift32, deterministic
  let s = seed >>> 0 || 1;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s; };
  next.int = (n) => next() % n;
  return next;
}

const ids = new WeakMap();
let nextId = 1;
const idOf = (o) => { if (!ids.has(o)) ids.set(o, nextId++); return ids.get(o); };
/** Everything a refused datagram must leave as it was. */
function stateOf(dec, parts_ = true) {
  const held = [...dec.held.entries()].map(([k, v]) => `${k}:${idOf(v)}`).sort();
  const ra = dec.reassembly;
  const parts = ra ? [...ra.parts.entries()].map(([k, p]) => `${k}:${[...p.chunks.keys()].join('.')}:${[...p.chunks.values()].map(idOf).join('.')}`) : [];
  return JSON.stringify({ latest: dec.latest, held, amb: [...dec.ambiguous].sort(), parts: parts_ ? parts : null, heldBytes: parts_ && ra ? ra.held : 0, stream: dec.hello ? idOf(dec.hello) : 0, history: dec.history });
}

function junk(r, real) {
  const kind = r.int(5);
  if (kind === 0) {                                          // random bytes, any length
    const n = r.int(3) === 0 ? r.int(8) : r.int(400);
    return Uint8Array.from({ length: n }, () => r.int(256));
  }
  const base = real[r.int(real.length)];
  if (kind === 1 || kind === 2) {                            // 1 to 3 bits flipped: CRC-32C detects them all
    const d = base.slice();
    const nflip = 1 + r.int(3);
    const done = new Set();
    while (done.size < nflip && done.size < d.length * 8) { const b = r.int(d.length * 8); if (!done.has(b)) { done.add(b); d[b >> 3] ^= 1 << (b & 7); } }
    return d;
  }
  if (kind === 3) return base.slice(0, r.int(Math.max(base.length, 1)));   // truncated
  const d = new Uint8Array(base.length + 1 + r.int(8));      // extended
  d.set(base);
  for (let i = base.length; i < d.length; i++) d[i] = r.int(256);
  return d;
}

for (const s of manifest.streams.filter((x) => ['pose_clean', 'pose_lossy', 'fragments', 'all_kinds_pred'].includes(x.name))) {
  test(`fuzz: junk mixed into ${s.name}`, { timeout: 30000 }, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    const want = fs.readFileSync(path.join(KIT, s.expected), 'utf8').split('\n').filter((l) => l.length);
    const real = qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)));
    const r = rng(0x5eed + s.name.length);
    const dec = new qc.SnapshotDecoder(schema);
    let refused = 0;
    for (let i = 0; i < real.length; i++) {
      const nj = r.int(4);
      for (let j = 0; j < nj; j++) {
        const d = junk(r, real);
        const before = stateOf(dec);
        let out;
        try { out = dec.decode(d); } catch (e) {
          assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
          assert.equal(stateOf(dec), before, `refused datagram (${e.kind}) changed the state`);
          refused++;
          continue;
        }
        assert.fail(`junk of ${d.length} bytes was accepted (${out === null ? 'pending' : 'snapshot'})`);
      }
      assert.equal(qc.runnerLine(dec, real[i]), want[i], `datagram ${i}`);
    }
    assert.ok(refused > real.length / 2);
  });
}

for (const s of manifest.streams.filter((x) => ['pose_clean', 'all_kinds_pred', 'all_kinds_nopred', 'fragments', 'one_bit'].includes(x.name))) {
  test(`fuzz: mutated datagrams sealed with the key of ${s.name}`, { timeout: 30000 }, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    const real = qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)));
    const r = rng(0xbad + s.name.length);
    const dec = new qc.SnapshotDecoder(schema);
    const kinds = {};
    const seal = (body, seed) => {
      const out = new Uint8Array(body.length + 4);
      out.set(body);
      new DataView(out.buffer).setUint32(body.length, qc.crc32c(body, seed), true);
      return out;
    };
    for (let i = 0; i < real.length; i++) {
      try { dec.decode(real[i]); } catch (e) { assert.ok(e instanceof qc.DecodeError); }
      if (!dec.hello) continue;
      const h = dec.hello;
      const key = qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId);
      const seedP = qc.crc32c(Uint8Array.from([...key, 0x50]));
      const seedF = qc.crc32c(Uint8Array.from([...key, 0x46]));
      const seedH = qc.crc32c(new TextEncoder().encode('quantcodec hello'));
      for (let j = 0; j < ROUNDS; j++) {
        const src = real[r.int(real.length)];
        let body = src.slice(0, src.length - 4);
        const how = r.int(6);
        if (how <= 1) for (let f = 0; f <= r.int(6); f++) { const b = r.int(Math.max(1, body.length * 8)); if (body.length) body[b >> 3] ^= 1 << (b & 7); }
        else if (how === 2) body = body.slice(0, r.int(body.length + 1));
        else if (how === 3) { const e = new Uint8Array(body.length + 1 + r.int(4)); e.set(body); for (let t = body.length; t < e.length; t++) e[t] = r.int(256); body = e; }
        else if (how === 4) body = Uint8Array.from({ length: 2 + r.int(60) }, () => r.int(256));
        else { const b = r.int(Math.max(1, body.length)); if (body.length) body[b] = r.int(256); }
        const isHello = body.length >= 4 && body[0] === 0x51 && body[1] === 0x43 && body[2] === 0x48 && body[3] === 0x4c;
        const isFrag = src.length >= 13 && qc.crc32c(src, seedF, 0, src.length - 4) === new DataView(src.buffer, src.byteOffset).getUint32(src.length - 4, true);
        const d = seal(body, isHello ? seedH : isFrag ? seedF : seedP);
        // (a fragment that completes its packet drops the partial packet even when the packet is
        // then refused, as Python's decoder does: reassembly is compared only for the others)
        const before = stateOf(dec, !isFrag);
        try {
          dec.decode(d);
          kinds.accepted = (kinds.accepted || 0) + 1;
        } catch (e) {
          assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
          kinds[e.kind] = (kinds[e.kind] || 0) + 1;
          assert.equal(stateOf(dec, !isFrag), before, `refused datagram (${e.kind}) changed the state`);
        }
      }
    }
    assert.ok((kinds.malformed || 0) + (kinds.baseline || 0) > 0, JSON.stringify(kinds));
  });
}

// Keyed streams (section 17): the kit's events framed with a key (support/frame.mjs), junk mixed
// in; then mutated datagrams sealed with the key's own tags.
const KEY = Uint8Array.from({ length: 24 }, (_, i) => (i * 37 + 11) & 0xff);

for (const s of manifest.streams.filter((x) => ['pose_lossy', 'fragments', 'all_kinds_pred', 'restart'].includes(x.name))) {
  test(`fuzz: junk mixed into ${s.name} framed with a key`, { timeout: 60000 }, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    const real = frameEvents(events(qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)))), KEY).flat();
    const clean = new qc.SnapshotDecoder(schema, { key: KEY });
    const want = real.map((d) => qc.runnerLine(clean, d));
    const r = rng(0x4e7 + s.name.length);
    const dec = new qc.SnapshotDecoder(schema, { key: KEY });
    let refused = 0;
    for (let i = 0; i < real.length; i++) {
      for (let j = r.int(4); j > 0; j--) {
        const d = junk(r, real);
        const before = stateOf(dec);
        try { dec.decode(d); } catch (e) {
          assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
          assert.equal(stateOf(dec), before, `refused datagram (${e.kind}) changed the state`);
          refused++;
          continue;
        }
        assert.fail(`junk of ${d.length} bytes was accepted under the key`);
      }
      assert.equal(qc.runnerLine(dec, real[i]), want[i], `datagram ${i}`);
    }
    assert.ok(refused > real.length / 2);
  });
}

for (const s of manifest.streams.filter((x) => ['pose_clean', 'all_kinds_pred', 'fragments', 'one_bit'].includes(x.name))) {
  test(`fuzz: mutated datagrams sealed with the key's tags, ${s.name}`, { timeout: 60000 }, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    const real = frameEvents(events(qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)))), KEY).flat();
    const r = rng(0x7a6 + s.name.length);
    const dec = new qc.SnapshotDecoder(schema, { key: KEY });
    const H = checker('H', { key: KEY });
    const kinds = {};
    for (let i = 0; i < real.length; i++) {
      try { dec.decode(real[i]); } catch (e) { assert.ok(e instanceof qc.DecodeError); }
      if (!dec.hello) continue;
      const fr = framer(dec.hello, KEY);
      for (let j = 0; j < ROUNDS; j++) {
        const src = real[r.int(real.length)];
        const kind = H.holds(src) ? 'H' : fr.F.holds(src) ? 'F' : 'P';
        let body = src.slice(0, src.length - 8);
        const how = r.int(5);
        if (how <= 1) for (let f = 0; f <= r.int(6); f++) { const b = r.int(Math.max(1, body.length * 8)); if (body.length) body[b >> 3] ^= 1 << (b & 7); }
        else if (how === 2) body = body.slice(0, r.int(body.length + 1));
        else if (how === 3) { const e = new Uint8Array(body.length + 1 + r.int(4)); e.set(body); for (let t = body.length; t < e.length; t++) e[t] = r.int(256); body = e; }
        else { const b = r.int(Math.max(1, body.length)); if (body.length) body[b] = r.int(256); }
        const tag = kind === 'H' ? H.tag(body) : kind === 'F' ? fr.F.tag(body) : fr.P.tag(body);
        const d = new Uint8Array(body.length + 8); d.set(body); d.set(tag, body.length);
        const before = stateOf(dec, kind !== 'F');
        try {
          dec.decode(d);
          kinds.accepted = (kinds.accepted || 0) + 1;
        } catch (e) {
          assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
          kinds[e.kind] = (kinds[e.kind] || 0) + 1;
          assert.equal(stateOf(dec, kind !== 'F'), before, `refused datagram (${e.kind}) changed the state`);
        }
      }
    }
    assert.ok((kinds.malformed || 0) + (kinds.baseline || 0) + (kinds.fragment || 0) > 0, JSON.stringify(kinds));
  });
}

// The session client: junk and the real datagrams through StreamClient.receive, reply() after each
// (a reply when due, and a keep-alive every 32nd call while none is).
for (const [name, key] of [['pose_lossy', null], ['fragments', null], ['restart', KEY], ['hostile', null]]) {
  test(`fuzz: StreamClient.receive and reply with junk mixed into ${name}${key ? ' (keyed)' : ''}`, { timeout: 60000 }, () => {
    const s = manifest.streams.find((x) => x.name === name);
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    let real = qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)));
    if (key) real = frameEvents(events(real), key).flat();
    const clean = new qc.SnapshotDecoder(schema, { key });
    const want = real.map((d) => qc.runnerLine(clean, d));
    const r = rng(0xc11e + name.length);
    const client = new qc.StreamClient(schema, { key, nonce: 99 });
    let rseq = 0, refused = 0, idle = 0;
    const checkReply = (rep, due) => {
      if (rseq === 0) due = true;              // a new client's first reply (a hello request) is due from the start
      // (section 18's keep-alive: a call that would return nothing returns the reply all the same
      // when the 31 calls before it, in a row, returned nothing)
      if (!due && idle < 31) { assert.equal(rep, null, 'a reply that was not due'); idle++; return; }
      idle = 0;
      assert.ok(rep instanceof Uint8Array, due ? 'a reply due' : 'a keep-alive');
      const h = client.hello;
      const T = key ? 8 : 4;
      if (h === null) {
        assert.equal(rep[0], 0x48); assert.equal(rep.length, 26 + T);
        assert.ok(checker('Q', { key }).holds(rep));
      } else {
        assert.equal(rep[0], 0x41); assert.equal(rep.length, 16 + T);
        assert.ok(checker('R', { K: qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId), key }).holds(rep));
      }
      assert.equal(new DataView(rep.buffer, rep.byteOffset).getUint32(6, true), rseq++);
    };
    for (let i = 0; i < real.length; i++) {
      for (let j = r.int(4); j > 0; j--) {
        const d = junk(r, real);
        const before = stateOf(client.decoder);
        let kind = null;
        try { client.receive(d); } catch (e) {
          assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
          assert.equal(stateOf(client.decoder), before, `refused datagram (${e.kind}) changed the state`);
          kind = e.kind;
          refused++;
        }
        assert.notEqual(kind, null, `junk of ${d.length} bytes was accepted`);
        checkReply(client.reply(), kind === 'no-hello' || kind === 'baseline');
      }
      const stream = client.hello;
      let line;
      try { const v = client.receive(real[i]); line = v === null ? '{"pending":true}' : v.toJSONLine(); } catch (e) {
        assert.ok(e instanceof qc.DecodeError, `a ${e.name} escaped: ${e.stack}`);
        line = `{"error":"${e.kind}"}`;
      }
      assert.equal(line, want[i], `datagram ${i}`);
      const err = /^\{"error":"([a-z-]+)"\}$/.exec(line);
      checkReply(client.reply(), line.startsWith('{"seq"') || client.hello !== stream || (err && (err[1] === 'no-hello' || err[1] === 'baseline')));
    }
    assert.ok(refused > real.length / 2);
  });
}
