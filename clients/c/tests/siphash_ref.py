"""A SipHash-2-4 written from the paper (Aumasson and Bernstein 2012) and wire-format 17's key
derivation, in plain Python: where the vectors in tests/test.c come from. Run it to print them:

    python3 clients/c/tests/siphash_ref.py

(the 64 vectors of the reference implementation: key 00..0f, messages 00..n-1; then mk, kH and
kQ of the keys the test uses). No dependency; not part of run-tests.
"""
import struct

M = (1 << 64) - 1


def _rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M


def siphash(key, msg):
    k0, k1 = struct.unpack("<QQ", key)
    v = [k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573]

    def sipround():
        v[0] = (v[0] + v[1]) & M; v[1] = _rotl(v[1], 13); v[1] ^= v[0]; v[0] = _rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M; v[3] = _rotl(v[3], 16); v[3] ^= v[2]
        v[0] = (v[0] + v[3]) & M; v[3] = _rotl(v[3], 21); v[3] ^= v[0]
        v[2] = (v[2] + v[1]) & M; v[1] = _rotl(v[1], 17); v[1] ^= v[2]; v[2] = _rotl(v[2], 32)

    full = len(msg) // 8 * 8
    for i in range(0, full, 8):
        m = struct.unpack_from("<Q", msg, i)[0]
        v[3] ^= m
        sipround(); sipround()
        v[0] ^= m
    b = ((len(msg) & 0xFF) << 56) | int.from_bytes(msg[full:], "little")
    v[3] ^= b
    sipround(); sipround()
    v[0] ^= b
    v[2] ^= 0xFF
    for _ in range(4):
        sipround()
    return v[0] ^ v[1] ^ v[2] ^ v[3]


def master(key):
    """mk = u64le(SipHash(Z, 0x01 || key)) || u64le(SipHash(Z, 0x02 || key))"""
    z = b"quantcodec mac k"
    return struct.pack("<QQ", siphash(z, b"\x01" + key), siphash(z, b"\x02" + key))


def sub(mk, label):
    """sub(L) = u64le(SipHash(mk, L || 0x00)) || u64le(SipHash(mk, L || 0x01))"""
    return struct.pack("<QQ", siphash(mk, label + b"\x00"), siphash(mk, label + b"\x01"))


if __name__ == "__main__":
    key = bytes(range(16))
    assert siphash(key, b"") == 0x726FDB47DD0E0E31           # the wire format's two values
    assert siphash(key, bytes(range(15))) == 0xA129CA6149BE45E5
    for n in range(64):
        print("0x%016xull," % siphash(key, bytes(range(n))), end="\n" if n % 4 == 3 else " ")
    mk = master(key)
    print("mk(00..0f)", mk.hex())
    print("kH(00..0f)", sub(mk, b"quantcodec hello").hex())
    print("kQ(00..0f)", sub(mk, b"quantcodec hello request").hex())
    print("mk(ff)", master(b"\xff").hex())
    print("mk(00..fe)", master(bytes(range(255))).hex())
