// The README's first example, run as written against the kit's streams: a fake WebSocket delivers
// a stream's datagrams at 20 Hz, fake animation frames come at 60 Hz. Then frames with nothing
// arriving (the keep-alives of wire-format section 18), and the kit's restart stream (new streams
// adopted: the buffer is reset, none of the new streams' views is dropped).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT, HERE, readBytes } from '../support/helpers.mjs';

const readme = fs.readFileSync(path.join(HERE, '..', 'README.md'), 'utf8');
const block = readme.split('## A whole client')[1].split('```js\n')[1].split('```\n')[0];
const RESET = 'if (client.streamId !== stream) { stream = client.streamId; buffer.reset(); t = null; }';

/** Runs the README's block (or `body`, an edit of it) with fakes; returns what it did. */
async function runExample(body = null) {
  const lines = block.trim().split('\n');
  assert.match(lines[0], /^import \{ Schema, StreamClient, Interpolator, DecodeError \} from 'quantcodec';$/);
  if (body === null) body = lines.slice(1).join('\n');
  const AsyncFunction = (async () => {}).constructor;
  const out = { sent: [], drawn: [], socket: null, frame: null, clients: [], buffers: [], samples: [], times: [] };
  class FakeSocket {
    static OPEN = 1;
    constructor(url) { this.url = url; this.readyState = 0; out.socket = this; }
    send(d) { assert.equal(this.readyState, FakeSocket.OPEN, 'sent before the socket is open'); assert.ok(d instanceof Uint8Array); out.sent.push(d); }
  }
  class SpyClient extends qc.StreamClient {
    constructor(...a) { super(...a); out.clients.push(this); }
  }
  class SpyInterpolator extends qc.Interpolator {
    constructor(...a) { super(...a); this.resets = 0; this.kept = []; out.buffers.push(this); }
    reset() { this.resets++; return super.reset(); }
    push(v) { const k = super.push(v); this.kept.push([v.seq, k]); return k; }
    sample(t) { const s = super.sample(t); out.samples.push(s.a); out.times.push(t); return s; }
  }
  const fetch = async (url) => ({ text: async () => fs.readFileSync(path.join(KIT, 'schemas', 'pose.json'), 'utf8') });
  const raf = (cb) => { out.frame = cb; };
  const drawBody = (id, pos, rot) => { out.drawn.push([id, Array.from(pos), Array.from(rot)]); };
  const run = new AsyncFunction('Schema', 'StreamClient', 'Interpolator', 'DecodeError', 'fetch', 'WebSocket', 'requestAnimationFrame', 'drawBody', body);
  await run(qc.Schema, SpyClient, SpyInterpolator, qc.DecodeError, fetch, FakeSocket, raf, drawBody);
  assert.ok(out.socket && out.frame && out.clients.length === 1 && out.buffers.length === 1);
  let now = 0;
  out.tick = () => { now += 1000 / 60; out.frame(now); };
  out.tick();                                                  // a frame before the socket is open: nothing sent
  assert.equal(out.sent.length, 0);
  out.socket.readyState = FakeSocket.OPEN;
  out.socket.onopen();
  assert.equal(out.sent.length, 1);
  assert.equal(out.sent[0][0], 0x48);                          // the hello request
  out.play = (name, pauseAt = -1, pauseFrames = 0) => {
    const all = qc.splitDatagrams(readBytes(path.join(KIT, 'streams', `${name}.bin`)));
    all.forEach((d, i) => {
      if (i === pauseAt) for (let f = 0; f < pauseFrames; f++) out.tick();   // the server paused
      out.socket.onmessage({ data: d.slice().buffer });
      for (let f = 0; f < 3; f++) out.tick();
    });
  };
  return out;
}

test('README: the first example (connect, receive, reply, interpolate, draw) runs; once a frame it sends keep-alives', async () => {
  assert.ok(block.includes(RESET), 'the example resets the buffer on a new stream');
  const ex = await runExample();
  ex.play('pose_clean');
  const { sent, drawn } = ex;
  assert.ok(sent.filter((r) => r[0] === 0x41).length > 10, 'acks sent');
  assert.ok(drawn.length > 100, `${drawn.length} bodies drawn`);
  for (const [, p, q] of drawn) {
    assert.equal(p.length, 3); assert.equal(q.length, 4);
    assert.ok(Math.abs(Math.hypot(...q) - 1) < 1e-9);
  }
  // nothing arrives any more (the server went away): an ack every 32nd frame, of the latest
  const at = [];
  for (let f = 0; f < 100; f++) {
    const n = sent.length;
    ex.tick();
    if (sent.length > n) at.push(f);
  }
  assert.ok(at.length >= 3, `keep-alives at frames ${at}`);
  for (let i = 1; i < at.length; i++) assert.equal(at[i] - at[i - 1], 32, `keep-alives at frames ${at}`);
  const last = sent[sent.length - 1];
  assert.equal(last[0], 0x41);
  assert.equal(last[10] | (last[11] << 8), ex.clients[0].latest);
});

test('README: the first example resets its buffer when the client adopts a new stream (a restarted server)', async () => {
  const ex = await runExample();
  ex.play('restart');
  const [client] = ex.clients, [buffer] = ex.buffers;
  assert.equal(client.streamId, 0xaaaan);
  assert.equal(buffer.resets, 3, 'once a stream: 8888, then 9999 and aaaa (servers restarted)');
  assert.ok(buffer.kept.length > 50);
  assert.deepEqual(buffer.kept.filter(([, k]) => !k), [], 'no view of a new stream dropped');
  assert.equal(buffer.newest, client.latest);
  assert.ok(buffer.oldest >= 60, 'only the newest stream\'s views held');
  assert.ok(ex.samples[ex.samples.length - 1] >= 70, 'the picture follows the new stream');
  // without the reset, the second stream's ticks (0 ..., the same as the first's) are dropped
  const body = block.trim().split('\n').slice(1).join('\n').replace(RESET, '');
  const without = await runExample(body);
  without.play('restart');
  assert.ok(without.buffers[0].kept.filter(([, k]) => !k).length > 10, 'the views a reset keeps');
});

test('README: the render time never steps back, and comes back to the delay after the server pauses', async () => {
  // a probe paused its server 2 s (SIGSTOP) and let it go on: the rule the README gave before
  // (jump only when behind) left the page about 116 ticks ahead of the newest view for good
  const ex = await runExample();
  const n = qc.splitDatagrams(readBytes(path.join(KIT, 'streams', 'pose_clean.bin'))).length;
  ex.play('pose_clean', Math.floor(n / 3), 120);          // 2 s of frames with nothing arriving
  const ts = ex.times;
  for (let i = 1; i < ts.length; i++) assert.ok(ts[i] >= ts[i - 1], `the render time stepped back at frame ${i}: ${ts[i - 1]} -> ${ts[i]}`);
  const [buffer] = ex.buffers;
  const gap = ts[ts.length - 1] - (buffer.newest - 2);     // DELAY = 2 ticks behind the newest
  assert.ok(Math.abs(gap) < 1.5, `the render time ends ${gap} ticks off its delay`);
  assert.ok(Math.max(...ts.map((t, i) => t - ts[0])) > 0);
});
