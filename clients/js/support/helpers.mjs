// Shared paths and readers for the tests.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from '../quantcodec.mjs';

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, '..', '..', '..');
export const GOLDEN = path.join(REPO, 'tests', 'golden');
// QC_KIT=DIR runs the kit's tests against another copy of the kit (another branch's, say)
export const KIT = process.env.QC_KIT ? path.resolve(process.env.QC_KIT) : path.join(REPO, 'conformance');

export function readJSON(p, opts) { return qc.parseJSON(fs.readFileSync(p, 'utf8'), opts); }
export function readBytes(p) { return new Uint8Array(fs.readFileSync(p)); }
export function hexBytes(h) { return Uint8Array.from(h.match(/../g) || [], (x) => parseInt(x, 16)); }
export function toHex(b) { return Buffer.from(b).toString('hex'); }
/** A float from the golden files' float.hex() strings. */
export const fx = (s) => qc.parseFloatHex(s);
/** Same double, NaN included, -0 told from +0. */
export function sameDouble(a, b) { return Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)); }

const DV = new DataView(new ArrayBuffer(8));
/** A double from the kit's 16 hex digits of its IEEE-754 bits. */
export function bitsToDouble(h) { DV.setBigUint64(0, BigInt('0x' + h)); return DV.getFloat64(0); }
export function doubleToBits(x) { DV.setFloat64(0, x); return DV.getBigUint64(0).toString(16).padStart(16, '0'); }
/** The codec of a leaf path of a schema: 'pose.velocity.inner.0' style names. */
