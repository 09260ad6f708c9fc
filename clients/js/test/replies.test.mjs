// The session client (SPEC section 8, docs/wire-format.md section 18): StreamClient.receive and
// reply(): the ack's and the hello request's bytes, checked with the framing of support/frame.mjs
// (written apart from the module's), when a reply is due, rseq and nonce, the acks bitfield.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import * as qc from '../quantcodec.mjs';
import { KIT, HERE, readJSON, readBytes, hexBytes, toHex } from '../support/helpers.mjs';
import { helloFor, framer, fullPacket, unchangedDelta, checker, resealHello, events, frameEvents, u32 } from '../support/frame.mjs';

const present = fs.existsSync(path.join(KIT, 'manifest.json'));
const manifest = present ? readJSON(path.join(KIT, 'manifest.json')) : { streams: [] };
const BOOL = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
const KEY = hexBytes('a0a1a2a3a4a5a6a7a8a9aaabacadaeaf');
const u16 = (b, o) => b[o] | (b[o + 1] << 8);

/** An ack or hello request taken apart, its check verified with the checks of support/frame.mjs. */
function parseReply(r, { K = null, key = null } = {}) {
  const T = key ? 8 : 4;
  if (r[0] === 0x41) {
    assert.equal(r.length, 16 + T, 'an ack is 16 + T bytes');
    assert.ok(checker('R', { K, key }).holds(r), 'the ack check (seed_R / kR)');
    return { type: 'ack', flags: r[1], nonce: u32(r, 2), rseq: u32(r, 6), latest: u16(r, 10), acks: u32(r, 12) };
  }
  assert.equal(r[0], 0x48, `reply type 0x${r[0].toString(16)}`);
  assert.equal(r.length, 26 + T, 'a hello request is 26 + T bytes');
  assert.ok(checker('Q', { key }).holds(r), 'the hello request check (seed_Q / kQ)');
  return { type: 'request', flags: r[1], nonce: u32(r, 2), rseq: u32(r, 6), fingerprint: new TextDecoder().decode(r.subarray(10, 26)) };
}
const Kof = (h) => qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId);
const kindOf = (f) => { try { f(); } catch (e) { assert.ok(e instanceof qc.DecodeError, String(e)); return e.kind; } return null; };

for (const key of [null, KEY]) {
  const label = key ? 'keyed' : 'unkeyed';
  test(`replies (${label}): the hello request's bytes, then the ack's, with rseq counting every reply made`, () => {
    const c = new qc.StreamClient(BOOL, { nonce: 0x01020304, key });
    // a new client's first reply, before anything arrives: a hello request (it asks to be connected)
    const first = c.reply();
    assert.equal(toHex(first.subarray(0, 26)), '4800' + '04030201' + '00000000' + toHex(new TextEncoder().encode(BOOL.fingerprint)));
    assert.deepEqual(parseReply(first, { key }), { type: 'request', flags: 0, nonce: 0x01020304, rseq: 0, fingerprint: BOOL.fingerprint });
    assert.equal(c.reply(), null, 'once');
    const hello = helloFor(BOOL, { history: 4, maxDatagram: 300 }, key);
    const fr = framer(qc.parseHello(hello, { key }), key);
    // a packet before the hello: no-hello, a request is due again
    assert.equal(kindOf(() => c.receive(fr.whole(fullPacket(1, 2, [1])))), 'no-hello');
    const r0 = c.reply();
    assert.equal(toHex(r0.subarray(0, 10)), '4800' + '04030201' + '01000000');
    assert.deepEqual(parseReply(r0, { key }), { type: 'request', flags: 0, nonce: 0x01020304, rseq: 1, fingerprint: BOOL.fingerprint });
    assert.equal(c.reply(), null, 'one reply per datagram that made one due');
    // the hello: adopted, an ack without latest
    assert.equal(c.receive(hello), null);
    const K = Kof(c.hello);
    const r1 = c.reply();
    assert.equal(toHex(r1.subarray(0, 16)), '4100' + '04030201' + '02000000' + '0000' + '00000000');
    assert.deepEqual(parseReply(r1, { K, key }), { type: 'ack', flags: 0, nonce: 0x01020304, rseq: 2, latest: 0, acks: 0 });
    // the same hello again: ignored, nothing due
    assert.equal(c.receive(hello), null);
    assert.equal(c.reply(), null);
    // snapshots 1, 2, 3, then 5: latest 5, possible baselines (less than 4 older) 3 and 2 (4 was never sent)
    for (const s of [1, 2, 3, 5]) assert.equal(c.receive(fr.whole(fullPacket(s, 2, [1]))).seq, s);
    const r2 = c.reply();
    assert.deepEqual(parseReply(r2, { K, key }), { type: 'ack', flags: 1, nonce: 0x01020304, rseq: 3, latest: 5, acks: 0b110 });
    assert.equal(toHex(r2.subarray(0, 16)), '4101' + '04030201' + '03000000' + '0500' + '06000000');
    // the tag covers bytes 0..15: a reply of another key, or of no key, does not verify
    assert.ok(!checker('R', { K, key: key ? null : KEY }).holds(r2));
  });
}

test('replies: a reply is due at the start, after a view, an adopted hello, a refusal of kind no-hello or baseline; after nothing else', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 7, maxBytes: (2 * 4 - 1) * 256 + 256 * 300 });    // the hello's need, exactly
  assert.equal(c.due, true);
  assert.equal(c.reply()[0], 0x48, 'the first reply: a hello request');
  assert.equal(c.due, false);
  const hello = helloFor(BOOL, { history: 4, maxDatagram: 300, streamId: 5n, started: 10n });
  const h = qc.parseHello(hello);
  const fr = framer(h);
  const cases = [
    ['junk before the hello (no-hello)', () => c.receive(Uint8Array.of(1, 2, 3, 4, 5, 6)), 'no-hello', true],
    ['another schema\'s hello', () => c.receive(helloFor(qc.Schema.fromJSON('{"name":"C","fields":[{"name":"x","codec":{"kind":"UInt","bits":3}}]}'))), 'schema', false],
    ['a hello that does not fit maxBytes', () => c.receive(helloFor(BOOL, { history: 5, maxDatagram: 300 })), 'limits', false],
    ['the hello', () => c.receive(hello), null, true],
    ['the hello again', () => c.receive(hello), null, false],
    ['a damaged datagram', () => c.receive(Uint8Array.of(1, 2, 3, 4, 5, 6)), 'check', false],
    ['a packet against a baseline not held', () => c.receive(fr.whole(unchangedDelta(9, 1, 0))), 'baseline', true],
    ['a malformed packet', () => c.receive(fr.whole(Uint8Array.of(1))), 'malformed', false],
    ['a fragment that completes nothing', () => c.receive(fr.fragment(3, 0, 1, 0, new Uint8Array(300 - 12))), null, false],
    ['an inconsistent fragment', () => c.receive(fr.fragment(3, 5, 1, 0, Uint8Array.of(1))), 'fragment', false],
    ['a snapshot', () => c.receive(fr.whole(fullPacket(1, 2, [1]))), null, true],
    ['an older stream\'s hello, once the stream has decoded a packet', () => c.receive(helloFor(BOOL, { history: 4, maxDatagram: 300, streamId: 6n, started: 9n })), 'hello', false],
    ['a packet past maxBytes', () => c.receive(fr.whole(fullPacket(2, 100, [1]))), 'limits', false],
    ['a duplicate of the snapshot (a view again)', () => c.receive(fr.whole(fullPacket(1, 2, [1]))), null, true],
  ];
  let rseq = 1;
  for (const [what, f, kind, due] of cases) {
    assert.equal(kindOf(f), kind, what);
    const r = c.reply();
    assert.equal(r !== null, due, `${what}: a reply ${due ? 'is' : 'is not'} due`);
    if (r) {
      assert.equal(u32(r, 6), rseq++, `${what}: rseq`);
      assert.equal(r[0], c.hello ? 0x41 : 0x48, `${what}: ${c.hello ? 'an ack' : 'a hello request'}`);
    }
    assert.equal(c.reply(), null, `${what}: once`);
  }
  assert.equal(c.rseq, rseq);
});

test('replies: a new client that receives nothing sends one hello request, then nothing', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 11 });
  const r = parseReply(c.reply());
  assert.deepEqual([r.type, r.rseq, r.nonce], ['request', 0, 11]);
  for (let i = 0; i < 3; i++) assert.equal(c.reply(), null);
});

test('replies: a reply due from several datagrams is one reply; a refusal keeps it due', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 1 });
  c.reply();                                   // the first: a hello request
  const hello = helloFor(BOOL);
  const fr = framer(qc.parseHello(hello));
  c.receive(hello);
  c.receive(fr.whole(fullPacket(1, 1, [1])));
  assert.equal(kindOf(() => c.receive(Uint8Array.of(9, 9, 9, 9, 9))), 'check');
  c.receive(fr.whole(fullPacket(2, 1, [1])));
  const r = parseReply(c.reply(), { K: Kof(c.hello) });
  assert.deepEqual([r.rseq, r.latest, r.acks], [1, 2, 1]);
  assert.equal(c.reply(), null);
});

test('receive: a datagram in any byte form decodes alike; what is not bytes is a TypeError naming it, and changes nothing', () => {
  const hello = helloFor(BOOL);
  const fr = framer(qc.parseHello(hello));
  const packet = fr.whole(fullPacket(1, 1, [1]));
  const forms = {
    Uint8Array: (b) => b,
    ArrayBuffer: (b) => b.slice().buffer,
    'a view into a larger buffer': (b) => { const big = new Uint8Array(b.length + 7); big.set(b, 3); return new DataView(big.buffer, 3, b.length); },
    'an array of byte values': (b) => Array.from(b),
  };
  for (const [name, form] of Object.entries(forms)) {
    const c = new qc.StreamClient(BOOL, { nonce: 5 });
    assert.equal(c.receive(form(hello)), null, `${name}: the hello`);
    assert.equal(c.receive(form(packet)).seq, 1, `${name}: the packet`);
  }
  const c = new qc.StreamClient(BOOL, { nonce: 5 });
  c.reply();
  c.receive(hello);
  c.reply();                                   // (the hello adopted made one due)
  const bad = [
    ['a string', 'abc', /got string$/],
    ['null', null, /got null$/],
    ['undefined', undefined, /got undefined$/],
    ['a number', 7, /got number$/],
    ['the list of datagrams', [hello, packet], /got an array whose item 0 is a datagram: it takes one datagram at a time/],
    ['an array of non-bytes', [1, 256], /whose item 1 is no byte value \(0\.\.255\)/],
    ['a plain object', { a: 1 }, /got Object$/],
  ];
  if (typeof Blob !== 'undefined') bad.push(['a Blob', new Blob([hello]), /got Blob: a browser's WebSocket hands over Blobs unless ws\.binaryType = 'arraybuffer'/]);
  for (const [name, d, re] of bad) {
    assert.throws(() => c.receive(d), (e) => e instanceof TypeError && /^SnapshotDecoder\.decode: expected one datagram as bytes/.test(e.message) && re.test(e.message), name);
    assert.equal(c.reply(), null, `${name}: no reply due`);
  }
  assert.equal(c.receive(packet).seq, 1);      // and the stream goes on
});

test('replies: rseq wraps mod 2**32; the nonce is random unless given, and checked', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 0xffffffff });
  c.reply();
  c.rseq = 0xffffffff;
  assert.equal(kindOf(() => c.receive(Uint8Array.of(0))), 'no-hello');
  assert.equal(u32(c.reply(), 6), 0xffffffff);
  assert.equal(kindOf(() => c.receive(Uint8Array.of(0))), 'no-hello');
  assert.equal(u32(c.reply(), 6), 0);
  assert.equal(c.reply(), null);
  const nonces = new Set(Array.from({ length: 8 }, () => new qc.StreamClient(BOOL).nonce));
  assert.ok(nonces.size >= 7, 'random nonces');
  for (const n of nonces) assert.ok(Number.isInteger(n) && n >= 0 && n <= 0xffffffff);
  for (const bad of [-1, 2 ** 32, 1.5, '7']) assert.throws(() => new qc.StreamClient(BOOL, { nonce: bad }), /nonce must be an integer in 0\.\.2\*\*32-1/);
});

test('replies: the acks bitfield holds the possible baselines of the 32 numbers before latest, and nothing else', () => {
  // history 40: 32 bits, all but the ones not held; numbers wrap 65535 -> 0
  const c = new qc.StreamClient(BOOL, { nonce: 3 });
  c.reply();
  const hello = helloFor(BOOL, { history: 40 });
  const fr = framer(qc.parseHello(hello));
  c.receive(hello);
  const sent = [];
  for (let s = 65500; s < 65536 + 20; s++) if (s % 3 !== 0 && s % 7 !== 0) sent.push(s & 0xffff);
  for (const s of sent) c.receive(fr.whole(fullPacket(s, 1, [s & 1])));
  const r = parseReply(c.reply(), { K: Kof(c.hello) });
  const latest = sent[sent.length - 1];
  let want = 0;
  for (let i = 0; i < 32; i++) if (sent.includes((latest - 1 - i) & 0xffff)) want |= 1 << i;
  assert.equal(r.latest, latest);
  assert.equal(r.acks, want >>> 0);
  assert.notEqual(r.acks, 0);
  // history 3: only 2 numbers before latest can be baselines, however many are held
  const d = new qc.StreamClient(BOOL, { nonce: 3 });
  const h3 = helloFor(BOOL, { history: 3 });
  const f3 = framer(qc.parseHello(h3));
  d.receive(h3);
  for (let s = 1; s <= 6; s++) d.receive(f3.whole(fullPacket(s, 1, [1])));
  assert.equal(d.decoder.held.size, 5, 'held: 2 * history - 1 numbers');
  assert.equal(parseReply(d.reply(), { K: Kof(d.hello) }).acks, 0b11);
});

test('replies: a newer stream starts the client over: its ack has no latest, under the new stream\'s check', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 3, key: KEY });
  c.reply();
  const a = helloFor(BOOL, { streamId: 1n, started: 1n }, KEY), b = helloFor(BOOL, { streamId: 2n, started: 2n }, KEY);
  c.receive(a);
  c.receive(framer(qc.parseHello(a, { key: KEY }), KEY).whole(fullPacket(1, 1, [1])));
  assert.equal(parseReply(c.reply(), { K: Kof(qc.parseHello(a, { key: KEY })), key: KEY }).latest, 1);
  c.receive(b);
  const r = c.reply();
  assert.deepEqual(parseReply(r, { K: Kof(qc.parseHello(b, { key: KEY })), key: KEY }).flags, 0);
  assert.ok(!checker('R', { K: Kof(qc.parseHello(a, { key: KEY })), key: KEY }).holds(r), 'not under the old stream');
});

for (const s of manifest.streams.filter((x) => ['pose_lossy', 'fragments', 'hostile', 'restart', 'all_kinds_nopred'].includes(x.name))) {
  test(`replies: the runner with --replies on ${s.name}: the lines of the kit plus a reply exactly where one is due`, () => {
    const schemaPath = path.join(KIT, s.schema), dataPath = path.join(KIT, s.datagrams);
    const want = fs.readFileSync(path.join(KIT, s.expected), 'utf8').split('\n').filter((l) => l.length);
    const out = execFileSync(path.join(HERE, '..', 'qc-decode'), ['--replies', '4000000000', schemaPath, dataPath], { encoding: 'utf8', maxBuffer: 1 << 28 }).split('\n').filter((l) => l.length);
    assert.equal(out.length, want.length);
    const ds = qc.splitDatagrams(readBytes(dataPath));
    const dec = new qc.SnapshotDecoder(qc.Schema.fromJSON(fs.readFileSync(schemaPath, 'utf8')));
    let rseq = 0, replies = 0;
    for (let i = 0; i < want.length; i++) {
      const m = /^(.*),"reply":(null|"([0-9a-f]*)")\}$/.exec(out[i]);
      assert.ok(m, `line ${i}: no "reply" key last`);
      const base = m[1] + '}';
      // strip a reply that is "expected" already, when the kit has them
      assert.equal(base.replace(/,"reply":(null|"[0-9a-f]*")\}$/, '}'), want[i].replace(/,"reply":(null|"[0-9a-f]*")\}$/, '}'), `line ${i}`);
      const stream = dec.hello;
      let kind = null, view = null;
      try { view = dec.decode(ds[i]); } catch (e) { kind = e.kind; }
      // (the first line's reply also carries the one due from the start)
      const due = i === 0 || view !== null || dec.hello !== stream || kind === 'no-hello' || kind === 'baseline';
      assert.equal(m[2] !== 'null', due, `line ${i}: ${out[i].slice(0, 50)}`);
      if (!due) continue;
      const r = parseReply(hexBytes(m[3]), { K: dec.hello ? Kof(dec.hello) : null });
      assert.equal(r.nonce, 4000000000);
      assert.equal(r.rseq, rseq++);
      if (dec.hello === null) { assert.equal(r.type, 'request'); continue; }
      assert.equal(r.type, 'ack');
      assert.equal(r.latest, dec.latest ?? 0);
      assert.equal(r.flags, dec.latest === null ? 0 : 1);
      const [, baselines] = dec.state();
      let acks = 0;
      for (const b of baselines) { const i2 = (dec.latest - 1 - b) & 0xffff; if (i2 < 32) acks |= 1 << i2; }
      assert.equal(r.acks, acks >>> 0);
      replies++;
    }
    assert.ok(replies > 0);
  });
}

test('the runner refuses bad options with a message naming them (exit 2), and --opt=value works', () => {
  const run = (args) => {
    try { execFileSync(path.join(HERE, '..', 'qc-decode'), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }); return [0, '']; } catch (e) { return [e.status, String(e.stderr)]; }
  };
  for (const [args, msg] of [
    [['--key', 'abc', 'a', 'b'], /--key must be 1 to 255 bytes in hex/],
    [['--key', 'zz', 'a', 'b'], /--key must be 1 to 255 bytes in hex/],
    [['--key', '00'.repeat(256), 'a', 'b'], /--key must be 1 to 255 bytes/],
    [['--max-bytes', '0', 'a', 'b'], /--max-bytes must be a positive decimal integer, got '0'/],
    [['--max-bytes', '-5', 'a', 'b'], /--max-bytes must be a positive/],
    [['--replies', '4294967296', 'a', 'b'], /--replies takes a nonce, a decimal integer in 0\.\.4294967295/],
    [['--replies'], /--replies needs a value/],
    [['--idle', '3', 'a', 'b'], /--idle counts calls of reply\(\): give --replies NONCE too/],
    [['--idle', '0', 'a', 'b'], /--idle counts calls of reply\(\): give --replies NONCE too/],
    [['a', 'b', '--idle=40'], /--idle counts calls of reply\(\): give --replies NONCE too/],
    [['--key', '00', '--idle', '1', 'a', 'b'], /--idle counts calls of reply\(\): give --replies NONCE too/],
    [['--replies', '1', '--idle', '1001', 'a', 'b'], /--idle takes a count of calls, a decimal integer in 0\.\.1000, got '1001'/],
    [['--idle', '-1', '--replies', '1', 'a', 'b'], /--idle takes a count of calls, a decimal integer in 0\.\.1000, got '-1'/],
    [['--replies', '1', '--idle', 'x', 'a', 'b'], /--idle takes a count of calls/],
    [['--replies', '1', '--idle', '4.0', 'a', 'b'], /--idle takes a count of calls/],
    [['--replies', '1', '--idle', '', 'a', 'b'], /--idle takes a count of calls/],
    [['--replies', '1', '--idle=', 'a', 'b'], /--idle takes a count of calls/],
    [['--replies', '1', '--idle'], /--idle needs a value/],
    [['--frobnicate', 'a', 'b'], /unknown option --frobnicate/],
    [['a'], /SCHEMA\.json and DATAGRAMS\.bin are required/],
    [['a', 'b', 'c'], /unexpected argument c/],
  ]) {
    const [status, err] = run(args);
    assert.equal(status, 2, args.join(' '));
    assert.match(err, msg, args.join(' '));
  }
  if (!present) return;
  const s = manifest.streams.find((x) => x.name === 'pose_clean');
  const a = execFileSync(path.join(HERE, '..', 'qc-decode'), ['--replies=12', '--max-bytes=400000', path.join(KIT, s.schema), path.join(KIT, s.datagrams)], { encoding: 'utf8' });
  const b = execFileSync(path.join(HERE, '..', 'qc-decode'), ['--replies', '12', '--max-bytes', '400000', path.join(KIT, s.schema), path.join(KIT, s.datagrams)], { encoding: 'utf8' });
  assert.equal(a, b);
  assert.match(a.split('\n')[0], /^\{"pending":true,"reply":"4100/);   // the hello adopted: an ack without latest
  // --idle before or after --replies, as --idle=N too; --idle 0 prints the lines without "idle"
  const run2 = (args) => execFileSync(path.join(HERE, '..', 'qc-decode'), [...args, path.join(KIT, s.schema), path.join(KIT, s.datagrams)], { encoding: 'utf8' });
  const idle = run2(['--idle', '33', '--replies', '12']);
  assert.equal(run2(['--replies=12', '--idle=33']), idle);
  assert.equal(run2(['--replies', '12', '--idle', '033']), idle);
  assert.match(idle.split('\n')[0], /^\{"pending":true,"reply":"4100[0-9a-f]*","idle":\[(null,){31}"4100[0-9a-f]*",null\]\}$/);
  assert.equal(run2(['--idle', '0', '--replies', '12']), run2(['--replies', '12']));
  assert.equal(run2(['--replies', '12', '--idle', '1000']).split('\n')[0].split(',').length, 1001 + 1);
});

// --idle N: after each datagram's reply, N calls of reply() with nothing arriving; a reply where
// one is due (after the datagram), else every 32nd call in a row that made none (a keep-alive),
// each checked against the decoder's state as above
for (const s of manifest.streams.filter((x) => ['keepalive_idle.replies', 'hostile.replies', 'restart.replies'].includes(x.name))) {
  for (const idle of [40, 5]) {
    test(`replies: the runner with --replies --idle ${idle} on ${s.name}: keep-alives every 32nd call in a row that made no reply`, () => {
      const schemaPath = path.join(KIT, s.schema), dataPath = path.join(KIT, s.datagrams);
      const out = execFileSync(path.join(HERE, '..', 'qc-decode'), ['--replies', '4000000000', '--idle', String(idle), schemaPath, dataPath], { encoding: 'utf8', maxBuffer: 1 << 28 }).split('\n').filter((l) => l.length);
      const ds = qc.splitDatagrams(readBytes(dataPath));
      assert.equal(out.length, ds.length);
      const dec = new qc.SnapshotDecoder(qc.Schema.fromJSON(fs.readFileSync(schemaPath, 'utf8')));
      let rseq = 0, quiet = 0, keepalives = 0;
      const check = (hex, due, where) => {
        assert.equal(hex !== null, due || quiet === 31, where);
        if (hex === null) { quiet++; return; }
        if (!due) keepalives++;
        quiet = 0;
        const r = parseReply(hexBytes(hex), { K: dec.hello ? Kof(dec.hello) : null });
        assert.equal(r.nonce, 4000000000, where);
        assert.equal(r.rseq, rseq++, where);
        assert.equal(r.type, dec.hello === null ? 'request' : 'ack', where);
        if (dec.hello === null) return;
        assert.equal(r.latest, dec.latest ?? 0, where);
        assert.equal(r.flags, dec.latest === null ? 0 : 1, where);
      };
      for (let i = 0; i < ds.length; i++) {
        const o = JSON.parse(out[i]);
        assert.deepEqual(Object.keys(o).slice(-2), ['reply', 'idle'], `line ${i}`);
        assert.equal(o.idle.length, idle, `line ${i}`);
        const stream = dec.hello;
        let kind = null, view = null;
        try { view = dec.decode(ds[i]); } catch (e) { kind = e.kind; }
        const due = i === 0 || view !== null || dec.hello !== stream || kind === 'no-hello' || kind === 'baseline';
        check(o.reply, due, `line ${i}: reply`);
        o.idle.forEach((r, k) => check(r, false, `line ${i}: idle call ${k}`));
      }
      if (idle >= 32) assert.ok(keepalives >= ds.length, `${keepalives} keep-alives`);
    });
  }
}

test('StreamClient.view: the newest view of the current stream; a late one does not replace it, a new stream clears it', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 5 });
  const a = helloFor(BOOL, { history: 8, streamId: 1n, started: 1n });
  const fr = framer(qc.parseHello(a));
  assert.equal(c.view, null);
  c.receive(a);
  assert.equal(c.view, null);
  assert.equal(c.heldBytes, 256 * 1200);
  assert.equal(c.maxBytes, qc.DEFAULT_MAX_BYTES);
  const v3 = c.receive(fr.whole(fullPacket(3, 1, [1])));
  assert.equal(c.view, v3);
  const v2 = c.receive(fr.whole(fullPacket(2, 2, [1])));         // late: returned, not the view
  assert.equal(v2.seq, 2);
  assert.equal(c.view, v3);
  const v4 = c.receive(fr.whole(fullPacket(4, 1, [0])));
  assert.equal(c.view, v4);
  assert.equal(c.heldBytes, 256 * 1200 + 3 * 256 + (1 + 2 + 1) * 16);
  c.receive(helloFor(BOOL, { history: 8, streamId: 2n, started: 2n }));   // a newer stream
  assert.equal(c.view, null);
  assert.equal(c.latest, null);
});

test('replies: a keep-alive every 32nd call of reply() while none is due; any reply starts the count again (section 18)', () => {
  // (tests/test_session.py test_reply_makes_a_keep_alive_every_32nd_call_while_none_is_due)
  const c = new qc.StreamClient(BOOL, { nonce: 7 });
  const got = Array.from({ length: 65 }, () => c.reply());      // nothing received
  const made = got.flatMap((r, i) => (r === null ? [] : [i]));
  assert.deepEqual(made, [0, 32, 64], 'the first is due (a hello request), then keep-alives');
  made.forEach((i, k) => assert.deepEqual(parseReply(got[i]), { type: 'request', flags: 0, nonce: 7, rseq: k, fingerprint: BOOL.fingerprint }));
  assert.equal(c.due, false, 'a keep-alive is never due');
  assert.throws(() => { c.due = true; }, TypeError, 'due stays read-only');
  assert.equal(c.streamId, null, 'no stream adopted yet');
  // a stream adopted, views received, a reply after each datagram (all due)
  const hello = helloFor(BOOL, { history: 8, maxDatagram: 300, streamId: 0xa11en, started: 5n });
  const fr = framer(qc.parseHello(hello));
  assert.equal(c.receive(hello), null);
  assert.equal(c.streamId, 0xa11en);
  assert.equal(parseReply(c.reply(), { K: Kof(c.hello) }).type, 'ack');
  for (const s of [1, 2, 3]) {
    assert.equal(c.receive(fr.whole(fullPacket(s, 2, [1]))).seq, s);
    assert.notEqual(c.reply(), null, `packet ${s}: due`);
  }
  const idle = Array.from({ length: 40 }, () => c.reply());    // nothing arrives: a keep-alive ack
  assert.deepEqual(idle.flatMap((r, i) => (r === null ? [] : [i])), [31]);
  assert.deepEqual(parseReply(idle[31], { K: Kof(c.hello) }), { type: 'ack', flags: 1, nonce: 7, rseq: 7, latest: 3, acks: 0b11 });
  // a due reply starts the count again: after it, 31 nulls, then a keep-alive
  for (let i = 0; i < 20; i++) assert.equal(c.reply(), null);
  assert.equal(c.receive(fr.whole(fullPacket(4, 2, [1]))).seq, 4);
  assert.equal(parseReply(c.reply(), { K: Kof(c.hello) }).latest, 4, 'due: and the count starts again');
  for (let i = 0; i < 31; i++) assert.equal(c.reply(), null, `call ${i} after the due reply`);
  assert.equal(parseReply(c.reply(), { K: Kof(c.hello) }).rseq, 9, 'the 32nd: a keep-alive');
  // junk makes no reply due, and does not reset the count either (it is the calls that count)
  for (let i = 0; i < 15; i++) assert.equal(c.reply(), null);
  for (let i = 0; i < 16; i++) {
    assert.equal(kindOf(() => c.receive(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8))), 'check');
    assert.equal(c.reply(), null);
  }
  assert.notEqual(c.reply(), null, 'the 32nd call, junk between');
});

test('replies: streamId is the adopted stream\'s id (a bigint), null before a hello, and changes with a newer stream (read-only)', () => {
  const c = new qc.StreamClient(BOOL, { nonce: 9 });
  assert.equal(c.streamId, null);
  const h1 = helloFor(BOOL, { history: 4, maxDatagram: 300, streamId: 0x1111n, started: 10n });
  const h2 = helloFor(BOOL, { history: 4, maxDatagram: 300, streamId: 0x2222n, started: 20n });
  c.receive(h1);
  assert.equal(c.streamId, 0x1111n);
  assert.equal(c.streamId, c.hello.streamId);
  c.receive(framer(qc.parseHello(h1)).whole(fullPacket(1, 1, [1])));
  c.receive(h2);                                                // a restarted server's newer stream
  assert.equal(c.streamId, 0x2222n);
  assert.throws(() => { c.streamId = 1n; }, TypeError);
});
