// The live view's page: a session client of the server's StreamServer (the JavaScript client's
// StreamClient: it decodes the datagrams, and its replies, the hello request and the acks, go
// back over the WebSocket), drawing with the client's Interpolator a playout delay behind the
// newest view, at the screen's frame rate. Served by quantcodec.tools.liveview
// (quantcodec demo --serve) with quantcodec.mjs beside it.
//
// The errors shown are this page's own: the server decodes the datagrams it sends this page beside
// it and measures each view against its floats of that view's tick (quantcodec/tools/liveview.py);
// the worst of the last second is shown. The connection comes back by itself after a server
// restart (retries 0.5 s, doubling to 5 s), with the same StreamClient: the new server's hello is
// newer and is adopted (SPEC section 8).
//
// ?report=N: send the runner line of each of the first N decoded snapshots back to the server
// ({"type": "report", "line": ...}), which compares them with what it sent (tests/test_liveview.py).
import { Schema, StreamClient, Interpolator, DecodeError } from './quantcodec.mjs';

const params = new URLSearchParams(location.search);
const reportLeft = { n: Math.max(0, Number(params.get('report') || 0)) };
// An image whose request the server holds open until the reports are in: the page's load event
// waits for it, and a headless browser's --screenshot waits for the load event.
if (reportLeft.n > 0) {
  const hold = new Image(1, 1);
  hold.alt = '';
  hold.style.display = 'none';
  hold.src = `/wait?n=${reportLeft.n}`;
  document.body.appendChild(hold);
}
const canvas = document.getElementById('world');
const ctx = canvas.getContext('2d');
const $ = (id) => document.getElementById(id);

let schema = null, client = null, buffer = null, setup = null, streamId = null;
let decoded = 0, refused = 0;
let bytesSinceSnapshot = 0;
const refusals = {};
const windowMs = 1000;
const history = [];                   // {t, n, raw, quantized, delta} per decoded snapshot
const errors = [];                    // {t, pos, rot, shown, world} per tick message: this page's view
let link = null;                      // the last tick's StreamServer.link of this page (srtt, delivered)
let dropped = 0;                      // ticks the server did not send this page (it read too slowly)
// Until the first acks reach the server, every packet goes in full with a hello beside it: the
// delta row would show delta costing more than full snapshots. It says "warming up" until the
// first packet with a baseline, and its window starts there.
let firstDelta = false;
let view = 24;                        // half-width of the drawn square, metres (fitted to the bodies)

// the connection, opened again after it closes (a server restart): 0.5 s, doubling up to 5 s
const RETRY_FIRST_MS = 500, RETRY_MAX_MS = 5000;
let ws = null, retryMs = RETRY_FIRST_MS, budget = null;
function connect() {
  const sock = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
  sock.binaryType = 'arraybuffer';
  ws = sock;
  sock.onopen = () => { $('status').textContent = 'connected, waiting for the hello'; };
  sock.onclose = () => {
    if (ws !== sock) return;
    $('status').textContent = `disconnected: trying again in ${(retryMs / 1000).toFixed(1)} s`;
    setTimeout(connect, retryMs);
    retryMs = Math.min(RETRY_MAX_MS, retryMs * 2);
  };
  sock.onmessage = (ev) => {
    if (ws !== sock) return;
    if (typeof ev.data === 'string') return onText(JSON.parse(ev.data));
    onDatagram(new Uint8Array(ev.data));
  };
}
connect();
function sendBudget() {
  if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify({ type: 'budget', bytes: budget }));
}
// the budget control: 0 is none; the server refuses a budget below its hello, so the least is 150
$('budget').addEventListener('input', () => {
  const v = Number($('budget').value);
  budget = v === 0 ? null : Math.max(150, v);
  $('budget_v').textContent = budget === null ? 'none' : `${budget} bytes`;
  sendBudget();
});

function onText(msg) {
  if (msg.type === 'setup') {
    retryMs = RETRY_FIRST_MS;                         // (connected: the next retry starts short again)
    const same = setup !== null && setup.schema === msg.schema;
    setup = msg;
    if (!same) {                                      // the first connection, or another schema
      schema = Schema.fromJSON(msg.schema);
      client = new StreamClient(schema);
      buffer = newBuffer();
    }
    // after a reconnect the same client goes on: the server connects the page when it opens,
    // and its hello (a restarted server's is newer) is adopted when it comes; whatever reply is
    // due goes now, and the frames' calls of reply() send keep-alives while nothing arrives
    sendReply();                                     // a hello request (connect me), or an ack
    if (budget !== null) sendBudget();               // (a new connection starts with none)
  } else if (msg.type === 'tick') {
    if (!firstDelta && msg.baseline !== null && msg.baseline !== undefined) {
      firstDelta = true;
      history.length = 0;                             // the window starts at the first delta
    }
    if (msg.pos_err !== null && msg.pos_err !== undefined) {
      const now = performance.now();
      errors.push({ t: now, pos: msg.pos_err, rot: msg.rot_err, shown: msg.shown, world: msg.entities });
      while (errors.length && errors[0].t < now - windowMs) errors.shift();
    }
    if (msg.link) link = msg.link;                    // StreamServer.link: round trip and delivery
    dropped = msg.dropped_ticks || 0;
  }
}

/** Bits of one record as the full quantized stream sends it (a NearlyZero at rest: its flag). */
function recordBits(snap, i) {
  let bits = 0;
  const slots = schema.slots;
  for (let s = 0; s < slots.length; s++) {
    bits += slots[s].bits;
    if (slots[s].cls === 'flag' && snap.code(i, s) === 0) s += slots[s].span;
  }
  return bits;
}

// the playout delay, in ticks: 50 ms of jitter at the tick rate, at least 2 ticks
const MAX_EXTRAPOLATION = 2;          // ticks the buffer extrapolates past its newest view, then holds
const delayTicks = () => Math.max(2, Math.ceil(setup.hz * 0.05));
function newBuffer() { return new Interpolator(schema, { capacity: 64, maxExtrapolation: MAX_EXTRAPOLATION }); }
function sendReply() {
  if (ws.readyState !== WebSocket.OPEN) return;      // (kept due: said on the next connection)
  const reply = client.reply();                      // an ack or a hello request, or null
  if (reply !== null) ws.send(reply);
}

function onDatagram(d) {
  if (!client) return;
  bytesSinceSnapshot += d.length;
  let snap = null;
  try {
    snap = client.receive(d);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    refused++;
    refusals[e.kind] = (refusals[e.kind] || 0) + 1;
  }
  sendReply();                                       // what the session says to send back, if anything
  if (snap === null) return;                         // a hello, a fragment, a refusal
  const sid = client.hello ? client.hello.streamId : null;
  if (sid !== streamId) { streamId = sid; buffer = newBuffer(); renderTick = null; }   // a new stream: new ticks
  buffer.push(snap);
  decoded++;
  const n = snap.count;
  let qbits = 0;
  for (let i = 0; i < n; i++) qbits += recordBits(snap, i);
  history.push({ t: performance.now(), n, raw: n * (setup.raw_floats * 4), quantized: qbits / 8, delta: bytesSinceSnapshot });
  bytesSinceSnapshot = 0;
  const now = performance.now();
  while (history.length && history[0].t < now - windowMs) history.shift();
  showStats(snap);
  if (reportLeft.n > 0) {                            // (after drawing: the screenshot shows it)
    frame(performance.now());
    reportLeft.n--;
    ws.send(JSON.stringify({ type: 'report', line: snap.toJSONLine() }));
  }
}

function showStats(snap) {
  let n = 0, raw = 0, q = 0, delta = 0;
  for (const h of history) { n += h.n; raw += h.raw; q += h.quantized; delta += h.delta; }
  const seconds = history.length / setup.hz;          // the snapshots of the last second, at the tick rate
  for (const [id, bytes] of [['raw', raw], ['quantized', q], ['delta', delta]]) {
    const cells = $(id).children;
    if (id === 'delta' && !firstDelta) {
      cells[1].textContent = 'warming up';            // no ack has reached the server yet
      cells[2].textContent = '-';
      continue;
    }
    cells[1].textContent = n ? (bytes / n).toFixed(2) : '-';
    cells[2].textContent = seconds > 0 ? ((bytes * 8) / 1000 / seconds).toFixed(1) : '-';
  }
  let worstPos = null, worstRot = null;
  for (const e of errors) { worstPos = Math.max(worstPos ?? 0, e.pos); worstRot = Math.max(worstRot ?? 0, e.rot); }
  $('pos_err').textContent = worstPos === null ? '-' : formatMetres(worstPos);
  $('rot_err').textContent = worstRot === null ? '-' : `${worstRot.toFixed(worstRot < 10 ? 3 : 1)} deg`;
  const moving = countMoving(snap);
  const world = errors.length ? errors[errors.length - 1].world : setup.entities;
  $('entities').textContent = `${snap.count} of ${world} / ${moving}`;
  const ref = Object.entries(refusals).map(([k, v]) => `${k} ${v}`).join(', ');
  $('counts').textContent = `${decoded} / ${refused}${ref ? ` (${ref})` : ''}`;
  showInterp();
  $('link').textContent = (link && link.srtt !== null
    ? `round trip ${link.srtt.toFixed(1)} ticks, ${link.delivered === null ? '-' : Math.round(link.delivered * 100) + '%'} delivered`
    : '-') + (dropped ? `, ${dropped} ticks not sent (page too slow)` : '');
  const dec = client.decoder;
  $('status').textContent = `stream ${client.hello ? client.hello.streamId.toString(16).padStart(16, '0') : '?'}, latest ${client.latest}, history ${dec.history}, drawn ${delayTicks()} ticks behind`;
}

function formatMetres(m) {
  return m < 1 ? `${(m * 1000).toFixed(2)} mm` : `${m.toFixed(2)} m`;
}

/** The interpolation buffer's statistics: every frame (they move during a stall too). */
function showInterp() {
  const st = buffer.stats;
  const text = `${st.late} / ${st.extrapolated} / ${st.dropped}`;
  if ($('interp').textContent !== text) $('interp').textContent = text;
}

let velFlagSlot = -1;
function countMoving(snap) {
  if (velFlagSlot < 0) velFlagSlot = schema.slots.findIndex((s) => s.cls === 'flag');
  if (velFlagSlot < 0) return snap.count;
  let m = 0;
  for (let i = 0; i < snap.count; i++) if (snap.code(i, velFlagSlot) === 1) m++;
  return m;
}

/** The body's local x axis rotated by quaternion (x, y, z, w), projected on the ground (x, z). */
function heading(q) {
  const [x, y, z, w] = q;
  return [1 - 2 * (y * y + z * z), 2 * (x * z - w * y)];
}

/**
 * The render time of the next frame, in ticks: `t` (the last one, null at the start) advanced by
 * the frame time `dtMs` at `hz` ticks a second, held at `newest + maxExtrapolation` while no view
 * comes (the buffer extrapolates that far and then holds: the bodies stand still during a
 * stall), and set to `newest - delay` at the start or when it has fallen more than two delays
 * behind (clients/js/README.md). It never goes back while `newest` does not.
 */
export function nextRenderTick(t, newest, delay, dtMs, hz, maxExtrapolation) {
  if (t === null || t < newest - 2 * delay) return newest - delay;
  return Math.max(t, Math.min(t + Math.max(0, dtMs) * hz / 1000, newest + maxExtrapolation));
}

// the render time, in ticks (nextRenderTick): a playout delay behind the newest view
let renderTick = null, lastFrame = null;
function frame(now) {
  if (buffer === null || buffer.newest === null) { lastFrame = now; return; }
  const dt = lastFrame === null ? 0 : now - lastFrame;
  renderTick = nextRenderTick(renderTick, buffer.newest, delayTicks(), dt, setup.hz, MAX_EXTRAPOLATION);
  lastFrame = now;
  draw(buffer.sample(renderTick));
  showInterp();
}
function loop(now) {
  frame(now);
  if (client !== null && ws !== null) sendReply();   // once a frame: keep-alives (wire-format 18)
  requestAnimationFrame(loop);
}
requestAnimationFrame(loop);

function draw(s) {
  const W = canvas.width, H = canvas.height;
  const pos = s.columns.position, rot = s.columns.rotation, vel = s.columns.velocity;
  const bodies = [];
  let far = 0;
  for (let i = 0; i < s.count; i++) {
    const p = pos.subarray(3 * i, 3 * i + 3), q = rot.subarray(4 * i, 4 * i + 4);
    const moving = vel === undefined || vel[3 * i] !== 0 || vel[3 * i + 1] !== 0 || vel[3 * i + 2] !== 0;
    bodies.push([p, q, moving]);
    far = Math.max(far, Math.abs(p[0]), Math.abs(p[2]));
  }
  // fit the view to the bodies: grow at once, shrink slowly
  const want = Math.min(64, Math.max(12, far + 2));
  view = want > view ? want : view + (want - view) * 0.02;
  const scale = Math.min(W, H) / (2 * view);
  ctx.fillStyle = '#1b2229';
  ctx.fillRect(0, 0, W, H);
  ctx.strokeStyle = '#26313b';
  ctx.lineWidth = 1;
  for (let g = -64; g <= 64; g += 8) {
    const a = W / 2 + g * scale, b = H / 2 + g * scale;
    ctx.beginPath(); ctx.moveTo(a, 0); ctx.lineTo(a, H); ctx.stroke();
    ctx.beginPath(); ctx.moveTo(0, b); ctx.lineTo(W, b); ctx.stroke();
  }
  const r = Math.max(1.5, 0.5 * scale);
  bodies.sort((a, b) => a[0][1] - b[0][1]);           // lower first: higher bodies drawn on top
  for (const [p, q, moving] of bodies) {
    const cx = W / 2 + p[0] * scale, cy = H / 2 + p[2] * scale;
    const h = Math.max(0, Math.min(1, p[1] / 8));
    ctx.fillStyle = moving ? `hsl(${30 + 30 * h}, 90%, ${45 + 25 * h}%)` : '#7d8995';
    ctx.beginPath(); ctx.arc(cx, cy, r, 0, 2 * Math.PI); ctx.fill();
    const [hx, hz] = heading(q);
    ctx.strokeStyle = '#101418';
    ctx.beginPath(); ctx.moveTo(cx, cy); ctx.lineTo(cx + hx * r, cy + hz * r); ctx.stroke();
  }
}
