// node support/rekey.mjs KIT_DIR OUT_DIR KEY_HEX: every plain stream of the kit taken apart into
// its hellos and packets and framed again with the shared key (support/frame.mjs: SipHash tags,
// fragments of max_datagram - 16 bytes), written as OUT_DIR/NAME.bin; prints "NAME SCHEMA" lines.
// support/differential.py --keyed decodes them with the Python reference and with qc-decode.
import fs from 'node:fs';
import path from 'node:path';
import * as qc from '../quantcodec.mjs';
import { events, frameEvents } from './frame.mjs';

const [kit, out, keyHex] = process.argv.slice(2);
if (!kit || !out || !/^([0-9a-f]{2})+$/.test(keyHex || '')) {
  process.stderr.write('usage: node support/rekey.mjs KIT_DIR OUT_DIR KEY_HEX\n');
  process.exit(2);
}
const key = Uint8Array.from(keyHex.match(/../g), (x) => parseInt(x, 16));
const manifest = JSON.parse(fs.readFileSync(path.join(kit, 'manifest.json'), 'utf8'));
fs.mkdirSync(out, { recursive: true });
for (const s of manifest.streams.filter((x) => !(x.args || []).length)) {
  const ds = frameEvents(events(qc.splitDatagrams(new Uint8Array(fs.readFileSync(path.join(kit, s.datagrams))))), key).flat();
  const parts = [];
  for (const d of ds) { const h = Buffer.alloc(4); h.writeUInt32LE(d.length); parts.push(h, Buffer.from(d)); }
  fs.writeFileSync(path.join(out, `${s.name}.bin`), Buffer.concat(parts));
  process.stdout.write(`${s.name} ${s.schema}\n`);
}
