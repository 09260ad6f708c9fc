// The TypeScript declarations name exactly what the module exports (no tsc here: a text check).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from '../quantcodec.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('quantcodec.d.ts declares every export of quantcodec.mjs, and nothing else', () => {
  const dts = fs.readFileSync(path.join(here, '..', 'quantcodec.d.ts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:abstract )?(?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  const exported = new Set(Object.keys(qc));
  assert.deepEqual([...exported].filter((n) => !declared.has(n)).sort(), []);
  assert.deepEqual([...declared].filter((n) => !exported.has(n)).sort(), []);
});

test('the live view serves this very module (quantcodec/web/quantcodec.mjs is a copy)', (t) => {
  const copy = path.join(here, '..', '..', '..', 'quantcodec', 'web', 'quantcodec.mjs');
  if (!fs.existsSync(copy)) { t.skip('no quantcodec/web in this tree'); return; }
  const mine = fs.readFileSync(path.join(here, '..', 'quantcodec.mjs'));
  assert.ok(mine.equals(fs.readFileSync(copy)), 'copy clients/js/quantcodec.mjs to quantcodec/web/quantcodec.mjs');
});
