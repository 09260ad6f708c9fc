// src/json.mjs: JSON as Python reads and writes it (exact big integers, float literals, canonical
// text for fingerprints).
import { floatHex } from './util.mjs';

// JSON: a parser that keeps integers beyond 2**53 exact (as BigInt) and tells integer literals
// from float literals (as Python's json does), and Python's json.dumps(ensure_ascii=True) of strings.

/** A float literal of a JSON document (Python reads it as a float, not an int). */
export class JsonFloat {
  constructor(value) { this.value = value; }
  valueOf() { return this.value; }
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;

/**
 * Parse JSON text. Integer literals become numbers (BigInt beyond the safe range); float literals
 * become numbers, or JsonFloat objects with `{tagFloats: true}`. NaN, Infinity and -Infinity are
 * accepted as Python's json accepts them.
 */
export function parseJSON(text, { tagFloats = false, noDuplicates = false } = {}) {
  let i = 0;
  const n = text.length;
  const fail = (what) => { throw new SyntaxError(`JSON: ${what} at character ${i}`); };
  const ws = () => { while (i < n) { const c = text.charCodeAt(i); if (c === 32 || c === 9 || c === 10 || c === 13) i++; else break; } };
  const mkFloat = (v) => (tagFloats ? new JsonFloat(v) : v);
  let depth = 0;
  function value() {
    ws();
    if (i >= n) fail('unexpected end');
    const c = text[i];
    if (c === '{') {
      if (++depth > 500) fail('nested too deeply');
      i++; const obj = {}; ws();
      if (text[i] === '}') { i++; depth--; return obj; }
      for (;;) {
        ws(); if (text[i] !== '"') fail('expected a key');
        const k = str(); ws(); if (text[i] !== ':') fail("expected ':'"); i++;
        if (noDuplicates && Object.prototype.hasOwnProperty.call(obj, k)) fail(`duplicate key ${JSON.stringify(k)}`);
        const v = value();
        Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true });
        ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; depth--; return obj; }
        fail("expected ',' or '}'");
      }
    }
    if (c === '[') {
      if (++depth > 500) fail('nested too deeply');
      i++; const arr = []; ws();
      if (text[i] === ']') { i++; depth--; return arr; }
      for (;;) {
        arr.push(value()); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; depth--; return arr; }
        fail("expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (text.startsWith('true', i)) { i += 4; return true; }
    if (text.startsWith('false', i)) { i += 5; return false; }
    if (text.startsWith('null', i)) { i += 4; return null; }
    if (text.startsWith('NaN', i)) { i += 3; return mkFloat(NaN); }
    if (text.startsWith('Infinity', i)) { i += 8; return mkFloat(Infinity); }
    if (text.startsWith('-Infinity', i)) { i += 9; return mkFloat(-Infinity); }
    // (a literal of any length, rule R8: the sticky regex reads it in place; Number() rounds a
    // decimal literal of any length correctly to the nearest double in V8, SpiderMonkey and
    // JavaScriptCore, and the tests pin it)
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) fail('unexpected character');
    i += m[0].length;
    if (m[1] === undefined && m[2] === undefined) {
      const v = Number(m[0]);
      return Number.isSafeInteger(v) ? v : BigInt(m[0]);
    }
    return mkFloat(Number(m[0]));
  }
  function str() {
    i++;
    let out = '';
    for (;;) {
      if (i >= n) fail('unterminated string');
      const c = text[i++];
      if (c === '"') return out;
      if (c === '\\') {
        const e = text[i++];
        if (e === 'u') {
          const h = text.slice(i, i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) fail('bad \\u escape');
          out += String.fromCharCode(parseInt(h, 16)); i += 4;
        } else {
          const map = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
          if (!(e in map)) fail('bad escape');
          out += map[e];
        }
      } else {
        if (c.charCodeAt(0) < 0x20) fail('control character in a string');
        out += c;
      }
    }
  }
  const v = value();
  ws();
  if (i !== n) fail('extra data');
  return v;
}

/** A string as Python's json.dumps(..., ensure_ascii=True) writes it. */
function pyJsonString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c < 0x20 || c > 0x7e) out += '\\u' + c.toString(16).padStart(4, '0');
    else out += s[i];
  }
  return out + '"';
}

/** json.dumps(canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True), where floats
 * are already their float.hex() strings (instances of HexFloat below). */
export class HexFloat { constructor(v) { this.v = v; } }
export function canonJson(o) {
  if (o === null) return 'null';
  if (o === true) return 'true';
  if (o === false) return 'false';
  if (o instanceof HexFloat) return pyJsonString(floatHex(o.v));
  if (typeof o === 'number' || typeof o === 'bigint') return String(o);
  if (typeof o === 'string') return pyJsonString(o);
  if (Array.isArray(o)) return '[' + o.map(canonJson).join(',') + ']';
  const keys = Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return '{' + keys.map((k) => pyJsonString(k) + ':' + canonJson(o[k])).join(',') + '}';
}
