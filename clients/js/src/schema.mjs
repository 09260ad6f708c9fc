// src/schema.mjs: Schema: fields, the slot table (wire-format section 2), one record (section 3),
// the fingerprint.
import { DecodeError, P2, SchemaError, ValueRangeError, bytesArg, describe, getOwn, isInteger, norm, setOwn, toBig } from './util.mjs';
import { asciiBytes, sha256, toHex, u32le } from './hash.mjs';
import { JsonFloat, canonJson, parseJSON } from './json.mjs';
import { Codec, Enum, NearlyZero, Vector, codecFromSpec, intCode, show, slotCode } from './codecs.mjs';
import { BitReader, BitWriter } from './bits.mjs';

// Schema

/** A record argument: an object {field: value} or an array in field order; TypeError otherwise. */
function recordArg(record, who) {
  if (record === null || typeof record !== 'object') throw new TypeError(`${who}: expected a record ({field: value} or an array of values in field order), got ${describe(record)}`);
  return record;
}

// Field names: ASCII identifiers only (rule R2 of docs/schema-format.md): "a Python identifier"
// was read differently by every language and every Unicode version.
const ID_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

// The rules of a schema document beyond each codec's own (docs/schema-format.md, "One reading",
// R3, R5, R7): no U+0000 nor a lone surrogate in the schema's name or an Enum label, a version of at most 2**63 - 1,
// at most 65,535 fields and 65,535 components a Vector.
const MAX_VERSION = 2n ** 63n - 1n;
// a lone surrogate (a JSON "\\ud800" escape reads as one): not Unicode text, refused as Python does
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function checkText(what, text) {
  if (text.includes('\0')) throw new SchemaError(`${what} must not contain U+0000, got ${show(text)}`);
  const m = LONE_SURROGATE.exec(text);
  if (m) {
    const at = [...text.slice(0, m.index)].length;   // in characters (code points), as Python counts
    throw new SchemaError(`${what} must be Unicode text: a lone surrogate U+${m[0].charCodeAt(0).toString(16).toUpperCase()} at character ${at}, got ${show(text)}`);
  }
}
const MAX_FIELDS = 65535;
function checkStrings(field, codec) {
  if (codec instanceof Enum && codec.labels) {
    for (const l of codec.labels) checkText(`field '${field}': Enum labels`, l);
  } else if (codec instanceof Vector) {
    if (codec.codecs.length > MAX_FIELDS) throw new SchemaError(`field '${field}': a Vector has at most ${MAX_FIELDS} components, got ${codec.codecs.length}`);
    for (const c of codec.codecs) checkStrings(field, c);
  } else if (codec instanceof NearlyZero) checkStrings(field, codec.inner);
}

/** A schema from the document's text, byte-order mark already dealt with. */
function schemaOfText(text) {
  let spec;
  // (a key given twice is refused, as Python refuses it: two readers must not build two schemas)
  try { spec = parseJSON(text, { tagFloats: true, noDuplicates: true }); } catch (e) { throw new SchemaError(`not a valid schema JSON document: ${e.message}`); }
  return Schema.fromSpec(spec);
}

/** One slot of the schema's layout (wire-format section 2). */
class Slot {
  constructor(index, cls, bits, field, span, cbits, signed, codec, path) {
    Object.assign(this, { index, cls, bits, field, span, cbits, signed, codec, path });
    this.wide = bits > 53;
  }
}

export class Schema {
  /**
   * new Schema(name, fields, {version}) with fields a list of [name, codec] pairs, of
   * {name, codec} tables, or an object {name: codec} (codecs or spec objects).
   */
  constructor(name, fields, { version = 1 } = {}) {
    if (typeof name !== 'string' || !name) throw new SchemaError(`schema name must be a non-empty string, got ${show(name)}`);
    checkText('schema name', name);
    if (typeof version === 'boolean' || version instanceof JsonFloat || !isInteger(version) || version < 0 || version > MAX_VERSION) throw new SchemaError(`schema version must be an integer from 0 to 2**63 - 1, got ${show(version)}`);
    let items;
    if (Array.isArray(fields)) {
      items = fields.map((item, i) => {
        if (item && typeof item === 'object' && !Array.isArray(item) && !(item instanceof Codec)) {
          const keys = Object.keys(item);
          const extra = keys.filter((k) => k !== 'name' && k !== 'codec');
          if (extra.length || !Object.hasOwn(item, 'name') || !Object.hasOwn(item, 'codec')) throw new SchemaError(`field ${i}: expected keys 'name' and 'codec', got ${JSON.stringify(keys.sort())}`);
          return [item.name, item.codec];
        }
        if (Array.isArray(item) && item.length === 2) return [item[0], item[1]];
        throw new SchemaError(`field ${i}: expected a (name, codec) pair, got ${show(item)}`);
      });
    } else if (fields && typeof fields === 'object') items = Object.entries(fields);
    else throw new SchemaError(`fields must be a dict or a list of (name, codec) pairs, got ${typeof fields}`);
    if (!items.length) throw new SchemaError('a schema needs at least one field');
    if (items.length > MAX_FIELDS) throw new SchemaError(`a schema has at most ${MAX_FIELDS} fields, got ${items.length}`);
    const seen = new Set();
    this.fields = items.map(([fname, codec]) => {
      if (typeof fname !== 'string' || !ID_RE.test(fname)) throw new SchemaError(`field names must be ASCII identifiers (letters A-Z and a-z, digits and _, not starting with a digit), got ${show(fname)}`);
      if (seen.has(fname)) throw new SchemaError(`duplicate field name '${fname}'`);
      seen.add(fname);
      if (!(codec instanceof Codec)) {
        if (!codec || typeof codec !== 'object' || Array.isArray(codec)) throw new SchemaError(`field '${fname}': expected a codec (or a codec spec dict), got ${show(codec)}`);
        try { codec = codecFromSpec(codec); } catch (e) { if (e instanceof SchemaError) throw new SchemaError(`field '${fname}': ${e.message}`); throw e; }
      }
      checkStrings(fname, codec);
      return { name: fname, codec };
    });
    this.name = name;
    this.version = norm(toBig(version));
    this.names = this.fields.map((f) => f.name);
    this.canonicalJson = canonJson({ name, version: this.version, fields: this.fields.map((f) => ({ name: f.name, codec: f.codec._canon() })) });
    this.fingerprint = toHex(sha256(asciiBytes(this.canonicalJson))).slice(0, 16);
    this._layout();
  }

  static fromSpec(spec) {
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new SchemaError(`schema spec must be a dict, got ${typeof spec}`);
    const extra = Object.keys(spec).filter((k) => !['name', 'version', 'fields'].includes(k)).sort();
    if (extra.length) throw new SchemaError(`schema spec has unknown keys ${JSON.stringify(extra)} (expected name, version, fields)`);
    for (const k of ['name', 'fields']) if (!Object.hasOwn(spec, k)) throw new SchemaError(`schema spec is missing '${k}'`);
    return new Schema(spec.name, spec.fields, { version: Object.hasOwn(spec, 'version') ? spec.version : 1 });
  }

  /**
   * A schema from its JSON text (schema.to_json(), docs/schema-format.md); one leading U+FEFF is
   * skipped. Bytes (a Uint8Array, Buffer, ArrayBuffer) are read as Schema.fromBytes reads them.
   */
  static fromJSON(text) {
    if (typeof text !== 'string') {
      if (text instanceof ArrayBuffer || ArrayBuffer.isView(text)) return Schema.fromBytes(text);
      throw new TypeError(`Schema.fromJSON: expected the document's text (a string) or its bytes, got ${describe(text)}`);
    }
    return schemaOfText(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  }

  /**
   * A schema from its document's bytes, as a file holds them (rule R1 of docs/schema-format.md):
   * UTF-8, one leading byte-order mark (EF BB BF) skipped; bytes that are not well-formed UTF-8
   * (invalid bytes, overlong forms, truncated sequences, encoded surrogates, so UTF-16 too) are
   * a SchemaError.
   */
  static fromBytes(bytes) {
    bytes = bytesArg(bytes, 'Schema.fromBytes', 'a schema document');
    let text;
    // (fatal: no U+FFFD stands in for a bad byte; ignoreBOM false: the decoder drops one BOM)
    try { text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes); } catch (e) { throw new SchemaError(`not a valid schema JSON document: not UTF-8 (${e.message})`); }
    return schemaOfText(text);
  }

  spec() { return { name: this.name, version: this.version, fields: this.fields.map((f) => ({ name: f.name, codec: f.codec.spec() })) }; }

  /** Throws SchemaError unless the peer's fingerprint equals this one (case-insensitive). */
  checkFingerprint(fp) {
    if (String(fp).toLowerCase() !== this.fingerprint) throw new SchemaError(`schema fingerprint mismatch: this end has '${this.name}' version ${this.version} with fingerprint ${this.fingerprint}, the peer has ${fp}`);
  }

  _layout() {
    const slots = [];
    const fieldInfo = [];
    this.fields.forEach((f, fi) => {
      const s0 = slots.length;
      const c = f.codec;
      const scalar = (codec, path) => {
        if (codec.cls === 'quat' || codec.cls === 'uvec') slots.push(new Slot(slots.length, codec.cls, codec.bits, fi, 0, codec.cbits, false, codec, path));
        else slots.push(new Slot(slots.length, codec.cls, codec.bits, fi, 0, 0, !!codec.signed, codec, path));
      };
      const vec = (v, path) => v.codecs.forEach((cc, i) => scalar(cc, `${path}[${i}]`));
      if (c instanceof Vector) vec(c, f.name);
      else if (c instanceof NearlyZero) {
        slots.push(new Slot(slots.length, 'flag', 1, fi, c.k, 0, false, null, `${f.name}.flag`));
        if (c.isVec) vec(c.inner, f.name); else scalar(c.inner, f.name);
      } else scalar(c, f.name);
      fieldInfo.push({ index: fi, name: f.name, codec: c, s0, s1: slots.length });
    });
    this.slots = slots;
    this.fieldInfo = fieldInfo;
    this.nslots = slots.length;
    let w = 0;
    for (const s of slots) s.bigIndex = s.wide ? w++ : -1;
    this.nwide = w;
  }

  /** The slot table as [kind, bits, field, span, cbits, signed] rows (as tests/golden/snapshot/packets.json). */
  slotTable() { return this.slots.map((s) => [s.cls, s.bits, s.field, s.span, s.cbits, s.signed]); }

  get bits() { return this.fields.reduce((a, f) => a + f.codec.bits, 0); }

  // -- codes <-> slot rows ------------------------------------------------------------------

  /** A record's codes (one entry per field: a code; an array for a Vector; [flag, inner] for a
   * NearlyZero) -> the flat row of slot codes. Throws ValueRangeError for an invalid code. */
  slotsOf(codes) {
    if (!Array.isArray(codes) || codes.length !== this.fields.length) throw new ValueRangeError(`expected ${this.fields.length} field codes, got ${show(codes)}`);
    const row = [];
    this.fields.forEach((f, i) => {
      const c = f.codec, v = codes[i];
      if (!c.valid(v)) throw new ValueRangeError(`field '${f.name}': code ${show(v)} is not a valid code for ${c}`);
      if (c instanceof Vector) c.codecs.forEach((cc, j) => row.push(slotCode(cc.bits, intCode(v[j]))));
      else if (c instanceof NearlyZero) {
        row.push(Number(v[0]));
        if (c.isVec) c.inner.codecs.forEach((cc, j) => row.push(slotCode(cc.bits, intCode(v[1][j]))));
        else row.push(slotCode(c.inner.bits, intCode(v[1])));
      } else row.push(slotCode(c.bits, intCode(v)));
    });
    return row;
  }

  /** The flat row of slot codes -> the record's codes, per field. */
  codesOf(row) {
    return this.fieldInfo.map((fi) => {
      const c = fi.codec;
      if (c instanceof Vector) return row.slice(fi.s0, fi.s1);
      if (c instanceof NearlyZero) return [row[fi.s0], c.isVec ? row.slice(fi.s0 + 1, fi.s1) : row[fi.s0 + 1]];
      return row[fi.s0];
    });
  }

  /** The decoded values of a row of slot codes, as an object {field: value}. */
  valuesOf(row) {
    const out = {};
    this.fieldInfo.forEach((fi, i) => { setOwn(out, fi.name, this.fields[i].codec.dequantize(this.codesOf(row)[i])); });
    return out;
  }

  /** Quantize a record (an object with the field names, or an array in field order) -> codes per field. */
  quantize(record) {
    recordArg(record, 'Schema.quantize');
    return this.fields.map((f, i) => {
      const v = Array.isArray(record) ? record[i] : getOwn(record, f.name);
      if (v === undefined) throw new SchemaError(`missing field '${f.name}'`);
      return f.codec.quantize(v);
    });
  }

  /** codes per field -> decoded values {field: value}. */
  dequantize(codes) {
    const out = {};
    this.fields.forEach((f, i) => { setOwn(out, f.name, f.codec.dequantize(codes[i])); });
    return out;
  }

  valid(codes) {
    return Array.isArray(codes) && codes.length === this.fields.length && this.fields.every((f, i) => f.codec.valid(codes[i]));
  }

  // -- one record (wire-format section 3) ---------------------------------------------------------

  _writeRow(w, row) {
    for (let s = 0; s < this.nslots; s++) {
      const sl = this.slots[s];
      let v = row[s];
      if (sl.signed) v = sl.wide || typeof v === 'bigint' ? BigInt.asUintN(sl.bits, toBig(v)) : (v < 0 ? v + P2[sl.bits] : v);
      w.write(v, sl.bits);
      if (sl.cls === 'flag' && v === 0) s += sl.span;
    }
  }

  /** The record bytes of codes per field (padded to a byte). ValueRangeError for an invalid code. */
  encodeCodes(codes) {
    const w = new BitWriter();
    this._writeRow(w, this.slotsOf(codes));
    return w.finish();
  }

  /** Quantize and encode a record. */
  encode(record) { return this.encodeCodes(this.quantize(recordArg(record, 'Schema.encode'))); }

  /** Read one record's slot codes at the reader's position, each checked; DecodeError naming the field and bit. */
  _readRow(r, where = '') {
    const S = this.nslots;
    const row = new Array(S);
    for (let s = 0; s < S; s++) {
      const sl = this.slots[s];
      const at = r.pos;
      if (at + sl.bits > r.nbits) {
        throw new DecodeError(`${where}field '${this.fields[sl.field].name}': message too short: the code needs ${sl.bits} bits at bit ${at}, the message has ${r.nbits} bits (${r.nbits / 8} bytes)`);
      }
      let v = sl.wide ? r.readBig(sl.bits) : r.readNum(sl.bits);
      if (sl.signed) v = sl.wide ? BigInt.asIntN(sl.bits, v) : (v >= P2[sl.bits - 1] ? v - P2[sl.bits] : v);
      if (sl.cls !== 'flag' && !sl.codec.valid(v)) throw new DecodeError(`${where}field '${this.fields[sl.field].name}': code ${v} is not valid for ${sl.codec} at bit ${at}`);
      row[s] = v;
      if (sl.cls === 'flag' && v === 0) {
        for (let t = s + 1; t <= s + sl.span; t++) row[t] = this.slots[t].wide ? 0n : 0;
        s += sl.span;
      }
    }
    return row;
  }

  /** Decode one record's bytes to its codes per field: only a canonical message (no extra bytes,
   * zero padding) is accepted; DecodeError otherwise. */
  decodeCodes(bytes) {
    bytes = bytesArg(bytes, 'Schema.decodeCodes', 'one record');
    const r = new BitReader(bytes);
    const row = this._readRow(r);
    const left = r.nbits - r.pos;
    if (left >= 8) throw new DecodeError(`message too long: ${bytes.length} bytes, but the record ends at bit ${r.pos} (${Math.ceil(r.pos / 8)} bytes): ${Math.floor(left / 8)} extra bytes after the last field '${this.fields[this.fields.length - 1].name}'`);
    if (r.read(left) !== 0) throw new DecodeError(`padding bits after the record are not zero (at bit ${r.pos - left})`);
    return this.codesOf(row);
  }

  /** Decode one record's bytes to its values {field: value}. */
  decode(bytes) { return this.dequantize(this.decodeCodes(bytesArg(bytes, 'Schema.decode', 'one record'))); }

  /** Field summaries as a hello carries them: [{name, kind, bits, h}]. */
  summaries() {
    return this.fields.map((f) => {
      const d = sha256(asciiBytes(canonJson(f.codec._canon())));
      return { name: f.name, kind: f.codec.kind, bits: f.codec.bits, h: u32le(d, 0) };
    });
  }
}
