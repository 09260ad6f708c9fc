// Snapshot interpolation (docs/interpolation.md): the kit's vectors (conformance/interpolation/
// pose.json, made by the Python reference quantcodec/interpolation.py) replayed bit for bit, and
// unit tests of late, missing, reordered and duplicated views, angle wrap and q / -q.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { KIT, bitsToDouble, doubleToBits } from '../support/helpers.mjs';

/** A view as a decoder gives it, made from slot codes (a row per entity). */
function view(schema, seq, ids, rows) {
  const S = schema.nslots, W = schema.nwide;
  const codes = new Float64Array(ids.length * S), big = W ? new Array(ids.length * W) : null;
  rows.forEach((r, i) => r.forEach((c, s) => {
    const sl = schema.slots[s];
    if (sl.wide) big[i * W + sl.bigIndex] = BigInt(c); else codes[i * S + s] = Number(c);
  }));
  return new qc.Snapshot(schema, seq, ids.map(Number), codes, big);
}

const kitFile = path.join(KIT, 'interpolation', 'pose.json');
test('kit interpolation vectors (conformance/interpolation/pose.json)', { skip: fs.existsSync(kitFile) ? false : `no ${kitFile}` }, () => {
  const kit = JSON.parse(fs.readFileSync(kitFile, 'utf8'));
  const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, kit.schema), 'utf8'));
  const ip = new qc.Interpolator(schema, { capacity: kit.capacity, maxExtrapolation: bitsToDouble(kit.max_extrapolation) });
  // the PowerCurve components of each field (a C library's pow: relative 1e-12)
  const loose = {};
  for (const fi of schema.fieldInfo) {
    let c = fi.codec;
    if (c instanceof qc.NearlyZero) c = c.inner;
    const comps = c instanceof qc.Vector ? c.codecs : [c];
    loose[fi.name] = comps.map((cc) => cc.kind === 'PowerCurve');
  }
  let pushes = 0, samples = 0, values = 0, resets = 0;
  kit.ops.forEach((op, n) => {
    if (op.reset) {                              // a new stream: forget the views, a new timeline
      ip.reset();
      assert.equal(ip.newest, null, `op ${n}: reset`);
      resets++;
      return;
    }
    if (op.push) {
      const p = op.push;
      assert.equal(ip.push(view(schema, p.seq, p.ids, p.codes)), op.kept, `op ${n}: push of seq ${p.seq}`);
      pushes++;
      return;
    }
    const t = bitsToDouble(op.sample);
    const s = ip.sample(t);
    const where = `op ${n}: sample at ${t}`;
    assert.equal(s.a, op.a, `${where}: a`);
    assert.equal(s.b, op.b, `${where}: b`);
    assert.equal(doubleToBits(s.alpha), op.alpha, `${where}: alpha`);
    assert.deepEqual(s.ids.map(Number), op.ids, `${where}: ids`);
    assert.deepEqual({ ...ip.stats }, op.stats, `${where}: stats`);
    for (const [name, rows] of Object.entries(op.values)) {
      const col = s.columns[name], w = s.width[name];
      assert.equal(col.length, rows.length * w, `${where}: ${name}: ${col.length / w} rows`);
      rows.forEach((row, i) => row.forEach((hex, k) => {
        const got = Number(col[i * w + k]);
        const want = bitsToDouble(hex);
        const c = loose[name].length > 1 ? loose[name][k] : loose[name][0];
        if (c && got !== want) assert.ok(Math.abs(got - want) <= 1e-12 * Math.abs(want), `${where}: ${name}[${i}][${k}] = ${got}, expected ${want}`);
        else assert.equal(doubleToBits(got), hex, `${where}: ${name}[${i}][${k}] = ${got}, expected ${want}`);
        values++;
      }));
    }
    samples++;
  });
  assert.ok(pushes > 10 && samples > 50 && values > 1000, `${pushes} pushes, ${samples} samples, ${values} values`);
  assert.ok(resets >= 1, 'a reset, then a new timeline');
});

// -- unit tests --------------------------------------------------------------------------------

const schema = new qc.Schema('Body', [
  ['x', new qc.Bounded(-100, 100, 20)],
  ['yaw', new qc.Angle(12)],
  ['heading', new qc.Angle(10, { signed: true, unit: 'deg' })],
  ['rotation', new qc.Quat(12)],
  ['hp', new qc.UInt(8)],
]);
/** A view of entities {id: {x, yaw, heading, rotation, hp}} at seq. */
function snap(seq, ents) {
  const ids = Object.keys(ents).map(Number).sort((a, b) => a - b);
  const rows = ids.map((id) => schema.slotsOf(schema.quantize(ents[id])));
  return view(schema, seq & 0xffff, ids, rows);
}
const ent = (x, o = {}) => ({ x, yaw: 0, heading: 0, rotation: [0, 0, 0, 1], hp: 5, ...o });
const dq = (name, v) => {
  const c = schema.fields.find((f) => f.name === name).codec;
  return c.dequantize(c.quantize(v));
};
const stats = (ip) => ({ ...ip.stats });

test('interpolator: between two views, linear fields blend and exact fields hold', () => {
  const ip = new qc.Interpolator(schema, { capacity: 8 });
  assert.equal(ip.push(snap(10, { 1: ent(0, { hp: 3 }) })), true);
  assert.equal(ip.push(snap(12, { 1: ent(10, { hp: 9 }) })), true);
  const s = ip.sample(10.5);
  assert.equal(s.a, 10); assert.equal(s.b, 12); assert.equal(s.alpha, 0.25);
  const x0 = dq('x', 0), x1 = dq('x', 10);
  assert.equal(s.columns.x[0], x0 + (x1 - x0) * 0.25);
  assert.equal(s.columns.hp[0], 3);
  assert.deepEqual(s.values(0).rotation, dq('rotation', [0, 0, 0, 1]));
  assert.equal(s.values(0).hp, 3);
  assert.deepEqual(stats(ip), { pushed: 2, dropped: 0, late: 0, extrapolated: 0, early: 0 });
  // at a view's tick exactly: that view, alpha 0
  const s2 = ip.sample(12);
  assert.equal(s2.a, 12); assert.equal(s2.b, null); assert.equal(s2.alpha, 0); assert.equal(s2.columns.x[0], x1);
});

test('interpolator: duplicated views are dropped, reordered ones sorted in', () => {
  const ip = new qc.Interpolator(schema, { capacity: 8 });
  assert.equal(ip.push(snap(20, { 1: ent(20) })), true);
  assert.equal(ip.push(snap(24, { 1: ent(24) })), true);
  assert.equal(ip.push(snap(22, { 1: ent(22) })), true);        // arrives after 24
  assert.equal(ip.push(snap(24, { 1: ent(99) })), false);       // a duplicate tick: dropped
  assert.equal(ip.push(snap(20, { 1: ent(99) })), false);
  assert.deepEqual(ip.views.map((v) => v.tick), [20, 22, 24]);
  const s = ip.sample(23);
  assert.equal(s.a, 22); assert.equal(s.b, 24); assert.equal(s.alpha, 0.5);
  assert.equal(s.columns.x[0], dq('x', 22) + (dq('x', 24) - dq('x', 22)) * 0.5);
  assert.deepEqual(stats(ip), { pushed: 3, dropped: 2, late: 0, extrapolated: 0, early: 0 });
});

test('interpolator: late views count and still serve; a full buffer drops what is older than it holds', () => {
  const ip = new qc.Interpolator(schema, { capacity: 3 });
  for (const t of [100, 101, 102]) ip.push(snap(t, { 1: ent(t - 100) }));
  ip.sample(101.5);
  assert.equal(ip.push(snap(99, { 1: ent(0) })), false);        // full, older than every held view
  assert.equal(ip.push(snap(104, { 1: ent(4) })), true);        // 100 leaves
  assert.equal(ip.push(snap(103, { 1: ent(3) })), true);        // not late: render time 101.5 is before it
  assert.equal(ip.push(snap(101, { 1: ent(1) })), false);       // full, 101 < 102: dropped
  assert.deepEqual(ip.views.map((v) => v.tick), [102, 103, 104]);
  ip.sample(103.5);
  const ip2 = new qc.Interpolator(schema, { capacity: 8 });
  ip2.push(snap(100, { 1: ent(0) }));
  ip2.sample(101);                                              // extrapolation impossible: held
  assert.equal(ip2.push(snap(101, { 1: ent(1) })), true);       // late: its tick was drawn already
  assert.equal(ip2.stats.late, 1);
  const s = ip2.sample(101);
  assert.equal(s.a, 101); assert.equal(s.columns.x[0], dq('x', 1));
  assert.deepEqual(stats(ip), { pushed: 5, dropped: 2, late: 0, extrapolated: 0, early: 0 });
});

test('interpolator: missing views: extrapolation bounded by maxExtrapolation, then held', () => {
  const ip = new qc.Interpolator(schema, { capacity: 8, maxExtrapolation: 2 });
  ip.push(snap(10, { 1: ent(0, { rotation: [0, 0, 0, 1] }) }));
  ip.push(snap(12, { 1: ent(4, { rotation: [0, 0.6, 0, 0.8] }) }));
  const x0 = dq('x', 0), x1 = dq('x', 4);
  let s = ip.sample(13);                                       // one tick past the newest
  assert.equal(s.a, 12); assert.equal(s.b, null); assert.equal(s.alpha, 0.5);
  assert.equal(s.columns.x[0], x1 + (x1 - x0) * 0.5);
  assert.deepEqual(s.values(0).rotation, dq('rotation', [0, 0.6, 0, 0.8]));   // rotations held
  s = ip.sample(30);                                           // far past: at most 2 ticks
  assert.equal(s.alpha, 1);
  assert.equal(s.columns.x[0], x1 + (x1 - x0) * 1);
  assert.deepEqual(stats(ip), { pushed: 2, dropped: 0, late: 0, extrapolated: 2, early: 0 });
  // before the oldest view: the oldest, held
  s = ip.sample(5);
  assert.equal(s.a, 10); assert.equal(s.b, null); assert.equal(s.alpha, 0); assert.equal(s.columns.x[0], x0);
  assert.equal(ip.stats.early, 1);
  // a single view: held, not extrapolated
  const one = new qc.Interpolator(schema);
  one.push(snap(7, { 1: ent(1) }));
  s = one.sample(9);
  assert.equal(s.a, 7); assert.equal(s.alpha, 0); assert.equal(one.stats.extrapolated, 0);
});

test('interpolator: entities that appear and disappear', () => {
  const ip = new qc.Interpolator(schema);
  ip.push(snap(1, { 1: ent(0), 2: ent(10), 5: ent(50) }));
  ip.push(snap(2, { 1: ent(2), 3: ent(30), 5: ent(52) }));
  const s = ip.sample(1.5);
  assert.deepEqual(s.ids, [1, 2, 5]);                          // A's entities
  assert.equal(s.columns.x[0], dq('x', 0) + (dq('x', 2) - dq('x', 0)) * 0.5);
  assert.equal(s.columns.x[1], dq('x', 10));                   // left after 1: held
  assert.equal(s.columns.x[2], dq('x', 50) + (dq('x', 52) - dq('x', 50)) * 0.5);
  assert.equal(s.indexOf(5), 2); assert.equal(s.indexOf(3), -1);
  assert.deepEqual(ip.sample(2).ids, [1, 3, 5]);               // 3 appears when its view is A
});

test('interpolator: angles take the shortest arc and wrap', () => {
  const ip = new qc.Interpolator(schema);
  const a0 = 6.0, a1 = 0.3;                                    // across 2*pi
  ip.push(snap(1, { 1: ent(0, { yaw: a0, heading: 170 }) }));
  ip.push(snap(2, { 1: ent(0, { yaw: a1, heading: -170 }) }));
  const s = ip.sample(1.5);
  const y0 = dq('yaw', a0), y1 = dq('yaw', a1), T = 2 * Math.PI;
  let mid = y0 + ((y1 - y0) - T * Math.floor((y1 - y0) / T + 0.5)) * 0.5;
  mid = mid - T * Math.floor(mid / T);
  assert.equal(s.columns.yaw[0], mid);
  assert.ok(Math.abs(s.columns.yaw[0] - ((6.0 + 0.3 + T) / 2 - T)) < 0.01);   // near 0, not near pi
  const h = s.columns.heading[0];
  assert.ok(h >= -180 && h < 180 && Math.abs(Math.abs(h) - 180) < 1, `heading ${h}: through 180, not 0`);
  // extrapolation wraps too
  const e = ip.sample(3);
  assert.ok(e.columns.yaw[0] >= 0 && e.columns.yaw[0] < T);
  assert.ok(Math.abs(e.columns.yaw[0] - ((0.3 + (0.3 - 6.0 + T)) % T)) < 0.01);
});

test('interpolator: a rotation near q / -q goes the short way (nlerp in one hemisphere)', () => {
  const ip = new qc.Interpolator(schema);
  const s2 = Math.SQRT1_2;
  const q0 = [0, 0, 0.05, Math.sqrt(1 - 0.0025)], q1 = [0, 0, 0.05, -Math.sqrt(1 - 0.0025)];  // q1 near -q0
  ip.push(snap(1, { 1: ent(0, { rotation: q0 }) }));
  ip.push(snap(2, { 1: ent(0, { rotation: q1 }) }));
  const r = ip.sample(1.5).values(0).rotation;
  const d0 = dq('rotation', q0);
  const dot = Math.abs(r[0] * d0[0] + r[1] * d0[1] + r[2] * d0[2] + r[3] * d0[3]);
  assert.ok(dot > 0.99, `the blend stays near q0 (|dot| ${dot}), not through a half turn`);
  assert.ok(Math.abs(Math.hypot(...r) - 1) < 1e-15);
  // a quarter turn: halfway is the eighth turn
  const ip2 = new qc.Interpolator(schema);
  ip2.push(snap(1, { 1: ent(0, { rotation: [0, 0, 0, 1] }) }));
  ip2.push(snap(2, { 1: ent(0, { rotation: [0, 0, s2, s2] }) }));
  const m = ip2.sample(1.5).values(0).rotation;
  assert.ok(Math.abs(m[2] - Math.sin(Math.PI / 8)) < 2e-3 && Math.abs(m[3] - Math.cos(Math.PI / 8)) < 2e-3, `${m}`);
});

test('interpolator: ticks unwrap across 65535 -> 0', () => {
  const ip = new qc.Interpolator(schema);
  ip.push(snap(65534, { 1: ent(0) }));
  ip.push(snap(1, { 1: ent(3) }));
  assert.equal(ip.newest, 65537);
  assert.equal(ip.tick(65535), 65535);
  const s = ip.sample(65535.5);
  assert.equal(s.a, 65534); assert.equal(s.b, 65537); assert.equal(s.alpha, 0.5);
});

test('interpolator: options are checked', () => {
  assert.throws(() => new qc.Interpolator(schema, { capacity: 1 }), RangeError);
  assert.throws(() => new qc.Interpolator(schema, { capacity: 2.5 }), RangeError);
  assert.throws(() => new qc.Interpolator(schema, { maxExtrapolation: -1 }), RangeError);
  assert.throws(() => new qc.Interpolator(schema, { maxExtrapolation: Infinity }), RangeError);
  assert.throws(() => new qc.Interpolator(schema).sample(0), /no view/);
  const ip = new qc.Interpolator(schema, { capacity: 4, maxExtrapolation: 0.5 });
  assert.equal(ip.capacity, 4); assert.equal(ip.maxExtrapolation, 0.5);
});

test('interpolator: a view of another schema, and a render time that is no number, are refused by name (as Python)', () => {
  const ip = new qc.Interpolator(schema);
  const other = new qc.Schema('Other', [['x', new qc.UInt(3)]]);
  assert.throws(() => ip.push(view(other, 1, [1], [[2]])),
    (e) => e instanceof qc.SchemaError && /a view of schema 'Other' in the buffer of schema 'Body'/.test(e.message));
  assert.throws(() => ip.push({ x: 1 }), TypeError);
  const same = new qc.Schema('Body', schema.fields.map((f) => [f.name, f.codec]));   // equal, not the same object
  assert.equal(ip.push(view(same, 3, [1], [schema.slotsOf(schema.quantize(ent(0)))])), true);
  for (const t of ['3', null, undefined, 3n, {}]) {
    assert.throws(() => ip.sample(t), (e) => e instanceof TypeError && /render time must be a number of ticks/.test(e.message), String(t));
  }
  assert.equal(ip.sample(3).a, 3);
  assert.deepEqual(ip.stats, { pushed: 1, dropped: 0, late: 0, extrapolated: 0, early: 0 });
});

test('interpolator: a NaN render time is early and does not move the render clock (as Python)', () => {
  const ip = new qc.Interpolator(schema);
  ip.push(snap(5, { 1: ent(0) }));
  ip.sample(6);
  const s = ip.sample(NaN);
  assert.equal(s.a, 5); assert.equal(ip.stats.early, 1);
  ip.push(snap(6, { 1: ent(1) }));                             // at the render time 6: late
  assert.equal(ip.stats.late, 1);
  s.ids.push(99);                                              // a sample's ids are its own
  assert.deepEqual(ip.sample(5).ids, [1]);
});

test('interpolator: reset() starts a new timeline for a new stream (a restarted server), stats go on', () => {
  // (tests/test_interpolation.py test_reset_starts_a_new_timeline_for_a_new_stream) a restarted
  // server's ticks start again from its own start: unwrapped against the old stream's newest they
  // are older than every held view of a full buffer, and are dropped; after reset() they are the
  // timeline
  const S = new qc.Schema('S', [['x', new qc.Bounded(0, 100, 16)]]);
  const v = (seq, x) => view(S, seq, [1], [S.slotsOf(S.quantize({ x }))]);
  const ip = new qc.Interpolator(S, { capacity: 4 });
  for (let k = 3596; k < 3600; k++) assert.equal(ip.push(v(k, k % 100)), true, `push ${k}`);
  ip.sample(3598.5);
  assert.equal(ip.push(v(0, 10.0)), false, 'the new stream\'s first view: dropped');
  assert.equal(ip.reset(), undefined);
  assert.deepEqual([ip.views, ip.newest, ip.lastT, ip.size, ip.oldest], [[], null, null, 0, null]);
  assert.throws(() => ip.sample(0.0), (e) => e instanceof Error && /no view pushed yet/.test(e.message), 'nothing pushed since');
  assert.equal(ip.push(v(0, 10.0)), true);
  assert.equal(ip.push(v(1, 20.0)), true);
  assert.equal(ip.newest, 1);
  assert.equal(ip.tick(65535), -1, 'ticks unwrap against the new timeline');
  const got = ip.sample(0.5);
  assert.deepEqual([got.a, got.b, got.alpha], [0, 1, 0.5]);
  assert.ok(Math.abs(got.columns.x[0] - 15.0) < 0.01, `x ${got.columns.x[0]}`);
  assert.deepEqual({ ...ip.stats }, { pushed: 6, dropped: 1, late: 0, extrapolated: 0, early: 0 });
  // the latest render time was forgotten too: a view at or before 3598.5 is no longer late
  ip.reset();
  ip.push(v(2, 30.0));
  assert.equal(ip.stats.late, 0);
  ip.sample(2.5);                                               // (one view: held, not extrapolated)
  ip.push(v(1, 20.0));                                          // now late (at or before 2.5)
  assert.deepEqual({ ...ip.stats }, { pushed: 8, dropped: 1, late: 1, extrapolated: 0, early: 0 });
});
