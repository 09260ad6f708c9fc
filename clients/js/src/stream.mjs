// src/stream.mjs: the datagram layer (wire-format sections 10-15, 17, 19): checks, the hello,
// fragments, the history window, limits; SnapshotDecoder.
import { DecodeError, SchemaError, bytesArg, fixed, optionsArg, toBig } from './util.mjs';
import { SIP_HI, SIP_LO, asciiBytes, crc32c, masterKey, sharedKey, sipCore, sipWords, subKey, u16le, u32le, u64le, utf8 } from './hash.mjs';
import { KIND_NAMES } from './codecs.mjs';
import { Schema } from './schema.mjs';
import { SEQ_MASK, newer } from './snapshot.mjs';
import { PacketCoder } from './packet.mjs';

// The datagram layer (sections 11-15) and the client's state (section 10)

const MAGIC = [0x51, 0x43, 0x48, 0x4c];   // QCHL
const SEED_H = crc32c(asciiBytes('quantcodec hello'));
const FORMAT_VERSION = 1;
const MIN_DATAGRAM = 64, MAX_DATAGRAM = 65507, MAX_FRAGMENTS = 256, FRAGMENT_HEADER = 8;
const HELLO_BASE = 51;             // the smallest hello without its check: an empty name, no field summary
/** The bound on what a client holds when none is given (section 19): 256 MiB. */
export const DEFAULT_MAX_BYTES = 268435456;
const SNAPSHOT_OVERHEAD = 256;     // section 19's cost model: a snapshot costs 256 + n * (8 + 8 * S)

/**
 * One kind of check (sections 11, 17): crc32c(bytes, seed) in 4 bytes, or with a shared key the
 * 8-byte SipHash-2-4 tag under that kind's tag key. `holds(d, n)`: whether the last T bytes of
 * d[0..n) are the check of the bytes before them; `seal(out, n)` writes the check of out[0..n) at n.
 */
class Check {
  constructor(seed, tagKey = null) {
    this.seed = seed;
    this.words = tagKey === null ? null : sipWords(tagKey);
    this.T = tagKey === null ? 4 : 8;
  }
  holds(d, n) {
    if (this.words === null) return crc32c(d, this.seed, 0, n - 4) === u32le(d, n - 4);
    sipCore(this.words, d, 0, n - 8);
    return SIP_LO === u32le(d, n - 8) && SIP_HI === u32le(d, n - 4);
  }
  seal(out, n) {
    let lo, hi = 0;
    if (this.words === null) lo = crc32c(out, this.seed, 0, n);
    else { sipCore(this.words, out, 0, n); lo = SIP_LO; hi = SIP_HI; }
    for (let i = 0; i < 4; i++) out[n + i] = lo >>> (8 * i);
    if (this.words !== null) for (let i = 0; i < 4; i++) out[n + 4 + i] = hi >>> (8 * i);
  }
}
const SEED_Q = crc32c(asciiBytes('quantcodec hello request'));
const LABEL_H = asciiBytes('quantcodec hello'), LABEL_Q = asciiBytes('quantcodec hello request');

/** The checks that need no stream: the hello's and the hello request's, for a shared key's mk or none. */
function streamlessChecks(mk) {
  return mk === null
    ? { T: 4, H: new Check(SEED_H), Q: new Check(SEED_Q) }
    : { T: 8, H: new Check(0, subKey(mk, LABEL_H)), Q: new Check(0, subKey(mk, LABEL_Q)) };
}
/** The checks of one stream (stream key K): whole packets, fragments, replies. */
function streamChecks(mk, K) {
  const label = (c) => { const b = new Uint8Array(K.length + 1); b.set(K); b[K.length] = c.charCodeAt(0); return b; };
  if (mk === null) return { P: new Check(seedOf(K, 'P')), F: new Check(seedOf(K, 'F')), R: new Check(seedOf(K, 'R')) };
  return { P: new Check(0, subKey(mk, label('P'))), F: new Check(0, subKey(mk, label('F'))), R: new Check(0, subKey(mk, label('R'))) };
}
const UNKEYED = streamlessChecks(null);
/** The stream-less checks for a `{key}` option (none: CRC-32C). */
function checksFor(key) { return key === undefined || key === null ? UNKEYED : streamlessChecks(masterKey(key)); }

/** A `maxBytes` option: a positive integer (number or bigint), DEFAULT_MAX_BYTES when null. */
function maxBytesOption(v, who) {
  if (v === undefined || v === null) return DEFAULT_MAX_BYTES;
  if (typeof v === 'bigint' && v >= 1n) return Number(v);
  if (typeof v === 'number' && Number.isInteger(v) && v >= 1) return v;
  throw new RangeError(`${who}: maxBytes must be a positive integer (bytes), got ${typeof v === 'bigint' ? v + 'n' : typeof v === 'string' ? `'${v}'` : v}`);
}

/** The 40-byte stream key K (section 11). */
export function streamKey(fingerprint, history, predict, maxDatagram, streamId) {
  const k = new Uint8Array(40);
  k.set(asciiBytes('quantcodec'), 0);
  k[10] = FORMAT_VERSION;
  k.set(asciiBytes(fingerprint), 11);
  k[27] = history & 0xff; k[28] = history >> 8;
  k[29] = predict ? 1 : 0;
  k[30] = maxDatagram & 0xff; k[31] = maxDatagram >> 8;
  let id = toBig(streamId);
  for (let i = 0; i < 8; i++) { k[32 + i] = Number(id & 0xffn); id >>= 8n; }
  return k;
}
function seedOf(key, letter) {
  const b = new Uint8Array(key.length + 1);
  b.set(key); b[key.length] = letter.charCodeAt(0);
  return crc32c(b);
}


/**
 * Parse a hello datagram (section 13) whose magic and check hold. Returns {version, predict,
 * history, maxDatagram, streamId (BigInt), started (BigInt), fingerprint, schemaVersion,
 * schemaName, nfields, fields: [{name, kind, bits, h}]}; DecodeError('hello') when malformed.
 */
export function parseHello(d, options) {
  const { key = null } = optionsArg(options, KEY_OPTIONS, 'parseHello');
  d = bytesArg(d, 'parseHello', 'one datagram');
  const ck = checksFor(key);
  if (!helloHolds(d, ck)) throw new DecodeError(`hello: not a hello (too short, no QCHL magic, or its ${ck.T === 8 ? 'SipHash tag under this key' : 'check'} fails)`, 'check');
  return readHello(d, ck.T);
}

/** The fields of a hello whose magic and check (of T bytes) hold; DecodeError('hello') when malformed. */
function readHello(d, T) {
  const n = d.length;
  const bad = (msg) => new DecodeError('hello: ' + msg, 'hello');
  const version = d[4], flags = d[5], history = u16le(d, 6), maxDatagram = u16le(d, 8);
  const streamId = u64le(d, 10), started = u64le(d, 18);
  if (version !== FORMAT_VERSION) throw bad(`format version ${version}, this library reads version ${FORMAT_VERSION}`);
  if (flags & ~1) throw bad(`unknown flags 0x${flags.toString(16).padStart(2, '0')}`);
  if (!(history >= 1 && history <= 0x7fff)) throw bad(`history ${history} outside 1..32767`);
  if (!(maxDatagram >= MIN_DATAGRAM && maxDatagram <= MAX_DATAGRAM) || n > maxDatagram) throw bad(`max_datagram ${maxDatagram} outside ${MIN_DATAGRAM}..${MAX_DATAGRAM} or smaller than the hello (${n} bytes)`);
  const fpBytes = d.subarray(26, 42);
  for (const c of fpBytes) if (!((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66))) throw bad('the fingerprint is not 16 lowercase hex digits');
  const fingerprint = String.fromCharCode(...fpBytes);
  const schemaVersion = u32le(d, 42);
  const end = n - T;
  let pos = 46;
  const take = (k, what) => {
    if (pos + k > end) throw bad(`truncated in ${what} at byte ${pos}`);
    const out = d.subarray(pos, pos + k); pos += k; return out;
  };
  const dec = new TextDecoder('utf-8', { fatal: true });
  const text = (what) => {
    const len = take(1, what)[0];
    const raw = take(len, what);
    try { return dec.decode(raw); } catch { throw bad(`${what} is not UTF-8`); }
  };
  const schemaName = text('the schema name');
  const counts = take(4, 'the field counts');
  const nf = u16le(counts, 0), ns = u16le(counts, 2);
  if (ns > nf) throw bad(`${ns} field summaries for ${nf} fields`);
  const fields = [];
  for (let i = 0; i < ns; i++) {
    const name = text(`field ${i}'s name`);
    const f = take(7, `field ${i}`);
    fields.push({ name, kind: KIND_NAMES[f[0]] || `kind ${f[0]}`, bits: u16le(f, 1), h: u32le(f, 3) });
  }
  if (pos !== end) throw bad(`${end - pos} bytes after the last field summary`);
  return { version, predict: !!(flags & 1), history, maxDatagram, streamId, started, fingerprint, schemaVersion, schemaName, nfields: nf, fields, bytes: d.slice() };
}

/** Whether d is a hello whose magic and check hold (with `{key}`: its SipHash tag under kH). */
export function isHello(d, options) {
  const { key = null } = optionsArg(options, KEY_OPTIONS, 'isHello');
  return helloHolds(bytesArg(d, 'isHello', 'one datagram'), checksFor(key));
}
const KEY_OPTIONS = ['key'];
function helloHolds(d, ck) {
  return d.length >= HELLO_BASE + ck.T && d[0] === MAGIC[0] && d[1] === MAGIC[1] && d[2] === MAGIC[2] && d[3] === MAGIC[3] && ck.H.holds(d, d.length);
}

function utf8Prefix(text, limit) {
  let raw = utf8(text);
  if (raw.length <= limit) return text;
  raw = raw.subarray(0, limit);
  return new TextDecoder('utf-8').decode(raw).replace(/\uFFFD+$/u, '');
}

/** What differs between `schema` and the schema a hello describes: a list of sentences (empty when the fingerprints are equal). */
export function helloDifferences(schema, hello) {
  if (hello.fingerprint === schema.fingerprint) return [];
  const out = [`fingerprint ${schema.fingerprint} here, ${hello.fingerprint} in the hello`];
  const myName = utf8Prefix(schema.name, 255);
  // (a hello's name may be cut to fit a small datagram budget: a prefix of ours is ours)
  if (hello.schemaName !== myName && !(utf8(hello.schemaName).length < 255 && myName.startsWith(hello.schemaName))) out.push(`schema name '${schema.name}' here, '${hello.schemaName}' in the hello`);
  if (hello.schemaVersion !== Number(toBig(schema.version) & 0xffffffffn)) out.push(`schema version ${schema.version} here, ${hello.schemaVersion} in the hello`);
  const mine = new Map(schema.summaries().map((s) => [s.name, s]));
  const theirs = new Map(hello.fields.map((s) => [s.name, s]));
  const complete = hello.fields.length === hello.nfields;
  for (const [name, s] of mine) {
    const t = theirs.get(name);
    if (!t) { if (complete) out.push(`field '${name}' is not in the server's schema`); continue; }
    if (t.kind !== s.kind) out.push(`field '${name}': ${s.kind} here, ${t.kind} on the server`);
    else if (t.bits !== s.bits) out.push(`field '${name}': ${s.bits} bits here, ${t.bits} on the server`);
    else if (t.h !== s.h) out.push(`field '${name}': same kind (${s.kind}) and bits, other parameters (range, step, labels...)`);
  }
  for (const name of theirs.keys()) if (!mine.has(name)) out.push(`field '${name}' of the server's schema is missing here`);
  if (complete && [...mine.keys()].every((k) => theirs.has(k)) && [...theirs.keys()].every((k) => mine.has(k))) {
    const here = [...mine.keys()], there = hello.fields.map((s) => s.name);
    if (here.join('\0') !== there.join('\0')) out.push(`field order ${JSON.stringify(here)} here, ${JSON.stringify(there)} on the server`);
  }
  if (!complete) out.push(`(the hello summarizes ${hello.fields.length} of the server's ${hello.nfields} fields)`);
  return out;
}

function sameBytes(a, b) {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * The partial packets of one stream (section 12): chunks kept under (seq, count, pcheck), each
 * counted as a full chunk whatever its length, at most 256 * max_datagram bytes in all (the
 * oldest partial packets dropped first, by how far their seq is behind `latest`, then in the
 * order begun: never the newest packet for an older one's fragments), and a partial packet given
 * up once its seq is `history` or more behind `latest`.
 */
class Reassembly {
  constructor(maxDatagram, history, T) {
    this.size = maxDatagram - FRAGMENT_HEADER - T;      // C (sections 12, 17)
    this.limit = MAX_FRAGMENTS * maxDatagram;
    this.history = history;
    this.parts = new Map();       // key -> {seq, count, pcheck, chunks: Map(index -> bytes)} in insertion order
    this.held = 0;
  }
  clear() { this.parts.clear(); this.held = 0; }
  _drop(key) {
    const p = this.parts.get(key);
    this.held -= this.size * p.chunks.size;     // every chunk counts as a full one (section 12, rule 4)
    this.parts.delete(key);
  }
  /**
   * Room for one more chunk of packet `key` (section 12, rule 4): partial packets dropped oldest
   * first (furthest behind `latest`; equals in the order begun, a `fresh` one, begun now, last),
   * until the chunk fits. False, with its own packet dropped, when that one comes up first: the
   * chunk is not kept, and the newer packets stay.
   */
  _makeRoom(key, seq, fresh, latest) {
    const behind = (s) => {
      if (latest === null) return 0;            // nothing decoded yet: all rank equal
      const d = (latest - s) & SEQ_MASK;
      return d >= 0x8000 ? d - 0x10000 : d;     // a packet newer than latest is behind by a negative number
    };
    const ranked = [];
    for (const [k, p] of this.parts) ranked.push({ k, d: behind(p.seq) });
    if (fresh) ranked.push({ k: key, d: behind(seq) });
    ranked.sort((a, b) => b.d - a.d);           // (a stable sort: equals stay in the order begun)
    for (const { k } of ranked) {
      if (this.held + this.size <= this.limit) break;
      if (k === key) {
        if (!fresh) this._drop(key);
        return false;
      }
      this._drop(k);
    }
    return true;
  }
  /** Validate a fragment body (the datagram without its check): returns its header, or throws DecodeError('fragment'). */
  check(body) {
    if (body.length <= FRAGMENT_HEADER) throw new DecodeError(`fragment: ${body.length} bytes before the check, no chunk`, 'fragment');
    const seq = u16le(body, 0), index = body[2], count1 = body[3], pcheck = u32le(body, 4);
    const count = count1 + 1, clen = body.length - FRAGMENT_HEADER;
    if (count1 === 0) throw new DecodeError(`fragment of packet ${seq}: a count of 1 (a packet that fits is sent whole)`, 'fragment');
    if (index >= count) throw new DecodeError(`fragment of packet ${seq}: index ${index} of ${count}`, 'fragment');
    const last = index === count - 1;
    if (last ? !(clen >= 1 && clen <= this.size) : clen !== this.size) throw new DecodeError(`fragment ${index} of ${count} of packet ${seq}: a chunk of ${clen} bytes (${last ? 'at most ' : ''}${this.size} expected)`, 'fragment');
    return { seq, index, count, pcheck };
  }
  /** Keep a checked fragment. Returns {seq, packet, pcheck} when it completes a packet, else null. */
  add(body, h, latest) {
    const { seq, index, count, pcheck } = h;
    const chunk = body.slice(FRAGMENT_HEADER);
    if (latest !== null) {
      const old = (s) => { const d = (latest - s) & SEQ_MASK; return d >= this.history && d < 0x8000; };
      for (const [key, p] of [...this.parts]) if (old(p.seq)) this._drop(key);
      if (old(seq)) return null;
    }
    const key = `${seq}/${count}/${pcheck}`;
    let part = this.parts.get(key);
    if (part && part.chunks.has(index)) return null;
    if (this.held + this.size > this.limit && !this._makeRoom(key, seq, !part, latest)) return null;   // (its packet the oldest: not kept)
    if (!part) { part = { seq, count, pcheck, chunks: new Map() }; this.parts.set(key, part); }
    part.chunks.set(index, chunk);
    this.held += this.size;
    if (part.chunks.size < count) return null;
    this._drop(key);
    let total = 0;
    for (let i = 0; i < count; i++) total += part.chunks.get(i).length;
    const packet = new Uint8Array(total);
    for (let i = 0, o = 0; i < count; i++) { const c = part.chunks.get(i); packet.set(c, o); o += c.length; }
    return { seq, packet, pcheck };
  }
}

/** One datagram's bytes (util.mjs bytesArg): TypeError naming what else it got. */
export function datagramBytes(d, who) { return bytesArg(d, who, 'one datagram'); }

const DECODER_OPTIONS = ['history', 'key', 'maxBytes'];

/**
 * A snapshot stream's client (sections 10-19). `decode(datagram)` returns the Snapshot a datagram
 * completes, or null (a fragment, a hello); it throws DecodeError (with `.kind`) for a refused
 * datagram, which changes nothing. After each datagram that returned a Snapshot, acknowledge
 * `decoder.latest` to the server (StreamClient makes the ack datagram). A hello of a newer stream
 * (a server restart) is adopted: the client starts over; so is another stream's hello while the
 * adopted stream has decoded no packet (a stray hello adopted does not hold the client: its
 * server's next hello takes it back).
 *
 * Options: `history` (until a hello gives the stream's own), `key` (a shared secret of 1 to 255
 * bytes: every check is then an 8-byte SipHash-2-4 tag, section 17), `maxBytes` (the bound of
 * section 19 on what the decoder holds, in its cost model; DEFAULT_MAX_BYTES when not given).
 */
export class SnapshotDecoder {
  constructor(schema, options) {
    const { history = 64, key = null, maxBytes = null } = optionsArg(options, DECODER_OPTIONS, 'SnapshotDecoder');
    if (!(schema instanceof Schema)) throw new TypeError('SnapshotDecoder: expected a Schema');
    if (!Number.isInteger(history) || history < 1 || history > 0x7fff) throw new RangeError(`SnapshotDecoder: history must be in 1..32767, got ${history}`);
    const mk = key === null || key === undefined ? null : masterKey(sharedKey(key, 'SnapshotDecoder'));
    const checks = streamlessChecks(mk);         // H, Q; P, F, R once a stream is adopted
    // (read-only: an assignment to the bound, the key or its checks would switch them off unseen)
    fixed(this, {
      schema, coder: new PacketCoder(schema), maxBytes: maxBytesOption(maxBytes, 'SnapshotDecoder'),
      mk, checks, T: checks.T,
      rowCost: 8 + 8 * schema.nslots,            // section 19: an id and a 64-bit code a slot
    });
    this.stream = null;         // the adopted hello
    this._setHistory(history);
    this.held = new Map();      // seq -> Snapshot
    this.heldCost = 0;          // section 19's cost of the snapshots in `held`
    this.ambiguous = new Set();
    this._latest = -1;
    this._packetSeq = 0;        // the seq of the packet being decoded (section 19's check 2)
    this.reassembly = null;
    this._limitFn = (N) => this._limit(N);
  }
  #history = 64;
  /** The stream's history (the hello's once one is adopted); read-only. */
  get history() { return this.#history; }
  _setHistory(h) { this.#history = h; this.keep = Math.min(2 * h - 1, 0x8000); }

  /**
   * A decoder that adopted the stream of `hello` (SchemaError, saying what differs, for another
   * schema; DecodeError of kind `limits` for a hello whose parameters could not fit maxBytes).
   */
  static fromHello(schema, hello, options) {
    const dec = new SnapshotDecoder(schema, options);
    const h = parseHello(hello, { key: options == null ? null : options.key });
    const diffs = helloDifferences(schema, h);
    if (diffs.length) throw new SchemaError(`the stream's schema differs from this end's: ${diffs.join('; ')}`);
    dec._checkHello(h);
    dec._adopt(h);
    return dec;
  }

  /** The newest sequence number decoded (null before the first): what to acknowledge. */
  get latest() { return this._latest >= 0 ? this._latest : null; }
  /** The adopted stream's parameters (the parsed hello), or null. */
  get hello() { return this.stream; }
  /**
   * What this decoder holds in section 19's cost model: its snapshots (256 + n * (8 + 8 * S)
   * bytes each) and, once a hello is adopted, reassembly's bound (256 * max_datagram). Never more
   * than maxBytes.
   */
  get heldBytes() { return this.heldCost + (this.stream === null ? 0 : MAX_FRAGMENTS * this.stream.maxDatagram); }

  /** Limits, check 1 (section 19): a window of empty snapshots and full reassembly must fit. */
  _checkHello(h) {
    const need = (2 * h.history - 1) * SNAPSHOT_OVERHEAD + MAX_FRAGMENTS * h.maxDatagram;
    if (need > this.maxBytes) {
      throw new DecodeError(`hello: history ${h.history} and max_datagram ${h.maxDatagram} need ${need} bytes held ((2 * history - 1) * 256 + 256 * max_datagram), more than maxBytes ${this.maxBytes}`, 'limits');
    }
  }
  /**
   * Limits, check 2 (section 19): called by the packet coder once the new snapshot's N entities
   * are known (the packet's seq, its first 16 bits, in `_packetSeq`). H is the cost of the held
   * snapshots the packet leaves in section 10's window: all of them, but when the packet is newer
   * than latest (or nothing was decoded yet) it moves the window, and those it pushes out
   * ((seq - s) mod 65536 >= 2 * history - 1) do not count. (Counting them, a decoder whose
   * maxBytes holds exactly its window refused every packet once the window was full, for good:
   * only a packet that decodes moves the window.)
   */
  _limit(N) {
    const seq = this._packetSeq;
    let H = this.heldCost, kept = this.held.size;
    if (this._latest < 0 || newer(seq, this._latest)) {
      for (const [s, snap] of this.held) {
        if (((seq - s) & SEQ_MASK) >= this.keep) { H -= this._cost(snap); kept--; }
      }
    }
    const snap = SNAPSHOT_OVERHEAD + N * this.rowCost;
    const need = H + snap + MAX_FRAGMENTS * this.stream.maxDatagram;
    if (need > this.maxBytes) {
      throw new DecodeError(`snapshot packet ${seq}: a snapshot of ${N} entities (${snap} bytes) beside the ${kept} held snapshots it leaves in the window (${H} bytes) and reassembly (${MAX_FRAGMENTS * this.stream.maxDatagram}) would hold ${need} bytes, more than maxBytes ${this.maxBytes}`, 'limits');
    }
  }

  _adopt(h) {
    this.stream = h;
    this._setHistory(h.history);
    const key = streamKey(h.fingerprint, h.history, h.predict, h.maxDatagram, h.streamId);
    const sc = streamChecks(this.mk, key);
    this.seedP = seedOf(key, 'P');       // pcheck (section 12) is this CRC-32C, with a key too (section 17)
    this.checkP = sc.P;
    this.checkF = sc.F;
    this.checkR = sc.R;
    this.held.clear();
    this.heldCost = 0;
    this.ambiguous.clear();
    this._latest = -1;
    this.reassembly = new Reassembly(h.maxDatagram, h.history, this.T);
  }

  /** The held snapshot `seq` (a possible baseline), or null. */
  get(seq) { return this._latest >= 0 && this._recent(seq) ? (this.held.get(seq) || null) : null; }
  _recent(s) { return ((this._latest - s) & SEQ_MASK) < this.history; }

  /** Decode one datagram (Uint8Array). */
  decode(d) {
    if (!(d instanceof Uint8Array)) d = datagramBytes(d, 'SnapshotDecoder.decode');
    const n = d.length, T = this.T;
    const bound = this.stream !== null;
    // (section 14, with T the check's length: 4, or 8 with a key, section 17)
    if (bound && n >= 1 + T && this.checkP.holds(d, n)) return this._packet(d, 0, n - T);
    if (bound && n >= 9 + T && this.checkF.holds(d, n)) return this._fragment(d.subarray(0, n - T));
    if (helloHolds(d, this.checks)) return this._hello(d);
    const keyed = this.mk !== null ? ' (with a key: its SipHash tag under this key does not hold)' : '';
    if (!bound) throw new DecodeError(`snapshot stream: no hello adopted yet, so no datagram can be checked${keyed}`, 'no-hello');
    throw new DecodeError(`snapshot stream: a datagram that is no datagram of this stream (damaged, stray, or of another stream)${keyed}`, 'check');
  }

  _hello(d) {
    const h = readHello(d, this.T);
    const diffs = helloDifferences(this.schema, h);
    if (diffs.length) throw new DecodeError(`hello of another schema: ${diffs.join('; ')}`, 'schema');
    const cur = this.stream;
    if (cur !== null) {
      if (h.streamId === cur.streamId) {
        if (!sameBytes(h.bytes, cur.bytes)) throw new DecodeError(`snapshot stream: a hello of stream ${h.streamId.toString(16).padStart(16, '0')} with other parameters than the one adopted`, 'hello');
        return null;                 // the current stream's hello again
      }
      // (section 13: a stream that has decoded no packet yet holds nothing: it does not refuse
      // another, so that a stray hello adopted cannot keep the client from its own server)
      if (h.started <= cur.started && this._latest >= 0) throw new DecodeError(`snapshot stream: a hello of an older stream ${h.streamId.toString(16).padStart(16, '0')} (started ${h.started}, the current one ${cur.started}, which has decoded packets)`, 'hello');
    }
    this._checkHello(h);
    this._adopt(h);
    return null;
  }

  _fragment(body) {
    const ra = this.reassembly;
    const h = ra.check(body);
    const done = ra.add(body, h, this.latest);
    if (done === null) return null;
    const P = done.packet;
    if (crc32c(P, this.seedP) !== done.pcheck || P.length < 2 || u16le(P, 0) !== done.seq) {
      throw new DecodeError(`fragments of packet ${done.seq}: the reassembled packet fails its check`, 'fragment');
    }
    // (a completed packet is forgotten before it is decoded, as Python's decoder does: a refusal
    // here leaves its chunks dropped)
    return this._packet(P, 0, P.length);
  }

  _lookup(s, seq, baseline) {
    const snap = this.held.get(s);
    if (snap !== undefined && (!baseline || this._recent(s))) return snap;
    if (this.ambiguous.has(s)) throw new DecodeError(`snapshot packet ${seq}: the snapshot ${s} it is coded against is ambiguous (two different snapshots were decoded under that number)`, 'baseline');
    if (baseline) throw new DecodeError(`snapshot packet ${seq}: its baseline ${s} is not held`, 'baseline');
    throw new DecodeError(`snapshot packet ${seq}: the snapshot ${s} it extrapolates from is not held`, 'baseline');
  }

  /** Decode a packet whose check held; update the state (section 10). */
  _packet(bytes, start, end) {
    const seqOf = end - start >= 2 ? u16le(bytes, start) : 0;
    this._packetSeq = seqOf;          // (section 19's check: which held snapshots the packet leaves in the window)
    this.coder.joinWith = this._latest >= 0 ? (this.held.get(this._latest) || null) : null;
    this.coder.limit = this._limitFn;
    let snap;
    try {
      snap = this.coder.decode(bytes, start, end, (s, baseline) => this._lookup(s, seqOf, baseline));
    } finally {
      this.coder.joinWith = null;
      this.coder.limit = null;
    }
    const seq = snap.seq;
    if (this._latest < 0 || newer(seq, this._latest)) {
      this._store(seq, snap);
      this._latest = seq;
      if (this.ambiguous.size) for (const k of [...this.ambiguous]) if (((seq - k) & SEQ_MASK) >= this.keep) this.ambiguous.delete(k);
    } else if (this.held.has(seq)) {
      const prev = this.held.get(seq);
      if (prev !== snap && !prev.sameAs(snap)) {
        this._drop(seq);
        this.ambiguous.add(seq);
      } else if (prev !== snap) {
        // a duplicate: the held snapshot is the view (equal, and already shared), and the new
        // one, which nothing else holds, gives its arrays back for the next packet
        this.coder.releaseLast();
        snap = prev;
      }
    } else if (!this.ambiguous.has(seq)) {
      this._store(seq, snap);
    }
    return snap;
  }

  _store(seq, snap) {
    const held = this.held, hist = this.keep;
    if (this._latest >= 0) {
      const nw = this._latest;
      if (!newer(seq, nw)) {
        if (((nw - seq) & SEQ_MASK) < hist) this._put(seq, snap);
        return;
      }
      for (const k of [...held.keys()]) if (((seq - k) & SEQ_MASK) >= hist) this._drop(k);
    }
    this._put(seq, snap);
  }
  _cost(snap) { return SNAPSHOT_OVERHEAD + snap.ids.length * this.rowCost; }
  _put(seq, snap) {
    const prev = this.held.get(seq);
    if (prev !== undefined) this.heldCost -= this._cost(prev);
    this.held.set(seq, snap);
    this.heldCost += this._cost(snap);
  }
  _drop(seq) {
    const prev = this.held.get(seq);
    if (prev === undefined) return;
    this.heldCost -= this._cost(prev);
    this.held.delete(seq);
  }

  /** (latest, held baselines newest first). */
  state() {
    const ref = this._latest;
    if (ref < 0) return [null, []];
    return [ref, [...this.held.keys()].filter((k) => this._recent(k)).sort((a, b) => ((ref - a) & SEQ_MASK) - ((ref - b) & SEQ_MASK))];
  }

  /** Forget every decoded snapshot (keep the adopted stream). */
  reset() { this.held.clear(); this.heldCost = 0; this.ambiguous.clear(); this._latest = -1; if (this.reassembly) this.reassembly.clear(); }
}
