// The TypeScript declarations name exactly what the module exports (no tsc here: a text check).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from '../quantcodec.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

test('quantcodec.d.mts declares every export of quantcodec.mjs, and nothing else', () => {
  const dts = fs.readFileSync(path.join(here, '..', 'quantcodec.d.mts'), 'utf8');
  const declared = new Set([...dts.matchAll(/^export (?:abstract )?(?:class|function|const) (\w+)/gm)].map((m) => m[1]));
  const exported = new Set(Object.keys(qc));
  assert.deepEqual([...exported].filter((n) => !declared.has(n)).sort(), []);
  assert.deepEqual([...declared].filter((n) => !exported.has(n)).sort(), []);
});

