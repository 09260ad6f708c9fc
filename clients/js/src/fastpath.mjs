// src/fastpath.mjs: the compiled fast path of the delta decoder: per schema, the changed entities' fields unrolled
// with the slot table's classes, widths, masks and validity tests as constants. It writes no rule
// of its own: it splices the bodies of the one Exp-Golomb reader (bits.mjs, readEG) and of the
// delta rules (rules.mjs) as they are written there, with their parameters bound to the slot's
// constants, so that the JIT sees one flat loop (calls to them would exhaust its inlining budget).
import { DecodeError, P2 } from './util.mjs';
import { readEG } from './bits.mjs';
import { C_FLAG, C_ORD, C_SMAG, C_QUAT, C_UVEC, C_ABS, extrapolate, addZz, quatSurelyValid } from './rules.mjs';

/**
 * The body of `fn` as a block (labels and names numbered by `id`): its parameters bound to `args` (source expressions, each evaluated
 * once, first), each `return X;` an assignment of X to `out` that leaves the block. Null when
 * fn's source is not plain (a minifier's rewrite, a nested function): no compiled path then.
 */
export function splice(fn, args, out, id, cursor = null) {
  const m = /^function\s*[\w$]*\s*\(([^)]*)\)\s*\{([\s\S]*)\}$/.exec(fn.toString());
  if (m === null) return null;
  const params = m[1].split(',').map((x) => x.trim());
  if (params.length !== args.length || params.some((x) => !/^[\w$]+$/.test(x))) return null;
  const label = `L${id}$`;
  const res = `R${id}$`;        // (the body may declare a name `out` is: the result leaves by res, of out's type)
  let body = m[2].replace(/\/\/[^\n]*/g, '').replace(/\breturn\s+([^;]+);/g, (_, x) => `{ ${res} = (${x}); break ${label}; }`);
  if (/\breturn\b|\bfunction\b|=>/.test(body)) return null;
  if (cursor !== null) {
    body = localCursor(body, cursor);
    if (body === null) return null;
  }
  const tmp = args.map((a, i) => `A${id}$${i} = ${a}`).join(', ');
  const bind = params.map((p, i) => `${p} = A${id}$${i}`).join(', ');
  return `{ const ${tmp}; let ${res} = ${out}; ${label}: { const ${bind};${body}} ${out} = ${res}; }`;
}

/**
 * The body of a bit reader's rule with the reader `name` (a BitReader parameter) kept in the
 * compiled loop's locals: its position in `pos$`, its words in `W$`, its length in bits in `NB$`
 * (read once a packet, the position written back when the loop ends), so that a read is a few
 * register operations, not loads and stores of the reader's fields. A call of one of its methods
 * (the rare cases: egLong, tooWide) is given the position and gives it back. Null when the body
 * uses the reader otherwise.
 */
function localCursor(body, name) {
  const fields = { pos: 'pos$', w: 'W$', dv: 'D$', nbits: 'NB$' };
  body = body.replace(new RegExp(`\\b${name}\\.(pos|w|dv|nbits)\\b(?!\\s*\\()`, 'g'), (_, f) => fields[f]);
  body = body.replace(new RegExp(`\\b${name}\\.(\\w+)\\(([^()]*)\\)`, 'g'), (_, f, a) => `(RD$.pos = pos$, T$ = RD$.${f}(${a}), pos$ = RD$.pos, T$)`);
  return new RegExp(`\\b${name}\\b`).test(body) ? null : body;
}

/**
 * The fast path of the common schemas, compiled once per schema: readFieldFast with the slot
 * table's classes, widths, masks and validity tests as constants, unrolled (no dispatch per slot,
 * no table loads), for schemas whose slots are flags, scalar components under 32 bits, exact
 * codes and quaternions of at most 10 bits a component (the pose of a game entity); a schema too
 * large for one function gets its fields read in parts (below). Null for any other schema
 * (readFieldFast serves it), or where compiling code is not allowed (a page whose
 * Content-Security-Policy forbids it): the same results either way. For the tests: `pairs`
 * false reads one entity a call, `split` N > 0 puts at most N fields in a part.
 */
export function makeEntityReader(coder, { pairs = true, split = 0 } = {}) {
  const { fields, slots, cls, cb, slotComp0: c0, signedS, vkind, vlim, sbits, cbitsS, F } = coder;
  if (!coder.allFast) return null;
  for (let s = 0; s < slots.length; s++) {
    const k = cls[s];
    if (k === C_UVEC) return null;
    if ((k === C_ORD || k === C_SMAG) && cb[c0[s]] >= 32) return null;
    if (k === C_QUAT && cbitsS[s] > 10) return null;
  }
  const L = [];
  let plain = true, nsp = 0;
  const sp = (fn, args, out, cursor = null) => { const t = splice(fn, args, out, nsp++, cursor); if (t === null) plain = false; return t; };
  // the spliced rules: EG(k, b) of component c into u; the reference, the difference, the test
  const eg = (c, b, alt) => sp(readEG, ['r', `k${c}`, b, alt], 'u', 'r');
  const ext = (x, y, b, out) => sp(extrapolate, [x, y, b, 'NUM', 'DEN'], out);
  const zz = (x, b, out) => sp(addZz, [x, 'u', b], out);
  // a call that reads on with the reader: given the loop's position, and giving it back
  const sync = (call) => `(RD$.pos = pos$, T$ = ${call}, pos$ = RD$.pos, T$)`;
  // one bit (BitReader.read1) at the loop's position (W$: the reader's words, little-endian hosts;
  // others read by the reader)
  const READ1 = `(pos$ < NB$ && W$ !== null ? (W$[pos$ >>> 5] >>> (pos$++ & 31)) & 1 : ${sync('r.read1()')})`;
  // the new code stored, and compared with the base's as stored (an Int32Array wraps: v | 0)
  const store = (s, base) => `codes[oo + ${s}] = v; if (${coder.narrow ? '(v | 0)' : 'v'} !== ${base}) diff = true;`;
  const slotSrc = (s, fd) => {
    const k = cls[s];
    if (k === C_ORD || k === C_SMAG) {
      const c = c0[s], b = cb[c], mask = 2 ** b - 1, half = 2 ** (b - 1), sm = k === C_SMAG;
      L.push(eg(c, b, false), `Bs = bcodes[bo + ${s}]; B = Bs & ${mask};`);
      if (sm) L.push(`if (B >= ${half}) B ^= ${half - 1};`);
      L.push(`ref = B; if (p${c} && po >= 0) { P = pcodes[po + ${s}] & ${mask};`);
      if (sm) L.push(`if (P >= ${half}) P ^= ${half - 1};`);
      L.push(ext('B', 'P', b, 'ref'), '}', zz('ref', b, 'w'));
      if (sm) L.push(`if (w >= ${half}) w ^= ${half - 1};`);
      L.push(signedS[s] ? `v = w >= ${half} ? w - ${mask + 1} : w;` : 'v = w;');
    } else if (k === C_ABS) {
      L.push(fd.flip ? `v = bcodes[bo + ${s}] ^ 1;` : `v = ${sync(`r.read(${sbits[s]})`)};`);
    } else {     // C_QUAT, at most 10 bits a component: the whole code in 32 bits
      const b = cbitsS[s], c = c0[s], mask = 2 ** b - 1;
      // component t of the three: its reference (extrapolated when pred has the same index), then u
      const comp = (q, pq, t) => [`ref = ${q}; if (same && p${c + t}) {`, ext(q, pq, b, 'ref'), '}', zz('ref', b, q)];
      L.push(`B = bcodes[bo + ${s}]; qc = B & ${mask}; qb = (B >>> ${b}) & ${mask}; qa = (B >>> ${2 * b}) & ${mask}; qi = B >>> ${3 * b};`);
      L.push(eg(c, b, true));
      L.push('if (u >= 0) {');
      L.push(`P = po >= 0 ? pcodes[po + ${s}] : 0; same = po >= 0 && (P >>> ${3 * b}) === qi;`);
      L.push(`if (same) { pa = (P >>> ${2 * b}) & ${mask}; pb = (P >>> ${b}) & ${mask}; pc = P & ${mask}; }`);
      L.push(...comp('qa', 'pa', 0), eg(c + 1, b, false), ...comp('qb', 'pb', 1), eg(c + 2, b, false), ...comp('qc', 'pc', 2));
      L.push(`v = ((((qi << ${b}) | qa) << ${b} | qb) << ${b} | qc) >>> 0;`);
      if (vkind[s] === 3 && coder.qsq[s] !== null) {
        // the integer test (quatSurelyValid) first, the exact one (quatValidNum) near the boundary
        L.push(sp(quatSurelyValid, [`Q${s}`, 'qa', 'qb', 'qc'], 'sure'));
        L.push(`if (!sure && !self.quatValidNum(${s}, v)) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$));`);
        L.push(`} else { v = (self.entityAt(bids, bi), ${sync(`self.quatEscape(r, ${s}, qi, qa, qb, qc)`)}); if (!self.quatValidNum(${s}, v)) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$)); }`);
      } else {
        L.push(`} else v = (self.entityAt(bids, bi), ${sync(`self.quatEscape(r, ${s}, qi, qa, qb, qc)`)});`);
        if (vkind[s] === 3) L.push(`if (!self.quatValidNum(${s}, v)) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$));`);
      }
      L.push(store(s, 'B'));
      return;
    }
    const vk = vkind[s];
    if (vk === 1) L.push(`if (v === ${vlim[s]}) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$));`);
    else if (vk === 2) L.push(`if (v > ${vlim[s]}) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$));`);
    else if (vk === 3) L.push(`if (!self.quatValidNum(${s}, v)) (self.entityAt(bids, bi), self.invalidCode(${s}, v, pos$));`);
    L.push(store(s, k === C_ABS ? `bcodes[bo + ${s}]` : 'Bs'));
  };
  const fieldSrc = [];       // each field's block
  fields.forEach((fd, f) => {
    const at = L.length;
    L.push(`if (fch[${f} * C + e] !== 0) { anyField = true; diff = false;`);
    let s = fd.s0;
    let close = 0;
    while (s < fd.s1) {
      if (cls[s] === C_FLAG) {
        const span = slots[s].span;
        L.push(fd.implied ? `v = bcodes[bo + ${s}] === 0 ? 1 : ${READ1};` : `v = ${READ1};`);
        L.push(`codes[oo + ${s}] = v; if (v !== bcodes[bo + ${s}]) diff = true;`);
        L.push('if (v === 0) {');
        for (let t = s + 1; t <= s + span; t++) L.push(`if (bcodes[bo + ${t}] !== 0) diff = true; codes[oo + ${t}] = 0;`);
        L.push('} else {');
        close++;
        s++;
        continue;     // the governed slots follow, inside the else
      }
      // (each slot's values its block's own: no variable carried from slot to slot or entity to
      // entity, which the JIT would keep as tagged values)
      L.push('{ let v = 0, u = 0, B = 0, Bs = 0, P = 0, ref = 0, w = 0, qa = 0, qb = 0, qc = 0, qi = 0, pa = 0, pb = 0, pc = 0, same = false, sure = false;');
      slotSrc(s, fd);
      L.push('}');
      s++;
    }
    L.push('}'.repeat(close));
    L.push(`if (!diff) { self.entityAt(bids, bi); self.unchangedField(${f}, pos$); } }`);
    fieldSrc.push(L.slice(at).join('\n'));
  });
  const S = slots.length, nc = coder.comps.length;
  // the new row (codes[oo..]) equal to row `o` of `arr`, slot by slot
  const rowEq = (arr, o) => Array.from({ length: S }, (_, t) => `codes[oo + ${t}] === ${arr}[${o} + ${t}]`).join(' && ');
  // the packet's parameters as constants of the loop: k (kk) and predicted (pp) of each component
  const params = [];
  for (let c = 0; c < nc; c++) params.push(`k${c} = self.kk[${c}], p${c} = self.pp[${c}] !== 0`);
  const quats = [];
  for (let s = 0; s < S; s++) if (cls[s] === C_QUAT && coder.qsq[s] !== null) quats.push(`Q${s} = self.qsq[${s}]`);
  // the e-th changed entity of the packet: kept rank chg[e], base row keptIdx (or the rank),
  // output row outOfKept (or the rank), pred row predRow (or none); it gets a new row version
  // (++rv), but a changed row equal to its pred row takes pred's (joinLineage), else one equal to
  // its row in jc (the decoder's latest, the same ids; or null) its version in jv (joinLatest)
  const entityHead = `const a = chg[e], bi = keptIdx !== null ? keptIdx[a] : a, oi = outOfKept !== null ? outOfKept[a] : a;
const pr = predRow !== null ? predRow[a] : -1;
const bo = bi * ${S}, oo = oi * ${S}, po = pr >= 0 ? pr * ${S} : -1;
anyField = false;
ver[oi] = ++rv;`;
  // (pos: where the reader is, pos$ in a function that reads fields, r.pos in one that calls parts)
  const entityTail = (pos) => `if (!anyField) { self.entityAt(bids, bi); throw new DecodeError(self.at('marked changed') + ', but none of its fields is (at bit ' + ${pos} + ')'); }
if (po >= 0 && ${rowEq('pcodes', 'po')}) ver[oi] = pver[pr];
else if (jc !== null && ${rowEq('jc', 'oo')}) ver[oi] = jv[oi];`;
  const entity = `${entityHead}\n${fieldSrc.join('\n')}\n${entityTail('pos$')}`;
  // what a function reading fields needs: the packet's parameters its fields use (names: each
  // field's k0, p0, Q3, ... in fieldNames), the reader's position in locals
  const decls = [...params.flatMap((x) => x.split(', ')), ...quats];
  const declOf = new Map(decls.map((d) => [d.slice(0, d.indexOf(' ')), d]));
  const fieldNames = fieldSrc.map((src) => new Set((src.match(/\b[kpQ]\d+\b/g) || []).filter((x) => declOf.has(x))));
  const locals = (names) => {
    const ds = decls.filter((d) => names.has(d.slice(0, d.indexOf(' '))));
    return `${ds.length ? `const ${ds.join(', ')};` : ''}
const RD$ = r, W$ = r.w, D$ = r.dv, NB$ = r.nbits, NUM = num | 0, DEN = den | 0;   // (num, den: 1..32767)
let pos$ = r.pos, T$ = 0;
let anyField = false, diff = false, v = 0, u = 0, B = 0, Bs = 0, P = 0, ref = 0, w = 0, qa = 0, qb = 0, qc = 0, qi = 0, pa = 0, pb = 0, pc = 0, same = false, sure = false;`;
  };
  // a call reads the changed entities e0 and e0 + 1 (if there is one), written out twice: no loop
  // (runEntities, below, says why), half the calls of one an entity (6-7% faster at tick 60 of
  // bench.mjs); one an entity where two would be too large (below)
  const fnOf = (pair) => `return function readChangedGen(self, r, C, e0, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, pcodes, pver, ver, num, den, bids, rv, jc, jv) {
${locals(new Set(fieldNames.flatMap((x) => [...x])))}
{ const e = e0;
${entity}
}
${pair ? `if (e0 + 1 < C) { const e = e0 + 1;\n${entity}\n}` : ''}
RD$.pos = pos$;
return rv; };`;
  if (!plain) return null;
  // V8 optimizes no function of more than 61,440 bytes of bytecode (--max-optimized-bytecode-size);
  // a larger reader would run in the baseline tier for good, far slower than the interpreted path
  // (Node 20, 500 entities changing every tick: 19 fields, 104,278 characters of source, 8,122
  // ns an entity against the interpreted path's 729; 40 scalar fields 14,339). The source takes
  // about 1.2 characters a byte of bytecode whatever the fields' kinds: readers of 66,095
  // characters (vectors), 68,621 (quaternions) and 70,612 (scalars) were optimized, of 73,204
  // (scalars), 73,571 (mixed) and more not; MAX_SOURCE leaves a margin below.
  let step = pairs ? 2 : 1;
  let body = fnOf(step === 2);
  if (step === 2 && body.length > MAX_SOURCE) {
    step = 1;
    body = fnOf(false);
  }
  if (split === 0 && body.length <= MAX_SOURCE) return compiled(body, [], step);
  // Too large for one function (or split, for the tests: at most `split` fields a part): the
  // fields in parts, each a function reading its fields of one entity (the reader's position
  // handed on through it), called in turn by a small one for the entity (19 and 40 fields: two
  // parts, 1.8-2 times Python's time where the interpreted path took 3-3.3; bench_wide.mjs)
  const partOf = (fs, names) => `return function readFieldsGen(self, r, C, e, fch, bcodes, codes, pcodes, bo, oo, po, num, den, bids, bi) {
${locals(names)}
${fs.map((f) => fieldSrc[f]).join('\n')}
RD$.pos = pos$;
return anyField; };`;
  // the fields taken in order while the part's source stays within MAX_SOURCE, its length
  // counted as it grows (building each candidate would cost the square of the schema's size):
  // a field adds its block and a newline, each parameter new to the part its declaration and
  // a comma; the margin covers `const ;` (the check below is exact)
  const empty = partOf([], new Set()).length + 8;
  const cost = (f, names) => [...fieldNames[f]].reduce((n, x) => n + (names.has(x) ? 0 : declOf.get(x).length + 2), fieldSrc[f].length + 1);
  const parts = [];
  let cur = [], names = new Set(), len = empty;
  fieldSrc.forEach((_, f) => {
    if (cur.length && (split ? cur.length >= split : len + cost(f, names) > MAX_SOURCE)) {
      parts.push(partOf(cur, names));
      [cur, names, len] = [[], new Set(), empty];
    }
    len += cost(f, names);
    cur.push(f);
    for (const x of fieldNames[f]) names.add(x);
  });
  parts.push(partOf(cur, names));
  if (parts.some((p) => p.length > MAX_SOURCE)) return null;     // (one field too large alone)
  const driver = `const ${parts.map((_, i) => `G${i} = G[${i}]`).join(', ')};
return function readChangedParts(self, r, C, e0, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, pcodes, pver, ver, num, den, bids, rv, jc, jv) {
let anyField = false;
const e = e0;
${entityHead}
${parts.map((_, i) => `if (G${i}(self, r, C, e, fch, bcodes, codes, pcodes, bo, oo, po, num, den, bids, bi)) anyField = true;`).join('\n')}
${entityTail('r.pos')}
return rv; };`;
  return driver.length > MAX_SOURCE ? null : compiled(driver, parts, 1);
}

/**
 * The reader of `body` (its parts' sources in `parts`, given to it as G), compiled once per slot
 * table: decoders of one schema share it and its optimization. Null if it does not compile.
 */
function compiled(body, parts, step) {
  const key = [body, ...parts].join('\0');
  let fn = ENTITY_READERS.get(key);
  if (fn === undefined) {
    try {
      const G = parts.map((p) => new Function('DecodeError', 'P2', p)(DecodeError, P2));
      fn = new Function('DecodeError', 'P2', 'G', body)(DecodeError, P2, G);
      fn.step = step;             // entities a call (runEntities)
      fn.parts = G;               // the functions of fields it calls in turn (none: its own)
    } catch (e) { fn = null; }
    ENTITY_READERS.set(key, fn);
  }
  return fn;
}
const ENTITY_READERS = new Map();
const MAX_SOURCE = 66000;      // characters of a compiled reader's source (above)

/**
 * The compiled fast path over a packet's C changed entities: one call of it for one or two
 * entities (gen.step), in this small loop, not one call for the packet with the loop inside it.
 * Node 20's V8 got such a long call stuck: while TurboFan compiled the large function (about 20
 * KB of bytecode, 50-80 ms on its thread) the call went on in the baseline tier, so V8 compiled
 * its loop for on-stack replacement too; when that landed after the optimized function's first
 * deopt (a path its warm-up had not taken), V8 took the function as queued for optimization for
 * good (its --trace-opt-verbose: "not marking ... already queued", thousands of times) and the
 * fast path ran in the baseline tier for the rest of the process: in about half the runs of
 * bench.mjs, 1.5 to 2 times slower decodes (never with --no-concurrent-osr). A function without
 * a loop is never replaced on the stack; this one is small and tiers up in a millisecond.
 */
export function runEntities(gen, self, r, C, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, pcodes, pver, ver, num, den, bids, rv, jc, jv) {
  const step = gen.step;
  for (let e = 0; e < C; e += step) rv = gen(self, r, C, e, chg, keptIdx, outOfKept, predRow, fch, bcodes, codes, pcodes, pver, ver, num, den, bids, rv, jc, jv);
  return rv;
}
