// Keyed checks (docs/wire-format.md section 17): with a shared key every check is an 8-byte
// SipHash-2-4 tag. The kit's streams, taken apart into their hellos and packets and framed again
// with a key (support/frame.mjs: fragments of C = max_datagram - 16 bytes), decode exactly as the
// same events framed without one; datagrams of no key or another key are refused.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT, readJSON, readBytes, hexBytes } from '../support/helpers.mjs';
import { events, frameEvents, framer, resealHello, checker, cat, le32 } from '../support/frame.mjs';

const present = fs.existsSync(path.join(KIT, 'manifest.json'));
const manifest = present ? readJSON(path.join(KIT, 'manifest.json')) : { streams: [] };
const KEY = hexBytes('00112233445566778899aabbccddeeff0f1e2d3c');
const OTHER = hexBytes('00112233445566778899aabbccddeeff0f1e2d3d');
const PENDING = '{"pending":true}';

const kitStream = (name) => {
  const s = manifest.streams.find((x) => x.name === name);
  return { s, schema: qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, s.schema), 'utf8')), datagrams: qc.splitDatagrams(readBytes(path.join(KIT, s.datagrams))) };
};
/** Each event's lines: a list per event of the runner lines of its datagrams. */
const run = (dec, framed) => framed.map((ds) => ds.map((d) => qc.runnerLine(dec, d)));

for (const name of ['pose_clean', 'pose_lossy', 'all_kinds_pred', 'all_kinds_nopred', 'fragments', 'hostile', 'restart', 'one_bit']) {
  test(`keyed: the events of ${name} framed with a key decode as without one`, { skip: !present && 'no kit' }, () => {
    const { schema, datagrams } = kitStream(name);
    const evs = events(datagrams);
    const plain = run(new qc.SnapshotDecoder(schema), frameEvents(evs));
    const keyedFrames = frameEvents(evs, KEY);
    const keyed = run(new qc.SnapshotDecoder(schema, { key: KEY }), keyedFrames);
    let views = 0;
    for (let i = 0; i < evs.length; i++) {
      // a packet is whole or fragments; only its last datagram completes it
      const a = plain[i], b = keyed[i];
      assert.deepEqual(a.slice(0, -1).concat(b.slice(0, -1)).filter((l) => l !== PENDING), [], `event ${i}: a fragment before the last completed something`);
      assert.equal(b[b.length - 1], a[a.length - 1], `event ${i} (${evs[i].kind})`);
      if (a[a.length - 1].startsWith('{"seq"')) views++;
    }
    assert.ok(views > 0 || name === 'hostile', 'some views');
    // the same datagrams seen by a decoder without the key, or with another key: nothing is adopted
    for (const dec of [new qc.SnapshotDecoder(schema), new qc.SnapshotDecoder(schema, { key: OTHER })]) {
      for (const ds of keyedFrames) for (const d of ds) assert.equal(qc.runnerLine(dec, d), '{"error":"no-hello"}');
    }
  });
}

test('keyed: fragments carry C = max_datagram - 16 bytes and pcheck stays the CRC-32C of the packet under seed_P', { skip: !present && 'no kit' }, () => {
  const { schema, datagrams } = kitStream('fragments');
  const evs = events(datagrams);
  const hello = evs.find((e) => e.kind === 'hello').hello;
  const big = evs.find((e) => e.kind === 'packet' && e.bytes.length + 8 > hello.maxDatagram);
  const fr = framer(hello, KEY);
  const ds = fr.datagrams(big.bytes);
  assert.ok(ds.length >= 2);
  for (const d of ds.slice(0, -1)) assert.equal(d.length, hello.maxDatagram);
  const dec = new qc.SnapshotDecoder(schema, { key: KEY });
  assert.equal(dec.decode(resealHello(evs[0].kind === 'hello' ? evs[0].bytes : evs.find((e) => e.kind === 'hello').bytes, { key: KEY })), null);
  // a full packet first, so that the big one's baseline is there
  for (const e of evs) {
    if (e === big) break;
    if (e.kind === 'packet') for (const d of fr.datagrams(e.bytes)) try { dec.decode(d); } catch (err) { assert.ok(err instanceof qc.DecodeError); }
  }
  // a chunk of the unkeyed size (4 bytes more) is inconsistent: kind fragment
  const C = hello.maxDatagram - 16;
  const pcheck = qc.crc32c(big.bytes, qc.crc32c(cat(fr.K, new TextEncoder().encode('P'))));
  const seq = big.bytes[0] | (big.bytes[1] << 8);
  assert.throws(() => dec.decode(fr.fragment(seq, 0, 1, pcheck, big.bytes.subarray(0, C + 4))), (e) => e.kind === 'fragment' && /chunk of/.test(e.message));
  // the right fragments with a pcheck under the key's tag instead of the CRC: refused when complete
  const wrong = Number(qc.siphash24(qc.macKey(KEY, cat(fr.K, Uint8Array.of(0x50))), big.bytes) & 0xffffffffn);
  const count = Math.ceil(big.bytes.length / C);
  let last;
  for (let i = 0; i < count; i++) {
    const d = fr.fragment(seq, i, count - 1, wrong, big.bytes.subarray(i * C, (i + 1) * C));
    if (i < count - 1) assert.equal(dec.decode(d), null);
    else last = d;
  }
  assert.throws(() => dec.decode(last), (e) => e.kind === 'fragment');
  // and with the CRC: a view
  let view = null;
  for (const d of ds) view = dec.decode(d);
  assert.equal(view.seq, seq);
});

test('keyed: the minimal lengths are 1 + 8 (packet), 9 + 8 (fragment), 51 + 8 (hello)', { skip: !present && 'no kit' }, () => {
  const { schema, datagrams } = kitStream('pose_clean');
  const evs = events(datagrams);
  const he = evs.find((e) => e.kind === 'hello');
  const dec = new qc.SnapshotDecoder(schema, { key: KEY });
  assert.equal(dec.decode(resealHello(he.bytes, { key: KEY })), null);
  const fr = framer(he.hello, KEY);
  // a 1-byte packet: its tag holds, the packet is too short to read (malformed, not check)
  assert.throws(() => dec.decode(fr.whole(Uint8Array.of(7))), (e) => e.kind === 'malformed');
  // an empty packet is no datagram: 8 bytes of a valid tag of nothing
  assert.throws(() => dec.decode(fr.whole(new Uint8Array(0))), (e) => e.kind === 'check');
  // a fragment with one chunk byte (17 bytes): a fragment (count 1: refused as such)
  assert.throws(() => dec.decode(fr.fragment(1, 0, 0, 0, Uint8Array.of(1))), (e) => e.kind === 'fragment' && /count of 1/.test(e.message));
  // a fragment body of 8 bytes and its tag (16 bytes): not a fragment
  const body = new Uint8Array(8); body[3] = 1;
  assert.throws(() => dec.decode(cat(body, fr.F.tag(body))), (e) => e.kind === 'check');
  // the hello sealed with the key's tag: the smallest is 59 bytes; the unkeyed one is refused
  assert.ok(qc.isHello(resealHello(he.bytes, { key: KEY }), { key: KEY }));
  assert.ok(!qc.isHello(he.bytes, { key: KEY }));
  assert.ok(!qc.isHello(resealHello(he.bytes, { key: KEY })));
  assert.deepEqual(qc.parseHello(resealHello(he.bytes, { key: KEY }), { key: KEY }).streamId, he.hello.streamId);
  assert.throws(() => qc.parseHello(he.bytes, { key: KEY }), (e) => e.kind === 'check' && /SipHash tag/.test(e.message));
});

test('keyed: every single-bit flip of a keyed datagram, tag included, is refused and changes nothing', { skip: !present && 'no kit' }, () => {
  const { schema, datagrams } = kitStream('pose_clean');
  const framed = frameEvents(events(datagrams), KEY).flat();
  const dec = new qc.SnapshotDecoder(schema, { key: KEY });
  let flips = 0;
  for (const d of framed.slice(0, 6)) {
    if (dec.hello) {
      const latest = dec.latest, held = [...dec.held.keys()].join();
      for (let bit = 0; bit < d.length * 8; bit += 3) {
        const e = d.slice(); e[bit >> 3] ^= 1 << (bit & 7);
        assert.throws(() => dec.decode(e), (err) => err instanceof qc.DecodeError && err.kind === 'check', `bit ${bit}`);
        flips++;
      }
      assert.equal(dec.latest, latest);
      assert.equal([...dec.held.keys()].join(), held);
    }
    dec.decode(d);
  }
  assert.ok(flips > 100);
});

test('keyed: a key of the wrong size or type is refused when the decoder is made', () => {
  const schema = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
  assert.throws(() => new qc.SnapshotDecoder(schema, { key: new Uint8Array(0) }), /key must be 1 to 255 bytes, got 0/);
  assert.throws(() => new qc.SnapshotDecoder(schema, { key: new Uint8Array(300) }), /got 300/);
  assert.throws(() => new qc.SnapshotDecoder(schema, { key: 'secret' }), TypeError);
  // the reply checks of section 18 use labels R and Q
  assert.equal(checker('Q').T, 4);
  assert.equal(checker('Q', { key: KEY }).T, 8);
  assert.equal(le32(1).length, 4);
});
