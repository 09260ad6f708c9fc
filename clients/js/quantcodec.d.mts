// TypeScript declarations of quantcodec.mjs (the JavaScript client of the quantcodec wire format).
//
// Integer (number | bigint): a code of a slot of at most 53 bits is a number; of a wider slot, always a bigint.
// An id is a number when it is below 2**53, a bigint from 2**53 on. Signed codes (Integer, Fixed with
// signed=true) are signed; every other code is unsigned.

export type Integer = number | bigint;

export class CodecError extends Error {}
export class SchemaError extends CodecError {}
/** A value an exact codec cannot hold; a zero or non-finite quaternion or unit vector. */
export class ValueRangeError extends CodecError {}
/** `limits`: section 19; `stale`: the server's, for replies only (no client refuses a datagram with it). */
export type DecodeErrorKind = 'no-hello' | 'check' | 'hello' | 'schema' | 'fragment' | 'baseline' | 'malformed' | 'limits' | 'stale';
export const DECODE_ERROR_KINDS: readonly DecodeErrorKind[];
/** A refused datagram, packet or record; `kind` as docs/wire-format.md section 14 names it. */
export class DecodeError extends CodecError {
  constructor(message: string, kind?: DecodeErrorKind);
  readonly kind: DecodeErrorKind;
}

// -- helpers -------------------------------------------------------------------------------------

/** Python's float.hex() of a double. */
export function floatHex(x: number): string;
/** The double that Python's float.hex() wrote ('inf', '-inf', 'nan' included). */
export function parseFloatHex(s: string): number;
/** SHA-256 of bytes. */
export function sha256(data: Uint8Array): Uint8Array;
export function toHex(bytes: Uint8Array): string;
/** CRC-32C (Castagnoli), zlib's continuation convention: crc32c(b, crc32c(a)) == crc32c(a + b). */
export function crc32c(data: Uint8Array, seed?: number, start?: number, end?: number): number;
/** SipHash-2-4 of data under a 16-byte key, as an unsigned 64-bit bigint (the tag: its 8 bytes little-endian). */
export function siphash24(key: Uint8Array, data: Uint8Array): bigint;
/** The master key mk of a shared key of 1 to 255 bytes (wire-format section 17). */
export function masterKey(key: Uint8Array): Uint8Array;
/** The 16-byte tag key sub(label) under a shared key (section 17); a string label is its ASCII bytes. */
export function macKey(key: Uint8Array, label: Uint8Array | string): Uint8Array;
/** A float literal of a JSON document read with {tagFloats: true}. */
export class JsonFloat { constructor(value: number); readonly value: number; valueOf(): number; }
/** JSON with integers beyond 2**53 kept exact (bigint); float literals as JsonFloat with tagFloats. */
export function parseJSON(text: string, options?: { tagFloats?: boolean }): any;

// -- codecs --------------------------------------------------------------------------------------

export type CodecSpec = { kind: string; [key: string]: unknown };
/** A record's code for one field: a code; an array for a Vector; [flag, inner] for a NearlyZero. */
export type FieldCode = Integer | Integer[] | [number, Integer | Integer[]];

export abstract class Codec {
  readonly kind: string;
  /** Bits on the wire for one value (for NearlyZero, the most it takes). */
  readonly bits: number;
  spec(): CodecSpec;
  /** Whether `code` is one that quantize can produce; never throws. */
  valid(code: unknown): boolean;
  toString(): string;
}
export class Bounded extends Codec {
  constructor(min: number, max: number, bits: number, mode?: 'endpoints' | 'bins' | 'midpoint');
  readonly min: number; readonly max: number; readonly mode: string;
  readonly step: number; readonly maxError: number;
  quantize(x: number): number;
  dequantize(code: Integer): number;
}
export class Fixed extends Codec {
  constructor(step: number, bits: number, options?: { signed?: boolean; offset?: number });
  readonly stepSize: number; readonly offset: number; readonly signed: boolean;
  readonly step: number; readonly maxError: number;
  quantize(x: number): Integer;
  dequantize(code: Integer): number;
}
export class Angle extends Codec {
  constructor(bits: number, options?: { signed?: boolean; unit?: 'rad' | 'deg' });
  readonly unit: string; readonly step: number; readonly maxError: number;
  quantize(x: number): number;
  dequantize(code: Integer): number;
}
export class PowerCurve extends Codec {
  constructor(max: number, pow: number, bits: number);
  readonly max: number; readonly pow: number; readonly step: number; readonly maxError: number;
  quantize(x: number): number;
  /** For pow other than 1 or 2: a correctly rounded pow, which the C library's may differ from in the last bit. */
  dequantize(code: Integer): number;
}
export class Half extends Codec {
  constructor();
  quantize(x: number): number;
  dequantize(code: Integer): number;
}
export class Grid extends Codec {
  constructor(cellSize: number, cellBits: number, offsetBits: number);
  readonly cellSize: number; readonly cellBits: number; readonly offsetBits: number;
  quantize(x: number): Integer;
  dequantize(code: Integer): number;
}
export class UInt extends Codec { constructor(bits: number); quantize(x: Integer): Integer; dequantize(code: Integer): Integer; }
export class Int extends Codec { constructor(bits: number); quantize(x: Integer): Integer; dequantize(code: Integer): Integer; }
export class IntRange extends Codec { constructor(lo: Integer, hi: Integer); readonly lo: Integer; readonly hi: Integer; quantize(x: Integer): Integer; dequantize(code: Integer): Integer; }
export class Bool extends Codec { constructor(); quantize(x: boolean | Integer): number; dequantize(code: Integer): boolean; }
export class Enum extends Codec {
  constructor(labelsOrCount: string[] | number);
  readonly n: number; readonly labels: string[] | null;
  /** A label or an index. */
  quantize(x: string | number): number;
  /** The label (the index for Enum(n)). */
  dequantize(code: Integer): string | number;
}
export class Quat extends Codec {
  constructor(bits?: number, mode?: 'endpoints' | 'bins' | 'midpoint');
  readonly componentBits: number; readonly mode: string; readonly step: number;
  /** (x, y, z, w) -> code; ValueRangeError for a zero or non-finite quaternion. */
  quantize(q: ArrayLike<number>): Integer;
  /** code -> [x, y, z, w]. */
  dequantize(code: Integer): [number, number, number, number];
}
export class UnitVector extends Codec {
  constructor(bits: number);
  readonly componentBits: number; readonly step: number;
  quantize(v: ArrayLike<number>): Integer;
  dequantize(code: Integer): [number, number, number];
}
export class Vector extends Codec {
  constructor(...codecs: Codec[]);
  readonly codecs: Codec[];
  quantize(x: ArrayLike<number>): Integer[];
  dequantize(code: Integer[]): Array<number | Integer | string | boolean>;
}
export class NearlyZero extends Codec {
  constructor(inner: Codec, threshold: number);
  readonly inner: Codec; readonly threshold: number;
  quantize(x: number | ArrayLike<number>): [number, Integer | Integer[]];
  dequantize(code: [number, Integer | Integer[]]): number | number[] | Integer | unknown;
}
/** A codec from its spec (as the schema JSON writes it). */
export function codecFromSpec(spec: CodecSpec | Codec): Codec;

// -- bits ----------------------------------------------------------------------------------------

export class BitReader {
  constructor(bytes: Uint8Array, start?: number, end?: number);
  pos: number;
  readonly nbits: number;
  readonly remaining: number;
  /** n <= 32 bits as an unsigned number. */
  read(n: number): number;
  /** n <= 53 bits as a number. */
  readNum(n: number): number;
  /** n <= 64 bits as a bigint. */
  readBig(n: number): bigint;
}
export class BitWriter {
  constructor();
  /** n bits (<= 53 of a number, <= 64 of a bigint), least significant first. */
  write(v: Integer, n: number): void;
  /** The bytes, padded with zero bits to a byte. */
  finish(): Uint8Array;
}

// -- schemas -------------------------------------------------------------------------------------

export interface Slot {
  readonly index: number;
  readonly cls: 'flag' | 'ord' | 'smag' | 'quat' | 'uvec' | 'abs';
  readonly bits: number;
  readonly field: number;
  readonly span: number;
  readonly cbits: number;
  readonly signed: boolean;
  /** More than 53 bits: its codes are bigints. */
  readonly wide: boolean;
  readonly path: string;
}
export interface FieldSummary { name: string; kind: string; bits: number; h: number }

export class Schema {
  constructor(name: string, fields: Array<[string, Codec | CodecSpec]> | Array<{ name: string; codec: Codec | CodecSpec }> | Record<string, Codec | CodecSpec>, options?: { version?: Integer });
  static fromSpec(spec: { name: string; version?: Integer; fields: unknown }): Schema;
  /** From the JSON text schema.to_json() writes (docs/schema-format.md); one leading U+FEFF is
   * skipped. Bytes are read as fromBytes reads them. SchemaError for a document the rules of
   * "One reading everywhere" refuse. */
  static fromJSON(text: string | Uint8Array | ArrayBuffer | ArrayBufferView): Schema;
  /** From a schema file's bytes: strict UTF-8 (invalid bytes, overlong forms, encoded surrogates,
   * UTF-16 refused with a SchemaError), one leading byte-order mark skipped. */
  static fromBytes(bytes: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>): Schema;
  readonly name: string;
  readonly version: Integer;
  readonly fields: ReadonlyArray<{ name: string; codec: Codec }>;
  readonly names: string[];
  /** The first 16 hex digits of the SHA-256 of the canonical JSON: equal to Python's. */
  readonly fingerprint: string;
  readonly canonicalJson: string;
  readonly slots: ReadonlyArray<Slot>;
  readonly nslots: number;
  readonly bits: number;
  spec(): { name: string; version: Integer; fields: Array<{ name: string; codec: CodecSpec }> };
  checkFingerprint(fp: string): void;
  /** [cls, bits, field, span, cbits, signed] per slot. */
  slotTable(): Array<[string, number, number, number, number, boolean]>;
  /** Codes per field -> the row of slot codes (ValueRangeError for an invalid code). */
  slotsOf(codes: FieldCode[]): Integer[];
  /** A row of slot codes -> codes per field. */
  codesOf(row: ArrayLike<Integer>): FieldCode[];
  /** TypeError for a record that is neither an object nor an array. */
  quantize(record: Record<string, unknown> | unknown[]): FieldCode[];
  dequantize(codes: FieldCode[]): Record<string, unknown>;
  valid(codes: unknown): boolean;
  /** One record's bytes (wire-format section 3, padded to a byte). */
  encodeCodes(codes: FieldCode[]): Uint8Array;
  encode(record: Record<string, unknown> | unknown[]): Uint8Array;
  /**
   * Only a canonical message decodes; DecodeError naming the field and bit otherwise. The bytes in
   * the forms SnapshotDecoder.decode takes (TypeError for anything else).
   */
  decodeCodes(bytes: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>): FieldCode[];
  decode(bytes: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>): Record<string, unknown>;
  /** Field summaries as a hello carries them. */
  summaries(): FieldSummary[];
}

// -- snapshots -----------------------------------------------------------------------------------

export function seqNewer(a: number, b: number): boolean;

/** A decoded snapshot (immutable: decoders share its arrays). */
export class Snapshot {
  readonly schema: Schema;
  readonly seq: number;
  /** Ascending ids. */
  readonly ids: ReadonlyArray<Integer>;
  readonly count: number;
  /** The code of slot s of entity i. */
  code(i: number, s: number): Integer;
  /** The slot codes of entity i. */
  row(i: number): Integer[];
  rows(): Integer[][];
  /** The index of an id, or -1. */
  indexOf(id: Integer): number;
  fieldCodes(i: number): FieldCode[];
  /** The decoded record of entity i: {field: value}. */
  values(i: number): Record<string, unknown>;
  sameAs(other: Snapshot): boolean;
  /** The runner's output line. */
  toJSONLine(): string;
}

export interface Hello {
  version: number;
  predict: boolean;
  history: number;
  maxDatagram: number;
  streamId: bigint;
  started: bigint;
  fingerprint: string;
  schemaVersion: number;
  schemaName: string;
  nfields: number;
  fields: FieldSummary[];
}
/**
 * Options of the datagram layer: `key`, a shared secret of 1 to 255 bytes (every check is then an
 * 8-byte SipHash-2-4 tag, section 17). Every options argument of this module may be null or left
 * out (no options); an option it does not know (a misspelt one) is a TypeError naming it.
 */
export interface KeyOptions { key?: Uint8Array | null }
/**
 * Whether a datagram is a hello whose magic and check (with a key: its tag under kH) hold. The
 * datagram in the forms SnapshotDecoder.decode takes (TypeError for anything else, null included).
 */
export function isHello(datagram: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>, options?: KeyOptions | null): boolean;
/** The fields of a hello; DecodeError 'check' when its check fails, 'hello' when malformed. */
export function parseHello(datagram: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>, options?: KeyOptions | null): Hello;
/** The bound on what a client holds when none is given (section 19): 268435456 (256 MiB). */
export const DEFAULT_MAX_BYTES: number;
export interface DecoderOptions extends KeyOptions {
  /** The history until a hello gives the stream's own. */
  history?: number;
  /** Section 19's bound on what the decoder holds, in its cost model: a positive integer (default DEFAULT_MAX_BYTES). */
  maxBytes?: number | bigint | null;
}
/** What differs between this end's schema and the one a hello describes ([] when equal). */
export function helloDifferences(schema: Schema, hello: Hello): string[];
/** The 40-byte stream key of section 11. */
export function streamKey(fingerprint: string, history: number, predict: boolean, maxDatagram: number, streamId: Integer): Uint8Array;

/**
 * A client of a snapshot stream. decode(datagram): the Snapshot a datagram completes, or null (a
 * hello, a fragment; a duplicate of a held snapshot returns the held one); a refused datagram
 * throws DecodeError and changes nothing. After each
 * datagram that returned a Snapshot, acknowledge `latest` to the server.
 */
export class SnapshotDecoder {
  constructor(schema: Schema, options?: DecoderOptions | null);
  /**
   * A decoder on the stream of a hello; SchemaError saying what differs for another schema,
   * DecodeError 'limits' for a hello whose history and max_datagram could not fit maxBytes.
   */
  static fromHello(schema: Schema, hello: Uint8Array, options?: DecoderOptions | null): SnapshotDecoder;
  readonly schema: Schema;
  /** The stream's history (the hello's once one is adopted). */
  readonly history: number;
  /** The newest sequence number decoded, or null: what to acknowledge. */
  readonly latest: number | null;
  /** The adopted hello, or null. */
  readonly hello: Hello | null;
  /**
   * The bound of section 19 (bytes, in its cost model), fixed when the decoder is made: readonly at
   * runtime too (an assignment throws TypeError in strict code), as are schema and history.
   */
  readonly maxBytes: number;
  /**
   * What the decoder holds in section 19's cost model: each snapshot 256 + n * (8 + 8 * slots)
   * bytes, and 256 * max_datagram for reassembly once a hello is adopted. At most maxBytes.
   */
  readonly heldBytes: number;
  /**
   * One datagram: a Uint8Array or Buffer, an ArrayBuffer, any typed array or DataView (the bytes
   * it covers), or an array of byte values. Anything else (a string, null, a Blob: a browser's
   * WebSocket gives Blobs unless its binaryType is 'arraybuffer', a list of datagrams) throws
   * TypeError and changes nothing.
   */
  decode(datagram: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>): Snapshot | null;
  /** The held snapshot seq (a possible baseline), or null. */
  get(seq: number): Snapshot | null;
  /** [latest, held baselines newest first]. */
  state(): [number | null, number[]];
  reset(): void;
}

/** Decode a bare packet (no datagram check) against given snapshots by sequence number. */
export function decodePacket(schema: Schema, packet: Uint8Array, held?: Map<number, Snapshot>): Snapshot;
export interface StreamClientOptions extends KeyOptions {
  /** Section 19's bound on what the client holds (default DEFAULT_MAX_BYTES). */
  maxBytes?: number | bigint | null;
  /** This client's 32-bit incarnation id (section 18); random when not given. */
  nonce?: number | null;
  /** The history until a hello gives the stream's own. */
  history?: number;
}
/**
 * The client of a session (SPEC section 8, wire-format section 18). receive(datagram): a Snapshot,
 * or null (a hello, a fragment); DecodeError (`kind`) for a refused datagram, which changes
 * nothing. reply(): the datagram to send back now (an ack, or a hello request while no stream is
 * adopted), or null when none is due and it is no keep-alive's turn. A reply is due at the start
 * (the first reply, a hello request, asks the server to connect this client), then after a view,
 * an adopted hello, or a refusal of kind no-hello or baseline; while none is due, every 32nd call
 * of reply() returns one all the same (a keep-alive). streamId changes when a new stream is
 * adopted: reset the Interpolator then.
 */
export class StreamClient {
  constructor(schema: Schema, options?: StreamClientOptions | null);
  readonly schema: Schema;
  /** The decoder underneath (its state: held snapshots, heldBytes, latest). */
  readonly decoder: SnapshotDecoder;
  /** (Every readonly member of StreamClient, SnapshotDecoder and Interpolator is read-only at runtime too.) */
  readonly nonce: number;
  /** The number the next reply carries (mod 2**32): settable to an integer in 0..2**32-1 only (TypeError, RangeError). */
  rseq: number;
  /** Whether a reply is due. */
  readonly due: boolean;
  readonly latest: number | null;
  readonly hello: Hello | null;
  /**
   * The adopted stream's id (its hello's streamId), or null before a hello. It changes when the
   * client adopts a new stream (a server that restarted: its ticks start over): call
   * Interpolator.reset() then.
   */
  readonly streamId: bigint | null;
  /** The newest view of the current stream (a late packet's view does not replace it), or null. */
  readonly view: Snapshot | null;
  /** What the client holds in section 19's cost model (at most maxBytes). */
  readonly heldBytes: number;
  readonly maxBytes: number;
  /** One datagram, in the forms SnapshotDecoder.decode takes (TypeError for any other). */
  receive(datagram: Uint8Array | ArrayBuffer | ArrayBufferView | ArrayLike<number>): Snapshot | null;
  /**
   * What to send the server now (wire-format section 18): a hello request while no stream is
   * adopted, else an ack; or null. One is returned when a reply is due, and as a keep-alive when
   * the 31 calls before it, in a row, returned null (every 32nd call while none is due; any reply
   * returned starts the count again). Call it once a tick or a frame, and after datagrams if you
   * like: a restarted server, knowing no client, hears of this one from its keep-alives.
   */
  reply(): Uint8Array | null;
}

/**
 * The runner's line for one datagram: a snapshot, {"error":"KIND"} or {"pending":true}; with a
 * StreamClient, reply() is called after the datagram and the line ends in "reply": hex or null.
 */
export function runnerLine(decoder: SnapshotDecoder | StreamClient, datagram: Uint8Array): string;
/** A DATAGRAMS.bin (u32 LE length + bytes, repeated) split into datagrams. */
export function splitDatagrams(bytes: Uint8Array): Uint8Array[];

// -- snapshot interpolation (docs/interpolation.md) ----------------------------------------------

/** Numbers only: anything else is a TypeError, a number out of range a RangeError, naming the option. */
export interface InterpolatorOptions {
  /** The most views held: an integer of at least 2 (default 32). */
  capacity?: number;
  /** The most ticks past the newest view extrapolated: finite and >= 0 (default 2.0). */
  maxExtrapolation?: number;
}
export interface InterpolatorStats {
  pushed: number;
  /** Duplicates and views older than every view of a full buffer. */
  dropped: number;
  /** Views pushed at or before a render time already sampled. */
  late: number;
  /** Samples past the newest view, with a view before it. */
  extrapolated: number;
  /** Samples before the oldest view. */
  early: number;
}
/** What Interpolator.sample gives. */
export class InterpolatedSample {
  readonly schema: Schema;
  /** View a's ids, ascending. */
  readonly ids: Integer[];
  /** Per field, count * width values, row-major (a plain Array for a field of codes wider than 53 bits). */
  readonly columns: Record<string, Float64Array | Integer[]>;
  /** Per field, the values of one entity (3 for a Vector of 3, 4 for a Quat, 1 for a scalar). */
  readonly width: Record<string, number>;
  readonly count: number;
  /** The tick (unwrapped) of the view drawn from. */
  readonly a: number;
  /** The tick of the view blended towards, or null (held or extrapolated). */
  readonly b: number | null;
  /** The blend between a and b; extrapolating, the multiple of (a - previous view) added; 0 when held. */
  readonly alpha: number;
  /** Entity i's values: a number per scalar field, an array per Vector, Quat or UnitVector (Bool 0/1, Enum its index). */
  values(i: number): Record<string, number | bigint | number[]>;
  indexOf(id: Integer): number;
}
/**
 * A buffer of decoded views keyed by tick (their 16-bit seq unwrapped against the newest), sampled
 * at a render time in ticks: linear fields interpolated, angles along the shortest arc, rotations
 * and unit vectors by nlerp, exact fields held; past the newest view, extrapolated for at most
 * maxExtrapolation ticks. Bit for bit as the Python reference (quantcodec/interpolation.py).
 */
export class Interpolator {
  constructor(schema: Schema, options?: InterpolatorOptions | null);
  readonly schema: Schema;
  readonly capacity: number;
  readonly maxExtrapolation: number;
  readonly stats: InterpolatorStats;
  /** The newest tick pushed (unwrapped), or null. */
  readonly newest: number | null;
  readonly oldest: number | null;
  /** The views held. */
  readonly size: number;
  /** The unwrapped tick of a 16-bit seq: an integer (TypeError for a non-number, RangeError for NaN, an infinity, a fraction). */
  tick(seq: number | bigint): number;
  /**
   * Adds a view (a Snapshot); false when it is dropped (a duplicate, or too old for a full buffer).
   * TypeError for anything that is not a Snapshot, SchemaError for a view of another schema: both
   * before anything changes (stats included).
   */
  push(view: Snapshot): boolean;
  /** Every entity's values at render time t (ticks; e.g. interpolator.newest - delay + elapsed). */
  sample(t: number): InterpolatedSample;
  /**
   * Forgets every view and the latest render time (stats go on counting): the next view pushed
   * starts a new timeline, its tick its seq. Call it when StreamClient.streamId changes (a new
   * stream: a restarted server's ticks start over, and its views would otherwise be dropped).
   */
  reset(): void;
}
