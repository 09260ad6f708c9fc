// The API's arguments: what each entry point accepts, and that anything else is a TypeError (or a
// RangeError) naming the entry point and what it got, thrown before anything changes; never a
// crash inside the library ("x.subarray is not a function", "Cannot read properties of null").
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
const RECORD = { position: [1, 2, 3], rotation: [0, 0, 0, 1], velocity: [0, 0, 0], yaw: 1, health: 5, state: 'idle', grounded: true };
/** assert.throws with the error's class and a pattern its message must match. */
const throwsLike = (f, Cls, re, what) => assert.throws(f, (e) => {
  assert.ok(e instanceof Cls, `${what}: ${e && e.constructor && e.constructor.name} (${e && e.message}) is no ${Cls.name}`);
  assert.match(e.message, re, what);
  return true;
}, what);

test('schema.decodeCodes / decode: the byte forms receive() takes decode alike; anything else is a TypeError naming it', { skip }, () => {
  const s = pose();
  const rec = s.encode(RECORD);
  const codes = s.decodeCodes(rec), values = s.decode(rec);
  const big = new Uint8Array(rec.length + 5); big.set(rec, 2);
  const forms = {
    ArrayBuffer: rec.slice().buffer,
    'a DataView into a larger buffer': new DataView(big.buffer, 2, rec.length),
    'a Uint8Array at an offset': big.subarray(2, 2 + rec.length),
    'an array of byte values': Array.from(rec),
    Buffer: Buffer.from(rec),
  };
  for (const [name, b] of Object.entries(forms)) {
    assert.deepEqual(s.decodeCodes(b), codes, `decodeCodes of ${name}`);
    assert.deepEqual(s.decode(b), values, `decode of ${name}`);
  }
  for (const [name, b, re] of [['null', null, /got null$/], ['undefined', undefined, /got undefined$/], ['a string', 'abc', /got string$/],
    ['a number', 7, /got number$/], ['a plain object', { a: 1 }, /got Object$/], ['non-bytes', [1, 300], /item 1 is no byte value/]]) {
    throwsLike(() => s.decodeCodes(b), TypeError, /^Schema\.decodeCodes: expected one record as bytes/, `decodeCodes(${name})`);
    throwsLike(() => s.decodeCodes(b), TypeError, re, `decodeCodes(${name})`);
    throwsLike(() => s.decode(b), TypeError, /^Schema\.decode: expected one record as bytes/, `decode(${name})`);
  }
  // (what is bytes but no canonical record stays a DecodeError)
  assert.throws(() => s.decodeCodes(new ArrayBuffer(1)), qc.DecodeError);
});

test('schema.encode / quantize: a record that is not an object or an array is a TypeError naming it', { skip }, () => {
  const s = pose();
  assert.deepEqual(s.encode(s.names.map((n) => RECORD[n])), s.encode(RECORD));
  for (const [name, r, re] of [['null', null, /got null$/], ['undefined', undefined, /got undefined$/], ['a number', 5, /got the number 5$/], ['a string', 'x', /got the string "x"$/]]) {
    throwsLike(() => s.encode(r), TypeError, /^Schema\.encode: expected a record/, `encode(${name})`);
    throwsLike(() => s.encode(r), TypeError, re, `encode(${name})`);
    throwsLike(() => s.quantize(r), TypeError, /^Schema\.quantize: expected a record/, `quantize(${name})`);
  }
});

test('isHello / parseHello: any byte form; null and other non-bytes are a TypeError naming the function', { skip }, () => {
  const hello = stream('pose_clean').find((d) => qc.isHello(d));
  const h = qc.parseHello(hello);
  for (const b of [hello.slice().buffer, new DataView(hello.slice().buffer), Array.from(hello)]) {
    assert.equal(qc.isHello(b), true);
    assert.equal(qc.parseHello(b).fingerprint, h.fingerprint);
  }
  assert.equal(qc.isHello(new Uint8Array(3)), false);
  for (const f of ['isHello', 'parseHello']) {
    for (const [name, b] of [['null', null], ['undefined', undefined], ['a string', 'QCHL'], ['a number', 1]]) {
      throwsLike(() => qc[f](b), TypeError, new RegExp(`^${f}: expected one datagram as bytes`), `${f}(${name})`);
    }
    throwsLike(() => qc[f](hello, { kye: new Uint8Array(4) }), TypeError, new RegExp(`^${f}: unknown option 'kye' \\(the options are key\\)`), `${f} with a misspelt option`);
    assert.equal(qc[f](hello, null) !== undefined, true, `${f}(hello, null): no options`);
  }
});

test('StreamClient / SnapshotDecoder / Interpolator: null options are no options; a misspelt option is a TypeError listing the known ones', { skip }, () => {
  const s = pose();
  const c = new qc.StreamClient(s, null);
  assert.equal(c.maxBytes, qc.DEFAULT_MAX_BYTES);
  assert.equal(new qc.SnapshotDecoder(s, null).history, 64);
  assert.equal(new qc.Interpolator(s, null).capacity, 32);
  const hello = stream('pose_clean').find((d) => qc.isHello(d));
  assert.equal(qc.SnapshotDecoder.fromHello(s, hello, null).hello.fingerprint, s.fingerprint);
  const cases = [
    ['StreamClient', (o) => new qc.StreamClient(s, o), { maxbytes: 10 }, 'maxbytes', 'key, maxBytes, nonce, history'],
    ['StreamClient', (o) => new qc.StreamClient(s, o), { nonse: 5 }, 'nonse', 'key, maxBytes, nonce, history'],
    ['SnapshotDecoder', (o) => new qc.SnapshotDecoder(s, o), { maxbytes: 10 }, 'maxbytes', 'history, key, maxBytes'],
    ['SnapshotDecoder', (o) => new qc.SnapshotDecoder(s, o), { nonce: 5 }, 'nonce', 'history, key, maxBytes'],
    ['SnapshotDecoder', (o) => qc.SnapshotDecoder.fromHello(s, hello, o), { max_bytes: 10 }, 'max_bytes', 'history, key, maxBytes'],
    ['Interpolator', (o) => new qc.Interpolator(s, o), { maxExtrapolaton: 1 }, 'maxExtrapolaton', 'capacity, maxExtrapolation'],
  ];
  for (const [who, make, o, bad, known] of cases) {
    throwsLike(() => make(o), TypeError, new RegExp(`^${who}: unknown option '${bad}' \\(the options are ${known}\\)$`), `${who} ${JSON.stringify(o)}`);
  }
  for (const [who, make] of [['StreamClient', (o) => new qc.StreamClient(s, o)], ['SnapshotDecoder', (o) => new qc.SnapshotDecoder(s, o)], ['Interpolator', (o) => new qc.Interpolator(s, o)]]) {
    for (const o of [5, 'maxBytes', [1]]) throwsLike(() => make(o), TypeError, new RegExp(`^${who}: options must be an object`), `${who}(${JSON.stringify(o)})`);
  }
});

test('Interpolator options: numbers only, checked alike; a TypeError or RangeError naming the option', { skip }, () => {
  const s = pose();
  for (const v of ['2', null, [3], true, 2n, {}]) {
    throwsLike(() => new qc.Interpolator(s, { maxExtrapolation: v }), TypeError, /^Interpolator: maxExtrapolation must be a finite number >= 0/, `maxExtrapolation ${String(v)}`);
  }
  for (const v of [NaN, -1, -0.5, Infinity, -Infinity]) {
    throwsLike(() => new qc.Interpolator(s, { maxExtrapolation: v }), RangeError, /^Interpolator: maxExtrapolation must be finite and >= 0/, `maxExtrapolation ${v}`);
  }
  for (const v of ['4', null, [4], true, 4n]) {
    throwsLike(() => new qc.Interpolator(s, { capacity: v }), TypeError, /^Interpolator: capacity must be an integer of at least 2/, `capacity ${String(v)}`);
  }
  for (const v of [1, 0, -3, 2.5, NaN, Infinity]) {
    throwsLike(() => new qc.Interpolator(s, { capacity: v }), RangeError, /^Interpolator: capacity must be an integer of at least 2/, `capacity ${v}`);
  }
  const ip = new qc.Interpolator(s, { capacity: 2, maxExtrapolation: 0 });
  assert.deepEqual([ip.capacity, ip.maxExtrapolation], [2, 0]);
  assert.equal(new qc.Interpolator(s, { maxExtrapolation: undefined }).maxExtrapolation, 2, 'undefined: the default');
});

test('Interpolator.push of what is not a Snapshot: TypeError before anything changes (stats included)', { skip }, () => {
  const s = pose();
  const c = new qc.StreamClient(s, { nonce: 1 }), views = [];
  for (const d of stream('pose_clean')) { try { const v = c.receive(d); if (v) views.push(v); } catch { /* refused */ } }
  const ip = new qc.Interpolator(s);
  ip.push(views[0]); ip.push(views[1]);
  ip.sample(ip.newest + 5);                    // render time past both: a push at an older tick would count late
  const before = JSON.stringify({ stats: ip.stats, size: ip.size, newest: ip.newest, oldest: ip.oldest });
  const fakes = [
    ['a plain object', { seq: views[0].seq - 3, ids: [1], count: 1 }],
    ['an object with code()', { seq: views[0].seq - 3, ids: [1], count: 1, schema: s, code: () => 0 }],
    ['null', null], ['undefined', undefined], ['a number', 7], ['a sample', ip.sample(ip.newest)],
  ];
  for (const [name, f] of fakes) {
    throwsLike(() => ip.push(f), TypeError, /^Interpolator\.push: expected a view \(a Snapshot, as StreamClient\.receive returns\), got /, name);
    assert.equal(JSON.stringify({ stats: ip.stats, size: ip.size, newest: ip.newest, oldest: ip.oldest }), before, `${name}: nothing changed`);
  }
  assert.equal(ip.push(views[2]), true, 'a real view still goes in');
});

test('Interpolator.tick: an integer (number or bigint) only; NaN, infinities and fractions a RangeError, other types a TypeError', { skip }, () => {
  const ip = new qc.Interpolator(pose());
  for (const [seq, t] of [[5, 5], [0, 0], [65535, 65535], [-1, 65535], [70000, 4464], [2 ** 40 + 7, 7], [5n, 5], [-1n, 65535], [2n ** 70n + 3n, 3]]) {
    assert.equal(ip.tick(seq), t, `tick(${String(seq)})`);
  }
  for (const v of [NaN, Infinity, -Infinity, 5.5, -0.25]) throwsLike(() => ip.tick(v), RangeError, /^Interpolator\.tick: seq must be an integer, got /, `tick(${v})`);
  for (const v of ['5', null, undefined, true, [5], {}]) throwsLike(() => ip.tick(v), TypeError, /^Interpolator\.tick: seq must be an integer, got /, `tick(${String(v)})`);
});
