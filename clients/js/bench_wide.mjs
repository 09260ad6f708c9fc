// Decode speed of schemas too large for one compiled function (their fields read in parts:
// src/fastpath.mjs) against the interpreted path and the Python package, in one run:
//   node clients/js/bench_wide.mjs [--python PYTHON] [--rounds 5] [--passes 25] [--entities 500] [--ticks 300]
// For each schema of support/wide_stream.py (wide: 19 fields, scalars: 40), its stream as the
// Python encoder makes it (30% of the entities moving a tick, acks 6 ticks late, loss, fragments
// of 1,200 bytes); then rounds, each: Python decodes the whole stream `passes` times (a new
// decoder each pass), then a new node process with the compiled reader, then one with the
// interpreted path (the reader set to null). A side's figure in a round is the median of its
// passes (the first ones warm up), the table's the medians of the rounds: milliseconds a pass.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as qc from './quantcodec.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const median = (a) => { const s = [...a].sort((x, y) => x - y); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

if (args[0] === '--child') {         // node bench_wide.mjs --child DIR NAME compiled|interpreted PASSES
  const [, dir, name, mode, passes] = args;
  const schema = qc.Schema.fromJSON(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8'));
  const ds = qc.splitDatagrams(new Uint8Array(fs.readFileSync(path.join(dir, `${name}.bin`))));
  const times = [];
  let parts = null;
  for (let p = 0; p < Number(passes); p++) {
    const dec = new qc.SnapshotDecoder(schema);
    if (mode === 'interpreted') dec.coder.entityGen = null;
    parts = dec.coder.entityGen === null ? null : dec.coder.entityGen.parts.length;
    const t0 = process.hrtime.bigint();
    for (const d of ds) dec.decode(d);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  console.log(JSON.stringify({ ms: median(times), parts }));
  process.exit(0);
}

const USAGE = 'usage: node clients/js/bench_wide.mjs [--python PYTHON] [--rounds 5] [--passes 25] [--entities 500] [--ticks 300]\n' +
  '  PYTHON: a Python with the quantcodec package installed (default: $QC_PYTHON, else the repository\'s .venv, else python3)';
const NAMES = ['--python', '--rounds', '--passes', '--entities', '--ticks'];
if (args.includes('--help') || args.includes('-h')) { console.log(USAGE); process.exit(0); }
for (let i = 0; i < args.length; i += 2) {
  if (!NAMES.includes(args[i]) || i + 1 >= args.length) {
    console.error(`bench_wide.mjs: ${NAMES.includes(args[i]) ? `${args[i]} needs a value` : `unknown argument ${args[i]}`}\n${USAGE}`);
    process.exit(2);
  }
}
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const REPO_VENV = path.resolve(HERE, '..', '..', '.venv', 'bin', 'python');
const PY = opt('--python', process.env.QC_PYTHON || (fs.existsSync(REPO_VENV) ? REPO_VENV : 'python3'));
const count = (name, dflt) => {
  const v = opt(name, dflt);
  if (!/^[1-9]\d*$/.test(v)) { console.error(`bench_wide.mjs: ${name} takes a whole number above 0, not ${v}\n${USAGE}`); process.exit(2); }
  return v;
};
const ROUNDS = Number(count('--rounds', '5')), PASSES = count('--passes', '25');
const ENTITIES = count('--entities', '500'), TICKS = count('--ticks', '300');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-js-wide-'));
const fail = (msg) => { console.error(`bench_wide.mjs: ${msg}`); fs.rmSync(dir, { recursive: true, force: true }); process.exit(2); };
const run = (cmd, argv) => {
  const r = spawnSync(cmd, argv, { cwd: os.tmpdir(), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (r.error) fail(`cannot run ${cmd}: ${r.error.message}`);
  if (r.status !== 0) fail(`${cmd} ${argv.join(' ')} failed (exit ${r.status}; its message above)`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
};
try {
  console.log(`${ENTITIES} entities, ${TICKS} ticks (support/wide_stream.py); ms a pass of the whole stream, medians of ${PASSES} passes, then of ${ROUNDS} alternated rounds; node ${process.version}`);
  console.log('schema   fields  parts | python ms   parts ms  interpreted ms | parts/py  interpreted/py');
  for (const name of ['wide', 'scalars']) {
    const py = [], cp = [], ip = [];
    let parts = null;
    const stream = [path.join(HERE, 'support', 'wide_stream.py'), dir, '--schema', name, '--entities', ENTITIES, '--ticks', TICKS];
    for (let k = 0; k < ROUNDS; k++) {
      py.push(run(PY, [...stream, '--time', PASSES]).ms);
      const c = run(process.execPath, [fileURLToPath(import.meta.url), '--child', dir, name, 'compiled', PASSES]);
      parts = c.parts;
      cp.push(c.ms);
      ip.push(run(process.execPath, [fileURLToPath(import.meta.url), '--child', dir, name, 'interpreted', PASSES]).ms);
    }
    const nf = qc.Schema.fromJSON(fs.readFileSync(path.join(dir, `${name}.json`), 'utf8')).fields.length;
    const [p, c, i] = [median(py), median(cp), median(ip)];
    console.log(`${name.padEnd(8)} ${String(nf).padStart(6)} ${String(parts).padStart(6)} | ${p.toFixed(1).padStart(9)} ${c.toFixed(1).padStart(10)} ${i.toFixed(1).padStart(15)} | ${(c / p).toFixed(2).padStart(7)}x ${(i / p).toFixed(2).padStart(14)}x`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
