"""A real binary adaptive range coder for bench/context_study.py (a study's coder, not the wire).

The study prices an adaptive binary arithmetic coder by its ideal code length (-log2 p of
Krichevsky-Trofimov counts); this module codes the same events for real, so that the ideal can
be checked against bytes that decode: ``encode(values, cells)`` -> bytes,
``decode(data, cells, n)`` -> values, the model reset at each call (one packet: nothing carried
over from a packet that may be lost).

The range coder is LZMA's (a 32-bit range, a 64-bit ``low`` with carry propagation through a
cached byte), with 16-bit probabilities of a 0 bit; a bit of probability 1/2 is a raw bit. The
end is flushed with the value of [low, low + range) that has the most trailing zero bytes, and
trailing zero bytes are dropped (the decoder reads zeros past the end), so the coded size is
within about a byte of the ideal. The model: per context, counts n0, n1 from 0, p(0) =
(n0 + 1/2) / (n0 + n1 + 1) (Krichevsky-Trofimov), in 16 bits through a table of
2**32 // (2n + 2) (no division); counts are halved at 1024.

Binarization of a value u >= 0 in a cell (what both ends derive from acked state, with the
component): e = bitlen(u + 1) - 1 in unary (bin i of the cell says "e == i"), then the e bits of
u + 1 below its top bit, the first two adaptive per (cell, e), the others raw.
"""

from __future__ import annotations

import math

TOP = 1 << 24
PBITS = 16
HALF = 1 << (PBITS - 1)
RECIP = [(1 << 32) // (2 * n + 2) for n in range(1025)]      # no division a bit, in C


class RangeEncoder:
    def __init__(self):
        self.low = 0
        self.range = 0xFFFFFFFF
        self.cache = 0
        self.cache_size = 1
        self.out = bytearray()

    def _shift_low(self):
        if self.low < 0xFF000000 or self.low >= 1 << 32:
            carry = self.low >> 32
            temp = self.cache
            while True:
                self.out.append((temp + carry) & 0xFF)
                temp = 0xFF
                self.cache_size -= 1
                if self.cache_size == 0:
                    break
            self.cache = (self.low >> 24) & 0xFF
        self.cache_size += 1
        self.low = (self.low & 0x00FFFFFF) << 8

    def bit(self, bit, p0):
        """Code ``bit`` whose probability of being 0 is p0 / 2**16 (0 < p0 < 2**16)."""
        bound = (self.range >> PBITS) * p0
        if bit:
            self.low += bound
            self.range -= bound
        else:
            self.range = bound
        while self.range < TOP:
            self.range <<= 8
            self._shift_low()

    def finish(self):
        # the value of [low, low + range) with the most trailing zero bits
        lo, hi = self.low, self.low + self.range - 1
        for t in range(40, -1, -1):
            v = (lo + (1 << t) - 1) >> t << t
            if v <= hi:
                break
        self.low = v
        for _ in range(5):
            self._shift_low()
        data = bytes(self.out)
        assert data[0] == 0, "LZMA's first byte is always 0"
        return data[1:].rstrip(b"\0")


class RangeDecoder:
    def __init__(self, data):
        self.data = b"\0" + bytes(data)
        self.pos = 0
        self.range = 0xFFFFFFFF
        self.code = 0
        for _ in range(5):
            self.code = (self.code << 8) | self._byte()

    def _byte(self):
        b = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return b

    def bit(self, p0):
        bound = (self.range >> PBITS) * p0
        if self.code < bound:
            self.range = bound
            bit = 0
        else:
            self.code -= bound
            self.range -= bound
            bit = 1
        while self.range < TOP:
            self.range <<= 8
            self.code = ((self.code << 8) | self._byte()) & 0xFFFFFFFF
        return bit


class Model:
    """Adaptive binary contexts: Krichevsky-Trofimov counts from 0, p in 16 bits."""

    def __init__(self):
        self.counts = {}
        self.ideal = 0.0            # -log2 of the exact KT probabilities of the coded bits

    def p0(self, ctx):
        n0, n1 = self.counts.get(ctx, (0, 0))
        p = ((2 * n0 + 1) * RECIP[n0 + n1]) >> 16        # (2 n0 + 1) / (2 n + 2) in 16 bits
        return min(max(p, 1), (1 << PBITS) - 1)

    def update(self, ctx, bit):
        n0, n1 = self.counts.get(ctx, (0, 0))
        self.ideal -= math.log2(((n1 if bit else n0) + 0.5) / (n0 + n1 + 1))
        if bit:
            n1 += 1
        else:
            n0 += 1
        if n0 + n1 >= 1024:
            n0, n1 = (n0 + 1) >> 1, (n1 + 1) >> 1
        self.counts[ctx] = (n0, n1)


def _events(u):
    """(slot, bit) of the modelled events of u and its raw bits (high first)."""
    x = u + 1
    e = x.bit_length() - 1
    ev = [(min(i, 40), 1 if i == e else 0) for i in range(e + 1)]
    raw = []
    for j in range(e - 1, -1, -1):
        bit = (x >> j) & 1
        if j == e - 1:
            ev.append((41 + min(e, 11), bit))
        elif j == e - 2:
            ev.append((52 + min(e, 11), bit))
        else:
            raw.append(bit)
    return ev, raw


def encode(values, cells):
    """Code non-negative ints ``values``, each in its context cell; returns (bytes, model)."""
    enc, model = RangeEncoder(), Model()
    for u, cell in zip(values, cells):
        ev, raw = _events(int(u))
        for slot, bit in ev:
            ctx = (cell, slot)
            enc.bit(bit, model.p0(ctx))
            model.update(ctx, bit)
        for bit in raw:
            enc.bit(bit, HALF)
            model.ideal += 1.0
    return enc.finish(), model


def decode(data, cells):
    """The values coded by :func:`encode` in these cells (one per value, in order)."""
    dec, model = RangeDecoder(data), Model()
    out = []
    for cell in cells:
        e = 0
        while True:
            ctx = (cell, min(e, 40))
            bit = dec.bit(model.p0(ctx))
            model.update(ctx, bit)
            if bit:
                break
            e += 1
        x = 1
        for j in range(e - 1, -1, -1):
            if j >= e - 2:
                ctx = (cell, (41 if j == e - 1 else 52) + min(e, 11))
                bit = dec.bit(model.p0(ctx))
                model.update(ctx, bit)
            else:
                bit = dec.bit(HALF)
            x = (x << 1) | bit
        out.append(x - 1)
    return out
