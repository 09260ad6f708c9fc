// What quantcodec.d.mts declares readonly is read-only at runtime too: the limits, the key and its
// checks, the nonce and the state replies carry. An assignment (this file is an ES module, so
// strict code) throws TypeError and changes nothing; before, `client.decoder.maxBytes = NaN` was
// taken silently and switched off section 19's bound.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT } from '../support/helpers.mjs';

const present = fs.existsSync(path.join(KIT, 'schemas', 'pose.json'));
const skip = present ? false : `no kit at ${KIT}`;
const pose = () => qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, 'schemas', 'pose.json'), 'utf8'));
const stream = (name) => qc.splitDatagrams(new Uint8Array(fs.readFileSync(path.join(KIT, 'streams', `${name}.bin`))));
const kinds = (c, ds) => ds.map((d) => { try { return c.receive(d) ? 'view' : 'pending'; } catch (e) { return e.kind; } });

/** Every assignment of `values` to obj[prop] throws TypeError and leaves it as it was. */
function readOnly(obj, prop, values = [NaN, -5, 'abc', null, undefined, 1e9]) {
  const before = obj[prop];
  for (const v of values) {
    assert.throws(() => { obj[prop] = v; }, TypeError, `${obj.constructor.name}.${prop} = ${String(v)}`);
    assert.equal(obj[prop], before, `${obj.constructor.name}.${prop} unchanged`);
  }
  try { delete obj[prop]; } catch (e) { assert.ok(e instanceof TypeError); }   // (a getter's is on the prototype: nothing to delete)
  assert.equal(obj[prop], before, `delete ${obj.constructor.name}.${prop}: unchanged`);
}

test('SnapshotDecoder: maxBytes, history, schema, the key material and checks are read-only', { skip }, () => {
  const s = pose();
  const dec = new qc.SnapshotDecoder(s, { maxBytes: 1000, key: new Uint8Array([1, 2, 3]) });
  for (const p of ['maxBytes', 'history', 'schema', 'mk', 'checks', 'T', 'coder', 'rowCost', 'latest', 'hello', 'heldBytes']) readOnly(dec, p);
  assert.equal(dec.maxBytes, 1000);
  assert.equal(dec.T, 8);
});

test('StreamClient: decoder, nonce, due, streamId, maxBytes are read-only; rseq takes only an integer in 0..2**32-1', { skip }, () => {
  const s = pose(), ds = stream('pose_clean').slice(0, 4);
  // the bound holds whatever is assigned: the hello needs more than 1000 bytes
  const c = new qc.StreamClient(s, { nonce: 1, maxBytes: 1000 });
  for (const p of ['maxBytes', 'decoder', 'nonce', 'due', 'schema', 'view', 'latest', 'hello', 'streamId', 'heldBytes']) readOnly(c, p);
  readOnly(c.decoder, 'maxBytes');
  assert.deepEqual(kinds(c, ds), ['limits', 'no-hello', 'limits', 'no-hello']);
  assert.equal(c.nonce, 1);
  // rseq: documented writable (a test of the wrap sets it), but only to what a reply can carry
  const r = new qc.StreamClient(s, { nonce: 2 });
  r.rseq = 0xffffffff;
  assert.equal(r.rseq, 0xffffffff);
  r.reply();
  assert.equal(r.rseq, 0);
  for (const v of ['x', null, undefined, 5n, true]) assert.throws(() => { r.rseq = v; }, TypeError, `rseq = ${String(v)}`);
  for (const v of [NaN, -1, 1.5, 2 ** 32, Infinity]) assert.throws(() => { r.rseq = v; }, RangeError, `rseq = ${v}`);
  assert.equal(r.rseq, 0);
});

test('Interpolator: schema, capacity, maxExtrapolation, stats and newest are read-only', { skip }, () => {
  const s = pose();
  const ip = new qc.Interpolator(s, { capacity: 3, maxExtrapolation: 1 });
  for (const p of ['schema', 'capacity', 'maxExtrapolation', 'stats', 'newest', 'oldest', 'size']) readOnly(ip, p);
  const c = new qc.StreamClient(s, { nonce: 3 });
  for (const d of stream('pose_clean')) { try { const v = c.receive(d); if (v) ip.push(v); } catch { /* refused */ } }
  assert.equal(ip.size, 3, 'the buffer keeps its capacity');
  readOnly(ip, 'newest');
});

test('Snapshot: a decoded view is read-only, so what later packets decode against stays as decoded', { skip }, () => {
  const s = pose();
  const want = fs.readFileSync(path.join(KIT, 'streams', 'pose_lossy.jsonl'), 'utf8').trim().split('\n');
  const dec = new qc.SnapshotDecoder(s);
  const got = [];
  let views = 0;
  for (const d of stream('pose_lossy')) {
    let v;
    try { v = dec.decode(d); } catch (e) { got.push(JSON.stringify({ error: e.kind })); continue; }
    if (!v) { got.push('{"pending":true}'); continue; }
    got.push(v.toJSONLine());
    // every view is a baseline of the packets after it: each assignment throws and changes nothing
    for (const p of ['seq', 'ids', 'schema', 'codes', 'big', 'ver']) readOnly(v, p, [NaN, 7, [], null]);
    assert.throws(() => { v.extra = 1; }, TypeError, 'no property added');
    views++;
  }
  assert.ok(views > 10, `${views} views`);
  assert.deepEqual(got, want, 'the stream decodes as the kit says, every view having been written to');
});
