"""Sessions (SPEC section 8, docs/wire-format.md sections 17-20): what every user of the snapshot
stream otherwise writes by hand, owned by the library.

``StreamServer`` keeps one stream a connected client (a ``SnapshotEncoder``), sends its hello
until the client has acknowledged a packet of it, takes the client's replies (acks, hello
requests), starts the stream over for a client that restarted, and builds each client's view of
the world: the part it is interested in, most important first, within a byte budget a tick
(quantcodec._views). ``StreamClient`` keeps one ``SnapshotDecoder`` with its limits and says what
to send back (``reply()``). Both may share a key (``key=``): then every datagram both ways
carries a keyed tag instead of the CRC check.

The encoder and decoder beneath stay public for users who run a session of their own.
"""

from __future__ import annotations

import collections.abc
import numbers
import os
import struct
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import (TYPE_CHECKING, AbstractSet, Any, Callable, Dict, Hashable, List, Mapping, Optional,
                    Union)

import numpy as np
import numpy.typing as npt

from . import _framing
from ._history import PacketCache, seq_newer
from ._interest import Linger as _Linger
from .interest import _threads as _thread_count
from .errors import CodecError, DecodeError, SchemaError
from .snapshot import (Snapshot, SnapshotDecoder, SnapshotEncoder, _bytes_of, _history,
                       _integer_ids, _plan_of)

if TYPE_CHECKING:
    from .schema import Schema

# What the public signatures take (strings to the interpreter: `from __future__ import annotations`).
# A client is any hashable (an address); interest gives each client's ids (an array of
# non-negative integers), priority each client's weights (numbers, one an id): a mapping by
# client, or a callable of (client, world)
_Datagram = Union[bytes, bytearray, memoryview]
_Key = Union[bytes, bytearray, memoryview]
# (the client's type is Any there, not Hashable: a Mapping is invariant in its key type, and a
# callable's parameter contravariant, so a Dict[Address, ...] or a callable of an Address would
# not be taken)
_PerClient = Union[Mapping[Any, npt.ArrayLike], Callable[[Any, Snapshot], npt.ArrayLike]]
# a client's interest: ids as an array or a sequence, or a set of them (their order is not
# looked at, but weights given with a set are aligned with the order it iterates in), or None
_InterestIds = Optional[Union[npt.ArrayLike, AbstractSet[int]]]
_Interest = Union[Mapping[Any, _InterestIds], Callable[[Any, Snapshot], _InterestIds]]

__all__ = ["StreamServer", "StreamClient"]

ACK = 0x41                 # section 18's reply types
HELLO_REQUEST = 0x48
_ACK = struct.Struct("<BBIIHI")            # type, flags, nonce, rseq, latest, acks: 16 bytes
_REQUEST = struct.Struct("<BBII16s")       # type, flags, nonce, rseq, fingerprint: 26 bytes
_U32 = 0xFFFFFFFF
_U64 = np.dtype(np.uint64)


def _rseq_newer(a, b):
    """Whether reply number ``a`` is newer than ``b`` (32-bit, wraparound-aware)."""
    return 1 <= ((a - b) & _U32) < 0x80000000


_popcount = getattr(int, "bit_count", lambda x: bin(x).count("1"))    # (int.bit_count: 3.10+)
_NONCES = 8         # the incarnations (nonces) of a client whose reply numbers the server keeps


@dataclass(frozen=True)
class LinkStats:
    """What one client's replies tell the server about its link (``StreamServer.link``). The
    session has no clock: everything is counted in ticks (a resend of a tick is that tick), so
    multiply by your tick's duration for seconds. ``ack_age``, ``rtt`` and ``delivered``'s
    window count tick numbers (the ``tick`` given to ``send``); ``quiet`` counts the sends (the
    same while ticks do not skip).

    - ``ack_age``: ticks from the newest tick the client has acknowledged on its current stream
      to the last tick sent (0: it holds the last one); None before its first ack, or when that
      ack is too old to tell (more than 32,767 ticks).
    - ``rtt``: the last round trip, in ticks: an ack of tick ``s`` taken after ``send(t)`` and
      before the next send counts ``t + 1 - s`` (it serves the next tick), sampled once per tick
      acknowledged, when the client first acknowledges it; None before the first.
    - ``srtt``, ``rttvar``: the round trip smoothed and its mean deviation, as TCP keeps them
      (RFC 6298: gains 1/8 and 1/4); ``srtt + 4 * rttvar`` bounds most round trips.
    - ``delivered``: of the ticks whose packet went to the client on its current stream, among
      the 32 before its newest acknowledged one (``history - 1`` when that is fewer), the
      fraction it holds, from its last ack: a measure of the packets that arrive whole (a
      packet of fragments arrives when all of them do; a tick that sent it no packet, the
      hello alone or nothing under its budget, does not count); None until such a tick exists.
    - ``quiet``: ticks sent since the last reply taken from the client (an ack or a hello
      request: one the server refused does not count; a resend of a tick is that tick); since
      it connected if none. A timeout of yours:
      ``if server.link(c).quiet > 10 * tick_rate: server.disconnect(c)``.
    """

    # (typing.Optional, not `int | None`: dataclasses' annotations are evaluated at run time by
    # typing.get_type_hints, and Python 3.9 has no `|` between types)
    ack_age: Optional[int]
    rtt: Optional[int]
    srtt: Optional[float]
    rttvar: Optional[float]
    delivered: Optional[float]
    quiet: int


def _check_budget(budget, hello_len, one_len, owner):
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral):
        raise TypeError(f"{owner}: budget must be an integer number of bytes or None, got "
                        f"{type(budget).__name__}")
    budget = int(budget)            # (a NumPy integer too: link_bits_per_second / 8 / hz, say)
    if budget < 1:
        raise ValueError(f"{owner}: budget must be a positive number of bytes a tick (or None: "
                         f"no budget), got {budget}")
    if budget < hello_len:
        raise ValueError(f"{owner}: a budget of {budget} bytes a tick is smaller than the stream's "
                         f"hello ({hello_len} bytes), which must fit in one tick")
    if budget < one_len:
        raise ValueError(f"{owner}: a budget of {budget} bytes a tick cannot carry one entity: a "
                         f"packet of one entity entering, its record whole, takes up to {one_len} "
                         f"bytes with this schema; an entity that never fits would never be sent")
    return budget


def _one_entity_len(schema, encoder):
    """The bytes a tick that carry one entity whole, at most: a packet with no entity (its header
    and check), plus the record's largest size and the 100 bits the encoder reserves beside it for
    its id and counts, in fragments where that passes ``max_datagram`` (their headers and checks)."""
    empty = Snapshot._make(schema, np.empty(0, np.uint64),
                           np.empty((0, _plan_of(schema, "StreamServer").nslot), np.uint64))
    max_datagram = encoder.max_datagram
    n = len(encoder.encode(0, empty)) + (schema.bits + 100 + 7) // 8
    if n <= max_datagram:
        return n
    t = _framing.check_len(encoder._check_f)
    count = -(-(n - t) // (max_datagram - _framing.FRAGMENT_HEADER - t))
    return n - t + count * (_framing.FRAGMENT_HEADER + t)


class _Peer:
    """What the server keeps of one connected client."""

    __slots__ = ("client", "encoder", "budget", "nonce", "replies", "acked",
                 "hello_due", "hello_alone", "tick_bytes", "views", "hello_len", "sent", "ack_seq",
                 "ack_tick", "rtt", "srtt", "rttvar", "delivered", "reply_ticks", "quiet_restart",
                 "linger", "leaving", "cut", "asked", "request_check", "keyed", "one_len", "tick_view")

    def __init__(self, client, encoder, budget, ticks):
        self.client = client
        self.encoder = encoder
        self.budget = budget
        self.nonce = None          # the incarnation the stream takes acks from (section 18)
        self.replies = {}          # nonce -> the last rseq taken with it (acks and hello requests
                                   # alike), for the _NONCES nonces taken from most recently
        self.acked = False         # the client has acked a packet of the current stream
        self.hello_due = False     # a hello request asked for the hello
        self.hello_alone = False   # its last tick's datagrams were the hello alone (no room for
                                   # a packet beside it): the next tick's packet goes without it
        self.tick_bytes = 0        # the bytes of its datagrams of the last tick sent (resends in)
        self.views = None          # the client's view builder (interest or budget)
        self.hello_len = len(encoder.hello())
        # LinkStats, counted in the server's ticks sent (resends not counted)
        self.sent = 0              # bit j: tick seq - j (seq: the last tick's) sent it a packet
                                   # of its current stream (LinkStats.delivered)
        self.ack_seq = None        # the newest seq it acknowledged on this stream
        self.ack_tick = None       # and the tick number it was (LinkStats.ack_age)
        self.rtt = self.srtt = self.rttvar = self.delivered = None
        self.reply_ticks = ticks   # the ticks sent when its last reply was taken (or it connected)
        self.quiet_restart = None  # reply_ticks when its stream was last started over for quiet
        self.linger = None         # hysteresis: its interest of late (quantcodec._interest.Linger)
        self.leaving = None        # removals too large for its budget: the ids that left its
        self.cut = 0               # interest still in its acknowledged view (ascending), and how
                                   # many of them the next packet removes (StreamServer._leave)
        self.asked = None          # this tick's interest ids as given (None: the whole world)
        self.request_check = None  # its stream's key: the hello requests' check, whether keyed,
        self.keyed = False         # and the bytes that carry one entity whole (the server's, or
        self.one_len = 0           # those of a key of its own: connect(client, key=...))
        self.tick_view = None      # (seq, view): the view its packet of the last tick carried

    def restart(self):
        """The client restarted: a new stream (id, hello), the next packet in full."""
        self.encoder.reset()
        self.nonce = None
        self.acked = False
        self.views = None
        self.sent = 0
        self.ack_seq = self.ack_tick = None
        self.delivered = None
        self.leaving = None
        self.tick_view = None


class StreamServer:
    """The server half of a session: one stream per connected client.

    ``StreamServer(schema, *, history=64, max_datagram=1200, budget=None, key=None,
    predict=True, threads=1, hysteresis=0)``; ``connect(client, *, budget=None, key=None)``
    (``client``: any hashable, an address; ``key``: this client's own, instead of the server's),
    ``send(tick, world, *, interest=None, priority=None)`` -> ``{client: [datagram, ...]}``
    for every connected client, ``receive(client, datagram)`` for what clients send back (a
    ``DecodeError`` for anything that is not a fresh reply of that client's stream, which then
    changes nothing), ``disconnect(client)``.

    Every datagram is at most ``max_datagram`` bytes; with a budget, one client's datagrams of
    one tick (hello included) total at most ``budget`` bytes. The hello goes out with a client's
    datagrams until it has acked a packet of its stream, and again after a hello request; a
    client that restarted (its replies carry a new incarnation nonce) gets a new stream.
    Calls are serialized by a lock: one thread sends and receives, or several do in turn.

    ``hysteresis=N`` (ticks): an entity that leaves a client's interest stays in its view for
    ``N`` ticks more (refreshed as the interest's, weighted as the least of that client's
    weights), so that one on the edge of an interest radius does not leave and enter again,
    whole, tick after tick (Unreal Iris' scope hysteresis). 0 (the default): it leaves at once.

    ``threads=N`` (N > 1): ``send`` builds and codes the clients' views and packets on N threads
    (the calling thread and a pool of N - 1 kept by the server), the clients cut into N runs in
    connect order. The datagrams are the same as on one thread, byte for byte (each client's
    depend only on its own stream and the world; views equal across clients are shared either
    way); the ``interest`` and ``priority`` callables are still called on the calling thread,
    in connect order (docs/views.md, "Threads").
    """

    def __init__(self, schema: Schema, *, history: int = 64, max_datagram: int = 1200,
                 budget: Optional[int] = None, key: Optional[_Key] = None, predict: bool = True,
                 threads: int = 1, hysteresis: int = 0) -> None:
        # (checked here as well as by each encoder, so that the errors name the class called)
        _plan_of(schema, "StreamServer")
        self._schema = schema
        self._history = _history(history, "StreamServer")
        self._max_datagram = _framing.check_max_datagram(max_datagram, "StreamServer")
        if not isinstance(predict, (bool, np.bool_)):
            raise TypeError(f"StreamServer: predict must be True or False, got {predict!r}")
        self._predict = bool(predict)
        self._key = None if key is None else bytes(key) if isinstance(key, (bytearray, memoryview)) else key
        self._mk = _framing.shared_key(key, "StreamServer")
        self._request_check = _framing.request_check(self._mk)
        self._cache = PacketCache(256)
        probe = self._encoder()          # checks schema, history, max_datagram, predict, key
        self._hello_len = len(probe.hello())
        # (a probe of its own, outside the shared PacketCache: its empty packet is no client's)
        self._one_len = _one_entity_len(schema, self._encoder(cache=False))
        self._budget = _check_budget(budget, self._hello_len, self._one_len, "StreamServer")
        self._peers = {}
        self._lock = threading.RLock()
        self._share = None         # the views' ViewShare (made with the first builder)
        self._threads = _thread_count(threads, "StreamServer")
        if isinstance(hysteresis, bool) or not isinstance(hysteresis, (int, np.integer)) \
                or not 0 <= hysteresis <= 2**31:
            raise ValueError(f"StreamServer: hysteresis must be a number of ticks >= 0, got "
                             f"{hysteresis!r}")
        self._hysteresis = int(hysteresis)
        self._ticks_seen = 0       # the ticks elapsed, skipped ones too (hysteresis' clock)
        self._new_ticks = 0        # the ticks sent (resends not counted): LinkStats' and
                                   # hysteresis' clock
        self._pool = None          # threads - 1 workers, made at the first send that uses them
        self._pool_pid = 0         # the process the pool was made in (a forked child's has no threads)
        self._last_tick = None     # the tick of the last send that returned (its seq: tick mod 65536)
        self._last_world = None    # and its world
        self._resend = False       # (during a send: it is a resend of the last tick)
        self._sent_bits = self._history + 34     # the ticks a client's `sent` holds: any ack
                                                 # within history, and the 32 before it
        self._window = min(32, self._history - 1)    # the ticks an ack's bits tell of

    def _encoder(self, cache=True, key=None):
        return SnapshotEncoder(self._schema, self._history, predict=self._predict,
                               cache=self._cache if cache else None,
                               max_datagram=self._max_datagram, key=self._key if key is None else key)

    # -- clients ------------------------------------------------------------------------------

    def connect(self, client: Hashable, *, budget: Optional[int] = None,
                key: Optional[_Key] = None) -> None:
        """Start a stream for ``client`` (any hashable: an address). ``budget`` (bytes a tick)
        overrides the server's for this client; ValueError when it is below the stream's hello
        or cannot carry one entity whole. ``key`` (bytes, 1 to 255) is this client's own shared
        secret instead of the server's ``key`` (e.g. each player's from the game's login): its
        stream's datagrams both ways are then tagged with it, so that no other client, nor anyone
        who sees another client's datagrams, can forge one of this stream or replay another
        stream's datagram into it (with one key for every client, a hello of another client's
        newer stream, replayed to this one, would start it over). Connecting a client again
        starts it over (a new stream and hello, its budget and key this call's)."""
        who = f"StreamServer.connect({client!r})"
        try:
            hash(client)
        except TypeError as e:
            raise TypeError(f"{who}: a client must be hashable (an address), got "
                            f"{type(client).__name__}") from e
        if key is None:
            encoder, rc, keyed = self._encoder(), self._request_check, self._mk is not None
            hello_len, one_len = self._hello_len, self._one_len
        else:
            k = bytes(key) if isinstance(key, (bytearray, memoryview)) else key
            mk = _framing.shared_key(k, who)
            encoder, rc, keyed = self._encoder(key=k), _framing.request_check(mk), True
            hello_len = len(encoder.hello())
            one_len = _one_entity_len(self._schema, self._encoder(cache=False, key=k))
        b = self._budget if budget is None and key is None else _check_budget(
            self._budget if budget is None else budget, hello_len, one_len, who)
        with self._lock:
            peer = _Peer(client, encoder, b, self._new_ticks)
            peer.request_check, peer.keyed, peer.one_len = rc, keyed, one_len
            self._peers[client] = peer

    def disconnect(self, client: Hashable) -> None:
        """Forget ``client`` (KeyError if it is not connected)."""
        with self._lock:
            self._peer(client, "disconnect")
            del self._peers[client]

    @property
    def clients(self) -> List[Hashable]:
        """The connected clients, in the order they connected."""
        with self._lock:
            return list(self._peers)

    @property
    def schema(self) -> Schema:
        return self._schema

    @property
    def history(self) -> int:
        return self._history

    @property
    def max_datagram(self) -> int:
        return self._max_datagram

    @property
    def threads(self) -> int:
        """How many threads ``send`` builds and codes the clients' packets on."""
        return self._threads

    @property
    def budget(self) -> Optional[int]:
        """The server's budget in bytes a tick (None: none)."""
        return self._budget

    @property
    def keyed(self) -> bool:
        """Whether the streams carry keyed tags (a server-wide key; ``connect(client, key=...)``
        keys a client's stream whatever this says)."""
        return self._mk is not None

    def set_budget(self, client: Hashable, budget: Optional[int]) -> None:
        """Change ``client``'s budget (bytes a tick, or None: no budget, not the server's) from
        its next tick on, without starting its stream over (``connect`` would). ValueError, the
        budget unchanged, for one below the stream's hello or too small to carry one entity
        whole; KeyError for a client not connected."""
        with self._lock:
            peer = self._peer(client, "set_budget")
            peer.budget = _check_budget(budget, peer.hello_len, peer.one_len,
                                        f"StreamServer.set_budget({client!r})")

    def budget_of(self, client: Hashable) -> Optional[int]:
        """``client``'s budget in bytes a tick (None: none)."""
        return self._peer(client, "budget_of").budget

    def encoder(self, client: Hashable) -> SnapshotEncoder:
        """``client``'s SnapshotEncoder (the layer beneath: its history, acks, stream id)."""
        return self._peer(client, "encoder").encoder

    def view(self, client: Hashable, seq: Optional[int] = None) -> Optional[Snapshot]:
        """The view the server recorded for ``client`` under ``seq`` (a tick, taken mod 65536 as
        on the wire; default: the newest it sent): a Snapshot equal, code for code, to what that
        client decodes from that tick's packet (SPEC section 8), its ``seq`` set as the
        client's is, while the stream holds it (the last ``history`` ticks sent); None when it
        holds none (never sent, too old, or the stream started over). KeyError for a client
        that is not connected."""
        with self._lock:
            state = self._peer(client, "view").encoder._state
            if seq is None:
                seq = state.state()[0]
                if seq is None:
                    return None
            elif isinstance(seq, bool) or not isinstance(seq, numbers.Integral):
                raise TypeError(f"StreamServer.view: seq must be an integer, got {type(seq).__name__}")
            seq = int(seq) & 0xFFFF
            snap = state.sent.get(seq)
            if snap is None:
                return None
            # (the record is shared, maybe with other clients' encoders: a Snapshot of its
            # read-only arrays, numbered as the client's view is)
            return Snapshot._make(snap.schema, snap.ids, snap.matrix, seq=seq)

    def has_stream(self, client: Hashable) -> bool:
        """Whether ``client`` has acked a packet of its current stream (its hello stops)."""
        return self._peer(client, "has_stream").acked

    def link(self, client: Hashable) -> LinkStats:
        """What ``client``'s replies tell of its link: a :class:`LinkStats` (ticks, not seconds)."""
        with self._lock:
            peer = self._peer(client, "link")
            age = None
            if peer.ack_tick is not None:
                age = int(self._last_tick) - peer.ack_tick
                if age > 32767:
                    age = None              # (too old to tell)
            return LinkStats(age, peer.rtt, peer.srtt, peer.rttvar, peer.delivered,
                             self._new_ticks - peer.reply_ticks)

    def _peer(self, client, what):
        try:
            return self._peers[client]
        except KeyError:
            raise KeyError(f"StreamServer.{what}: {client!r} is not connected") from None

    # -- sending ------------------------------------------------------------------------------

    def send(self, tick: int, world: Snapshot, *, interest: Optional[_Interest] = None,
             priority: Optional[_PerClient] = None) -> Dict[Any, List[bytes]]:
        """The datagrams of tick ``tick`` (its sequence number: ``tick`` mod 65536) for every
        connected client: ``{client: [datagram, ...]}`` (hello first when it is due, then the
        packet or its fragments; an empty list when a budget left no room this tick).

        Ticks move forward: a tick whose sequence number is older than the last returned send's
        (an earlier tick, or one 32768 or more ahead) raises ValueError and changes nothing, and
        so does the same tick with another world (clients refuse two snapshots under one
        number); the same tick with the same world is a resend (the hello if due, and to a
        client that got a packet of the tick the same view, whatever interest and priority say
        now, coded against the newest acknowledgements; with a budget, only if it fits what the
        tick's datagrams so far left: the budget is a tick's, resends included). Ticks may skip.
        A send that raised did not use its tick: it may be sent again, with any world.

        ``world``: this tick's Snapshot (quantized once for all clients). ``interest``: None
        (every entity), ``{client: ids}``, or ``callable(client, world) -> ids`` (ids: an
        array, a sequence or a set of them, or None for the whole world); ``priority``:
        None (equal), ``{client: weights}`` or ``callable(client, world) -> weights``, floats
        aligned with that client's interest ids (a set's in the order it iterates in; or the
        world's rows without interest).

        Each client's interest and priority are looked up (callables called) and checked first,
        on the calling thread in connect order: ids that are not non-negative integers in one
        dimension, weights that are not numbers in one dimension or not one for each id given
        (each row of the world without interest) raise, naming the client and the row, before
        any packet is coded. Then each client's view and packet (on ``threads`` threads): an
        error there (a weight negative or not finite, found while the view is built) is raised
        as the first failing client's in connect order, the clients after it in its run not
        coded; on several threads, clients of other runs may have been coded (their packets,
        not returned, are as if lost: views stay exact). A hello not returned is sent again with
        the next tick's datagrams."""
        if not isinstance(world, Snapshot):
            raise TypeError(f"StreamServer.send: world must be a Snapshot (schema.snapshot(ids, "
                            f"columns)), got {type(world).__name__}")
        if world.schema is not self._schema and world.schema != self._schema:
            raise SchemaError("StreamServer.send: the world's schema is not the server's")
        if isinstance(tick, bool) or not isinstance(tick, (int, np.integer)):
            raise TypeError(f"StreamServer.send: tick must be an integer, got {type(tick).__name__}")
        seq = int(tick) & 0xFFFF
        with self._lock:
            last = self._last_tick
            if last is not None and not seq_newer(seq, int(last) & 0xFFFF):
                if seq != int(last) & 0xFFFF:
                    raise ValueError(
                        f"StreamServer.send: tick {tick} (sequence number {seq}) is not after the "
                        f"last tick sent ({last}, sequence number {int(last) & 0xFFFF}): ticks move "
                        f"forward, the sequence number tick mod 65536 newer than the last (less "
                        f"than 32768 ahead); a server whose ticks stopped that long starts again "
                        f"with a new StreamServer")
                if not (world is self._last_world or world == self._last_world):
                    same = "" if int(tick) == int(last) else f" (sequence number {seq}, as tick {last}'s)"
                    raise ValueError(
                        f"StreamServer.send: tick {tick}{same} again with another world: a tick "
                        f"sent again is a resend of the same world (clients refuse two snapshots "
                        f"under one number); a new world is a new tick")
            peers = list(self._peers.values())
            new_tick = last is None or seq != int(last) & 0xFFFF       # (not a resend)
            if new_tick:
                self._restart_quiet(peers)
            self._resend = not new_tick
            if new_tick:
                for peer in peers:
                    peer.tick_view = None
            # the user's callables on this thread, in connect order, and what they gave checked
            # (the weights' values are checked while the views are built), before anything is coded
            jobs = []
            lingering = []
            now = self._new_ticks + (1 if new_tick else 0)
            # (hysteresis counts ticks, skipped ones too: the sequence numbers' distance)
            ahead = 0 if not new_tick else 1 if last is None else (seq - int(last)) & 0xFFFF
            clock = self._ticks_seen + ahead
            for peer in peers:
                ids = _ids_array(_pick(interest, peer.client, world, "interest"), peer.client)
                weights = _weights_array(_pick(priority, peer.client, world, "priority"), peer.client,
                                         world if ids is None else ids)
                if self._hysteresis:
                    ids, weights = self._linger(peer, ids, weights, clock, lingering)
                peer.asked = ids
                if peer.leaving is not None:
                    ids, weights = self._leave(peer, ids, weights, seq)
                jobs.append((peer, ids, weights))
            if interest is not None or priority is not None or self._budget is not None \
                    or any(peer.budget is not None for peer in peers):
                self._builders(jobs)
            out = [None] * len(jobs)
            n = min(self._threads, len(jobs))
            if n <= 1:
                # (one thread: a client at a time, nobody waits for the GIL it releases)
                err = self._run(jobs, 0, len(jobs), seq, world, out, 1)
            else:
                # runs of clients in connect order: the calling thread takes the first, the pool
                # the others; each run stops at its first error, the earliest client's is raised
                cut = [len(jobs) * k // n for k in range(n + 1)]
                if self._pool is None or self._pool_pid != os.getpid():
                    self._pool = ThreadPoolExecutor(self._threads - 1, thread_name_prefix="qc-send")
                    self._pool_pid = os.getpid()
                    weakref.finalize(self, self._pool.shutdown, wait=False)
                futures = [self._pool.submit(self._run, jobs, cut[k], cut[k + 1], seq, world, out,
                                             _BATCH) for k in range(1, n)]
                try:
                    errs = [self._run(jobs, cut[0], cut[1], seq, world, out, _BATCH)]
                finally:
                    wait(futures)       # (no worker left running once send returns or raises)
                errs += [f.result() for f in futures]
                err = next((e for e in errs if e is not None), None)
            if err is not None:
                e = _named(err[1], jobs[err[0]][0].client)
                if e is err[1]:
                    raise e
                raise e from None
            keep = (1 << self._sent_bits) - 1
            for peer, datagrams in zip(peers, out):
                hello = peer.encoder.hello()
                with_hello = bool(datagrams) and datagrams[0] is hello
                if with_hello:
                    peer.hello_due = False      # (it went out: once after a hello request)
                if new_tick:
                    # (the hello alone: no room for a packet beside it this tick, see _begin_one)
                    peer.hello_alone = peer.budget is not None and len(datagrams) == 1 and with_hello
                    peer.tick_bytes = 0
                    peer.sent = (peer.sent << min(ahead, self._sent_bits)) & keep
                peer.tick_bytes += sum(map(len, datagrams))
                if len(datagrams) > with_hello:
                    peer.sent |= 1              # (a packet of this tick went to it)
                elif new_tick and peer.budget is not None and peer.asked is not None \
                        and not peer.hello_alone:
                    self._stuck(peer, seq)
            if new_tick:
                self._new_ticks = now
                self._ticks_seen = clock
            for kept in lingering:
                kept.commit()
            self._last_tick = tick
            self._last_world = world
            return {peer.client: datagrams for peer, datagrams in zip(peers, out)}

    def _restart_quiet(self, peers):
        """A client the server has taken no reply from for ``history`` ticks has its stream
        started over, once (docs/wire-format.md section 18): whatever silenced it (a link down,
        or a hello of another server that it adopted, and then refuses this stream's packets
        and this server its acks) nothing it holds can serve as a baseline by now, and the new
        stream's hello brings it back (a stream it adopted but decoded nothing of refuses no
        other stream's hello, section 13). Done before the tick's arguments are checked: a send
        that raises keeps it (the hello goes with the next tick)."""
        for peer in peers:
            if self._new_ticks - peer.reply_ticks >= self._history \
                    and peer.quiet_restart != peer.reply_ticks:
                peer.quiet_restart = peer.reply_ticks
                peer.restart()

    def _linger(self, peer, ids, weights, now, lingering):
        """Hysteresis: ``ids`` with the entities that left the client's interest less than
        ``hysteresis`` ticks ago (weighted as the least of its weights); the client's state is
        stepped (quantcodec._interest.Linger) and appended to ``lingering``, to be committed
        only once the send returns."""
        if peer.linger is None:
            peer.linger = _Linger()
        lingering.append(peer.linger)
        if ids is None:                 # (the whole world: nothing outside it to keep)
            peer.linger.step(None, now, self._hysteresis)
            return ids, weights
        n = ids.shape[0]
        ids = peer.linger.step(np.ascontiguousarray(ids), now, self._hysteresis)
        if weights is not None and ids.shape[0] > n:
            least = float(weights.min()) if n else 0.0
            if not 0.0 <= least < float("inf"):
                least = 0.0             # (the given weights' own error is raised for them)
            weights = np.concatenate((weights, np.full(ids.shape[0] - n, least)))
        return ids, weights

    def _stuck(self, peer, seq):
        """A tick that sent a client with a budget and an interest no packet: when its
        acknowledged view holds entities that left its interest, their removal did not fit
        (docs/views.md, "The removals of a large interest change"). From the next tick the view
        keeps them (weight 0, their acknowledged codes) but for ``cut`` of them, half of them at
        first and half as many after each tick that sends nothing again."""
        base = peer.encoder._state.refs(seq)[1]
        if base is None:
            return
        if peer.leaving is None:
            out = base.ids[~np.isin(base.ids, peer.asked)]
            if out.shape[0]:
                peer.leaving = out
                peer.cut = out.shape[0] // 2
        elif peer.cut:
            peer.cut //= 2
        else:
            peer.leaving = None         # (keeping them all did not help: as without)

    def _leave(self, peer, ids, weights, seq):
        """``ids`` and ``weights`` with the entities that left the client's interest and that
        its acknowledged view still holds, but for the first ``cut`` of them (those this packet
        removes), at weight 0 (_stuck). Over when its acknowledged view holds none of them."""
        base = peer.encoder._state.refs(seq)[1]
        left = peer.leaving
        if base is not None:
            left = left[np.isin(left, base.ids)]
        if ids is not None:
            left = left[~np.isin(left, ids)]
        if base is None or ids is None or not left.shape[0]:
            peer.leaving = None
            return ids, weights
        peer.leaving = left
        keep = left[min(peer.cut, left.shape[0]):]
        if weights is None:
            weights = np.ones(ids.shape[0])
        return np.concatenate((ids, keep)), np.concatenate((weights, np.zeros(keep.shape[0])))

    def _builders(self, jobs):
        """Each client that needs a view builder (a budget or weights) has one, made here on the
        calling thread (and quantcodec._views loaded)."""
        views = _VIEWS or _views_module()
        for peer, _, weights in jobs:
            if peer.views is None and (peer.budget is not None or weights is not None):
                if self._share is None:
                    # equal views of one tick are one Snapshot: the encoders' shared
                    # PacketCache then codes the packet once for the clients alike
                    self._share = views.ViewShare()
                peer.views = views.ViewBuilder(self._schema, peer.encoder, self._share)

    def _run(self, jobs, lo, hi, seq, world, out, batch):
        """The datagrams of jobs[lo:hi] into out[lo:hi]; (index, exception) of the first that
        raises (the rest of the run left), or None. A batch of up to ``batch`` clients at a
        time: each one's view begun with the GIL (ViewBuilder.begin), all their views computed
        in one span without it (quantcodec._viewbuild.compute), then each one's view ended and
        its packet coded, in order: a thread hands the GIL over once a batch, not a few times a
        client (docs/views.md, "Threads")."""
        views = _VIEWS or _views_module()
        i = lo
        while i < hi:
            top = min(hi, i + batch)
            begun = []
            err = None
            for k in range(i, top):
                try:
                    begun.append(self._begin_one(jobs[k], seq, world, views))
                except Exception as e:  # (the clients before it are still coded)
                    err = (k, e)
                    break
            built = [b[0].views for b in begun if b[3]]
            done = 0
            try:
                if built:
                    views.compute(built)
                for done, b in enumerate(begun):
                    out[i + done] = self._end_one(b, seq)
                done = len(begun)
            except Exception as e:      # (raised by send on the calling thread, as serially)
                for b in begun[done:]:
                    if b[3]:
                        b[0].views.abandon()
                return i + done, e
            if err is not None:
                return err
            i = top
        return None

    def _begin_one(self, job, seq, world, views):
        """(peer, hello due, view or None, begun, fit): a client's view, or its build begun; fit:
        what its datagrams may total (a resend under a budget), or None."""
        peer, ids, weights = job
        # the hello until the client has acked a packet of its stream, and once after a hello
        # request; when its last tick's datagrams were the hello alone (a budget with no room for
        # a packet beside it), this tick's packet goes without it, the whole budget its room, so
        # that the client can decode a packet and ack (the ticks alternate until it does)
        hello = peer.hello_due or (not peer.acked and not peer.hello_alone)
        budget = peer.budget
        if budget is not None and self._resend:
            # a resend of the tick: what the tick's datagrams so far left of the budget
            budget -= peer.tick_bytes
            if hello and budget < peer.hello_len:
                return peer, False, None, False, None     # (nothing: the hello stays due)
        if self._resend and peer.tick_view is not None and peer.tick_view[0] == seq:
            # a client that got a packet of this tick gets the same view again, coded against
            # its newest acks: another under the same number would be refused as ambiguous
            # (and a smaller one, built in what is left of the budget, would be its newest)
            return peer, hello, peer.tick_view[1], False, budget
        room = None if budget is None else budget - (peer.hello_len if hello else 0)
        if ids is None and weights is None and room is None:
            return peer, hello, world, False, None
        if room is None and weights is None:
            return peer, hello, views.restrict(world, ids), False, None
        peer.views.begin(seq, world, ids, weights, room)
        return peer, hello, None, True, None

    def _end_one(self, begun, seq):
        """A client's datagrams: its view ended when it was begun, coded, framed."""
        peer, hello, view, built, fit = begun
        enc = peer.encoder
        if built:
            view = peer.views.end()
        if view is None:
            datagrams = []
        else:
            d = enc.encode(seq, view)
            peer.tick_view = (seq, view)
            # (a packet that fits is its one datagram: no call into the fragmenting)
            if len(d) <= self._max_datagram:
                datagrams = [d]
            else:
                try:
                    datagrams = _framing.fragment(d, self._max_datagram, enc._check_f, enc._seed_p)
                except CodecError as e:
                    raise CodecError(
                        f"StreamServer.send: client {peer.client!r}: {e}; or give it a budget "
                        f"(StreamServer(budget=...) or connect(client, budget=...)), and its view "
                        f"arrives over several ticks, most important first (docs/views.md)") from None
        if fit is not None and sum(map(len, datagrams)) + (peer.hello_len if hello else 0) > fit:
            datagrams = []      # (the view again does not fit what the tick left: not resent)
        if hello:
            datagrams.insert(0, enc.hello())
        return datagrams

    # -- replies ------------------------------------------------------------------------------

    def receive(self, client: Hashable, datagram: _Datagram) -> None:
        """Take a datagram ``client`` sent (a reply: an ack or a hello request). DecodeError,
        with nothing changed, for anything else: junk, a damaged or forged reply, one of another
        stream or schema, a replayed or stale one (docs/wire-format.md section 18), or one from
        a client not connected (kind ``check``, as a stray)."""
        data = _bytes_of(datagram, "StreamServer.receive")
        with self._lock:
            try:
                peer = self._peers.get(client)
            except TypeError as e:
                raise TypeError(f"StreamServer.receive: a client must be hashable (an address), "
                                f"got {type(client).__name__}") from e
            if peer is None:
                raise DecodeError(f"StreamServer.receive: a datagram from {client!r}, which is not "
                                  f"connected", kind="check")
            enc = peer.encoder
            n = len(data)
            t = _framing.check_len(enc._check_r)
            if n == _framing.REPLY_ACK + t and data[0] == ACK and _framing.holds(data, enc._check_r):
                return self._ack(peer, data)
            if n == _framing.REPLY_HELLO + t and data[0] == HELLO_REQUEST \
                    and _framing.holds(data, peer.request_check):
                return self._hello_request(peer, data)
            raise DecodeError(f"StreamServer.receive: a datagram of {n} bytes from {client!r} is no "
                              f"reply of its stream {enc.stream_id:016x} (damaged, stray, of another "
                              f"or an earlier stream{', or made without the key' if peer.keyed else ''})",
                              kind="check")

    def _ack(self, peer, data):
        _, flags, nonce, rseq, latest, acks = _ACK.unpack_from(data)
        who = f"StreamServer.receive: an ack from {peer.client!r}"
        if flags & ~1:
            raise DecodeError(f"{who}: unknown flags 0x{flags:02x}")
        enc = peer.encoder
        newest = enc._state.state()[0]
        if not flags & 1:
            if latest or acks:
                raise DecodeError(f"{who}: no latest, but latest {latest} and acks 0x{acks:08x}")
        elif newest is None or seq_newer(latest, newest):
            raise DecodeError(f"{who}: acks packet {latest}, never sent on stream {enc.stream_id:016x} "
                              f"(the newest is {newest})")
        _check_fresh(peer, nonce, rseq, who)
        _took(peer, nonce, rseq)
        peer.reply_ticks = self._new_ticks
        if peer.nonce is not None and peer.nonce != nonce:
            # a new incarnation: the client restarted and holds nothing this stream can use
            peer.restart()
            return None
        peer.nonce = nonce
        if flags & 1:
            self._link_ack(peer, latest, acks)
            got = enc.ack(latest)
            while acks:
                low = acks & -acks
                i = low.bit_length() - 1
                got = enc.ack((latest - 1 - i) & 0xFFFF) or got
                acks ^= low
            if got:
                peer.acked = True
        return None

    def _link_ack(self, peer, latest, acks):
        """LinkStats from an ack taken: a round trip when ``latest`` is newly acknowledged, and
        the share of the ticks sent before it that the client holds."""
        last = int(self._last_tick) & 0xFFFF
        age = (last - latest) & 0xFFFF            # (acks of packets never sent are refused)
        ack_seq = peer.ack_seq
        if ack_seq is None or 1 <= ((latest - ack_seq) & 0xFFFF) < 0x8000:     # newly acked
            peer.ack_seq = latest
            peer.ack_tick = int(self._last_tick) - age
            peer.rtt = r = age + 1
            if peer.srtt is None:
                peer.srtt, peer.rttvar = float(r), r / 2.0
            else:
                peer.rttvar = 0.75 * peer.rttvar + 0.25 * abs(peer.srtt - r)
                peer.srtt = 0.875 * peer.srtt + 0.125 * r
        # the ticks latest - 1 - i (i < w) that sent it a packet of this stream: bit age + 1 + i
        # of its mask (reset when its stream starts over, so only this stream's)
        w = self._window
        if age + 1 + w > self._sent_bits:
            return                          # (an ack older than history: nothing to tell)
        sent = (peer.sent >> (age + 1)) & ((1 << w) - 1)
        if sent:
            peer.delivered = _popcount(acks & sent) / _popcount(sent)

    def _hello_request(self, peer, data):
        _, flags, nonce, rseq, fp = _REQUEST.unpack_from(data)
        who = f"StreamServer.receive: a hello request from {peer.client!r}"
        if flags:
            raise DecodeError(f"{who}: unknown flags 0x{flags:02x}")
        if fp != self._schema.fingerprint.encode("ascii"):
            raise DecodeError(f"{who}: of another schema (fingerprint {fp.decode('ascii', 'replace')!r}, "
                              f"the server's is {self._schema.fingerprint})", kind="schema")
        _check_fresh(peer, nonce, rseq, who)
        _took(peer, nonce, rseq)
        peer.hello_due = True
        peer.reply_ticks = self._new_ticks
        return None

    def __repr__(self) -> str:
        return (f"<StreamServer of {getattr(self._schema, 'name', '?')!r}: {len(self._peers)} clients, "
                f"history {self._history}, max_datagram {self._max_datagram}, budget {self._budget}"
                f"{', keyed' if self._mk else ''}>")


_VIEWS = None
_BATCH = 16     # clients a thread begins, computes (one release of the GIL) and ends at a time


def _check_fresh(peer, nonce, rseq, who):
    """Section 18, rule 2: DecodeError (kind ``stale``) for a reply that is not newer than the last
    one taken from this client with its nonce: acks and hello requests are one series, as the
    client numbers them, kept for the last _NONCES incarnations the client's replies came from."""
    last = peer.replies.get(nonce)
    if last is not None and not _rseq_newer(rseq, last):
        raise DecodeError(f"{who}: reply {rseq} of incarnation {nonce:08x} is not newer than reply "
                          f"{last}, the last taken from it (replayed, duplicated or overtaken)",
                          kind="stale")


def _took(peer, nonce, rseq):
    """A reply taken: the last number of its incarnation, which becomes the most recent one."""
    replies = peer.replies
    replies.pop(nonce, None)
    replies[nonce] = rseq
    if len(replies) > _NONCES:
        del replies[next(iter(replies))]


def _views_module():
    """quantcodec._views, imported on first use (a server without interest, priority or budget
    never loads it) and then kept: an import statement in the send path cost 2.5 µs a client."""
    global _VIEWS
    if _VIEWS is None:
        from . import _views
        _VIEWS = _views
    return _VIEWS


def _pick(arg, client, world, what):
    if arg is None:
        return None
    if callable(arg):
        return arg(client, world)
    if not isinstance(arg, Mapping):
        shape = "ids" if what == "interest" else "weights"
        hint = (" (GridIndex.within gives a list in the order of its centres: "
                "dict(zip(clients, index.within(centres, radius))))") if isinstance(arg, (list, tuple)) else ""
        raise TypeError(f"StreamServer.send: {what} must be None, a dict {{client: {shape}}} or a "
                        f"callable(client, world) -> {shape}, got {type(arg).__name__}{hint}")
    try:
        return arg[client]
    except KeyError:
        raise KeyError(f"StreamServer.send: {what} has no entry for client {client!r}") from None


def _ids_array(ids, client):
    """A client's interest ids as a 1-D uint64 array, by a snapshot's rule for ids (errors name
    the client and the row)."""
    if ids is None:
        return None
    if type(ids) is np.ndarray and ids.dtype == _U64 and ids.ndim == 1:
        return ids                  # (the common case: interest.GridIndex's arrays)
    if isinstance(ids, collections.abc.Set):
        # a set, a frozenset, a dict's keys(): in the order it iterates in (the rows of errors
        # and of the weights given with it)
        ids = list(ids)
    return _integer_ids(ids, f"StreamServer.send: client {client!r}: interest").astype(
        _U64, copy=False)


def _weights_array(w, client, aligned):
    """A client's priority weights as a 1-D float64 array, one a row of ``aligned`` (its interest
    ids as given, or the world); their values are checked while its view is built, without the
    GIL (_named gives that error the client's name)."""
    if w is None:
        return None
    if type(w) is np.ndarray and w.dtype == np.float64:
        a = w                       # (the common case)
    else:
        # numbers only: strings are not parsed, nor complex numbers cut to their real part
        # (bools are 0 and 1)
        got = "a string" if isinstance(w, (str, bytes)) else None
        if got is None:
            try:
                a = np.asarray(w)
            except (TypeError, ValueError) as e:
                raise TypeError(f"StreamServer.send: client {client!r}: priority weights must be "
                                f"numbers ({e})") from None
            if a.dtype.kind == "O" and a.ndim == 1:
                bad = next((i for i, x in enumerate(a) if not isinstance(x, numbers.Real)), None)
                if bad is not None:
                    got = f"{type(a[bad]).__name__} at row {bad}"
            elif a.dtype.kind not in "biuf":
                got = f"{a.dtype} values"
        if got is not None:
            raise TypeError(f"StreamServer.send: client {client!r}: priority weights must be "
                            f"numbers, got {got}")
        a = a.astype(np.float64, copy=False)
    if a.ndim != 1:
        raise ValueError(f"StreamServer.send: client {client!r}: priority weights must be "
                         f"one-dimensional, got shape {a.shape}")
    n, what = ((aligned.ids.shape[0], "entities in the world") if isinstance(aligned, Snapshot)
               else (aligned.shape[0], "interest ids"))
    if a.shape[0] != n:
        raise ValueError(f"StreamServer.send: client {client!r}: {a.shape[0]} priority weights for "
                         f"{n} {what} (one weight a row)")
    return a


def _named(e, client):
    """A view builder's refusal of a client's weights ("views: ..."), as the session raises it:
    the same type, naming the client (a server has many); any other exception as it is."""
    msg = str(e)
    if type(e) in (TypeError, ValueError) and msg.startswith("views: "):
        return type(e)(f"StreamServer.send: client {client!r}: {msg[len('views: '):]}")
    return e


# a client's reply() returns a reply every KEEPALIVE_CALLS-th call while none is due (section 18)
KEEPALIVE_CALLS = 32


class StreamClient:
    """The client half of a session: ``StreamClient(schema, *, key=None, max_bytes=None)``.

    ``receive(datagram)`` takes any datagram from the server and returns the view it completes
    (a Snapshot) or None; DecodeError (kind as SnapshotDecoder's, state unchanged) for one it
    refuses. ``reply()`` is what to send back now (bytes) or None: call it once a tick (or a
    frame), and after each datagram if you like; while nothing makes a reply due, every 32nd
    call returns one all the same (a keep-alive: a restarted server learns of the client from
    it, docs/wire-format.md section 18). ``max_bytes`` bounds what the client holds (docs/wire-format.md section 19;
    default 256 MiB). ``nonce`` fixes the client's incarnation id (tests and the conformance
    kit; by default a random one, which is what tells the server that a client restarted)."""

    def __init__(self, schema: Schema, *, key: Optional[_Key] = None, max_bytes: Optional[int] = None,
                 nonce: Optional[int] = None) -> None:
        # (checked here as well as by the decoder, so that the errors name the class called)
        _plan_of(schema, "StreamClient")
        _framing.shared_key(key, "StreamClient")
        _framing.limit_bytes(max_bytes, "StreamClient")
        self._decoder = SnapshotDecoder(schema, key=key, max_bytes=max_bytes)
        self._schema = schema
        self._request_check = _framing.request_check(self._decoder._mk)
        if nonce is None:
            nonce = int.from_bytes(os.urandom(4), "little")
        elif isinstance(nonce, bool) or not isinstance(nonce, int) or not 0 <= nonce <= _U32:
            raise ValueError(f"StreamClient: nonce must be an integer in 0..2**32-1, got {nonce!r}")
        self._nonce = nonce
        self._rseq = 0
        self._due = True            # a new client's first reply: a hello request (section 18)
        self._idle = 0              # the calls of reply() in a row that returned nothing
        self._view = None
        self._lock = threading.Lock()

    @property
    def decoder(self) -> SnapshotDecoder:
        """The SnapshotDecoder beneath (the adopted stream, what is held)."""
        return self._decoder

    @property
    def latest(self) -> Optional[int]:
        """The newest sequence number decoded on the current stream (None before the first)."""
        return self._decoder.latest

    @property
    def view(self) -> Optional[Snapshot]:
        """The newest view received (a Snapshot), or None."""
        return self._view

    @property
    def stream_id(self) -> Optional[int]:
        return self._decoder.stream_id

    @property
    def nonce(self) -> int:
        return self._nonce

    @property
    def holding(self) -> int:
        """What the client holds in section 19's model, in bytes (at most ``max_bytes``)."""
        return self._decoder._state.holding

    @property
    def max_bytes(self) -> int:
        return self._decoder._max_bytes

    def receive(self, datagram: _Datagram) -> Optional[Snapshot]:
        """Take one datagram from the server: the view it completes, or None (a hello, a
        fragment that completes nothing). ``qc.DecodeError`` (its ``kind`` says why:
        docs/wire-format.md section 14) for junk, a damaged, stray, stale or foreign datagram, or
        one past ``max_bytes`` (``limits``), and then nothing changed; TypeError for what is not
        a buffer of bytes."""
        if not isinstance(datagram, (bytes, bytearray)):
            datagram = _bytes_of(datagram, "StreamClient.receive")    # (TypeError names this call)
        dec = self._decoder
        with self._lock:
            before = dec.stream_id
            try:
                view = dec.decode(datagram)
            except DecodeError as e:
                if e.kind in ("no-hello", "baseline"):
                    self._due = True
                raise
            if view is not None:
                self._due = True
                if view.seq == dec.latest:          # (a late view does not replace a newer one)
                    self._view = view
            elif dec.stream_id != before:
                self._due = True                    # a hello adopted: a new stream
                self._view = None
            return view

    def reply(self) -> Optional[bytes]:
        """The reply to send the server now (bytes), or None (docs/wire-format.md section 18):
        one when a reply is due, and a keep-alive when the last 31 calls returned nothing."""
        with self._lock:
            if not self._due:
                if self._idle < KEEPALIVE_CALLS - 1:
                    self._idle += 1
                    return None
            self._idle = 0
            self._due = False
            dec = self._decoder
            rseq = self._rseq
            self._rseq = (rseq + 1) & _U32
            if dec._hello is None:
                body = _REQUEST.pack(HELLO_REQUEST, 0, self._nonce, rseq,
                                     self._schema.fingerprint.encode("ascii"))
                return _framing.seal(body, self._request_check)
            latest = dec.latest
            if latest is None:
                return _framing.seal(_ACK.pack(ACK, 0, self._nonce, rseq, 0, 0), dec._check_r)
            # (the 32 numbers before latest looked up one by one: `dec.held` lists and sorts the
            # whole window, up to 32,767 numbers a reply under a hello of a long history)
            get = dec._state.get
            acks = 0
            for i in range(32):
                if get((latest - 1 - i) & 0xFFFF) is not None:
                    acks |= 1 << i
            return _framing.seal(_ACK.pack(ACK, 1, self._nonce, rseq, latest, acks), dec._check_r)

    def __repr__(self) -> str:
        return (f"<StreamClient of {getattr(self._schema, 'name', '?')!r}: nonce {self._nonce:08x}, "
                f"{self._decoder!r}>")
