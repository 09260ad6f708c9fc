// The cost of a datagram's check: SipHash-2-4 (keyed, section 17) against CRC-32C, verifying a
// 1,200-byte datagram and a 20-byte reply as the decoder does (its own check objects), median of
// repeats.   node support/bench_mac.mjs
import * as qc from '../quantcodec.mjs';

const schema = qc.Schema.fromJSON('{"name":"B","fields":[{"name":"on","codec":{"kind":"Bool"}}]}');
const key = Uint8Array.from({ length: 16 }, (_, i) => i);
function checks(k) {
  const dec = new qc.SnapshotDecoder(schema, { key: k });
  // a hello adopted (its bytes do not matter here): the stream's checks exist from then on
  dec._adopt({ fingerprint: schema.fingerprint, history: 64, predict: true, maxDatagram: 1200, streamId: 1n, started: 1n });
  return dec;
}
function median(xs) { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; }
function time(check, d, inner) {
  const runs = [];
  let sink = 0;
  for (let r = 0; r < 41; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < inner; i++) sink += check.holds(d, d.length) ? 1 : 0;
    runs.push(Number(process.hrtime.bigint() - t0) / inner);
  }
  if (sink < 0) console.log(sink);
  return median(runs);
}
for (const [name, k] of [['SipHash-2-4', key], ['CRC-32C', null]]) {
  const dec = checks(k);
  for (const [what, n, check, inner] of [['1,200-byte datagram', 1200, dec.checkP, 20000], ['20-byte reply', 20 + (k ? 4 : 0), dec.checkR, 500000]]) {
    const d = Uint8Array.from({ length: n }, (_, i) => (i * 7) & 0xff);
    check.seal(d, n - check.T);
    if (!check.holds(d, n)) throw new Error('seal/holds disagree');
    time(check, d, inner);                       // warm-up
    console.log(`${name.padEnd(12)} ${what.padEnd(20)} ${time(check, d, inner).toFixed(1).padStart(8)} ns`);
  }
}
