// The npm package as its users meet it: `npm pack`, the tarball installed into a fresh project
// (offline: a local tarball needs no registry), imported from Node by its name, its bin run, its
// declarations type-checked by `tsc --strict` (both by the package name and by the README's
// relative import), and bundled for a browser page by esbuild. A tool that cannot be had is a
// skip that says which (Debian: npm, node-typescript, esbuild).
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { HERE, KIT } from '../support/helpers.mjs';

const PKG = path.resolve(HERE, '..');
const has = (tool) => spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120000 });
const meta = JSON.parse(fs.readFileSync(path.join(PKG, 'package.json'), 'utf8'));

test('package.json: ESM, exports with types first, bin, files, engines', () => {
  assert.equal(meta.name, 'quantcodec');
  assert.equal(meta.type, 'module');
  assert.deepEqual(Object.keys(meta.exports['.']), ['types', 'default']);     // "types" must come first
  for (const f of [meta.exports['.'].types, meta.exports['.'].default, meta.types, meta.bin['qc-decode']]) assert.ok(fs.existsSync(path.join(PKG, f)), f);
  assert.match(fs.readFileSync(path.join(PKG, meta.bin['qc-decode']), 'utf8'), /^#!\/usr\/bin\/env node\n/);
  assert.ok(meta.engines.node);
});

const skipNpm = has('npm') ? false : 'npm is not installed (Debian: npm)';
let work = null, project = null;
const kitStream = path.join(KIT, 'streams', 'pose_clean.bin');
const kitSchema = path.join(KIT, 'schemas', 'pose.json');

test('npm pack, then npm install of the tarball into a fresh project (offline)', { skip: skipNpm }, () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-js-pkg-'));
  const out = run('npm', ['pack', '--pack-destination', work, '--offline', '--no-audit', '--no-fund', '--silent'], PKG).trim().split('\n').pop();
  const tgz = path.join(work, out);
  assert.ok(fs.existsSync(tgz), `npm pack made ${out}`);
  const listing = run('tar', ['tzf', tgz], work).split('\n').filter(Boolean).sort();
  const parts = fs.readdirSync(path.join(PKG, 'src')).filter((f) => f.endsWith('.mjs')).map((f) => `package/src/${f}`);
  assert.ok(parts.length > 0, 'the entry\'s modules under src/');
  assert.deepEqual(listing, ['package/LICENSE', 'package/README.md', 'package/bin/qc-decode.mjs', 'package/package.json', 'package/quantcodec.d.mts', 'package/quantcodec.mjs', ...parts].sort());
  project = path.join(work, 'app');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
  run('npm', ['install', `../${out}`, '--offline', '--no-audit', '--no-fund', '--silent'], project);
  assert.ok(fs.existsSync(path.join(project, 'node_modules', 'quantcodec', 'quantcodec.mjs')));
});

test('the installed package: import by name from Node, decode a kit stream, the qc-decode bin', { skip: skipNpm }, () => {
  assert.ok(project, 'installed');
  fs.writeFileSync(path.join(project, 'main.mjs'), `
import fs from 'node:fs';
import { Schema, StreamClient, Interpolator, splitDatagrams } from 'quantcodec';
const schema = Schema.fromJSON(fs.readFileSync(process.argv[2], 'utf8'));
const client = new StreamClient(schema, { nonce: 7 });
const ip = new Interpolator(schema);
let views = 0;
for (const d of splitDatagrams(new Uint8Array(fs.readFileSync(process.argv[3])))) {
  try { const v = client.receive(d); if (v !== null && ip.push(v)) views++; } catch (e) { if (e.kind === undefined) throw e; }
}
const s = ip.sample(ip.newest - 1.5);
console.log(JSON.stringify({ views, a: s.a, count: s.count }));
`);
  const r = JSON.parse(run('node', ['main.mjs', kitSchema, kitStream], project));
  assert.ok(r.views > 10 && r.count > 0, JSON.stringify(r));
  const bin = path.join(project, 'node_modules', '.bin', 'qc-decode');
  const lines = run(bin, [kitSchema, kitStream], project);
  assert.equal(lines, fs.readFileSync(path.join(KIT, 'streams', 'pose_clean.jsonl'), 'utf8'));
});

const TS_APP = `import { Schema, StreamClient, Interpolator, DecodeError, type InterpolatedSample } from 'FROM';
const schema: Schema = Schema.fromJSON('{}');
const client = new StreamClient(schema, { maxBytes: 1 << 20, key: new Uint8Array(16) });
const ip = new Interpolator(schema, { capacity: 16, maxExtrapolation: 2 });
const first: Uint8Array | null = client.reply();
export function onMessage(d: Uint8Array): void {
  try {
    const v = client.receive(d);
    if (v !== null) ip.push(v);
  } catch (e) { if (!(e instanceof DecodeError)) throw e; console.log(e.kind); }
}
const s: InterpolatedSample = ip.sample((ip.newest ?? 0) - 2);
const x: number = s.alpha;
const pos = s.columns['position'];
console.log(first, x, pos, s.values(0), ip.stats.late, client.view?.seq);
`;
const skipTsc = skipNpm || (has('tsc') ? false : 'tsc is not installed (Debian: node-typescript)');

test('tsc --strict type-checks an app importing the package by name (node16 and node resolution)', { skip: skipTsc }, () => {
  assert.ok(project, 'installed');
  fs.writeFileSync(path.join(project, 'app.mts'), TS_APP.replace('FROM', 'quantcodec'));
  fs.writeFileSync(path.join(project, 'app.ts'), TS_APP.replace('FROM', 'quantcodec'));
  run('tsc', ['--strict', '--noEmit', '--module', 'node16', '--moduleResolution', 'node16', 'app.mts'], project);
  run('tsc', ['--strict', '--noEmit', '--target', 'es2020', '--module', 'es2020', '--moduleResolution', 'node', 'app.ts'], project);
  // and a misuse is an error (the declarations are read, not any-typed)
  fs.writeFileSync(path.join(project, 'bad.mts'), "import { Interpolator } from 'quantcodec';\nconst n: string = new Interpolator(null as any).sample(0).alpha;\n");
  const r = spawnSync('tsc', ['--strict', '--noEmit', '--module', 'node16', '--moduleResolution', 'node16', 'bad.mts'], { cwd: project, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /TS2322/);
});

test("tsc --strict type-checks the README's TypeScript client (es2020, node16 and nodenext)", { skip: skipTsc }, () => {
  assert.ok(project, 'installed');
  const readme = fs.readFileSync(path.join(PKG, 'README.md'), 'utf8');
  const blocks = readme.split('```ts\n').slice(1).map((b) => b.split('```\n')[0]);
  assert.equal(blocks.length, 1, 'one TypeScript block in the README');
  assert.match(blocks[0], /^import \{[^}]*\} from 'quantcodec';\n/);
  fs.writeFileSync(path.join(project, 'readme.mts'), blocks[0]);
  for (const m of ['node16', 'nodenext']) {
    const r = spawnSync('tsc', ['--strict', '--noEmit', '--target', 'es2020', '--lib', 'es2020,dom', '--module', m, '--moduleResolution', m, 'readme.mts'], { cwd: project, encoding: 'utf8' });
    assert.equal(r.status, 0, `tsc --module ${m}: ${r.stdout}${r.stderr}`);
  }
  // without the casts, the columns' union type is an error (what the README says it needs them for)
  fs.writeFileSync(path.join(project, 'nocast.mts'), blocks[0].replaceAll(' as Float64Array', ''));
  const r = spawnSync('tsc', ['--strict', '--noEmit', '--target', 'es2020', '--lib', 'es2020,dom', '--module', 'node16', '--moduleResolution', 'node16', 'nocast.mts'], { cwd: project, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /TS2339: Property 'subarray' does not exist/);
});

test("tsc --strict resolves the README's relative import './quantcodec.mjs' (quantcodec.d.mts)", { skip: skipTsc }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'qc-js-rel-'));
  try {
    for (const f of ['quantcodec.mjs', 'quantcodec.d.mts']) fs.copyFileSync(path.join(PKG, f), path.join(dir, f));
    fs.cpSync(path.join(PKG, 'src'), path.join(dir, 'src'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'app.mts'), TS_APP.replace('FROM', './quantcodec.mjs'));
    run('tsc', ['--strict', '--noEmit', '--module', 'node16', '--moduleResolution', 'node16', 'app.mts'], dir);
  } finally { fs.rmSync(dir, { recursive: true, force: true }); }
});

const skipBundle = skipNpm || (has('esbuild') ? false : 'esbuild is not installed (Debian: esbuild)');

test('esbuild bundles the package for a browser page (no Node built-ins); the bundle decodes a kit stream', { skip: skipBundle }, async () => {
  assert.ok(project, 'installed');
  fs.writeFileSync(path.join(project, 'page.mjs'), `
import { Schema, SnapshotDecoder, splitDatagrams, runnerLine } from 'quantcodec';
export function decodeAll(schemaText, bytes) {
  const dec = new SnapshotDecoder(Schema.fromJSON(schemaText));
  return splitDatagrams(bytes).map((d) => runnerLine(dec, d) + '\\n').join('');
}
if (typeof document !== 'undefined') document.title = 'quantcodec ' + typeof decodeAll;
`);
  fs.writeFileSync(path.join(project, 'index.html'), '<!doctype html><script type="module" src="bundle.js"></script>\n');
  run('esbuild', ['page.mjs', '--bundle', '--format=esm', '--platform=browser', '--target=es2020', '--outfile=bundle.js', '--log-level=warning'], project);
  const js = fs.readFileSync(path.join(project, 'bundle.js'), 'utf8');
  assert.doesNotMatch(js, /from ['"]node:|require\(/);
  const { decodeAll } = await import(path.join(project, 'bundle.js'));
  const got = decodeAll(fs.readFileSync(kitSchema, 'utf8'), new Uint8Array(fs.readFileSync(kitStream)));
  assert.equal(got, fs.readFileSync(path.join(KIT, 'streams', 'pose_clean.jsonl'), 'utf8'));
});

test('clean up the package project', { skip: skipNpm }, () => { if (work) fs.rmSync(work, { recursive: true, force: true }); });
