// The one reading of a schema document that every client shares (docs/schema-format.md, rules
// R1-R9 of the conformance kit's schema_cases.json): the kit's cases, and this client's own.
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { HERE, KIT, readJSON, hexBytes } from '../support/helpers.mjs';

const isSchemaError = (re) => (e) => e instanceof qc.SchemaError && (!re || re.test(e.message));
/** A document with one field x of the given codec spec (JSON text). */
const one = (codec, name = 'S') => `{"name":${JSON.stringify(name)},"version":1,"fields":[{"name":"x","codec":${codec}}]}`;

test('R9: an unknown kind, an Object.prototype member name included, is a SchemaError naming it', () => {
  for (const k of ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf', 'isPrototypeOf', 'Nope']) {
    const kind = JSON.stringify(k);
    const named = isSchemaError(new RegExp(`unknown codec kind ${kind.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    assert.throws(() => qc.Schema.fromJSON(one(`{"kind":${kind}}`)), named);
    assert.throws(() => qc.Schema.fromJSON(one(`{"kind":"Vector","codecs":[{"kind":${kind}}]}`)), named);
    assert.throws(() => qc.Schema.fromJSON(one(`{"kind":"NearlyZero","inner":{"kind":${kind}},"threshold":0.5}`)), named);
    assert.throws(() => qc.codecFromSpec({ kind: k }), named);
  }
  // a parameter key named after an Object.prototype member is an unknown key, not a default
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Enum","constructor":3}')), isSchemaError(/missing 'count'/));
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Bool","toString":1}')), isSchemaError(/unknown keys \["toString"\]/));
});

test('R2: field names are ASCII identifiers [A-Za-z_][A-Za-z0-9_]*, whatever the Unicode tables say', () => {
  const named = (n) => `{"name":"S","fields":[{"name":${JSON.stringify(n)},"codec":{"kind":"Bool"}}]}`;
  for (const n of ['x', '_', 'A_b9', '__proto__', 'constructor', 'x'.repeat(5000)]) assert.deepEqual(qc.Schema.fromJSON(named(n)).names, [n]);
  // (letters of every script, Other_ID_Start/Continue, newer Unicode letters, non-BMP letters,
  // spaces, controls, marks, ZWJ, BOM, lone surrogates: all refused)
  const bad = ['', '9x', 'a-b', 'a b', 'é', 'xé', 'Ϳ', '\u037a', '℘', 'a·', '℮', 'a\u00a0', 'a\u0080', 'a\u200d', '\ufeffa',
    '٣a', 'a\u0301', '\u{20000}', '\u{1d400}', 'x\u{1f600}', '\u{1e030}', 'a\ud800', 'a\u0000', 'a$', 'ｘ'];
  for (const n of bad) assert.throws(() => qc.Schema.fromJSON(named(n)), isSchemaError(/field names must be ASCII identifiers/), JSON.stringify(n));
  assert.throws(() => new qc.Schema('S', [['é', new qc.Bool()]]), isSchemaError(/ASCII identifiers/));
});

test("R2: a field named '__proto__' or 'constructor' is a field like any other in records and samples", () => {
  const s = qc.Schema.fromJSON('{"name":"S","fields":[{"name":"__proto__","codec":{"kind":"UInt","bits":8}},{"name":"constructor","codec":{"kind":"UInt","bits":8}},{"name":"y","codec":{"kind":"UInt","bits":8}}]}');
  const rec = JSON.parse('{"__proto__":5,"constructor":6,"y":7}');
  const bytes = s.encode(rec);
  assert.deepEqual(s.encode([5, 6, 7]), bytes);
  const back = s.decode(bytes);
  assert.deepEqual(Object.keys(back), ['__proto__', 'constructor', 'y']);
  assert.equal(Object.getPrototypeOf(back), Object.prototype);
  assert.equal(back.__proto__ + back.constructor + back.y, 18);
  assert.deepEqual(Object.entries(s.valuesOf(s.slotsOf([5, 6, 7]))), [['__proto__', 5], ['constructor', 6], ['y', 7]]);
  assert.throws(() => s.quantize({ constructor: 6, y: 7 }), isSchemaError(/missing field '__proto__'/));
  const snap = (seq, row) => new qc.Snapshot(s, seq, [1], Float64Array.from(row), null);
  assert.deepEqual(Object.entries(snap(1, [5, 6, 7]).values(0)), [['__proto__', 5], ['constructor', 6], ['y', 7]]);
  const ip = new qc.Interpolator(s);
  ip.push(snap(1, [4, 6, 8]));
  ip.push(snap(2, [6, 8, 10]));
  const v = ip.sample(1).values(0);
  assert.deepEqual(Object.keys(v), ['__proto__', 'constructor', 'y']);
  assert.deepEqual([v.__proto__, v.constructor], [v.y - 4, v.y - 2]);
});

test('R3: the schema name and Enum labels may be any Unicode text without U+0000', () => {
  const ok = qc.Schema.fromJSON(one('{"kind":"Enum","labels":["a\\u0001b","","\\ud83d\\ude00","\\u00e9"]}', '\u00e9 \ud83d\ude00\u2028'));
  assert.deepEqual(ok.fields[0].codec.labels, ['a\u0001b', '', '\u{1f600}', '\u00e9']);
  assert.equal(ok.name, '\u00e9 \ud83d\ude00\u2028');
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Bool"}', 'S\u0000')), isSchemaError(/schema name must not contain U\+0000/));
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Enum","labels":["a\\u0000b","a"]}')), isSchemaError(/field 'x': Enum labels must not contain U\+0000/));
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Vector","codecs":[{"kind":"Bool"},{"kind":"Enum","labels":["\\u0000"]}]}')), isSchemaError(/U\+0000/));
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"NearlyZero","inner":{"kind":"Vector","codecs":[{"kind":"Enum","labels":["b","\\u0000"]}]},"threshold":0}')), isSchemaError(/U\+0000/));
  assert.throws(() => new qc.Schema('S', [['x', new qc.Enum(['\0'])]]), isSchemaError(/U\+0000/));
});

test('R3: a lone surrogate (a \\u escape can write one) is not text: refused in the name and labels', () => {
  for (const [name, at, cp] of [['\\ud800', 0, 'D800'], ['a\\udc00b', 1, 'DC00'], ['\\ude00\\ud83d', 0, 'DE00'],
                                ['\\ud83dx', 0, 'D83D'], ['\\ud83d\\ude00\\ud800', 1, 'D800']]) {
    assert.throws(() => qc.Schema.fromJSON(`{"name": "${name}", "fields": [{"name": "x", "codec": {"kind": "Bool"}}]}`),
      isSchemaError(new RegExp(`^schema name must be Unicode text: a lone surrogate U\\+${cp} at character ${at}, got`)));
  }
  assert.throws(() => qc.Schema.fromJSON(one('{"kind":"Enum","labels":["a","\\udfff"]}')),
    isSchemaError(/^field 'x': Enum labels must be Unicode text: a lone surrogate U\+DFFF at character 0/));
  assert.throws(() => new qc.Schema('S\ud800', [['x', new qc.Bool()]]), isSchemaError(/lone surrogate U\+D800 at character 1/));
});

test('R5: version is an integer from 0 to 2**63 - 1', () => {
  const fp = (v) => qc.Schema.fromJSON(`{"name":"S","version":${v},"fields":{"x":{"kind":"Bool"}}}`).version;
  assert.equal(fp('9223372036854775807'), 9223372036854775807n);
  assert.equal(fp('0'), 0);
  assert.ok(Object.is(fp('-0'), 0));
  for (const v of ['9223372036854775808', '18446744073709551616', '1' + '0'.repeat(30), '-1', '1.0', '1e3', 'true', '"1"']) {
    assert.throws(() => fp(v), isSchemaError(/schema version must be an integer from 0 to 2\*\*63 - 1/), v);
  }
  assert.throws(() => new qc.Schema('S', [['x', new qc.Bool()]], { version: 2n ** 63n }), qc.SchemaError);
});

test('R7: at most 65,535 fields, and 65,535 components a Vector', () => {
  const vec = (n) => `{"kind":"Vector","codecs":[${new Array(n).fill('{"kind":"Bool"}').join(',')}]}`;
  assert.equal(qc.Schema.fromJSON(one(vec(65535))).nslots, 65535);
  assert.throws(() => qc.Schema.fromJSON(one(vec(65536))), isSchemaError(/field 'x': a Vector has at most 65535 components, got 65536/));
  assert.throws(() => qc.Schema.fromJSON(one(`{"kind":"NearlyZero","inner":${vec(65536)},"threshold":0}`)), isSchemaError(/at most 65535 components/));
  const fields = (n) => `{"name":"S","fields":[${Array.from({ length: n }, (_, i) => `{"name":"f${i}","codec":{"kind":"Bool"}}`).join(',')}]}`;
  assert.equal(qc.Schema.fromJSON(fields(65535)).fields.length, 65535);
  assert.throws(() => qc.Schema.fromJSON(fields(65536)), isSchemaError(/a schema has at most 65535 fields, got 65536/));
});

test('R6: a NearlyZero threshold at or past the reach of its inner codec is refused', () => {
  const nz = (inner, t) => one(`{"kind":"NearlyZero","threshold":${t},"inner":${inner}}`);
  const covers = isSchemaError(/NearlyZero: threshold .* covers the whole range of/);
  const cases = [           // [inner, largest threshold accepted (just below the reach), the reach]
    ['{"kind":"Bounded","min":0.0,"max":1.0,"bits":8}', 0.9999999999999999, '1.0'],
    ['{"kind":"Bounded","min":-3,"max":1,"bits":8}', 2.9999999999999996, '3'],
    ['{"kind":"PowerCurve","max":2.5,"pow":2,"bits":8}', 2.4999999999999996, '2.5'],
    ['{"kind":"Fixed","step":0.5,"bits":4}', 3.9999999999999996, '4'],                          // -8 * 0.5
    ['{"kind":"Fixed","step":0.5,"bits":4,"signed":false,"offset":-1}', 6.499999999999999, '6.5'], // 15 * 0.5 - 1
    ['{"kind":"Fixed","step":1,"bits":64,"signed":false}', 18446744073709550000, '18446744073709551616'],
    ['{"kind":"UInt","bits":4}', 14.999999999999998, '15.0'],
    ['{"kind":"UInt","bits":64}', 18446744073709550000, '18446744073709551615'],   // 2**64 - 1 as a double is 2**64
    ['{"kind":"Int","bits":4}', 7.999999999999999, '8'],
    ['{"kind":"Bool"}', 0.9999999999999999, '1.0'],
    ['{"kind":"IntRange","lo":-7,"hi":3}', 6.999999999999999, '7'],
    ['{"kind":"Vector","codecs":[{"kind":"Bool"},{"kind":"UInt","bits":3}]}', 6.999999999999999, '7'],
  ];
  for (const [inner, below, at] of cases) {
    qc.Schema.fromJSON(nz(inner, below));
    assert.throws(() => qc.Schema.fromJSON(nz(inner, at)), covers, `${inner} at ${at}`);
    assert.throws(() => qc.Schema.fromJSON(nz(inner, '1e300')), covers, `${inner} past`);
  }
  // no reach, no check: Angle, Half, Grid, Enum, and a Vector with one of them
  for (const inner of ['{"kind":"Angle","bits":8}', '{"kind":"Half"}', '{"kind":"Grid","cell_size":1,"cell_bits":4,"offset_bits":4}',
    '{"kind":"Enum","count":3}', '{"kind":"Vector","codecs":[{"kind":"Bool"},{"kind":"Half"}]}']) qc.Schema.fromJSON(nz(inner, '1e300'));
  assert.throws(() => new qc.NearlyZero(new qc.Bounded(0, 1, 8), 5), covers);     // the docs' own example
  assert.throws(() => qc.Schema.fromJSON(nz('{"kind":"Bool"}', -1)), isSchemaError(/threshold must be non-negative/));
});

test('R8: number literals of any length are read, floats correctly rounded, integers exact', () => {
  const bounded = (max) => qc.Schema.fromJSON(one(`{"kind":"Bounded","min":-1,"max":${max},"bits":8}`)).fingerprint;
  const tie = '1.00000000000000011102230246251565404236316680908203125';     // 1 + 2**-53, the midpoint of 1 and the next double
  for (const n of [0, 400, 1000, 100000]) {
    assert.equal(bounded(tie + '0'.repeat(n)), bounded('1.0'), `tie + ${n} zeros: to even`);
    assert.equal(bounded(tie + '0'.repeat(n) + '1'), bounded('1.0000000000000002'), `tie + ${n} zeros + 1: up`);
    assert.equal(bounded(`0.${'0'.repeat(n)}${'9'.repeat(500)}e${n}`), bounded('1'), `${n} zeros, 500 nines`);
  }
  assert.equal(bounded('1' + '0'.repeat(300)), bounded('1e300'));
  assert.equal(bounded('1' + '0'.repeat(300) + '.' + '0'.repeat(5000)), bounded('1e300'));
  // the tester's repro: "min": 0.000...0001 (400 zeros), a double 0.0
  const zeroMin = qc.Schema.fromJSON(`{"name":"S","fields":[{"name":"f","codec":{"kind":"Bounded","min":0.${'0'.repeat(400)}1,"max":1.0,"bits":8}}]}`);
  assert.equal(zeroMin.fingerprint, qc.Schema.fromJSON('{"name":"S","fields":[{"name":"f","codec":{"kind":"Bounded","min":0,"max":1.0,"bits":8}}]}').fingerprint);
  // long integer literals stay exact: a 401-digit version is refused as too large, not as bad JSON
  assert.throws(() => qc.Schema.fromJSON(`{"name":"S","version":1${'0'.repeat(400)},"fields":{"x":{"kind":"Bool"}}}`), isSchemaError(/version must be an integer from 0 to 2\*\*63 - 1/));
  assert.equal(qc.parseJSON('1' + '0'.repeat(5000)), 10n ** 5000n);
  assert.equal(qc.parseJSON(`[${'0.5,'.repeat(1e5)}1]`).length, 1e5 + 1);
});

test('R1: a document from bytes is strict UTF-8, one byte-order mark skipped', () => {
  const doc = '{"name":"S\u00e9","fields":[{"name":"f","codec":{"kind":"UInt","bits":3}}]}';
  const bytes = new TextEncoder().encode(doc);
  const fp = qc.Schema.fromJSON(doc).fingerprint;
  const cat = (...parts) => Uint8Array.from(parts.flatMap((p) => Array.from(p)));
  const BOM = [0xef, 0xbb, 0xbf];
  assert.equal(qc.Schema.fromBytes(bytes).fingerprint, fp);
  assert.equal(qc.Schema.fromBytes(cat(BOM, bytes)).fingerprint, fp);
  assert.equal(qc.Schema.fromBytes(Buffer.from(cat(BOM, bytes))).fingerprint, fp);
  assert.equal(qc.Schema.fromBytes(cat(BOM, bytes).buffer).fingerprint, fp);
  assert.equal(qc.Schema.fromJSON(cat(BOM, bytes)).fingerprint, fp);                 // fromJSON takes bytes too
  assert.equal(qc.Schema.fromJSON('\ufeff' + doc).fingerprint, fp);                  // a string: one U+FEFF skipped
  assert.throws(() => qc.Schema.fromJSON('\ufeff\ufeff' + doc), isSchemaError(/not a valid schema JSON document/));
  assert.throws(() => qc.Schema.fromBytes(cat(BOM, BOM, bytes)), isSchemaError(/not a valid schema JSON document/));
  // not well-formed UTF-8 in the name (the tester's min/utf8_invalid_ff.json and friends): refused
  const inName = (...b) => cat(new TextEncoder().encode('{"name":"S'), b, new TextEncoder().encode('","fields":[{"name":"f","codec":{"kind":"Bool"}}]}'));
  assert.equal(qc.Schema.fromBytes(inName(0xc3, 0xa9)).name, 'S\u00e9');
  assert.equal(qc.Schema.fromBytes(inName(0xf4, 0x8f, 0xbf, 0xbf)).name, 'S\u{10ffff}');
  assert.equal(qc.Schema.fromBytes(inName(0xed, 0x9f, 0xbf)).name, 'S\ud7ff');
  for (const bad of [[0xff], [0xfe], [0x80], [0xc3], [0xc0, 0x80], [0xc1, 0xbf], [0xe0, 0x80, 0xaf], [0xf4, 0x90, 0x80, 0x80],
    [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
    assert.throws(() => qc.Schema.fromBytes(inName(...bad)), isSchemaError(/not UTF-8/), bad.map((x) => x.toString(16)).join(' '));
  }
  // UTF-16 and UTF-32, with and without their byte-order marks: refused
  const u16 = (le) => Uint8Array.from(Array.from(doc).flatMap((c) => (le ? [c.charCodeAt(0), 0] : [0, c.charCodeAt(0)])));
  for (const b of [u16(true), cat([0xff, 0xfe], u16(true)), u16(false), cat([0xfe, 0xff], u16(false)),
    cat([0xff, 0xfe, 0, 0], Uint8Array.from(Array.from(doc).flatMap((c) => [c.charCodeAt(0), 0, 0, 0])))]) {
    assert.throws(() => qc.Schema.fromBytes(b), qc.SchemaError);
  }
  assert.throws(() => qc.Schema.fromBytes('{}'), TypeError);
  assert.throws(() => qc.Schema.fromJSON(null), TypeError);
  assert.throws(() => qc.Schema.fromJSON({ name: 'S' }), TypeError);
});

// The kit's documents (conformance/schema_cases.json, written by the Python package): each one's
// bytes read as a file is read, accepted with Python's fingerprint or refused with a SchemaError.
const manifestFile = path.join(KIT, 'manifest.json');
const casesName = fs.existsSync(manifestFile) ? readJSON(manifestFile).schema_cases : undefined;
const casesFile = casesName ? path.join(KIT, casesName) : null;
test('kit schema documents (conformance/schema_cases.json)', { skip: casesFile && fs.existsSync(casesFile) ? false : `no schema_cases in ${KIT}` }, () => {
  const kit = readJSON(casesFile);
  assert.equal(kit.format, 1);
  assert.ok(kit.cases.length > 0);
  const wrong = [];
  for (const c of kit.cases) {
    let got;
    try { got = qc.Schema.fromBytes(hexBytes(c.hex)).fingerprint; } catch (e) { got = e instanceof qc.SchemaError ? null : `${e.name}: ${e.message}`; }
    if (got !== c.fingerprint || (got !== null) !== c.ok) wrong.push(`${c.name}: expected ${c.ok ? c.fingerprint : 'a SchemaError'}, got ${got === null ? 'a SchemaError' : got}`);
  }
  assert.deepEqual(wrong, []);
});

test('R1: qc-decode reads the schema file as bytes: a BOM skipped, bad UTF-8 refused (exit 2)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-rules-'));
  try {
    const doc = Buffer.from('{"name":"S","fields":[{"name":"f","codec":{"kind":"Bool"}}]}');
    const empty = path.join(dir, 'none.bin');
    fs.writeFileSync(empty, '');
    const run = (bytes) => {
      const f = path.join(dir, 's.json');
      fs.writeFileSync(f, bytes);
      return spawnSync(path.join(HERE, '..', 'qc-decode'), [f, empty], { encoding: 'utf8' });
    };
    assert.equal(run(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), doc])).status, 0);
    const bad = run(Buffer.concat([doc.subarray(0, 10), Buffer.from([0xff]), doc.subarray(10)]));
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /not UTF-8/);
    assert.equal(run(Buffer.concat([doc.subarray(0, 10), Buffer.from([0xed, 0xa0, 0x80]), doc.subarray(10)])).status, 2);
  } finally { fs.rmSync(dir, { recursive: true, force: true }); }
});
