// The compiled fast path (makeEntityReader: the changed entities of the common schemas, unrolled
// per schema) and the interpreted one decode every kit stream alike, line for line: both stay
// tested whatever the kit's expected lines cover.
import test from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from '../quantcodec.mjs';
import { makeEntityReader } from '../src/fastpath.mjs';
import { KIT, readJSON, readBytes, hexBytes } from '../support/helpers.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const present = fs.existsSync(path.join(KIT, 'manifest.json'));
const manifest = present ? readJSON(path.join(KIT, 'manifest.json')) : { schemas: {}, streams: [] };

test('the pose schema (a game entity) has the compiled reader; a schema of wide codes does not', { skip: present ? false : `no kit at ${KIT}` }, () => {
  const pose = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, 'schemas', 'pose.json'), 'utf8'));
  assert.notEqual(new qc.SnapshotDecoder(pose).coder.entityGen, null);
  const wide = new qc.Schema('W', [['n', new qc.UInt(64)]]);
  assert.equal(new qc.SnapshotDecoder(wide).coder.entityGen, null);
});

test('a schema too large for one function V8 optimizes gets its fields read in parts, each small enough', () => {
  // (V8 optimizes no function of more than 61,440 bytes of bytecode: fastpath.mjs, MAX_SOURCE)
  const scalars = (n) => new qc.Schema('S', Array.from({ length: n }, (_, i) => [`s${i}`, new qc.Bounded(0, 100, 12)]));
  const small = new qc.SnapshotDecoder(scalars(20)).coder.entityGen, big = new qc.SnapshotDecoder(scalars(40)).coder.entityGen;
  assert.notEqual(small, null);
  assert.ok(small.toString().length < 66000);
  assert.equal(small.step, 1);                  // (two entities a call would not fit)
  assert.equal(small.parts.length, 0);
  // 100 fields, a quaternion in three: seven parts
  const mixed = new qc.Schema('M', Array.from({ length: 100 }, (_, i) => [`f${i}`, i % 3 ? new qc.Bounded(0, 100, 12) : new qc.Quat(9)]));
  for (const [gen, n, nparts] of [[big, 40, 2], [new qc.SnapshotDecoder(mixed).coder.entityGen, 100, 7]]) {
    assert.equal(gen.step, 1);
    assert.equal(gen.parts.length, nparts);
    for (const f of [gen, ...gen.parts]) assert.ok(f.toString().length < 66000, `${f.toString().length} characters`);
    // each part called once, each field read in one part, in order, none twice or left out
    assert.equal(gen.toString().match(/\bG\d+\(/g).length, nparts);
    const read = gen.parts.map((f) => f.toString().match(/fch\[(\d+) \* C \+ e\]/g).map((x) => Number(/\d+/.exec(x)[0])));
    assert.deepEqual(read.flat(), Array.from({ length: n }, (_, i) => i));
  }
  // a field too large for a function of its own: no compiled reader, the interpreted path
  const huge = new qc.Schema('H', [['v', new qc.Vector(...Array.from({ length: 80 }, () => new qc.Bounded(0, 100, 12)))]]);
  assert.equal(new qc.SnapshotDecoder(huge).coder.entityGen, null);
});

/**
 * What a decoder makes of a datagram: the runner's line for a view or nothing yet, else the
 * error's kind and its message (the paths must agree on both).
 */
function outcome(dec, datagram) {
  try {
    const v = dec.decode(datagram);
    return v === null ? '{"pending":true}' : v.toJSONLine();
  } catch (e) {
    if (!(e instanceof qc.DecodeError)) throw e;
    return `{"error":"${e.kind}"} ${e.message}`;
  }
}

/**
 * The decoder's options in a stream's runner "args": --key HEX and --max-bytes N; --replies NONCE
 * and --idle N change only the replies made, not what decodes.
 */
function decoderOptions(args) {
  const o = {};
  for (let i = 0; i < args.length; i += 2) {
    const [name, v] = [args[i], args[i + 1]];
    if (name === '--key') o.key = hexBytes(v);
    else if (name === '--max-bytes') o.maxBytes = BigInt(v);
    else if (name !== '--replies' && name !== '--idle') throw new Error(`kit stream args: unknown option ${name}`);
  }
  return o;
}

// every datagram file once: a stream without args where there is one, else one with its args
const plain = new Set(manifest.streams.filter((st) => !(st.args || []).length).map((st) => st.datagrams));
for (const st of manifest.streams) {
  const args = st.args || [];
  if (args.length && plain.has(st.datagrams)) continue;     // (the same datagrams decoded without args)
  test(`kit stream ${st.name}: the compiled (two entities a call, one, and one in parts) and the interpreted fast paths decode alike`, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, manifest.schemas[st.schema]?.file ?? st.schema), 'utf8'));
    const ds = qc.splitDatagrams(readBytes(path.join(KIT, st.datagrams)));
    const o = decoderOptions(args);
    const a = new qc.SnapshotDecoder(schema, o), b = new qc.SnapshotDecoder(schema, o), c = new qc.SnapshotDecoder(schema, o);
    const d = new qc.SnapshotDecoder(schema, o);
    b.coder.entityGen = null;
    c.coder.entityGen = makeEntityReader(c.coder, { pairs: false });
    d.coder.entityGen = makeEntityReader(d.coder, { split: 1 });           // a part a field
    if (a.coder.entityGen !== null) {
      assert.deepEqual([a.coder.entityGen.step, c.coder.entityGen.step, d.coder.entityGen.step], [2, 1, 1]);
      assert.equal(d.coder.entityGen.parts.length, schema.fields.length);
    }
    const lines = (x) => ds.map((g) => outcome(x, g));
    const lb = lines(b);
    assert.deepEqual(lines(a), lb);
    assert.deepEqual(lines(c), lb);
    assert.deepEqual(lines(d), lb);
  });
}

// mutated packets sealed with the stream's key reach the packet decoder: both paths must refuse
// the same ones with the same kind and accept the rest with the same codes
function rng(seed) {
  let s = seed >>> 0;
  const next = () => { s = (s + 0x6d2b79f5) >>> 0; let t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
  return { int: (n) => Math.floor(next() * n) };
}
const ROUNDS = Number(process.env.QC_FUZZ_ROUNDS || 300);
/**
 * The datagrams of `real` through one decoder per entry of `readers` (a function of its coder
 * giving its reader; null: the compiled one it has) and one on the interpreted path, every line
 * alike, and about ROUNDS mutated packets (bits flipped, sealed again with the stream's check):
 * after each datagram, copies of any of the stream's packets; with `last`, after the whole
 * stream, copies of its last packet only (each copy accepted makes its number ambiguous, so that
 * packets coded against it are refused: the last one's baseline stays clean). Returns how many
 * of each outcome (the error lines, 'accepted').
 */
const ENTITY_ERROR = /^\{"error":"malformed"\} snapshot packet: entity \d+: (field '\w+'(\[\d+\]| \(NearlyZero flag\))?: .+|marked changed, but none of its fields is) \(at bit \d+\)$/;
function mutatedAlike(schema, real, seed, readers, last = false) {
  const ref = new qc.SnapshotDecoder(schema);
  ref.coder.entityGen = null;
  const decs = readers.map((mk) => { const d = new qc.SnapshotDecoder(schema); if (mk !== null) d.coder.entityGen = mk(d.coder); return d; });
  const lineOf = (m) => { const want = outcome(ref, m); for (const d of decs) assert.equal(outcome(d, m), want); return want; };
  const r = rng(seed);
  const kinds = {};
  const mutate = (src, seedP) => {
    if (src.length >= 4 && src[0] === 0x51 && src[1] === 0x43) return;       // a hello
    const body = src.slice(0, src.length - 4);
    for (let f = 0; f <= r.int(4); f++) { const bit = 16 + r.int(Math.max(1, body.length * 8 - 16)); if (bit < body.length * 8) body[bit >> 3] ^= 1 << (bit & 7); }
    const m = new Uint8Array(body.length + 4);
    m.set(body);
    new DataView(m.buffer).setUint32(body.length, qc.crc32c(body, seedP), true);
    const line = lineOf(m);
    const k = line.startsWith('{"error"') ? line.slice(0, line.indexOf('}') + 1) : 'accepted';
    kinds[k] = (kinds[k] || 0) + 1;
    // an error in an entity's fields or record names the entity, the field (or slot) and the bit
    if (/marked changed|is not valid|remapped/.test(line)) {
      assert.match(line, ENTITY_ERROR);
      kinds.entity = (kinds.entity || 0) + 1;
    }
  };
  const sealOf = (h) => qc.crc32c(Uint8Array.from([...qc.streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId), 0x50]));
  for (const d of real) {
    lineOf(d);
    if (last || !ref.hello) continue;
    for (let j = 0; j < ROUNDS / real.length + 1; j++) mutate(real[r.int(real.length)], sealOf(ref.hello));
  }
  if (last) for (let j = 0; j < ROUNDS; j++) mutate(real[real.length - 1], sealOf(ref.hello));
  return kinds;
}
for (const st of manifest.streams.filter((x) => ['pose_clean', 'pose_lossy'].includes(x.name))) {
  test(`fastpath fuzz: mutated packets of ${st.name} sealed with its key, compiled and interpreted alike`, { timeout: 60000 }, () => {
    const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(KIT, st.schema), 'utf8'));
    const real = qc.splitDatagrams(readBytes(path.join(KIT, st.datagrams)));
    const readers = [
      null,                                                   // two entities a call
      (coder) => makeEntityReader(coder, { pairs: false }),   // one entity a call
      (coder) => makeEntityReader(coder, { split: 2 }),       // two fields a part
    ];
    const kinds = mutatedAlike(schema, real, 0x5eed + st.name.length, readers);
    assert.ok(Object.keys(kinds).length >= 2, JSON.stringify(kinds));
    // copies of the last packet only: its baseline stays clean, most reach the entities
    const last = mutatedAlike(schema, real, 0x1a57 + st.name.length, readers, true);
    assert.ok(last.accepted > 0 && last.entity > 0, JSON.stringify(last));
  });
}

// A schema read in parts by MAX_SOURCE itself (not forced by split), on a stream the Python
// encoder makes: loss, late acks, fragments (support/wide_stream.py)
const PY = process.env.QC_PYTHON || 'python3';
const hasPy = (() => { try { execFileSync(PY, ['-c', 'import quantcodec'], { cwd: os.tmpdir(), stdio: 'ignore' }); return true; } catch { return false; } })();
for (const name of ['wide', 'scalars']) {
  test(`a schema too large for one function (${name}) read in parts decodes as the interpreted path does`, { skip: !hasPy && `${PY} cannot import quantcodec (set QC_PYTHON)`, timeout: 120000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-wide-'));
    try {
      execFileSync(PY, [path.join(HERE, '..', 'support', 'wide_stream.py'), dir, '--schema', name], { cwd: os.tmpdir(), stdio: 'inherit' });
      const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
      const ds = qc.splitDatagrams(readBytes(path.join(dir, `${name}.bin`)));
      const a = new qc.SnapshotDecoder(schema), b = new qc.SnapshotDecoder(schema);
      b.coder.entityGen = null;
      assert.equal(a.coder.entityGen.parts.length, 2);
      let views = 0;
      for (const d of ds) {
        const la = outcome(a, d);
        assert.equal(la, outcome(b, d));
        if (la.startsWith('{"seq"')) views++;
      }
      assert.equal(views, 81);               // (90 ticks, one packet in ten lost)
      // and mutated, as whole packets (a flipped bit in a fragment mostly fails reassembly)
      execFileSync(PY, [path.join(HERE, '..', 'support', 'wide_stream.py'), dir, '--schema', name, '--max-datagram', '65507'], { cwd: os.tmpdir(), stdio: 'inherit' });
      const whole = qc.splitDatagrams(readBytes(path.join(dir, `${name}.bin`)));
      const kinds = mutatedAlike(schema, whole, 0x51de + name.length, [null], true);
      assert.ok(kinds.accepted > 0 && kinds['{"error":"malformed"}'] > 0, JSON.stringify(kinds));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('bench_wide.mjs runs as its header says, and reads both schemas in two parts', { skip: !hasPy && `${PY} cannot import quantcodec (set QC_PYTHON)`, timeout: 120000 }, () => {
  const out = execFileSync(process.execPath, [path.join(HERE, '..', 'bench_wide.mjs'), '--python', PY, '--rounds', '1', '--passes', '2', '--entities', '20', '--ticks', '12'], { encoding: 'utf8' });
  const rows = out.split('\n').filter((l) => /^(wide|scalars) /.test(l)).map((l) => l.split(/\s+/).slice(0, 3));
  assert.deepEqual(rows, [['wide', '19', '2'], ['scalars', '40', '2']], out);
});

// the codes' compare of a duplicate (PacketCoder.decodeChanged, Snapshot.sameAs): Node's native
// compare and the pages' element-by-element one agree
test('sameInts, native and in JS, compare typed arrays of codes alike', async () => {
  const { sameInts, sameIntsJS, HAS_NATIVE_COMPARE } = await import('../src/util.mjs');
  assert.equal(HAS_NATIVE_COMPARE, true);          // (node: Buffer.compare)
  const slab = new ArrayBuffer(4096);
  const r = rng(37);
  for (let round = 0; round < 200; round++) {
    const n = r.int(40), Type = round % 2 ? Int32Array : Uint32Array;
    const a = new Type(slab, 4 * r.int(8), n), b = new Type(slab, 2048 + 4 * r.int(8), n);
    for (let i = 0; i < n; i++) a[i] = b[i] = r.int(4294967296);
    if (n && round % 3 === 0) b[r.int(n)] ^= 1 << r.int(32);
    const want = a.every((x, i) => x === b[i]);
    assert.equal(sameInts(a, b), want);
    assert.equal(sameIntsJS(a, b), want);
    assert.equal(sameInts(a, b.subarray(0, Math.max(0, n - 1))), n === 0);
  }
});
