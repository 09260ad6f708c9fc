"""A plain-Python SipHash-2-4 and the key derivation of docs/wire-format.md section 17, written
from the paper and the page (64-bit integers, no shortcuts), to produce the vectors that
test/siphash.test.mjs embeds: `python3 support/siphash_ref.py` prints them as JSON.

Nothing imports this module at test time; it is the independent reference of the JavaScript
implementation (which works on 32-bit halves)."""
import json
import struct
import sys

M64 = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M64


def siphash24(key: bytes, msg: bytes) -> int:
    assert len(key) == 16
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def rnd():
        v[0] = (v[0] + v[1]) & M64; v[1] = _rotl(v[1], 13) ^ v[0]; v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M64; v[3] = _rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M64; v[3] = _rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M64; v[1] = _rotl(v[1], 17) ^ v[2]; v[2] = _rotl(v[2], 32)

    n = len(msg)
    tail = msg[n - n % 8:] + bytes(8 - n % 8 - 1) + bytes([n & 0xFF])
    words = [struct.unpack_from("<Q", msg, i)[0] for i in range(0, n - n % 8, 8)] + [struct.unpack("<Q", tail)[0]]
    for m in words:
        v[3] ^= m
        rnd(); rnd()
        v[0] ^= m
    v[2] ^= 0xFF
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def u64le(x):
    return struct.pack("<Q", x)


Z = b"quantcodec mac k"


def master_key(key: bytes) -> bytes:
    return u64le(siphash24(Z, b"\x01" + key)) + u64le(siphash24(Z, b"\x02" + key))


def sub(mk: bytes, label: bytes) -> bytes:
    return u64le(siphash24(mk, label + b"\x00")) + u64le(siphash24(mk, label + b"\x01"))


def main():
    key = bytes(range(16))
    official = ["%016x" % siphash24(key, bytes(range(n))) for n in range(64)]
    assert official[0] == "726fdb47dd0e0e31" and official[15] == "a129ca6149be45e5"
    derived = []
    for user in (b"k", bytes(range(16)), bytes(range(255)), b"correct horse battery staple"):
        mk = master_key(user)
        labels = [b"quantcodec hello", b"quantcodec hello request", bytes(range(40)) + b"P", bytes(range(40)) + b"R"]
        derived.append({"key": user.hex(), "mk": mk.hex(), "sub": {l.hex(): sub(mk, l).hex() for l in labels}})
    json.dump({"official": official, "derived": derived}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
