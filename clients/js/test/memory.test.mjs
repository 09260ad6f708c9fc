// Real memory against section 19's cost model for the smallest snapshots: snapshots of one entity
// of the kit's one_bit schema (S = 1: 272 bytes each in the model) held at history 30000, the case
// where the model's 256-byte overhead is furthest from what an engine spends. Prints the heap a
// held snapshot takes after a full GC, and its ratio to the model; the README quotes
//   QC_MEMORY_SNAPSHOTS=20000 node --test --test-reporter=spec test/memory.test.mjs
// (5,000 snapshots by default, to keep ./run-tests short).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as qc from '../quantcodec.mjs';
import { KIT } from '../support/helpers.mjs';
import { helloFor, framer, fullPacket, unchangedDelta } from '../support/frame.mjs';

const schemaFile = path.join(KIT, 'schemas', 'one_bit.json');

test('memory: one-entity snapshots held against the section-19 model', { skip: fs.existsSync(schemaFile) ? false : `no ${schemaFile}` }, (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const s = qc.Schema.fromJSON(fs.readFileSync(schemaFile, 'utf8'));
  const bits = s.slots.map((x) => x.bits), N = Number(process.env.QC_MEMORY_SNAPSHOTS || 5000);
  for (const [what, n, delta] of [['warm-up', 1, false], ['full packets, 1 entity', 1, false], ['unchanged deltas, 1 entity', 1, true], ['full packets, 0 entities', 0, false]]) {
    const hello = helloFor(s, { history: 30000, maxDatagram: 1200 }), fr = framer(qc.parseHello(hello));
    let ds = [hello];
    for (let q = 0; q < N; q++) ds.push(fr.whole(delta && q > 0 ? unchangedDelta(q, 1, n) : fullPacket(q, n, bits)));
    let c = new qc.StreamClient(s, { nonce: 1 });
    for (const d of ds) { c.receive(d); c.reply(); }
    ds = null;                                          // (else freed within the next round, counted against it)
    assert.equal(c.decoder.state()[1].length, N, 'every snapshot held');
    const model = c.heldBytes - 256 * 1200;             // the snapshots' part of the model
    // what the client holds: the heap a full GC frees once it is dropped
    gc(); gc();
    const m1 = process.memoryUsage();
    c = null;
    gc(); gc();
    const m2 = process.memoryUsage();
    const real = (m1.heapUsed - m2.heapUsed) + (m1.arrayBuffers - m2.arrayBuffers);
    if (what !== 'warm-up') {
      t.diagnostic(`${what}: ${N} held, model ${model} bytes (${model / N} each), heap the client holds ${real} bytes (${Math.round(real / N)} each): ${(real / model).toFixed(2)}x`);
      // (a loose bound: what a change that made held snapshots much heavier would pass)
      assert.ok(real / model < 3, `${what}: ${(real / model).toFixed(2)}x the model`);
    }
  }
});
