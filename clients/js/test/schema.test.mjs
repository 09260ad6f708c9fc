// Schemas (fingerprint, slot table, records), hashes, the old golden packets, the hello.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { GOLDEN, KIT, readJSON, readBytes, hexBytes, toHex } from '../support/helpers.mjs';

test('SHA-256 and CRC-32C vectors', () => {
  const enc = (s) => new TextEncoder().encode(s);
  assert.equal(qc.toHex(qc.sha256(enc(''))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  assert.equal(qc.toHex(qc.sha256(enc('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(qc.toHex(qc.sha256(enc('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))), '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
  assert.equal(qc.toHex(qc.sha256(new Uint8Array(1000).fill(0x61))), '41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3');
  assert.equal(qc.crc32c(enc('123456789')), 0xE3069283);
  assert.equal(qc.crc32c(new Uint8Array(0)), 0);
  const a = enc('hello, '), b = enc('world');
  assert.equal(qc.crc32c(b, qc.crc32c(a)), qc.crc32c(enc('hello, world')));
});

for (const f of ['player_state', 'all_kinds']) {
  const g = readJSON(path.join(GOLDEN, 'schema', `${f}.json`), { tagFloats: true });
  test(`golden schema ${f}: fingerprint and records`, () => {
    const schema = qc.Schema.fromSpec(g.spec);
    assert.equal(schema.fingerprint, g.fingerprint);
    const recs = g.records || [{ record: g.record, hex: g.hex }];
    for (const r of recs) {
      const plain = JSON.parse(JSON.stringify(r.record, (k, v) => (v instanceof qc.JsonFloat ? v.value : typeof v === 'bigint' ? `big:${v}` : v)), (k, v) => (typeof v === 'string' && v.startsWith('big:') ? BigInt(v.slice(4)) : v));
      const codes = schema.quantize(plain);
      if (r.codes) assert.equal(JSON.stringify(codes), JSON.stringify(r.codes));
      assert.equal(toHex(schema.encodeCodes(codes)), r.hex);
      const back = schema.decodeCodes(hexBytes(r.hex));
      assert.equal(JSON.stringify(back, (k, v) => (typeof v === 'bigint' ? String(v) : v)), JSON.stringify(codes, (k, v) => (typeof v === 'bigint' ? String(v) : v)));
      schema.decode(hexBytes(r.hex));            // values: every code dequantizes
    }
  });
}

test('schema files: the same fingerprint however written; errors name what is wrong', () => {
  const a = qc.Schema.fromJSON('{"name":"T","version":2,"fields":[{"name":"x","codec":{"kind":"Bounded","min":-2048,"max":2048.0,"bits":18}}]}');
  const b = qc.Schema.fromJSON('{"name":"T","version":2,"fields":{"x":{"kind":"Bounded","min":-2048.0,"max":2048,"bits":18,"mode":"endpoints"}}}');
  const c = new qc.Schema('T', [['x', new qc.Bounded(-2048, 2048, 18)]], { version: 2 });
  assert.equal(a.fingerprint, b.fingerprint);
  assert.equal(a.fingerprint, c.fingerprint);
  assert.notEqual(a.fingerprint, qc.Schema.fromJSON('{"name":"T","version":3,"fields":{"x":{"kind":"Bounded","min":-2048,"max":2048,"bits":18}}}').fingerprint);
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","fields":[],"extra":1}'), /unknown keys/);
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","fields":[]}'), /at least one field/);
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","fields":{"9x":{"kind":"Bool"}}}'), /identifiers/);
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","fields":{"x":{"kind":"Bool","bits":1}}}'), /field 'x': Bool spec has unknown keys/);
  assert.throws(() => qc.Schema.fromJSON('{"name":'), qc.SchemaError);
  // a key given twice: refused (Python refuses it too), at every level
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","name":"U","fields":{"x":{"kind":"Bool"}}}'), /duplicate key "name"/);
  assert.throws(() => qc.Schema.fromJSON('{"name":"T","fields":{"x":{"kind":"UInt","bits":8,"bits":9}}}'), /duplicate key "bits"/);
  assert.throws(() => a.checkFingerprint('0000000000000000'), /mismatch/);
  a.checkFingerprint(a.fingerprint.toUpperCase());
});

test('record example of docs/schema-format.md, and refusals', () => {
  const s = new qc.Schema('T', [['a', new qc.UInt(3)], ['b', new qc.UInt(5)]]);
  assert.equal(toHex(s.encodeCodes([5, 17])), '8d');
  assert.deepEqual(s.decodeCodes(hexBytes('8d')), [5, 17]);
  assert.throws(() => s.decodeCodes(hexBytes('8d00')), /message too long/);
  assert.throws(() => s.decodeCodes(new Uint8Array(0)), /message too short/);
  const e = new qc.Schema('E', [['state', new qc.Enum(['a', 'b', 'c'])], ['pad', new qc.UInt(6)]]);
  assert.throws(() => e.decodeCodes(hexBytes('03')), /field 'state': code 3 is not valid/);
  assert.throws(() => s.encodeCodes([8, 0]), qc.ValueRangeError);
  const nz = new qc.Schema('N', [['v', new qc.NearlyZero(new qc.Vector(new qc.Bounded(-1, 1, 8), new qc.Bounded(-1, 1, 8)), 0.01)]]);
  assert.equal(nz.encodeCodes([[0, [0, 0]]]).length, 1);
  assert.deepEqual(nz.decodeCodes(nz.encodeCodes([[1, [3, 200]]])), [[1, [3, 200]]]);
  assert.deepEqual(nz.decode(nz.encodeCodes([[0, [0, 0]]])), { v: [0, 0] });
});

test('the golden stream (tests/golden/snapshot): the hello and six datagrams decode to their matrices', () => {
  const dir = path.join(GOLDEN, 'snapshot');
  const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(dir, 'schema.json'), 'utf8'));
  const pk = readJSON(path.join(dir, 'packets.json'));
  assert.equal(schema.fingerprint, pk.fingerprint);
  assert.deepEqual(schema.slotTable(), pk.slots);
  const dec = new qc.SnapshotDecoder(schema);
  assert.equal(dec.decode(readBytes(path.join(dir, pk.hello || 'hello.bin'))), null);
  assert.equal(String(dec.hello.streamId), String(pk.stream_id));
  const bare = new Map();
  for (const p of pk.packets) {
    const d = readBytes(path.join(dir, p.file));
    assert.equal(d.length, p.bytes);
    const snap = dec.decode(d);
    assert.equal(snap.seq, p.seq);
    assert.deepEqual(snap.ids, p.ids);
    assert.deepEqual(snap.rows(), p.matrix);
    // the bare packet (the datagram without its check) decodes alike
    const b = qc.decodePacket(schema, d.subarray(0, p.packet_bytes), bare);
    bare.set(b.seq, b);
    assert.ok(b.sameAs(snap));
  }
});

test('the hello: parsed, adopted, another schema refused saying what differs', () => {
  const m = readJSON(path.join(KIT, 'manifest.json'));
  const s = m.streams.find((x) => x.name === 'pose_clean');
  const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
  const ds = qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams)));
  const hello = ds.find((d) => qc.isHello(d));
  const h = qc.parseHello(hello);
  assert.equal(h.fingerprint, schema.fingerprint);
  assert.equal(h.fields.length, schema.fields.length);
  assert.deepEqual(h.fields.map((f) => f.name), schema.names);
  assert.deepEqual(h.fields, schema.summaries());
  const dec = qc.SnapshotDecoder.fromHello(schema, hello);
  assert.equal(dec.history, h.history);
  assert.equal(dec.latest, null);
  // another schema: widths equal, a range differs
  const spec = JSON.parse(fs.readFileSync(path.join(KIT, s.schema), 'utf8'));
  spec.fields[0].codec.codecs[0].max = 65.0;
  const other = qc.Schema.fromSpec(spec);
  assert.throws(() => qc.SnapshotDecoder.fromHello(other, hello), /field 'position': same kind \(Vector\) and bits, other parameters/);
  const d2 = new qc.SnapshotDecoder(other);
  assert.throws(() => d2.decode(hello), (e) => e.kind === 'schema');
  assert.throws(() => d2.decode(ds[ds.length - 1]), (e) => e.kind === 'no-hello');
  // the decoder acknowledges latest after each snapshot
  const d3 = new qc.SnapshotDecoder(schema);
  for (const d of ds) { const v = d3.decode(d); if (v) assert.equal(d3.latest, v.seq); }
  assert.equal(d3.latest, qc.parseJSON(fs.readFileSync(path.join(KIT, s.expected), 'utf8').trim().split('\n').pop()).seq);
  const snap = d3.get(d3.latest);
  const vals = snap.values(0);
  assert.deepEqual(Object.keys(vals), schema.names);
  assert.equal(snap.indexOf(snap.ids[3]), 3);
});

/** EG(k, b) of u (section 4), for the crafted packets below (values well under the escape). */
function putEG(w, u, k) {
  const x = Math.floor(u / 2 ** k) + 1;
  const e = 31 - Math.clz32(x);
  w.write(0, e); w.write(1, 1); w.write(x - 2 ** e, e); w.write(u % 2 ** k, k);
}
/** A full packet (no baseline) of a one-Bool schema: ids and their codes. */
function fullPacket(seq, ids, codes) {
  const w = new qc.BitWriter();
  w.write(seq, 16); w.write(0, 1);
  putEG(w, ids.length, 0);
  if (ids.length) {
    w.write(0, 6);
    ids.forEach((id, i) => putEG(w, i ? id - ids[i - 1] - 1 : id, 0));
    codes.forEach((c) => w.write(c, 1));
  }
  return w.finish();
}

test('a full packet whose ids differ from the latest snapshot only at the end keeps its own ids', () => {
  // (a regression: a full packet's rows join the latest snapshot's equal rows, and share its id
  // array when the ids are the same; [5, 8] against [5, 7] are not)
  const schema = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
  const held = new Map();
  const a = qc.decodePacket(schema, fullPacket(1, [5, 7], [1, 0]), held);
  assert.deepEqual(a.ids, [5, 7]);
  const dec = new qc.SnapshotDecoder(schema);
  const look = () => { throw new Error('no baseline here'); };
  dec.coder.joinWith = a;
  for (const [ids, codes] of [[[5, 8], [1, 0]], [[5], [1]], [[5, 7, 9], [1, 0, 1]], [[4, 7], [1, 0]], [[5, 7], [1, 0]]]) {
    const p = fullPacket(2, ids, codes);
    const b = dec.coder.decode(p, 0, p.length, look);
    assert.deepEqual(b.ids, ids);
    assert.deepEqual(b.rows(), codes.map((c) => [c]));
  }
  const same = fullPacket(3, [5, 7], [1, 1]);
  assert.equal(dec.coder.decode(same, 0, same.length, look).ids, a.ids);    // the same ids: shared
});
