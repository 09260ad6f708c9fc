// Decode speed of the JavaScript client against the Python library, in one run:
//   node clients/js/bench.mjs [--rounds 15] [--number 1000] [--python .venv/bin/python] [--also DIR/quantcodec.mjs]
// The bench scene (1000 bodies, bench/bench_snapshot.py's ticks: 280 mostly at rest, 150 a pile
// settling, 60 everything moving; acks 6 ticks late, full history) is made by Python
// (support/bench_peer.py); both decoders reach the same state from the same datagrams, then the
// last packet's decode is timed on each side in alternated rounds (Python, JS, Python, ...), each
// round the mean of `number` calls; the figures are the medians of the rounds, in elapsed time
// and in user CPU time (steadier on a machine shared with other work). As in
// bench_snapshot.py the decode is repeated on one datagram (a duplicate after the first: decoded
// in full, compared with the held snapshot and dropped). --also times another copy of the client
// (e.g. an older one, `git archive REV clients/js | tar -x -C /tmp/old`) in the same rounds.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import * as qc from './quantcodec.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const USAGE = 'usage: node clients/js/bench.mjs [--rounds 15] [--number 1000] [--python PYTHON] [--also DIR/quantcodec.mjs]\n' +
  '  PYTHON: a Python with the quantcodec package installed (default: $QC_PYTHON, else the repository\'s .venv, else python3)';
if (args.includes('--help') || args.includes('-h')) { console.log(USAGE); process.exit(0); }
for (let i = 0; i < args.length; i += 2) {
  if (!['--rounds', '--number', '--python', '--also'].includes(args[i]) || i + 1 >= args.length) {
    console.error(`bench.mjs: ${i + 1 >= args.length && args[i].startsWith('--') ? `${args[i]} needs a value` : `unknown argument ${args[i]}`}\n${USAGE}`);
    process.exit(2);
  }
}
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const ROUNDS = Number(opt('--rounds', 15));
const ALSO = opt('--also', null);
const NUMBER = Number(opt('--number', 1000));   // (user CPU time is counted in steps: enough calls a round)
// the Python with the package installed: --python, else $QC_PYTHON, else the repository's .venv
// (as the root README installs it), else python3 on the PATH
const REPO_VENV = path.resolve(HERE, '..', '..', '.venv', 'bin', 'python');
const PY = opt('--python', process.env.QC_PYTHON || (fs.existsSync(REPO_VENV) ? REPO_VENV : 'python3'));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-js-bench-'));
const py = spawn(PY, [path.join(HERE, 'support', 'bench_peer.py'), dir], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = readline.createInterface({ input: py.stdout });
const it = lines[Symbol.asyncIterator]();
const next = async () => {
  const r = await it.next();
  if (r.done) { console.error(`bench.mjs: the Python side (${PY} support/bench_peer.py) ended: see its message above`); process.exit(2); }
  return r.value;
};

const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const info = JSON.parse(await next());
const other = ALSO === null ? null : await import(path.resolve(ALSO));
function decoderOf(lib, c) {
  const schema = lib.Schema.fromJSON(fs.readFileSync(path.join(dir, 'schema.json'), 'utf8'));
  const ds = lib.splitDatagrams(new Uint8Array(fs.readFileSync(path.join(dir, c.file))));
  const dec = new lib.SnapshotDecoder(schema);
  let view = null;
  for (const d of ds) view = dec.decode(d);
  if (view.seq !== c.seq || String(view.ids.slice(0, 3)) !== String(c.ids)) throw new Error(`tick ${c.tick}: JS decoded another snapshot`);
  return { dec, last: ds[ds.length - 1] };
}
const cases = info.map((c) => ({ ...c, ...decoderOf(qc, c), also: other && decoderOf(other, c), py: [], js: [], js2: [] }));

function timeJs({ dec, last }) {
  const c0 = process.cpuUsage(), t0 = process.hrtime.bigint();
  for (let i = 0; i < NUMBER; i++) dec.decode(last);
  const t1 = process.hrtime.bigint(), c1 = process.cpuUsage(c0);
  return [Number(t1 - t0) / 1e3 / NUMBER, c1.user / NUMBER];
}
for (const c of cases) for (let i = 0; i < 3; i++) { timeJs(c); if (c.also) timeJs(c.also); }     // warm the JIT
for (let r = 0; r < ROUNDS; r++) {
  for (const c of cases) {
    py.stdin.write(`${c.tick} ${NUMBER}\n`);
    c.py.push((await next()).split(' ').map(Number));
    c.js.push(timeJs(c));
    if (c.also) c.js2.push(timeJs(c.also));
  }
}
py.stdin.end();
fs.rmSync(dir, { recursive: true, force: true });

console.log(`1000 bodies, bench scene schema; decode of one delta datagram (acks 6 ticks late); medians of ${ROUNDS} alternated rounds of ${NUMBER} calls; node ${process.version}`);
console.log('wall: elapsed time; cpu: the process\'s user CPU time (steadier on a loaded machine)');
// one table: Python's times against one JavaScript client's (key: its rounds' times in each case)
function table(name, key) {
  console.log(`tick  changed  bytes | python wall ${(name + ' wall').padStart(10)} ${(name + '/py').padStart(9)}  | python cpu ${(name + ' cpu').padStart(10)} ${(name + '/py').padStart(9)}`);
  for (const c of cases) {
    const pw = median(c.py.map((x) => x[0])), jw = median(c[key].map((x) => x[0]));
    const pc = median(c.py.map((x) => x[1])), jc = median(c[key].map((x) => x[1]));
    const f = (x) => x.toFixed(1).padStart(10);
    console.log(`${String(c.tick).padStart(4)} ${(c.changed * 100).toFixed(1).padStart(7)}% ${String(c.bytes).padStart(6)} | ${f(pw)} ${f(jw)} ${(jw / pw).toFixed(2).padStart(9)}x | ${f(pc)} ${f(jc)} ${(jc / pc).toFixed(2).padStart(9)}x`);
  }
}
table('js', 'js');
if (other) {
  console.log(`--also ${ALSO}, in the same rounds:`);
  table('also', 'js2');
}
