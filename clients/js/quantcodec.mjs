// quantcodec.mjs: a dependency-free JavaScript client of the quantcodec wire format
// (docs/wire-format.md, docs/schema-format.md, docs/codecs.md) for Node >= 18 and current
// browsers: schemas and their fingerprint, every codec (dequantize, valid; quantize for the
// scalar, vector, quaternion and unit-vector codecs), one record, the snapshot stream decoder
// with the datagram layer (check, hello, fragments, history window, acks), the session client
// (StreamClient: replies, keyed SipHash-2-4 checks, limits; wire-format sections 17-19) and
// snapshot interpolation.
//
// This entry re-exports the public API of the ES modules under src/, one a room of the core
// (bits and entropy, delta rules, codecs, schema, packet, stream, client, interpolation); a page
// loads it as is (<script type="module">), the modules beside it.
//
// Numbers: codes of slots of at most 53 bits and ids below 2**53 are plain numbers; codes of wider
// slots (UInt/Int/Fixed/Grid/Quat/UnitVector of more than 53 bits) are always BigInt, and ids of
// 2**53 and above are BigInt (an id is a number exactly when it is a safe integer). Signed codes
// (Int, Fixed with signed=true) are signed; every other code is unsigned.

export { CodecError, DECODE_ERROR_KINDS, DecodeError, SchemaError, ValueRangeError, floatHex, parseFloatHex } from './src/util.mjs';
export { crc32c, macKey, masterKey, sha256, siphash24, toHex } from './src/hash.mjs';
export { JsonFloat, parseJSON } from './src/json.mjs';
export { Angle, Bool, Bounded, Codec, Enum, Fixed, Grid, Half, Int, IntRange, NearlyZero, PowerCurve, Quat, UInt, UnitVector, Vector, codecFromSpec } from './src/codecs.mjs';
export { BitReader, BitWriter } from './src/bits.mjs';
export { Schema } from './src/schema.mjs';
export { Snapshot, seqNewer } from './src/snapshot.mjs';
export { DEFAULT_MAX_BYTES, SnapshotDecoder, helloDifferences, isHello, parseHello, streamKey } from './src/stream.mjs';
export { StreamClient, decodePacket, runnerLine, splitDatagrams } from './src/client.mjs';
export { InterpolatedSample, Interpolator } from './src/interpolation.mjs';
