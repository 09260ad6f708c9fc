#!/usr/bin/env node
// qc-decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin:
// the runner contract (conformance/README.md). One snapshot decoder, starting with no hello; one
// compact JSON line per datagram. --key: keyed checks (wire-format section 17); --max-bytes: the
// bound of section 19 (default 268435456); --replies NONCE: a StreamClient with that nonce, whose
// reply() after each datagram ends the line as "reply" (its hex, or null); --idle N (0..1000, with
// --replies): then N more calls of reply() with nothing arriving, listed in order as "idle" (each
// its hex, or null: the keep-alives of section 18).
import fs from 'node:fs';
import { Schema, SnapshotDecoder, StreamClient, splitDatagrams, runnerLine, toHex } from '../quantcodec.mjs';

const USAGE = 'usage: qc-decode [--key HEX] [--max-bytes N] [--replies NONCE [--idle N]] SCHEMA.json DATAGRAMS.bin\n';
function fail(msg) {
  process.stderr.write(`qc-decode: ${msg}\n${USAGE}`);
  process.exit(2);
}

const opts = { key: null, maxBytes: null, replies: null, idle: null };
const rest = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const a = args[i];
  const eq = a.startsWith('--') ? a.indexOf('=') : -1;
  const name = eq > 0 ? a.slice(0, eq) : a;
  const value = () => {
    if (eq > 0) return a.slice(eq + 1);
    if (i + 1 >= args.length) fail(`${name} needs a value`);
    return args[++i];
  };
  if (name === '--key') {
    const v = value();
    if (!/^([0-9a-fA-F]{2}){1,255}$/.test(v)) fail(`--key must be 1 to 255 bytes in hex (an even number of hex digits), got '${v}'`);
    opts.key = Uint8Array.from(v.match(/../g), (x) => parseInt(x, 16));
  } else if (name === '--max-bytes') {
    const v = value();
    if (!/^[0-9]+$/.test(v) || BigInt(v) < 1n) fail(`--max-bytes must be a positive decimal integer, got '${v}'`);
    opts.maxBytes = BigInt(v);
  } else if (name === '--replies') {
    const v = value();
    if (!/^[0-9]+$/.test(v) || BigInt(v) > 0xffffffffn) fail(`--replies takes a nonce, a decimal integer in 0..4294967295, got '${v}'`);
    opts.replies = Number(v);
  } else if (name === '--idle') {
    const v = value();
    if (!/^[0-9]+$/.test(v) || BigInt(v) > 1000n) fail(`--idle takes a count of calls, a decimal integer in 0..1000, got '${v}'`);
    opts.idle = Number(v);
  } else if (a === '--help' || a === '-h') {
    process.stdout.write(USAGE);
    process.exit(0);
  } else if (a.startsWith('--')) {
    fail(`unknown option ${a}`);
  } else {
    rest.push(a);
  }
}
if (opts.idle !== null && opts.replies === null) fail('--idle counts calls of reply(): give --replies NONCE too');
if (rest.length !== 2) fail(rest.length < 2 ? 'SCHEMA.json and DATAGRAMS.bin are required' : `unexpected argument ${rest[2]}`);
const [schemaPath, dataPath] = rest;
let schema, datagrams;
try {
  schema = Schema.fromBytes(fs.readFileSync(schemaPath));      // (strict UTF-8, one BOM skipped)
  datagrams = splitDatagrams(new Uint8Array(fs.readFileSync(dataPath)));
} catch (e) {
  process.stderr.write(`qc-decode: ${e.message}\n`);
  process.exit(2);
}
const target = opts.replies === null
  ? new SnapshotDecoder(schema, { key: opts.key, maxBytes: opts.maxBytes })
  : new StreamClient(schema, { key: opts.key, maxBytes: opts.maxBytes, nonce: opts.replies });
// (a reader that stops early, `| head`, is no error)
process.stdout.on('error', (e) => { if (e.code === 'EPIPE') process.exit(0); throw e; });
const out = [];
for (const d of datagrams) {
  const line = runnerLine(target, d);
  if (!opts.idle) { out.push(line); continue; }
  // --idle N: N more calls of reply() with nothing arriving, as the line's last key
  const calls = [];
  for (let k = 0; k < opts.idle; k++) {
    const r = target.reply();
    calls.push(r === null ? 'null' : `"${toHex(r)}"`);
  }
  out.push(`${line.slice(0, -1)},"idle":[${calls.join(',')}]}`);
}
process.stdout.write(out.length ? out.join('\n') + '\n' : '');
