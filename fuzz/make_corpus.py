"""Write the seed corpus ``fuzz/corpus/<target>/`` from real encodes (deterministic).

    python fuzz/make_corpus.py            # all targets whose API is importable
    python fuzz/make_corpus.py bitreader  # one target

Each seed is a small file in the input layout of the target (see ``fuzzlib``): a few mode bytes
followed by a real message, so the fuzzer starts from well-formed input and mutates inward.
"""

import hashlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# the source tree, after PYTHONPATH and site-packages: an installed or instrumented build wins
sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import quantcodec as qc  # noqa: E402

import fuzzlib  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        os.remove(os.path.join(d, old))
    for s in seeds:
        s = bytes(s)
        with open(os.path.join(d, hashlib.sha1(s).hexdigest()[:16]), "wb") as f:
            f.write(s)
    return len(set(map(bytes, seeds)))


def bitreader_seeds():
    rng = np.random.default_rng(5)
    seeds = []
    # payloads: pack() output and BitWriter streams of mixed widths
    payloads = []
    for bits in (1, 3, 7, 8, 13, 32, 33, 64):
        codes = rng.integers(0, 1 << min(bits, 63), 6, dtype=np.uint64)
        payloads.append(qc.pack(codes, bits))
    w = qc.BitWriter()
    w.write(5, 3)
    w.write(17, 5)
    w.write_signed(-3, 7)
    w.write_bool(True)
    w.write_array(np.arange(4, dtype=np.uint16), 11)
    w.align()
    w.write((1 << 64) - 1, 64)
    payloads.append(w.getvalue())
    payloads.append(b"")
    payloads.append(b"\x80")
    for p in payloads:
        for _ in range(3):
            nops = int(rng.integers(1, 16))
            ops = []
            for _ in range(nops):
                kind = int(rng.integers(0, 8))
                count = int(rng.integers(0, 8))
                ops += [kind | count << 3, int(rng.integers(0, 65))]
            head = nops | int(rng.integers(0, 16)) << 4
            seeds.append(bytes([head] + ops) + p)
    # a read of every width, then finish
    for bits in (0, 1, 8, 31, 32, 33, 63, 64):
        seeds.append(bytes([2, 0, bits, 5, 0]) + qc.pack([1], bits) if bits else bytes([1, 5, 0]))
    return seeds


def schema_seeds():
    rng = np.random.default_rng(6)
    seeds = []
    for si, s in enumerate(fuzzlib.schemas()):
        for rec in fuzzlib.sample_records(s, rng, 4):
            msg = s.encode(rec)
            seeds.append(bytes([si | 0 << 2, 0]) + msg)          # decode + decode_codes
            seeds.append(bytes([si | 3 << 2, 1]) + msg)          # decode of a bytearray
            seeds.append(bytes([si | 2 << 2, 0]) + msg)          # decode_many of one record
        for count in (0, 2, 5):
            msg = s.encode_many(fuzzlib.sample_columns(s, rng, count))
            seeds.append(bytes([si | 1 << 2, count]) + msg)
    return seeds


def snapshot_seeds():
    """Datagrams of the world's stream (mode 0), and bare packets, fragment bodies and hello
    bodies for the harness to seal (modes 1, 2, 3): see ``fuzzlib.snapshot_decode``."""
    w = fuzzlib.world()
    raw, packet, fragment, hello = (m << 2 for m in range(4))
    # another stream's hellos: newer (adopted) and older (refused) than the world's
    newer = qc.SnapshotEncoder(w.schema, history=64, stream_id=w.STREAM_ID + 1)
    newer._started_us, newer._hello = w.STARTED + 1, None
    older = qc.SnapshotEncoder(w.schema, history=16, stream_id=w.STREAM_ID + 2)
    older._started_us, older._hello = w.STARTED - 1, None
    frags = w.fragments[0]
    assert len(frags) >= 2
    seeds = []
    for state, upto in enumerate((0, 1, 3, 5)):
        seeds.append(bytes([state | raw]) + w.packets[0])                       # a full packet
        if upto:
            seeds.append(bytes([state | raw]) + w.packets[upto - 1])            # a duplicate
        if upto < len(w.packets):
            seeds.append(bytes([state | raw]) + w.packets[upto])                # the next one
            seeds.append(bytes([state | packet]) + w.packets[upto][:-4])        # ... bare, to seal
        seeds.append(bytes([state | raw]) + w.packets[-1])                      # far ahead
        seeds.append(bytes([state | packet]) + w.packets[-1][:-4])
        seeds.append(bytes([state | raw]) + w.hello)                            # the hello again
        seeds.append(bytes([state | hello]) + newer.hello()[:-4])               # a newer stream
        seeds.append(bytes([state | hello]) + older.hello()[:-4])               # an older one
        seeds.append(bytes([state | fragment]) + frags[0][:-4])                 # a fragment
        seeds.append(bytes([state | fragment]) + frags[-1][:-4])                # the last one
        pending = state | 16                                # the first fragment already taken
        seeds.append(bytes([pending | raw]) + frags[1])                         # completes it
        seeds.append(bytes([pending | fragment]) + frags[1][:-4])
    return seeds


def session_seeds():
    """Replies the session's client really makes, as bodies for the harness to seal (modes 1, 2,
    3 of ``fuzzlib.session_receive``) and as they are, for each state, keyed or not, with a
    budget or not; and the server's datagrams for the client, as they are and as bodies to
    seal (a packet, or a hello)."""
    raw, ack, request, own = (m << 2 for m in range(4))
    seeds = []
    for keyed in (0, 16):
        for budget in (0, 32):
            for state, upto in enumerate((0, 1, 3, 5)):
                head = state | keyed | budget
                server, client = fuzzlib.session(upto, bool(keyed), fuzzlib.SESSION_BUDGET if budget else None)
                client._due = True                  # (a reply made now, whatever is due)
                r = client.reply()
                t = 8 if keyed else 4
                if r[0] == 0x41:
                    seeds.append(bytes([head | ack]) + r[:-t])
                    seeds.append(bytes([head | own]) + r[1:2] + r[6:-t])      # flags, rseq..acks
                else:
                    seeds.append(bytes([head | request]) + r[:-t])
                seeds.append(bytes([head | raw]) + r)
                out = server.send(upto, fuzzlib.world().snaps[upto % len(fuzzlib.world().snaps)])["c"]
                for d in out[:3]:
                    seeds.append(bytes([head | 64 | raw]) + d)
                    seeds.append(bytes([head | 64 | (3 << 2 if d[:4] == b"QCHL" else 1 << 2)]) + d[:-t])
    return seeds


TARGETS = {"bitreader": bitreader_seeds, "schema": schema_seeds, "snapshot": snapshot_seeds,
           "session": session_seeds}


def main(argv):
    names = argv or list(TARGETS)
    for name in names:
        try:
            seeds = TARGETS[name]()
        except AttributeError as e:          # qc.Schema / qc.SnapshotEncoder not there yet
            print(f"{name}: skipped ({e})")
            continue
        print(f"{name}: {_write(name, seeds)} seeds")


if __name__ == "__main__":
    main(sys.argv[1:])
