"""The datagram layer of a snapshot stream (docs/wire-format.md sections 11-14): the stream key
and its seeds, the hello, fragments and their bounded reassembly.

The check of a whole datagram is computed and verified in C by the encoder's and decoder's state
(``_delta``: the hot path, one per packet); what is here runs once per stream (key, hello) or
only for the rare packets above the datagram budget (fragments).
"""

from __future__ import annotations

import hashlib
import numbers
import struct
from collections import OrderedDict
from typing import NamedTuple

from ._bitstream import crc32c, siphash24
from ._canonical import canonical_json
from ._codecs import KIND_TABLE
from ._history import (CHECK, FRAGMENT_HEADER, HELLO_BODY, MAX_DATAGRAM, MAX_FRAGMENTS, MIN_DATAGRAM, SNAPSHOT_COST,
                       REPLY_ACK, REPLY_HELLO, TAG, holds, seal, seq_distance, seq_newer)
from .errors import CodecError, DecodeError

VERSION = 1                      # the format version in the key and the hello
MAGIC = b"QCHL"
HELLO_FIXED = HELLO_BODY + CHECK # a keyless hello with an empty name and no field summary
SEED_H = crc32c(b"quantcodec hello")
SEED_Q = crc32c(b"quantcodec hello request")
DEFAULT_MAX_BYTES = 1 << 28      # section 19: what a client may hold, by default (256 MiB)
MAX_KEY = 255                    # a shared key's length, at most (section 17)

KIND_CODES = {name: wire for name, _, _, wire in KIND_TABLE}   # the one table: _codecs.pyx
KIND_NAMES = {v: k for k, v in KIND_CODES.items()}

_U32 = struct.Struct("<I")
_FRAG = struct.Struct("<HBBI")
_HELLO_HEAD = struct.Struct("<4sBBHHQQ16sI")      # magic .. schema version: 46 bytes


def stream_key(fingerprint, history, predict, max_datagram, stream_id):
    """The 40-byte key K of section 11."""
    return (b"quantcodec" + bytes([VERSION]) + fingerprint.encode("ascii")
            + struct.pack("<HBHQ", history, 1 if predict else 0, max_datagram, stream_id))


def seeds(key):
    """(seed_P, seed_F) of a stream key."""
    return crc32c(key + b"P"), crc32c(key + b"F")


# -- the shared key (section 17) ----------------------------------------------------------------

_Z = b"quantcodec mac k"


def shared_key(key, owner):
    """The master key ``mk`` (16 bytes) of a user's shared key, or None without one."""
    if key is None:
        return None
    if isinstance(key, str) or not isinstance(key, (bytes, bytearray, memoryview)):
        raise TypeError(f"{owner}: key must be bytes (1 to {MAX_KEY} of them) or None, got "
                        f"{type(key).__name__}")
    key = bytes(key)
    if not 1 <= len(key) <= MAX_KEY:
        raise ValueError(f"{owner}: key must be 1 to {MAX_KEY} bytes, got {len(key)}")
    return (siphash24(_Z, b"\x01" + key).to_bytes(8, "little")
            + siphash24(_Z, b"\x02" + key).to_bytes(8, "little"))


def subkey(mk, label):
    """sub(label) of section 17: a 16-byte SipHash key derived from the master key."""
    return (siphash24(mk, label + b"\x00").to_bytes(8, "little")
            + siphash24(mk, label + b"\x01").to_bytes(8, "little"))


def checks(key, mk):
    """The checks of a stream (its key ``K``) for packets, fragments and replies: CRC seeds
    without a shared key (``mk`` None), SipHash keys with one. A check is what ``seal`` and
    ``holds`` take: an int seed or a 16-byte key."""
    if mk is None:
        return crc32c(key + b"P"), crc32c(key + b"F"), crc32c(key + b"R")
    return subkey(mk, key + b"P"), subkey(mk, key + b"F"), subkey(mk, key + b"R")


def hello_check(mk):
    """The check of hellos (no stream yet): seed_H, or kH with a key."""
    return SEED_H if mk is None else subkey(mk, b"quantcodec hello")


def request_check(mk):
    """The check of hello requests: seed_Q, or kQ with a key."""
    return SEED_Q if mk is None else subkey(mk, b"quantcodec hello request")


def check_len(check):
    """The bytes a check takes at the end of a datagram: 4 (CRC-32C) or 8 (SipHash tag)."""
    return CHECK if isinstance(check, int) else TAG


def limit_bytes(max_bytes, owner):
    """A client's ``max_bytes`` (section 19), checked."""
    if max_bytes is None:
        return DEFAULT_MAX_BYTES
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral):
        raise TypeError(f"{owner}: max_bytes must be an integer, got {type(max_bytes).__name__}")
    max_bytes = int(max_bytes)      # (a NumPy integer too, as SPEC section 0 takes them)
    if max_bytes < 1:
        raise ValueError(f"{owner}: max_bytes must be positive, got {max_bytes}")
    return max_bytes


def hello_cost(history, max_datagram):
    """Section 19, check 1: what adopting a hello commits a client to hold at least."""
    return (2 * history - 1) * SNAPSHOT_COST + MAX_FRAGMENTS * max_datagram


def check_max_datagram(max_datagram, owner):
    if isinstance(max_datagram, bool) or not isinstance(max_datagram, numbers.Integral):
        raise TypeError(f"{owner}: max_datagram must be an integer, got {type(max_datagram).__name__}")
    max_datagram = int(max_datagram)
    if not MIN_DATAGRAM <= max_datagram <= MAX_DATAGRAM:
        raise ValueError(f"{owner}: max_datagram must be in {MIN_DATAGRAM}..{MAX_DATAGRAM} bytes, "
                         f"got {max_datagram}")
    return max_datagram


# -- the hello ----------------------------------------------------------------------------------

class FieldSummary(NamedTuple):
    name: str
    kind: str            # the codec kind ("Bounded", ...), or "kind N" for a code this library lacks
    bits: int
    h: int               # first 4 bytes (LE) of the SHA-256 of the codec spec's canonical JSON


class Hello(NamedTuple):
    """What a hello carries (section 13)."""
    version: int
    predict: bool
    history: int
    max_datagram: int
    stream_id: int
    started: int
    fingerprint: str
    schema_version: int
    schema_name: str
    nfields: int
    fields: tuple        # FieldSummary, possibly fewer than nfields


def _field_hash(codec):
    return _U32.unpack(hashlib.sha256(canonical_json(codec.spec()).encode("ascii")).digest()[:4])[0]


def _utf8_prefix(text, limit):
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return raw
    return raw[:limit].decode("utf-8", "ignore").encode("utf-8")


def summaries(schema):
    return tuple(FieldSummary(name, codec.spec()["kind"], codec.bits, _field_hash(codec))
                 for name, codec in schema.fields)


def make_hello(schema, history, predict, max_datagram, stream_id, started, check=SEED_H):
    """The hello datagram of a stream (section 13), at most ``max_datagram`` bytes; ``check``
    its check (``hello_check``)."""
    t = check_len(check)
    # the name is cut (at a character) to what the budget leaves: the hello always fits
    name = _utf8_prefix(schema.name, min(255, max_datagram - _HELLO_HEAD.size - 1 - 4 - t))
    head = _HELLO_HEAD.pack(MAGIC, VERSION, 1 if predict else 0, history, max_datagram, stream_id,
                            started, schema.fingerprint.encode("ascii"), schema.version & 0xFFFFFFFF)
    parts = [head, bytes([len(name)]), name]
    room = max_datagram - len(head) - 1 - len(name) - 4 - t
    fields = []
    for f in summaries(schema):
        raw = _utf8_prefix(f.name, 255)
        item = bytes([len(raw)]) + raw + struct.pack("<BHI", KIND_CODES[f.kind], min(f.bits, 0xFFFF), f.h)
        if len(item) > room:
            break
        room -= len(item)
        fields.append(item)
    parts.append(struct.pack("<HH", min(len(schema.fields), 0xFFFF), len(fields)))
    parts.extend(fields)
    return seal(b"".join(parts), check)


def is_hello(data, check=SEED_H):
    """Whether ``data`` (bytes) is a hello: its magic and its check (section 14, rule 3)."""
    return len(data) >= HELLO_BODY + check_len(check) and data[:4] == MAGIC and holds(data, check)


def parse_hello(data, check=SEED_H):
    """The Hello in ``data``; DecodeError (kind ``hello``) when it is not a well-formed hello of
    this format version (a datagram whose check fails: kind ``check``)."""
    data = bytes(data)
    if not is_hello(data, check):
        raise DecodeError("hello: not a hello (too short, no QCHL magic, or its check fails)", kind="check")
    (_, version, flags, history, max_datagram, stream_id, started, fp,
     schema_version) = _HELLO_HEAD.unpack_from(data, 0)
    if version != VERSION:
        raise DecodeError(f"hello: format version {version}, this library reads version {VERSION}",
                          kind="hello")
    if flags & ~1:
        raise DecodeError(f"hello: unknown flags 0x{flags:02x}", kind="hello")
    if not 1 <= history <= 0x7FFF:
        raise DecodeError(f"hello: history {history} outside 1..32767", kind="hello")
    if not MIN_DATAGRAM <= max_datagram <= MAX_DATAGRAM or len(data) > max_datagram:
        raise DecodeError(f"hello: max_datagram {max_datagram} outside {MIN_DATAGRAM}..{MAX_DATAGRAM} "
                          f"or smaller than the hello ({len(data)} bytes)", kind="hello")
    if any(ch not in b"0123456789abcdef" for ch in fp):
        raise DecodeError(f"hello: the fingerprint {fp!r} is not 16 lowercase hex digits", kind="hello")
    fingerprint = fp.decode("ascii")
    end = len(data) - check_len(check)
    pos = _HELLO_HEAD.size

    def take(n, what):
        nonlocal pos
        if pos + n > end:
            raise DecodeError(f"hello: truncated in {what} at byte {pos}", kind="hello")
        out = data[pos:pos + n]
        pos += n
        return out

    def text(what):
        raw = take(take(1, what)[0], what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            raise DecodeError(f"hello: {what} is not UTF-8", kind="hello") from None

    name = text("the schema name")
    nf, ns = struct.unpack("<HH", take(4, "the field counts"))
    if ns > nf:
        raise DecodeError(f"hello: {ns} field summaries for {nf} fields", kind="hello")
    fields = []
    for i in range(ns):
        fname = text(f"field {i}'s name")
        kind, bits, h = struct.unpack("<BHI", take(7, f"field {i}"))
        fields.append(FieldSummary(fname, KIND_NAMES.get(kind, f"kind {kind}"), bits, h))
    if pos != end:
        raise DecodeError(f"hello: {end - pos} bytes after the last field summary", kind="hello")
    return Hello(version, bool(flags & 1), history, max_datagram, stream_id, started, fingerprint,
                 schema_version, name, nf, tuple(fields))


def differences(schema, hello):
    """What differs between ``schema`` and the one a hello describes: a list of sentences
    (empty when the fingerprints are equal)."""
    if hello.fingerprint == schema.fingerprint:
        return []
    out = [f"fingerprint {schema.fingerprint} here, {hello.fingerprint} in the hello"]
    mine = _utf8_prefix(schema.name, 255).decode("utf-8")
    if hello.schema_name != mine and not (len(hello.schema_name.encode("utf-8")) < 255
                                         and mine.startswith(hello.schema_name)):
        out.append(f"schema name {schema.name!r} here, {hello.schema_name!r} in the hello")
    if hello.schema_version != schema.version & 0xFFFFFFFF:
        out.append(f"schema version {schema.version} here, {hello.schema_version} in the hello")
    mine = {s.name: s for s in summaries(schema)}
    theirs = {s.name: s for s in hello.fields}
    complete = len(hello.fields) == hello.nfields
    for name, s in mine.items():
        t = theirs.get(name)
        if t is None:
            if complete:
                out.append(f"field {name!r} is not in the server's schema")
            continue
        if t.kind != s.kind:
            out.append(f"field {name!r}: {s.kind} here, {t.kind} on the server")
        elif t.bits != s.bits:
            out.append(f"field {name!r}: {s.bits} bits here, {t.bits} on the server")
        elif t.h != s.h:
            out.append(f"field {name!r}: same kind ({s.kind}) and bits, other parameters "
                       f"(range, step, labels...)")
    for name in theirs:
        if name not in mine:
            out.append(f"field {name!r} of the server's schema is missing here")
    if complete and not set(mine) - set(theirs) and not set(theirs) - set(mine):
        order_here = list(mine)
        order_there = [s.name for s in hello.fields]
        if order_here != order_there:
            out.append(f"field order {order_here} here, {order_there} on the server")
    if not complete:
        out.append(f"(the hello summarizes {len(hello.fields)} of the server's {hello.nfields} fields)")
    return out


# -- fragments ----------------------------------------------------------------------------------

def fragment(datagram, max_datagram, check_f, seed_p=None):
    """The datagrams of one sealed packet (packet + check): the datagram itself when it fits,
    else its fragments (section 12). ``check_f`` the fragments' check (``checks``); with a
    key, ``seed_p`` (the stream's seed_P) gives their ``pcheck``. CodecError when it needs
    more than 256."""
    n = len(datagram)
    if n <= max_datagram:
        return [datagram]
    t = check_len(check_f)
    packet = memoryview(datagram)[:n - t]
    pcheck = _U32.unpack_from(datagram, n - t)[0] if t == CHECK else crc32c(packet, seed_p)
    size = max_datagram - FRAGMENT_HEADER - t
    count = -(-len(packet) // size)
    if count > MAX_FRAGMENTS:
        raise CodecError(f"snapshot packet of {len(packet)} bytes needs {count} fragments of at most "
                         f"{max_datagram} bytes; at most {MAX_FRAGMENTS}: raise max_datagram or send "
                         f"fewer entities")
    seq = packet[0] | packet[1] << 8
    out = []
    for i in range(count):
        out.append(seal(_FRAG.pack(seq, i, count - 1, pcheck) + packet[i * size:(i + 1) * size], check_f))
    return out


class Reassembly:
    """The partial packets of one stream (section 12): chunks kept under (seq, count, pcheck),
    each counted as a full chunk whatever its length, at most ``256 * max_datagram`` bytes in
    all (the oldest partial packets dropped first, by how far their seq is behind ``latest``,
    then in the order begun: so at most 256 * max_datagram / C chunks, 258 at 1,200 bytes, 315
    at 64, whatever the headers say, and never a newer packet for an older one's fragments),
    and a partial packet given up once its seq is ``history`` or more behind ``latest``."""

    def __init__(self, max_datagram, history, check_len=CHECK):
        self.size = max_datagram - FRAGMENT_HEADER - check_len
        self.limit = MAX_FRAGMENTS * max_datagram
        self.history = history
        self.parts = OrderedDict()       # (seq, count, pcheck) -> {index: chunk}
        self.held = 0                    # bytes of chunks held

    def clear(self):
        self.parts.clear()
        self.held = 0

    def _too_old(self, latest, seq):
        """Whether packet ``seq`` is older than the history, ``latest`` the newest decoded."""
        return seq_newer(latest, seq) and seq_distance(latest, seq) >= self.history

    def _drop(self, key):
        self.held -= self.size * len(self.parts.pop(key))

    def _make_room(self, key, new, latest):
        """Room for one more chunk of packet ``key`` (section 12, rule 4): partial packets
        dropped oldest first (furthest behind ``latest``; equals in the order begun, a ``new``
        one last), until the chunk fits. False, with its own packet dropped, when that one
        comes up first: the chunk is not kept, and the newer packets stay."""
        def behind(k):
            if latest is None:
                return 0
            d = (latest - k[0]) & 0xFFFF
            return d - 0x10000 if d >= 0x8000 else d
        ranked = sorted(list(self.parts) + ([key] if new else []), key=behind, reverse=True)
        # (sorted is stable, and reverse=True keeps equals in their order: the order begun)
        for k in ranked:
            if self.held + self.size <= self.limit:
                break
            if k == key:
                if not new:
                    self._drop(key)
                return False
            self._drop(k)
        return True

    def add(self, body, latest):
        """Take the fragment ``body`` (the datagram without its check, which held). Returns
        (seq, packet) when it completes one, None otherwise; DecodeError (kind ``fragment``,
        nothing kept) when it is inconsistent."""
        if len(body) <= FRAGMENT_HEADER:
            raise DecodeError(f"fragment: {len(body)} bytes before the check, no chunk", kind="fragment")
        seq, index, count1, pcheck = _FRAG.unpack_from(body, 0)
        count = count1 + 1
        chunk = bytes(body[FRAGMENT_HEADER:])
        if count1 == 0:
            raise DecodeError(f"fragment of packet {seq}: a count of 1 (a packet that fits is sent "
                              f"whole)", kind="fragment")
        if index >= count:
            raise DecodeError(f"fragment of packet {seq}: index {index} of {count}", kind="fragment")
        last = index == count - 1
        if (len(chunk) != self.size) if not last else not 1 <= len(chunk) <= self.size:
            raise DecodeError(f"fragment {index} of {count} of packet {seq}: a chunk of {len(chunk)} bytes "
                              f"({'at most ' if last else ''}{self.size} expected)", kind="fragment")
        if latest is not None:
            for key in [k for k in self.parts if self._too_old(latest, k[0])]:
                self._drop(key)
            if self._too_old(latest, seq):
                return None      # (given up: too old to be waited for)
        key = (seq, count, pcheck)
        part = self.parts.get(key)
        if part is not None and index in part:
            return None          # a duplicate
        if self.held + self.size > self.limit and not self._make_room(key, part is None, latest):
            return None          # (its packet the oldest: not kept)
        if part is None:
            part = self.parts[key] = {}
        part[index] = chunk
        self.held += self.size
        if len(part) < count:
            return None
        self._drop(key)
        packet = b"".join(part[i] for i in range(count))
        return seq, packet, pcheck
