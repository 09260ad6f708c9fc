// Three ways to read a run of Exp-Golomb codes (k = 3, LSB-first, the wire's order) in V8, the
// question behind readEG's peek (README "Speed"): the 32 bits at the position from two
// Uint32Array words; from one unaligned DataView load (at least 25 bits); or a register-resident
// 64-bit buffer (two 32-bit halves) refilled a word at a time. The same 200,000 codes each way,
// ns a code, median of 15 alternated repeats.   node support/bench_egpeek.mjs
const N = 200000, K = 3;

// the codes: small values, as a moving body's differences are
let seed = 37;
const rand = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed / 4294967296; };
const bits = [];
const put = (v, n) => { for (let i = 0; i < n; i++) bits.push((v >>> i) & 1); };
let want = 0;
for (let i = 0; i < N; i++) {
  const u = Math.floor(rand() ** 3 * 2000), q = (u >>> K) + 1, e = 31 - Math.clz32(q);
  put(0, e); put(1, 1); put(q - (1 << e), e); put(u & ((1 << K) - 1), K);
  want = (want + u) | 0;
}
const NB = bits.length;
const W = new Uint32Array(((NB + 31) >> 5) + 4);          // (padded, as BitReader pads)
for (let i = 0; i < NB; i++) if (bits[i]) W[i >>> 5] |= 1 << (i & 31);
const D = new DataView(W.buffer);

// (each returns the sum of the values; a code is valid here, the checks are the decoder's)
const value = (x, e) => ((((1 << e) | ((x >>> (e + 1)) & ((1 << e) - 1))) - 1) << K) | ((x >>> (2 * e + 1)) & ((1 << K) - 1));
function twoWords() {
  let pos = 0, s = 0;
  for (let i = 0; i < N; i++) {
    const p = pos, w = p >>> 5, o = p & 31;
    const x = o === 0 ? W[w] : ((W[w] >>> o) | (W[w + 1] << (32 - o))) >>> 0;
    const e = 31 - Math.clz32(x & -x), n = 2 * e + 1 + K;
    if (x === 0 || n >= 32 || p + n > NB) throw new Error('bad code');
    s = (s + value(x, e)) | 0;
    pos = p + n;
  }
  return s;
}
function dataView() {
  let pos = 0, s = 0;
  for (let i = 0; i < N; i++) {
    const p = pos, x = D.getUint32(p >>> 3, true) >>> (p & 7);
    const e = 31 - Math.clz32(x & -x), n = 2 * e + 1 + K;
    if (x === 0 || n > 25 || p + n > NB) throw new Error('bad code');
    s = (s + value(x, e)) | 0;
    pos = p + n;
  }
  return s;
}
function buffer() {
  let lo = W[0], hi = W[1], cnt = 64, next = 2, pos = 0, s = 0;
  for (let i = 0; i < N; i++) {
    const x = lo;
    const e = 31 - Math.clz32(x & -x), n = 2 * e + 1 + K;
    if (x === 0 || n >= 32 || pos + n > NB) throw new Error('bad code');
    s = (s + value(x, e)) | 0;
    pos += n;
    lo = (lo >>> n) | (hi << (32 - n)); hi >>>= n; cnt -= n;
    if (cnt <= 32) {                                   // (refill: the next word above the cnt bits)
      const w = W[next++];
      if (cnt === 32) hi = w; else { lo |= w << cnt; hi = w >>> (32 - cnt); }
      cnt += 32;
    }
  }
  return s;
}

const ways = { 'two Uint32Array words': twoWords, 'one DataView load': dataView, '64-bit buffer': buffer };
const times = Object.fromEntries(Object.keys(ways).map((k) => [k, []]));
for (let r = 0; r < 18; r++) {
  for (const [name, f] of Object.entries(ways)) {
    const t0 = process.hrtime.bigint();
    if (f() !== want) throw new Error(`${name}: wrong values`);
    if (r >= 3) times[name].push(Number(process.hrtime.bigint() - t0) / N);      // (3 warm-up rounds)
  }
}
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
for (const [name, t] of Object.entries(times)) console.log(`${name.padEnd(22)} ${median(t).toFixed(2)} ns a code`);
