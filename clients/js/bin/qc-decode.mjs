// qc-decode SCHEMA.json DATAGRAMS.bin: the runner contract (conformance/README.md). One snapshot
// decoder, starting with no hello; one compact JSON line per datagram.
import fs from 'node:fs';
import { Schema, SnapshotDecoder, splitDatagrams, runnerLine } from '../quantcodec.mjs';

const [schemaPath, dataPath] = process.argv.slice(2);
if (!schemaPath || !dataPath) {
  process.stderr.write('usage: qc-decode SCHEMA.json DATAGRAMS.bin\n');
  process.exit(2);
}
let schema, datagrams;
try {
  schema = Schema.fromJSON(fs.readFileSync(schemaPath, 'utf8'));
  datagrams = splitDatagrams(new Uint8Array(fs.readFileSync(dataPath)));
} catch (e) {
  process.stderr.write(`qc-decode: ${e.message}\n`);
  process.exit(2);
}
const dec = new SnapshotDecoder(schema);
const out = [];
for (const d of datagrams) out.push(runnerLine(dec, d));
process.stdout.write(out.length ? out.join('\n') + '\n' : '');
