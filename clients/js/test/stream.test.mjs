// The stream's rules of docs/wire-format.md sections 12 and 13 on streams made here
// (support/frame.mjs): which hello is adopted (a stream that has decoded no packet yet does not
// refuse another), and which partial packets give way at the reassembly's bound of
// 256 * max_datagram (the oldest by seq first, never the newer packet for an older one's
// fragments).
import test from 'node:test';
import assert from 'node:assert/strict';
import * as qc from '../quantcodec.mjs';
import { helloFor, framer, fullPacket } from '../support/frame.mjs';

const BOOL = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
const kindOf = (f) => { try { f(); return null; } catch (e) { assert.ok(e instanceof qc.DecodeError, String(e)); return e.kind; } };
const idOf = (dec) => (dec.hello === null ? null : dec.hello.streamId);

test('section 13: an older stream\'s hello is adopted while the adopted stream has decoded no packet, refused once it has', () => {
  const dec = new qc.SnapshotDecoder(BOOL);
  const a = helloFor(BOOL, { history: 8, streamId: 5n, started: 10n });
  const older = helloFor(BOOL, { history: 8, streamId: 6n, started: 9n });
  const same = helloFor(BOOL, { history: 8, streamId: 7n, started: 10n });     // another stream, started as late
  assert.equal(dec.decode(a), null);
  assert.equal(idOf(dec), 5n);
  // nothing decoded: another stream's hello is taken, whether started earlier or as late
  assert.equal(dec.decode(older), null);
  assert.equal(idOf(dec), 6n);
  assert.equal(dec.decode(same), null);
  assert.equal(idOf(dec), 7n);
  assert.equal(dec.decode(a), null);               // (started 10, not later than 7's: taken back all the same)
  assert.equal(idOf(dec), 5n);
  // a packet decoded: both are refused as `hello`, and change nothing
  const fa = framer(qc.parseHello(a));
  assert.equal(dec.decode(fa.whole(fullPacket(1, 2, [1]))).seq, 1);
  for (const h of [older, same]) {
    assert.throws(() => dec.decode(h), (e) => e instanceof qc.DecodeError && e.kind === 'hello' &&
      /^snapshot stream: a hello of an older stream 000000000000000[67] \(started (9|10), the current one 10, which has decoded packets\)$/.test(e.message));
    assert.equal(idOf(dec), 5n);
    assert.equal(dec.latest, 1);
  }
  assert.equal(dec.decode(fa.whole(fullPacket(2, 2, [1]))).seq, 2);
  // reset() forgets what was decoded: the stream holds nothing again, and gives way
  dec.reset();
  assert.equal(dec.decode(older), null);
  assert.equal(idOf(dec), 6n);
});

test('section 13: a stray hello of a newer stream, adopted mid-stream, does not keep the client from its own server', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 1 });
  c.reply();
  const own = helloFor(BOOL, { history: 8, streamId: 1n, started: 100n });
  const stray = helloFor(BOOL, { history: 8, streamId: 2n, started: 200n });
  const fo = framer(qc.parseHello(own)), fs = framer(qc.parseHello(stray));
  c.receive(own);
  for (let s = 1; s <= 3; s++) assert.equal(c.receive(fo.whole(fullPacket(s, 1, [1]))).seq, s);
  assert.equal(c.receive(stray), null);                                  // newer: adopted, the client starts over
  assert.equal(idOf(c.decoder), 2n);
  assert.equal(c.latest, null);
  c.reply();
  assert.equal(kindOf(() => c.receive(fo.whole(fullPacket(4, 1, [1])))), 'check');   // its own server's packets: another stream now
  // the own server's hello again (the server sends it until the client acks): taken back, a reply due
  assert.equal(c.receive(own), null);
  assert.equal(idOf(c.decoder), 1n);
  assert.notEqual(c.reply(), null);
  assert.equal(c.receive(fo.whole(fullPacket(5, 1, [1]))).seq, 5);
  // once the own stream has decoded a packet, the stray's hello is newer still: adopted as before;
  // the stray stream, having decoded one, refuses the own stream's hello
  assert.equal(c.receive(stray), null);
  assert.equal(c.receive(fs.whole(fullPacket(1, 1, [1]))).seq, 1);
  assert.notEqual(c.reply(), null);
  assert.equal(kindOf(() => c.receive(own)), 'hello');
  assert.equal(c.reply(), null, 'a refused hello makes no reply due');
  assert.equal(idOf(c.decoder), 2n);
});

// Reassembly (section 12, rule 4): max_datagram 64, so chunks of C = 52 bytes and a bound of
// 256 * 64 = 16,384 bytes, 315 chunks; packets of 640 entities of four 32-bit slots take 199.
const WIDE = qc.Schema.fromJSON('{"name":"W","fields":[' + ['a', 'b', 'c', 'd'].map((n) => `{"name":"${n}","codec":{"kind":"UInt","bits":32}}`).join(',') + ']}');
const BITS = [32, 32, 32, 32];
function wide(seq) { return fullPacket(seq, 640, BITS); }
function setup(latest) {
  const hello = helloFor(WIDE, { history: 64, maxDatagram: 64 });
  const dec = new qc.SnapshotDecoder(WIDE);
  dec.decode(hello);
  const fr = framer(qc.parseHello(hello));
  if (latest !== null) {
    let out = null;
    for (const d of fr.datagrams(wide(latest))) out = dec.decode(d);
    assert.equal(out.seq, latest);
  }
  assert.equal(dec.reassembly.limit / dec.reassembly.size | 0, 315);
  return { dec, fr };
}
const partsOf = (dec) => [...dec.reassembly.parts.values()].map((p) => [p.seq, p.chunks.size]);
function feed(dec, ds) {
  const out = [];
  for (const d of ds) {
    const v = dec.decode(d);
    if (v !== null) out.push(v.seq);
    assert.ok(dec.reassembly.held <= dec.reassembly.limit);
  }
  return out;
}

for (const latest of [5, 0xffff]) {
  const next = (latest + 1) & 0xffff;
  test(`section 12, rule 4: an older packet's fragments again never push out the newer packet (latest ${latest})`, () => {
    const { dec, fr } = setup(latest);
    const newer = fr.datagrams(wide(next)), again = fr.datagrams(wide(latest));
    assert.equal(newer.length, 199);
    assert.deepEqual(feed(dec, newer.slice(0, 150)), []);
    // the duplicated packet's fragments: 165 fit beside the newer packet's 150; the next one finds
    // its own packet the oldest: dropped, that chunk not kept, the newer packet's chunks stay
    assert.deepEqual(feed(dec, again.slice(0, 165)), []);
    assert.deepEqual(partsOf(dec), [[next, 150], [latest, 165]]);
    assert.deepEqual(feed(dec, again.slice(165, 166)), []);
    assert.deepEqual(partsOf(dec), [[next, 150]]);
    assert.equal(dec.reassembly.held, 150 * 52);
    // its last 33 fragments begin it again (33 of 199: it never completes), interleaved with the
    // newer packet's last 49, which completes it
    const mixed = [];
    for (let i = 0; i < 49; i++) { if (166 + i < 199) mixed.push(again[166 + i]); mixed.push(newer[150 + i]); }
    assert.deepEqual(feed(dec, mixed), [next]);
    assert.equal(dec.latest, next);
  });

  test(`section 12, rule 4: a newer packet's chunk pushes out an older partial packet begun after it (latest ${latest})`, () => {
    const { dec, fr } = setup(latest);
    const newer = fr.datagrams(wide(next)), again = fr.datagrams(wide(latest));
    assert.deepEqual(feed(dec, newer.slice(0, 100)), []);
    assert.deepEqual(feed(dec, again.slice(0, 198)), []);      // 298 chunks held: all fit
    assert.deepEqual(partsOf(dec), [[next, 100], [latest, 198]]);
    // 17 more of the newer packet's fill the bound (315 chunks), the 18th passes it: the older
    // packet gives way, though begun later
    assert.deepEqual(feed(dec, newer.slice(100, 117)), []);
    assert.deepEqual(partsOf(dec), [[next, 117], [latest, 198]]);
    assert.deepEqual(feed(dec, newer.slice(117, 118)), []);
    assert.deepEqual(partsOf(dec), [[next, 118]]);
    assert.deepEqual(feed(dec, newer.slice(118)), [next]);
    assert.deepEqual(partsOf(dec), []);
    assert.equal(dec.reassembly.held, 0);
  });
}

test('section 12, rule 4: before any packet is decoded, partial packets give way in the order begun, the fragment\'s own included', () => {
  const { dec, fr } = setup(null);
  const a = fr.datagrams(wide(9)), b = fr.datagrams(wide(3)), c = fr.datagrams(wide(40000));
  feed(dec, a.slice(0, 190));
  feed(dec, b.slice(0, 125));                               // 315 chunks: full
  assert.deepEqual(partsOf(dec), [[9, 190], [3, 125]]);
  // a chunk of the packet begun first: its own packet comes up first (all rank equal): dropped,
  // the chunk not kept, the other packet stays
  feed(dec, a.slice(190, 191));
  assert.deepEqual(partsOf(dec), [[3, 125]]);
  // a new packet, begun now, ranks last among its equals: the ones begun before it give way
  feed(dec, a.slice(0, 190));
  feed(dec, c.slice(0, 1));
  assert.deepEqual(partsOf(dec), [[9, 190], [40000, 1]]);
  assert.equal(dec.reassembly.held, 191 * 52);
});
