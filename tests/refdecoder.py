"""The plain-Python decoder of docs/wire-format.md, written from the page alone: the oracle the
tests compare the library and the conformance kit against (an independent second reading of
the format, never used by the package).

``ReferenceDecoder`` reads packets (sections 4-7); ``ReferenceStream`` adds the datagram layer
(sections 11-14: CRC-32C, the stream key, the hello, fragments, the rules per datagram) and
counts the branches of the page each datagram reaches, for the kit's coverage report.
"""

import hashlib
import struct
from collections import Counter


class Bits:
    def __init__(self, data):
        self.v = int.from_bytes(data, "little")
        self.n = 8 * len(data)
        self.pos = 0

    def read(self, k):
        assert self.pos + k <= self.n, "truncated"
        x = (self.v >> self.pos) & ((1 << k) - 1)
        self.pos += k
        return x

    def egx(self, k, b):
        E = (b - k + 1) // 2 + 1
        e = 0
        while e < E and self.read(1) == 0:
            e += 1
        if e == E:
            return None          # escape
        x = (1 << e) | self.read(e)
        return ((x - 1) << k) | self.read(k)

    def egx_value(self, k, b):
        v = self.egx(k, b)
        return self.read(b) if v is None else v

    def rice(self, k):
        q = 0
        while self.read(1) == 0:
            q += 1
        return (q << k) | self.read(k)


class ReferenceDecoder:
    """docs/wire-format.md, section by section. `slots` lists each slot as
    (kind, bits, field, span, cbits, signed[, top]) with kind in flag/ord/smag/quat/uvec/abs;
    ``top``, a Quat's top component code L (2**cbits - 1; midpoint 2**cbits - 2), defaults to
    2**cbits - 1."""

    def __init__(self, slots):
        self.slots = [tuple(s)[:6] for s in slots]
        self.tops = [tuple(s)[6] if len(s) > 6 else (1 << s[4]) - 1 for s in slots]
        self.held = {}
        self.limit = None               # section 19: called with a packet's entity count
        self.hits = Counter()           # the branches of the page reached (coverage report)
        comps = []
        for i, (kind, bits, field, span, cb, signed) in enumerate(self.slots):
            if kind in ("ord", "smag"):
                comps.append((i, 0, bits, kind == "smag"))
            elif kind == "quat":
                comps += [(i, 2 * cb, cb, False), (i, cb, cb, False), (i, 0, cb, False)]
            elif kind == "uvec":
                comps += [(i, cb, cb, False), (i, 0, cb, False)]
        self.comps = comps
        self.fields = sorted({s[2] for s in self.slots})

    def field_slots(self, f):
        return [i for i, s in enumerate(self.slots) if s[2] == f]

    def field_comps(self, f):
        return [c for c in range(len(self.comps)) if self.slots[self.comps[c][0]][2] == f]

    def read_set(self, r, M):
        mode = r.read(2)
        self.hits[f"set:mode{mode}"] += 1
        cb = (M - 1).bit_length()
        if mode == 0:
            return []
        if mode == 3:
            return [i for i in range(M) if r.read(1)]
        cnt = r.read(cb) + (1 if mode == 1 else 0)
        pos = []
        if cnt:
            k = r.read(5)
            prev = -1
            for _ in range(cnt):
                prev = prev + 1 + r.rice(k)
                pos.append(prev)
        return pos if mode == 1 else [i for i in range(M) if i not in set(pos)]

    def read_record(self, r):
        row, s = [], 0
        while s < len(self.slots):
            kind, bits, _, span, _, signed = self.slots[s]
            v = r.read(bits)
            if signed and v >> (bits - 1):
                v -= 1 << bits
            row.append(v % (1 << 64))
            if kind == "flag" and v == 0:
                row += [0] * span
                s += span
            s += 1
        return row

    @staticmethod
    def lin(v, b, smag):
        return v ^ ((1 << (b - 1)) - 1) if smag and v >> (b - 1) else v

    def sub(self, row, c):
        slot, shift, b, smag = self.comps[c]
        bits = self.slots[slot][1]
        return self.lin(((row[slot] % (1 << bits)) >> shift) & ((1 << b) - 1), b, smag)

    def decode(self, data, hits=None):
        if hits is not None:
            self.hits = hits
        r = Bits(data)
        seq = r.read(16)
        base = pred = None
        if r.read(1):
            bdist = r.egx_value(2, 16) + 1
            base = self.held[(seq - bdist) % 65536]
            if r.read(1):
                pdist = r.egx_value(2, 16) + 1
                pred = self.held[(seq - bdist - pdist) % 65536]
                num, den = bdist, pdist
                self.hits["packet:pred" + (":whole-ratio" if bdist % pdist == 0 and bdist != pdist
                                           else ":equal" if bdist == pdist else ":rounded")] += 1
        self.hits["packet:delta" if base else "packet:full"] += 1
        if seq < 64 and base is not None and (seq - bdist) % 65536 > seq:
            self.hits["packet:wrap"] += 1
        removed = set(self.read_set(r, len(base[0]))) if base and base[0] else set()
        nnew = r.egx_value(0, 32)
        if self.limit is not None:
            if nnew > r.n - r.pos:
                raise ValueError("a count of new entities larger than the packet can hold")
            self.limit((len(base[0]) - len(removed) if base else 0) + nnew)
        new_ids = []
        if removed:
            self.hits["entities:removed"] += 1
        if nnew:
            self.hits["entities:new" + (":id-gaps" if base else "")] += 1
            k = r.read(6)
            prev = None
            for _ in range(nnew):
                g = r.egx_value(k, 64)
                prev = g if prev is None else prev + 1 + g
                new_ids.append(prev)
        new_rows = [self.read_record(r) for _ in range(nnew)]
        rows = {}
        if base:
            kept = [i for i in range(len(base[0])) if i not in removed]
            for i in kept:
                rows[base[0][i]] = list(base[1][i])
            pred_rows = dict(zip(*pred)) if pred else {}
            if pred:
                ctx = [1 if base[0][i] not in pred_rows or pred_rows[base[0][i]] != base[1][i] else 0
                       for i in kept]
                c1 = [i for i, c in zip(kept, ctx) if c]
                c0 = [i for i, c in zip(kept, ctx) if not c]
                chg = [c1[j] for j in (self.read_set(r, len(c1)) if c1 else [])]
                chg += [c0[j] for j in (self.read_set(r, len(c0)) if c0 else [])]
                chg.sort()
            else:
                chg = [kept[j] for j in (self.read_set(r, len(kept)) if kept else [])]
            if chg:
                fsets = [set(self.read_set(r, len(chg))) for _ in self.fields]
                kk, pp = {}, {}
                for f, fs in zip(self.fields, fsets):
                    if fs:
                        for c in self.field_comps(f):
                            b = self.comps[c][2]
                            pp[c] = r.read(1) if pred and b <= 32 else 0
                            kk[c] = r.read(b.bit_length())
                for e, i in enumerate(chg):
                    ident = base[0][i]
                    brow = base[1][i]
                    prow = pred_rows.get(ident) if pred else None
                    row = rows[ident]
                    for f, fs in zip(self.fields, fsets):
                        if e in fs:
                            self.read_field(r, f, brow, prow, row, kk, pp, num if pred else 1,
                                            den if pred else 1)
        for i, row in zip(new_ids, new_rows):
            rows[i] = row
        assert r.n - r.pos < 8 and r.read(r.n - r.pos) == 0, "trailing data"
        ids = sorted(rows)
        out = [rows[i] for i in ids]
        self.held[seq] = (ids, out)
        return seq, ids, out

    def ref(self, c, brow, prow, use, num, den):
        b = self.comps[c][2]
        bl = self.sub(brow, c)
        if not (use and prow is not None):
            return bl
        d = (bl - self.sub(prow, c)) % (1 << b)
        d = d - (1 << b) if d >> (b - 1) else d
        t = d * num
        q = (2 * abs(t) + den) // (2 * den)
        return (bl + (q if t >= 0 else -q)) % (1 << b)

    def comp(self, r, c, brow, prow, use, kk, pp, num, den, alt=False):
        _, _, b, smag = self.comps[c]
        k = kk[c]
        u = r.egx(k, b)
        if u is None:
            if alt and r.read(1):
                return None
            self.hits["eg:escape"] += 1
            u = r.read(b)
        if use and pp[c] and prow is not None:
            self.hits["ref:extrapolated"] += 1
        d = (u >> 1) ^ -(u & 1)
        v = (self.ref(c, brow, prow, use and pp[c], num, den) + d) % (1 << b)
        return self.lin(v, b, smag)

    def read_field(self, r, f, brow, prow, row, kk, pp, num, den):
        slots = self.field_slots(f)
        s = slots[0]
        end = slots[-1] + 1
        implied_flag = self.slots[s][0] == "flag" and s + 1 + self.slots[s][3] == end
        while s < end:
            kind, bits, _, span, cb, signed = self.slots[s]
            if kind == "flag":
                v = 1 if implied_flag and brow[s] == 0 else r.read(1)
                self.hits["flag:implied" if implied_flag and brow[s] == 0 else f"flag:{v}"] += 1
                row[s] = v
                if v == 0:
                    for t in range(s + 1, s + 1 + span):
                        row[t] = 0
                    s += span
                s += 1
                continue
            cs = [c for c in range(len(self.comps)) if self.comps[c][0] == s]
            if kind == "abs":
                v = brow[s] ^ 1 if (len(slots) == 1 and bits == 1) else r.read(bits)
                self.hits["abs:1bit-flip" if (len(slots) == 1 and bits == 1) else "abs:code"] += 1
            elif kind == "quat":
                same = (prow is not None and prow[s] >> (3 * cb) == brow[s] >> (3 * cb))
                first = self.comp(r, cs[0], brow, prow, same, kk, pp, num, den, alt=True)
                if first is None and r.read(1) == 0:
                    self.hits["quat:absolute"] += 1
                    v = r.read(bits)
                elif first is None:
                    # a new largest component j: differences from the baseline remapped
                    i, j, M, top = brow[s] >> (3 * cb), r.read(2), (1 << cb) - 1, self.tops[s]
                    assert j != i, "remap to the baseline's own index"
                    self.hits["quat:remapped"] += 1
                    A = {q: (brow[s] >> ((2 - t) * cb)) & M for t, q in enumerate(q for q in range(4) if q != i)}
                    v = j << (3 * cb)
                    for t, q in enumerate(q for q in range(4) if q != j):
                        ref = A[j] if q == i else A[q] if A[j] >> (cb - 1) else (top - A[q]) & M
                        u = r.egx_value(kk[cs[t]], cb)
                        v |= ((ref + ((u >> 1) ^ -(u & 1))) & M) << ((2 - t) * cb)
                else:
                    self.hits["quat:same-index"] += 1
                    v = (brow[s] >> (3 * cb)) << (3 * cb) | first << (2 * cb)
                    v |= self.comp(r, cs[1], brow, prow, same, kk, pp, num, den) << cb
                    v |= self.comp(r, cs[2], brow, prow, same, kk, pp, num, den)
            else:
                v = 0
                for c in cs:
                    v |= self.comp(r, c, brow, prow, True, kk, pp, num, den) << self.comps[c][1]
                if signed and v >> (bits - 1):
                    v = (v - (1 << bits)) % (1 << 64)
                self.hits[f"{kind}:difference"] += 1
            row[s] = v
            s += 1




# -- sections 11-14 -------------------------------------------------------------------------------

def _crc_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC_TABLE = _crc_table()


def crc32c(data, seed=0):
    crc = ~seed & 0xFFFFFFFF
    for byte in data:
        crc = CRC_TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return ~crc & 0xFFFFFFFF


class Refused(Exception):
    def __init__(self, kind):
        super().__init__(kind)
        self.kind = kind


def siphash24(key, data):
    """SipHash-2-4 (section 17), written from Aumasson and Bernstein's paper."""
    mask = (1 << 64) - 1

    def rotl(x, b):
        return ((x << b) | (x >> (64 - b))) & mask

    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261,
         k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & mask
        v[1] = rotl(v[1], 13) ^ v[0]
        v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & mask
        v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & mask
        v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & mask
        v[1] = rotl(v[1], 17) ^ v[2]
        v[2] = rotl(v[2], 32)

    n = len(data)
    whole = n - n % 8
    for i in range(0, whole, 8):
        m = struct.unpack_from("<Q", data, i)[0]
        v[3] ^= m
        rnd()
        rnd()
        v[0] ^= m
    m = struct.unpack("<Q", data[whole:] + bytes(7 - n % 8) + bytes([n & 0xFF]))[0]
    v[3] ^= m
    rnd()
    rnd()
    v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


class Check:
    """A datagram's check (sections 11 and 17): crc32c with a seed, or a SipHash tag."""

    def __init__(self, seed=None, key=None):
        self.seed, self.key = seed, key
        self.t = 4 if key is None else 8

    def holds(self, d):
        if len(d) < self.t:
            return False
        body, c = d[:-self.t], int.from_bytes(d[-self.t:], "little")
        return (crc32c(body, self.seed) if self.key is None else siphash24(self.key, body)) == c

    def seal(self, body):
        if self.key is None:
            return body + struct.pack("<I", crc32c(body, self.seed))
        return body + struct.pack("<Q", siphash24(self.key, body))


class ReferenceStream:
    """One client's datagram rules (section 14) over a ReferenceDecoder. ``decode(d)`` returns
    (seq, ids, rows), None (pending) or raises Refused(kind). ``hits`` counts the branches.
    ``key``: the shared key (section 17); ``max_bytes``: the limit (section 19), which also
    makes it keep section 10's window; ``nonce``: make replies (``reply()``, section 18)."""

    def __init__(self, slots, fingerprint, *, key=None, max_bytes=None, nonce=None):
        self.slots = slots
        self.fingerprint = fingerprint
        self.hello = None
        self.dec = None
        self.hits = Counter()
        self.parts = {}
        self.latest = None
        self.max_bytes = max_bytes if max_bytes is not None else 268435456
        self.window = max_bytes is not None or nonce is not None
        if key is None:
            self.mk = None
        else:
            z = b"quantcodec mac k"
            self.mk = (struct.pack("<Q", siphash24(z, b"\x01" + key))
                       + struct.pack("<Q", siphash24(z, b"\x02" + key)))
        self.hello_check = (Check(crc32c(b"quantcodec hello")) if self.mk is None
                            else Check(key=self.sub(b"quantcodec hello")))
        self.request_check = (Check(crc32c(b"quantcodec hello request")) if self.mk is None
                              else Check(key=self.sub(b"quantcodec hello request")))
        self.nonce, self.rseq, self.due = nonce, 0, True
        self.ambiguous = set()

    def sub(self, label):
        return (struct.pack("<Q", siphash24(self.mk, label + b"\x00"))
                + struct.pack("<Q", siphash24(self.mk, label + b"\x01")))

    def _adopt(self, h):
        if (2 * h["history"] - 1) * 256 + 256 * h["max_datagram"] > self.max_bytes:
            raise Refused("limits")
        self.hello = h
        key = (b"quantcodec" + bytes([1]) + h["fingerprint"].encode("ascii")
               + struct.pack("<HBHQ", h["history"], h["predict"], h["max_datagram"], h["stream_id"]))
        self.seed_p = crc32c(key + b"P")
        if self.mk is None:
            self.check_p, self.check_f = Check(self.seed_p), Check(crc32c(key + b"F"))
            self.check_r = Check(crc32c(key + b"R"))
        else:
            self.check_p, self.check_f, self.check_r = (Check(key=self.sub(key + x)) for x in (b"P", b"F", b"R"))
        self.dec = ReferenceDecoder(self.slots)
        if self.window:
            self.dec.limit = self._limit
        self.parts = {}
        self.latest = None
        self.ambiguous = set()

    def _limit(self, n):
        # H: the held snapshots the packet leaves in section 10's window (a newer packet moves
        # it, and those it pushes out do not count)
        row = 8 + 8 * len(self.slots)
        seq, keep = self.packet_seq, 2 * self.hello["history"] - 1
        moves = self.latest is None or 0 < (seq - self.latest) % 65536 < 32768
        held = sum(256 + len(ids) * row for s, (ids, _) in self.dec.held.items()
                   if not moves or (seq - s) % 65536 < keep)
        if held + 256 + n * row + 256 * self.hello["max_datagram"] > self.max_bytes:
            raise Refused("limits")

    def decode(self, d):
        d = bytes(d)
        try:
            out = self._decode(d)
        except Refused as e:
            if e.kind in ("no-hello", "baseline"):
                self.due = True
            raise
        return out

    def _decode(self, d):
        t = self.hello_check.t
        if self.hello and len(d) >= 1 + t and self.check_p.holds(d):
            self.hits["datagram:whole"] += 1
            return self._packet(d[:-t])
        if self.hello and len(d) >= 9 + t and self.check_f.holds(d):
            self.hits["datagram:fragment"] += 1
            return self._fragment(d[:-t])
        if d[:4] == b"QCHL" and len(d) >= 51 + t and self.hello_check.holds(d):
            self.hits["datagram:hello"] += 1
            return self._hello(d[:-t])
        self.hits["refused:no-hello" if self.hello is None else "refused:check"] += 1
        raise Refused("no-hello" if self.hello is None else "check")

    def reply(self):
        """Section 18: the reply due (bytes), or None; a keep-alive (the reply it would be) when
        the last 31 calls returned None."""
        if not self.due:
            self.idle = getattr(self, "idle", 0) + 1
            if self.idle < 32:
                return None
            self.hits["reply:keepalive-" + ("request" if self.hello is None else "ack")] += 1
        self.idle = 0
        self.due = False
        rseq, self.rseq = self.rseq, (self.rseq + 1) % 2**32
        if self.hello is None:
            body = bytes([0x48, 0]) + struct.pack("<II", self.nonce, rseq) + self.fingerprint.encode("ascii")
            return self.request_check.seal(body)
        if self.latest is None:
            return self.check_r.seal(bytes([0x41, 0]) + struct.pack("<IIHI", self.nonce, rseq, 0, 0))
        h = self.hello["history"]
        acks = 0
        for i in range(32):
            s = (self.latest - 1 - i) % 65536
            if s in self.dec.held and (self.latest - s) % 65536 < h:
                acks |= 1 << i
        return self.check_r.seal(bytes([0x41, 1]) + struct.pack("<IIHI", self.nonce, rseq,
                                                                 self.latest, acks))

    def _hello(self, body):
        (version, flags, history, max_datagram, stream_id, started, fp,
         _sv) = struct.unpack_from("<BBHHQQ16sI", body, 4)
        if version != 1 or flags & ~1 or not 1 <= history <= 32767 \
                or not 64 <= max_datagram <= 65507 or len(body) + 4 > max_datagram \
                or any(ch not in b"0123456789abcdef" for ch in fp):
            self.hits["hello:refused"] += 1
            raise Refused("hello")
        pos = 46                                        # the name, the counts, the summaries
        try:
            pos += 1 + body[pos]
            body[47:pos].decode("utf-8")
            nf, ns = struct.unpack_from("<HH", body, pos)
            pos += 4
            for _ in range(ns):
                n = body[pos]
                body[pos + 1:pos + 1 + n].decode("utf-8")
                pos += 1 + n + 7
            if ns > nf or pos != len(body):
                raise ValueError
        except (IndexError, struct.error, UnicodeDecodeError, ValueError):
            self.hits["hello:refused"] += 1
            raise Refused("hello") from None
        h = {"version": version, "predict": flags & 1, "history": history,
             "max_datagram": max_datagram, "stream_id": stream_id, "started": started,
             "fingerprint": fp.decode("ascii"), "body": bytes(body)}
        if h["fingerprint"] != self.fingerprint:
            self.hits["hello:schema"] += 1
            raise Refused("schema")
        if self.hello is not None:
            if stream_id == self.hello["stream_id"]:
                if h["body"] != self.hello["body"]:
                    self.hits["hello:refused"] += 1
                    raise Refused("hello")
                self.hits["hello:again"] += 1
                return None
            if started <= self.hello["started"] and self.latest is not None:
                self.hits["hello:older"] += 1
                raise Refused("hello")
            self.hits["hello:newer-stream"] += 1
        else:
            self.hits["hello:first"] += 1
        self._adopt(h)
        self.due = True
        return None

    def _fragment(self, body):
        seq, index, count1, pcheck = struct.unpack_from("<HBBI", body, 0)
        count, chunk = count1 + 1, body[8:]
        size = self.hello["max_datagram"] - 8 - self.hello_check.t
        if count1 == 0 or index >= count or \
                (len(chunk) != size if index < count - 1 else not 1 <= len(chunk) <= size):
            self.hits["fragment:inconsistent"] += 1
            raise Refused("fragment")
        if self.latest is not None:
            for key in [k for k in self.parts if 0 < (self.latest - k[0]) % 65536 < 32768
                        and (self.latest - k[0]) % 65536 >= self.hello["history"]]:
                del self.parts[key]
        key = (seq, count, pcheck)
        if index in self.parts.get(key, ()):
            self.hits["fragment:duplicate"] += 1
            return None
        # rule 4's bound: chunks counted as C bytes, at most 256 * max_datagram; the oldest
        # partial packets (furthest behind latest, then begun earliest; this one, if new, last
        # among its equals) dropped first, this fragment not kept when its own packet comes up
        if (sum(map(len, self.parts.values())) + 1) * size > 256 * self.hello["max_datagram"]:
            def behind(k):
                d = 0 if self.latest is None else (self.latest - k[0]) % 65536
                return d - 65536 if d >= 32768 else d
            ranked = sorted(list(self.parts) + ([] if key in self.parts else [key]),
                            key=lambda k: -behind(k))
            for k in ranked:
                if (sum(map(len, self.parts.values())) + 1) * size <= 256 * self.hello["max_datagram"]:
                    break
                if k == key:
                    self.parts.pop(key, None)
                    self.hits["fragment:no-room"] += 1
                    return None
                del self.parts[k]
                self.hits["fragment:dropped-older"] += 1
        part = self.parts.setdefault(key, {})
        part[index] = chunk
        if len(part) < count:
            self.hits["fragment:pending"] += 1
            return None
        del self.parts[(seq, count, pcheck)]
        packet = b"".join(part[i] for i in range(count))
        if crc32c(packet, self.seed_p) != pcheck or packet[0] | packet[1] << 8 != seq:
            raise Refused("fragment")
        self.hits["fragment:complete"] += 1
        return self._packet(packet)

    def _packet(self, packet):
        before = dict(self.dec.held)
        if self.window:
            # section 10: baselines less than history back, preds less than 2 * history - 1
            h = self.hello["history"]
            ok = {s: v for s, v in before.items() if s not in self.ambiguous}
            self.dec.held = {s: v for s, v in ok.items()
                             if self.latest is not None and (self.latest - s) % 65536 < h}
            preds = ok
        try:
            if self.window:
                out = self._decode_windowed(packet, preds)
            else:
                out = self.dec.decode(packet, self.hits)
        except KeyError:
            self.dec.held = before
            self.hits["refused:baseline"] += 1
            raise Refused("baseline") from None
        except (AssertionError, IndexError, ValueError):
            self.dec.held = before
            self.hits["refused:malformed"] += 1
            raise Refused("malformed") from None
        except Refused:
            self.dec.held = before
            raise
        seq = out[0]
        if self.window:
            self.dec.held = before
            self._keep(seq, (out[1], out[2]))
        if self.latest is None or 0 < (seq - self.latest) % 65536 < 32768:
            self.latest = seq
        self.due = True
        return out

    def _decode_windowed(self, packet, preds):
        """The decoder reads its baseline from ``held`` and its pred from ``preds``."""
        baselines = self.dec.held
        self.dec.held = dict(preds)     # (it looks up both in one dict: the baseline checked first)
        r = Bits(packet)
        seq = self.packet_seq = r.read(16)
        if r.read(1):
            bdist = r.egx_value(2, 16) + 1
            if (seq - bdist) % 65536 not in baselines:
                raise KeyError("baseline")
        return self.dec.decode(packet, self.hits)

    def _keep(self, seq, snap):
        """Section 10's window after a packet decoded to ``snap``."""
        held = self.dec.held
        keep = 2 * self.hello["history"] - 1
        if self.latest is None or 0 < (seq - self.latest) % 65536 < 32768:
            held[seq] = snap
            self.ambiguous = {s for s in self.ambiguous if (seq - s) % 65536 < keep}
            for s in [s for s in held if (seq - s) % 65536 >= keep]:
                del held[s]
        elif seq in held:
            if held[seq] != snap:
                del held[seq]
                self.ambiguous.add(seq)
        elif seq not in self.ambiguous and (self.latest - seq) % 65536 < keep:
            held[seq] = snap
