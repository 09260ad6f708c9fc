// Limits (docs/wire-format.md section 19): what a client holds, in the cost model (a snapshot of
// n entities 256 + n * (8 + 8 * S) bytes, reassembly 256 * max_datagram), never passes maxBytes;
// a hello or packet that would pass it is refused with kind `limits` and changes nothing.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { execFileSync } from 'node:child_process';
import * as qc from '../quantcodec.mjs';
import { KIT, HERE, readJSON, readBytes } from '../support/helpers.mjs';
import { helloFor, framer, fullPacket, unchangedDelta, putEG, checker } from '../support/frame.mjs';

const present = fs.existsSync(path.join(KIT, 'manifest.json'));
const manifest = present ? readJSON(path.join(KIT, 'manifest.json')) : { streams: [] };

/** Everything a refused datagram must leave as it was. */
function stateOf(dec) {
  const ra = dec.reassembly;
  return JSON.stringify({
    latest: dec.latest, held: [...dec.held.entries()].map(([k, v]) => [k, v.count]).sort((a, b) => a[0] - b[0]), amb: [...dec.ambiguous].sort(),
    bytes: dec.heldBytes, stream: dec.hello ? String(dec.hello.streamId) : null,
    parts: ra ? [...ra.parts.entries()].map(([k, p]) => `${k}:${[...p.chunks.keys()]}`) : null,
  });
}
/** Whether d is a fragment of the decoder's stream (its check holds under seed_F). */
function fragment(dec, d) {
  const h = dec.hello;
  return h !== null && d.length >= 13 && checker('F', { K: qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId) }).holds(d);
}
const costOf = (schema, n) => 256 + n * (8 + 8 * schema.nslots);
const helloNeed = (h) => (2 * h.history - 1) * 256 + 256 * h.maxDatagram;
const newer = (a, b) => { const d = (a - b) & 0xffff; return d > 0 && d < 0x8000; };
/** What the held snapshots (entries before packet `seq`) that the packet pushes out of the window
 * cost: section 19's H leaves them out (none when the packet does not move the window). */
function pushedOut(dec, held, latest, seq) {
  if (latest !== null && !newer(seq, latest)) return 0;
  const keep = Math.min(2 * dec.history - 1, 0x8000);
  return held.filter(([s]) => ((seq - s) & 0xffff) >= keep).reduce((t, [, v]) => t + costOf(dec.schema, v.count), 0);
}

test('limits: DEFAULT_MAX_BYTES is 256 MiB, and a decoder without maxBytes has it', () => {
  assert.equal(qc.DEFAULT_MAX_BYTES, 268435456);
  const schema = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
  assert.equal(new qc.SnapshotDecoder(schema).maxBytes, 268435456);
  assert.equal(new qc.SnapshotDecoder(schema, { maxBytes: 1000n }).maxBytes, 1000);
  for (const bad of [0, -1, 1.5, '100', NaN, 0n]) assert.throws(() => new qc.SnapshotDecoder(schema, { maxBytes: bad }), /maxBytes must be a positive integer/);
  assert.equal(new qc.StreamClient(schema, { maxBytes: 1 }).decoder.maxBytes, 1);
});

for (const name of ['pose_lossy', 'all_kinds_pred', 'fragments', 'restart', 'hostile']) {
  test(`limits: ${name} under a bound refuses exactly the packet the cost model says, and nothing else`, { skip: !present && 'no kit' }, () => {
    const s = manifest.streams.find((x) => x.name === name);
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
    const ds = qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)));
    // the unbounded run: what each packet that decodes needs
    const free = new qc.SnapshotDecoder(schema);
    const need = ds.map((d) => {
      const before = free.heldBytes, stream = free.hello, latest = free.latest, held = [...free.held.entries()];
      let out = null;
      try { out = free.decode(d); } catch { return 0; }
      if (free.hello !== stream) return helloNeed(free.hello);          // a hello adopted
      if (out === null) return 0;
      // (heldBytes counts reassembly already); H leaves out the held snapshots a newer packet
      // pushes out of the window
      return before - pushedOut(free, held, latest, out.seq) + costOf(schema, out.count);
    });
    // bounds just under what some packets need (the first, the median, the largest), and under a hello's
    const sorted = [...new Set(need.filter((x) => x > 0))].sort((a, b) => a - b);
    const bounds = [sorted[0], sorted[sorted.length >> 2], sorted[sorted.length >> 1], sorted[sorted.length - 1]].map((x) => x - 1);
    let refusedSomewhere = 0;
    for (const bound of bounds) {
      const dec = new qc.SnapshotDecoder(schema, { maxBytes: bound });
      const ref = new qc.SnapshotDecoder(schema);
      for (let i = 0; i < ds.length; i++) {
        const before = stateOf(dec);
        const line = qc.runnerLine(dec, ds[i]);
        const want = qc.runnerLine(ref, ds[i]);
        assert.ok(dec.heldBytes <= bound, `datagram ${i}: ${dec.heldBytes} held, bound ${bound}`);
        if (need[i] > bound) {
          assert.ok(line === '{"error":"limits"}', `datagram ${i}: needs ${need[i]} > ${bound}, got ${line.slice(0, 60)}`);
          const [a, b] = [JSON.parse(before), JSON.parse(stateOf(dec))];
          if (fragment(dec, ds[i])) {
            // the last fragment of a packet then refused has used up its partial packet (section 14)
            assert.ok(b.parts.every((p) => a.parts.includes(p)) && b.parts.length === a.parts.length - 1, `datagram ${i}: ${a.parts} -> ${b.parts}`);
            a.parts = b.parts = null;
          }
          assert.deepEqual(b, a, `datagram ${i}: a refusal changed the state`);
          refusedSomewhere++;
          break;                     // from here the two runs differ
        }
        if (want === '{"error":"malformed"}' && line === '{"error":"limits"}') break;   // the limit came first
        assert.ok(line === want, `datagram ${i}: ${line.slice(0, 60)} instead of ${want.slice(0, 60)} (needs ${need[i]}, bound ${bound})`);
      }
    }
    assert.equal(refusedSomewhere, bounds.length);
  });
}

test('limits: a hello is adopted only when (2 * history - 1) * 256 + 256 * max_datagram fits', () => {
  const schema = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
  const h = { history: 100, maxDatagram: 1000 };
  const hello = helloFor(schema, h);
  const need = helloNeed(h);
  const tight = new qc.SnapshotDecoder(schema, { maxBytes: need - 1 });
  assert.throws(() => tight.decode(hello), (e) => e.kind === 'limits' && /history 100 and max_datagram 1000 need 306944 bytes/.test(e.message));
  assert.equal(tight.hello, null);
  assert.equal(tight.heldBytes, 0);
  // not adopted: what follows is refused as before any hello
  const fr = framer(qc.parseHello(hello), null);
  assert.throws(() => tight.decode(fr.whole(fullPacket(1, 1, [1]))), (e) => e.kind === 'no-hello');
  assert.throws(() => qc.SnapshotDecoder.fromHello(schema, hello, { maxBytes: need - 1 }), (e) => e.kind === 'limits');
  // exactly enough: adopted; its reassembly is counted from the hello on
  const exact = new qc.SnapshotDecoder(schema, { maxBytes: need });
  assert.equal(exact.decode(hello), null);
  assert.equal(exact.heldBytes, 256 * 1000);
  // a newer stream's hello is checked too (and refusing it keeps the current stream)
  const bigger = helloFor(schema, { history: 101, maxDatagram: 1000, streamId: 99n, started: 2n });
  const before = stateOf(exact);
  assert.throws(() => exact.decode(bigger), (e) => e.kind === 'limits');
  assert.equal(stateOf(exact), before);
  // the same hello again is ignored, not checked again; an older stream's, while nothing is
  // decoded, is checked as any other (section 13: it would be adopted), and refused as `hello`
  // once a packet is
  assert.equal(exact.decode(hello), null);
  const older = helloFor(schema, { history: 5000, maxDatagram: 1000, streamId: 98n, started: 0n });
  assert.throws(() => exact.decode(older), (e) => e.kind === 'limits');
  assert.equal(exact.decode(fr.whole(fullPacket(1, 1, [1]))).seq, 1);
  assert.throws(() => exact.decode(older), (e) => e.kind === 'hello');
  // the default bound takes the largest parameters there are
  assert.equal(new qc.SnapshotDecoder(schema).decode(helloFor(schema, { history: 32767, maxDatagram: 65507 })), null);
});

test('limits: check 2 comes after the header, the baseline, the removed set and the new count, before the records', () => {
  // 40 slots: a snapshot of 3 entities costs 256 + 3 * 328 = 1240 bytes; history 2 makes the hello
  // need room for 3 empty snapshots (768 bytes) beside reassembly's 51,200
  const fields = Array.from({ length: 40 }, (_, i) => `{"name":"f${i}","codec":{"kind":"UInt","bits":4}}`).join(',');
  const schema = qc.Schema.fromJSON(`{"name":"Wide","fields":[${fields}]}`);
  const h = { history: 2, maxDatagram: 200 };
  const hello = helloFor(schema, h);
  const fr = framer(qc.parseHello(hello), null);
  const room = helloNeed(h) - 256 * 200;
  assert.equal(room, 768);
  const bounded = (extra) => { const d = new qc.SnapshotDecoder(schema, { maxBytes: 256 * 200 + extra }); assert.equal(d.decode(hello), null); return d; };
  const bits = (f) => { const w = new qc.BitWriter(); f(w); return w.finish(); };
  // a count of 3 new entities and no records: limits when 3 entities do not fit, malformed when they do
  const cut = bits((w) => { w.write(1, 16); w.write(0, 1); putEG(w, 3, 0); w.write(0, 16); });
  assert.throws(() => bounded(costOf(schema, 3) - 1).decode(fr.whole(cut)), (e) => e.kind === 'limits' && /a snapshot of 3 entities/.test(e.message));
  assert.throws(() => bounded(costOf(schema, 3)).decode(fr.whole(cut)), (e) => e.kind === 'malformed');
  // a count larger than the packet can hold: malformed first, whatever the bound
  const huge = bits((w) => { w.write(1, 16); w.write(0, 1); putEG(w, 1000, 0); });
  assert.throws(() => bounded(room).decode(fr.whole(huge)), (e) => e.kind === 'malformed');
  // a short header: malformed; a missing baseline: baseline (both before the count)
  assert.throws(() => bounded(room).decode(fr.whole(Uint8Array.of(1))), (e) => e.kind === 'malformed');
  assert.throws(() => bounded(room).decode(fr.whole(unchangedDelta(9, 1, 0))), (e) => e.kind === 'baseline');
  // a removed set that runs past its range (mode 1, a count above M): malformed, though N would not fit
  const held2 = bounded(costOf(schema, 2));
  assert.equal(held2.decode(fr.whole(fullPacket(1, 2, Array(40).fill(4)))).count, 2);
  const badSet = bits((w) => { w.write(2, 16); w.write(1, 1); putEG(w, 0, 2); w.write(0, 1); w.write(1, 2); w.write(1, 1); w.write(0, 5); w.write(0, 1); w.write(0, 1); w.write(1, 1); });
  assert.throws(() => held2.decode(fr.whole(badSet)), (e) => e.kind === 'malformed');
  // N counts the kept entities: a delta that removes none and adds none needs a whole snapshot again
  const dec = bounded(costOf(schema, 2) * 2 - 1);
  assert.equal(dec.decode(fr.whole(fullPacket(1, 2, Array(40).fill(4)))).count, 2);
  assert.equal(dec.heldBytes, 256 * 200 + costOf(schema, 2));
  const before = stateOf(dec);
  assert.throws(() => dec.decode(fr.whole(unchangedDelta(2, 1, 2))), (e) => e.kind === 'limits');
  assert.equal(stateOf(dec), before);
});

test('limits: a client sized for its window (2 * history - 1 snapshots and reassembly) decodes every packet of a lossless stream', () => {
  // section 19: H counts the held snapshots the packet leaves in the window. Counting the one a
  // newer packet pushes out, such a client refused every packet once its window was full, and
  // for good: only a packet that decodes moves the window (Python's
  // test_a_client_sized_for_its_window_decodes_every_packet; the kit's limits_window)
  const schema = qc.Schema.fromJSON('{"name":"M","fields":[{"name":"x","codec":{"kind":"UInt","bits":8}},{"name":"hp","codec":{"kind":"UInt","bits":8}}]}');
  const n = 50, history = 16, md = 1200, one = costOf(schema, n);
  assert.equal(one, 256 + n * (8 + 8 * 2));
  const sized = (2 * history - 1) * one + 256 * md;
  // each delta against the client's latest (what its acks tell the server), from a full packet
  const packet = (t, c) => (c.latest === null ? fullPacket(t & 0xffff, n, [8, 8]) : unchangedDelta(t & 0xffff, (t - c.latest) & 0xffff, n));
  const hello = helloFor(schema, { history, maxDatagram: md });
  const fr = framer(qc.parseHello(hello));
  const c = new qc.StreamClient(schema, { maxBytes: sized });
  assert.equal(c.receive(hello), null);
  let views = 0;
  for (let t = 65536 - 50; t < 65536 + 150; t++) {            // (across the wrap: it happened anywhere)
    for (const d of fr.datagrams(packet(t, c))) views += c.receive(d) !== null ? 1 : 0;
    assert.ok(c.heldBytes <= c.maxBytes, `${c.heldBytes} held`);
  }
  assert.equal(views, 200);
  assert.equal(c.heldBytes, c.maxBytes);                      // (the window full, exactly)
  assert.equal(c.decoder.held.size, 2 * history - 1);
  assert.equal(c.latest, 149);
  // one byte less: the packet that would make the window's 31st snapshot is refused, changing
  // nothing; the next, which pushes the oldest out, fits again
  const small = new qc.StreamClient(schema, { maxBytes: sized - 1 });
  assert.equal(small.receive(hello), null);
  const kinds = [];
  for (let t = 0; t < 40; t++) {
    const before = stateOf(small.decoder);
    for (const d of fr.datagrams(packet(t, small))) {
      try { small.receive(d); } catch (e) {
        kinds.push([t, e.kind]);
        assert.equal(stateOf(small.decoder), before, `packet ${t}: a refusal changed the state`);
      }
    }
  }
  assert.deepEqual(kinds[0], [2 * history - 2, 'limits']);
  assert.deepEqual(new Set(kinds.map(([, k]) => k)), new Set(['limits']));
  assert.equal(small.latest, 39);
  assert.ok(small.heldBytes <= small.maxBytes);
});

test('limits: the hostile stream (history 256, a full packet of 20,000 entities, then 200 unchanged deltas) stays under the default bound', () => {
  // 11 slots of 10 bits: a snapshot costs 256 + 20000 * 96 = 1,920,256 bytes
  const fields = Array.from({ length: 11 }, (_, i) => `{"name":"f${i}","codec":{"kind":"UInt","bits":10}}`).join(',');
  const schema = qc.Schema.fromJSON(`{"name":"World","fields":[${fields}]}`);
  const h = { history: 256, maxDatagram: 1200 };
  const hello = helloFor(schema, h);
  const fr = framer(qc.parseHello(hello), null);
  const dec = new qc.SnapshotDecoder(schema);
  assert.equal(dec.decode(hello), null);
  const N = 20000, cost = costOf(schema, N), ra = 256 * 1200;
  const fits = Math.floor((qc.DEFAULT_MAX_BYTES - ra) / cost);        // 139 snapshots
  let views = 0, refused = 0;
  // each delta against the newest snapshot the client has (what its acks tell the server)
  for (let t = 0; t <= 200; t++) {
    const p = t === 0 ? fullPacket(0, N, Array(11).fill(10)) : unchangedDelta(t, t - dec.latest, N);
    let last;
    for (const d of fr.datagrams(p)) {
      try { last = dec.decode(d); } catch (e) { assert.equal(e.kind, 'limits', e.message); last = e; }
      assert.ok(dec.heldBytes <= qc.DEFAULT_MAX_BYTES, `${dec.heldBytes} bytes held`);
    }
    if (last instanceof qc.DecodeError) refused++;
    else { assert.equal(last.count, N); views++; }
  }
  assert.equal(views, fits);
  assert.equal(refused, 201 - fits);
  assert.equal(dec.held.size, fits);
  assert.equal(dec.heldBytes, fits * cost + ra);
  assert.equal(dec.latest, fits - 1);
});

// The same hostile stream as the Python encoder sends it (support/hostile_stream.py), when the
// Python package is there: QC_PYTHON (default python3) must import quantcodec.
const PY = process.env.QC_PYTHON || 'python3';
function pythonHasPackage() {
  try { execFileSync(PY, ['-c', 'import quantcodec'], { cwd: os.tmpdir(), stdio: 'ignore' }); return true; } catch { return false; }
}
const hasPy = pythonHasPackage();
test('limits: the hostile stream made by the Python encoder (pose, 12 slots) is refused exactly past the default bound', { skip: !hasPy && `${PY} cannot import quantcodec (set QC_PYTHON)`, timeout: 120000 }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-hostile-'));
  try {
    execFileSync(PY, [path.join(HERE, 'hostile_stream.py'), dir], { cwd: os.tmpdir(), stdio: 'inherit' });
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(dir, 'pose.json'), 'utf8'));
    const ds = qc.splitDatagrams(readBytes(path.join(dir, 'hostile.bin')));
    const dec = new qc.SnapshotDecoder(schema);
    const cost = costOf(schema, 20000), ra = 256 * 1200;
    const fits = Math.floor((qc.DEFAULT_MAX_BYTES - ra) / cost);
    let views = 0, limits = 0;
    for (const d of ds) {
      const before = stateOf(dec);
      try { if (dec.decode(d) !== null) views++; } catch (e) {
        assert.equal(e.kind, 'limits', e.message);
        assert.equal(stateOf(dec), before);
        limits++;
      }
      assert.ok(dec.heldBytes <= qc.DEFAULT_MAX_BYTES);
    }
    assert.equal(schema.nslots, 12);
    assert.equal(views, fits);                  // 128 snapshots of 2,080,256 bytes
    assert.equal(limits, 201 - fits);
    assert.equal(dec.heldBytes, fits * cost + ra);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
