// src/client.mjs: the session client (StreamClient: replies, acks, hello requests; SPEC section 8,
// wire-format section 18) and the runner's helpers (decodePacket, runnerLine, splitDatagrams).
import { DecodeError, describe, fixed, optionsArg } from './util.mjs';
import { asciiBytes, toHex, u32le } from './hash.mjs';
import { SEQ_MASK } from './snapshot.mjs';
import { PacketCoder } from './packet.mjs';
import { SnapshotDecoder } from './stream.mjs';

// The session client (SPEC section 8; wire-format section 18): one decoder, and the replies

const ACK = 0x41, HELLO_REQUEST = 0x48;
// reply() returns a reply every KEEPALIVE_CALLS-th call while none is due (section 18, "Keep-alives")
const KEEPALIVE_CALLS = 32;
const CLIENT_OPTIONS = ['key', 'maxBytes', 'nonce', 'history'];

function randomU32() {
  const c = globalThis.crypto;
  if (c && typeof c.getRandomValues === 'function') return c.getRandomValues(new Uint32Array(1))[0];
  return Math.floor(Math.random() * 0x100000000) >>> 0;
}

/**
 * The client of a session (StreamServer on the other end): `receive(datagram)` decodes what the
 * server sends (a Snapshot, or null for a hello or a fragment; DecodeError with `.kind` for a
 * refused datagram, which changes nothing), and `reply()` says what to send back now: an ack, a
 * hello request, or null. Call `reply()` once a tick (or a frame), and after every datagram if you
 * like, and send what it returns; replies need no reliability (each ack repeats the 32 numbers
 * before its latest). While nothing makes a reply due, every 32nd call returns one all the same
 * (a keep-alive: a restarted server, which knows no client, hears of this one from it). A new
 * client's first reply, due before anything arrives, is a hello request: send it to connect.
 * `streamId` changes when the client adopts a new stream (a restarted server's): reset the
 * Interpolator then.
 *
 * Options: `key` (the shared secret of section 17, 1 to 255 bytes: every check both ways is then
 * a SipHash-2-4 tag), `maxBytes` (section 19's bound on what the client holds, default
 * DEFAULT_MAX_BYTES), `nonce` (this client's 32-bit incarnation id; random when not given: a
 * client that restarts must draw a new one), `history` (until a hello gives the stream's own).
 */
export class StreamClient {
  constructor(schema, options) {
    let { key = null, maxBytes = null, nonce = null, history = 64 } = optionsArg(options, CLIENT_OPTIONS, 'StreamClient');
    const decoder = new SnapshotDecoder(schema, { key, maxBytes, history });
    if (nonce === null || nonce === undefined) nonce = randomU32();
    else if (!(Number.isInteger(nonce) && nonce >= 0 && nonce <= 0xffffffff)) throw new RangeError(`StreamClient: nonce must be an integer in 0..2**32-1, got ${nonce}`);
    fixed(this, { decoder, nonce });      // (read-only: its bound and key; the incarnation replies carry)
    this._fp = asciiBytes(schema.fingerprint);
    this._view = null;
  }
  #rseq = 0;          // the number of the next reply (mod 2**32)
  // whether a reply is due (section 18): from the start, whose reply is a hello request (the word
  // that asks a server to connect this client), then after what the due rule names
  #due = true;
  #idle = 0;          // the calls of reply() in a row that returned nothing (section 18's keep-alives)
  /** Whether a reply is due (read-only: receive() and reply() keep it; a keep-alive is never due). */
  get due() { return this.#due; }
  /** The number the next reply carries; settable to an integer in 0..2**32-1 (RangeError otherwise). */
  get rseq() { return this.#rseq; }
  set rseq(v) {
    if (typeof v !== 'number') throw new TypeError(`StreamClient.rseq must be an integer in 0..2**32-1, got ${describe(v)}`);
    if (!(Number.isInteger(v) && v >= 0 && v <= 0xffffffff)) throw new RangeError(`StreamClient.rseq must be an integer in 0..2**32-1, got ${v}`);
    this.#rseq = v;
  }
  get schema() { return this.decoder.schema; }
  /**
   * The newest view received on the current stream (what to render), or null: a late packet's
   * view is returned by receive() but does not replace a newer one; a new stream clears it.
   */
  get view() { return this._view; }
  /** What the client holds in section 19's cost model (at most maxBytes). */
  get heldBytes() { return this.decoder.heldBytes; }
  get maxBytes() { return this.decoder.maxBytes; }
  /** The newest sequence number decoded on the adopted stream, or null. */
  get latest() { return this.decoder.latest; }
  /** The adopted stream's hello, or null. */
  get hello() { return this.decoder.hello; }
  /**
   * The adopted stream's id (a bigint, the hello's `streamId`), or null before a hello; read-only.
   * It changes when the client adopts a new stream (a server that restarted): reset the
   * Interpolator then, since the new stream's ticks start over.
   */
  get streamId() { const h = this.decoder.hello; return h ? h.streamId : null; }

  /**
   * Decode one datagram from the server. A view, an adopted hello (a new stream), or a refusal
   * of kind `no-hello` or `baseline` make a reply due; nothing else does (junk cannot make a
   * client send).
   */
  receive(datagram) {
    const dec = this.decoder, stream = dec.stream;
    let view;
    try {
      view = dec.decode(datagram);
    } catch (e) {
      if (e instanceof DecodeError && (e.kind === 'no-hello' || e.kind === 'baseline')) this.#due = true;
      throw e;
    }
    if (view !== null) {
      this.#due = true;
      if (this._view === null || view.seq === dec.latest || dec.stream !== stream) this._view = view;
    } else if (dec.stream !== stream) {
      this.#due = true;
      this._view = null;
    }
    return view;
  }

  /**
   * The reply to send now (a Uint8Array), or null: a hello request when no stream is adopted,
   * else an ack of `latest` and the 32 numbers before it (section 18). One is returned when a
   * reply is due, and as a keep-alive when the 31 calls before, in a row, returned null (every
   * 32nd call while none is due; any reply returned starts the count again): call it once a tick.
   */
  reply() {
    if (!this.#due && this.#idle < KEEPALIVE_CALLS - 1) {
      this.#idle++;
      return null;
    }
    this.#idle = 0;
    this.#due = false;
    const dec = this.decoder, T = dec.T, h = dec.stream;
    let out;
    if (h === null) {
      out = new Uint8Array(26 + T);
      out[0] = HELLO_REQUEST;
      out[1] = 0;
      putU32(out, 2, this.nonce);
      putU32(out, 6, this.#rseq);
      out.set(this._fp, 10);
      dec.checks.Q.seal(out, 26);
    } else {
      out = new Uint8Array(16 + T);
      out[0] = ACK;
      putU32(out, 2, this.nonce);
      putU32(out, 6, this.#rseq);
      const latest = dec._latest;
      if (latest >= 0) {
        out[1] = 1;
        out[10] = latest & 0xff; out[11] = latest >> 8;
        let acks = 0;
        const n = Math.min(32, dec.history - 1);     // possible baselines: less than history older than latest
        for (let i = 0; i < n; i++) if (dec.held.has((latest - 1 - i) & SEQ_MASK)) acks |= 1 << i;
        putU32(out, 12, acks >>> 0);
      }
      dec.checkR.seal(out, 16);
    }
    this.#rseq = (this.#rseq + 1) >>> 0;
    return out;
  }
}
function putU32(b, o, v) { b[o] = v & 0xff; b[o + 1] = (v >>> 8) & 0xff; b[o + 2] = (v >>> 16) & 0xff; b[o + 3] = (v >>> 24) & 0xff; }

/** Decode a bare packet (no datagram check) against explicitly held snapshots: for tests and tools. */
export function decodePacket(schema, packet, held = new Map()) {
  const coder = new PacketCoder(schema);
  const p = packet instanceof Uint8Array ? packet : new Uint8Array(packet);
  return coder.decode(p, 0, p.length, (s, baseline) => {
    const snap = held.get(s);
    if (!snap) throw new DecodeError(`snapshot packet: ${baseline ? 'its baseline' : 'the snapshot it extrapolates from'} ${s} is not held`, 'baseline');
    return snap;
  });
}

/**
 * The runner's output line for one datagram (docs: clients/<lang>/qc-decode). With a StreamClient
 * (`--replies`), the line ends in the key "reply": the hex of what reply() returned after the
 * datagram, or null.
 */
export function runnerLine(decoder, datagram) {
  const client = decoder instanceof StreamClient;
  let line;
  try {
    const snap = client ? decoder.receive(datagram) : decoder.decode(datagram);
    line = snap === null ? '{"pending":true}' : snap.toJSONLine();
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    line = `{"error":"${e.kind}"}`;
  }
  if (!client) return line;
  const r = decoder.reply();
  return `${line.slice(0, -1)},"reply":${r === null ? 'null' : `"${toHex(r)}"`}}`;
}

/** Split a DATAGRAMS.bin (each datagram as a u32 LE length and its bytes) into datagrams. */
export function splitDatagrams(bytes) {
  const out = [];
  let o = 0;
  while (o < bytes.length) {
    if (o + 4 > bytes.length) throw new Error(`datagram file: a length cut short at byte ${o}`);
    const n = u32le(bytes, o);
    o += 4;
    if (o + n > bytes.length) throw new Error(`datagram file: a datagram of ${n} bytes at byte ${o} runs past the end (${bytes.length} bytes)`);
    out.push(bytes.subarray(o, o + n));
    o += n;
  }
  return out;
}

// -- snapshot interpolation (docs/interpolation.md) ----------------------------------------------
