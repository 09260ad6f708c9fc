// Shared paths and readers for the tests.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from '../quantcodec.mjs';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
export const GOLDEN = path.join(REPO, 'tests', 'golden');
export const KIT = path.join(REPO, 'conformance');

export function readJSON(p, opts) { return qc.parseJSON(fs.readFileSync(p, 'utf8'), opts); }
export function readBytes(p) { return new Uint8Array(fs.readFileSync(p)); }
export function hexBytes(h) { return Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16)); }
export function toHex(b) { return Buffer.from(b).toString('hex'); }
/** A float from the golden files' float.hex() strings. */
export const fx = (s) => qc.parseFloatHex(s);
/** Same double, NaN included, -0 told from +0. */
export function sameDouble(a, b) { return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)); }
