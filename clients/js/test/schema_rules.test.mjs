// The one reading of a schema document that every client shares (docs/schema-format.md, rules
// R1-R9 of the conformance kit's schema_cases.json): the kit's cases, and this client's own.
import test from 'node:test';
import assert from 'node:assert/strict';
import * as qc from '../quantcodec.mjs';

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
