// The README's first example, run as written against the kit's pose_clean stream: a fake
// WebSocket delivers the stream's datagrams at 20 Hz, fake animation frames come at 60 Hz.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT, HERE, readBytes } from '../support/helpers.mjs';

const readme = fs.readFileSync(path.join(HERE, '..', 'README.md'), 'utf8');
const block = readme.split('## A whole client')[1].split('```js\n')[1].split('```\n')[0];

test('README: the first example (connect, receive, reply, interpolate, draw) runs', async () => {
  const lines = block.trim().split('\n');
  assert.match(lines[0], /^import \{ Schema, StreamClient, Interpolator, DecodeError \} from 'quantcodec';$/);
  const body = lines.slice(1).join('\n');
  const AsyncFunction = (async () => {}).constructor;
  const sent = [], drawn = [];
  let socket = null, frame = null;
  class FakeSocket {
    constructor(url) { this.url = url; socket = this; }
    send(d) { assert.ok(d instanceof Uint8Array); sent.push(d); }
  }
  const fetch = async (url) => ({ text: async () => fs.readFileSync(path.join(KIT, 'schemas', 'pose.json'), 'utf8') });
  const raf = (cb) => { frame = cb; };
  const drawBody = (id, pos, rot) => { drawn.push([id, Array.from(pos), Array.from(rot)]); };
  const run = new AsyncFunction('Schema', 'StreamClient', 'Interpolator', 'DecodeError', 'fetch', 'WebSocket', 'requestAnimationFrame', 'drawBody', body);
  await run(qc.Schema, qc.StreamClient, qc.Interpolator, qc.DecodeError, fetch, FakeSocket, raf, drawBody);
  assert.ok(socket && frame);
  socket.onopen();
  assert.equal(sent.length, 1);
  assert.equal(sent[0][0], 0x48);                              // the hello request
  let now = 0;
  for (const d of qc.splitDatagrams(readBytes(path.join(KIT, 'streams', 'pose_clean.bin')))) {
    socket.onmessage({ data: d.slice().buffer });
    for (let f = 0; f < 3; f++) { now += 1000 / 60; frame(now); }
  }
  assert.ok(sent.filter((r) => r[0] === 0x41).length > 10, 'acks sent');
  assert.ok(drawn.length > 100, `${drawn.length} bodies drawn`);
  for (const [, p, q] of drawn) {
    assert.equal(p.length, 3); assert.equal(q.length, 4);
    assert.ok(Math.abs(Math.hypot(...q) - 1) < 1e-9);
  }
});
