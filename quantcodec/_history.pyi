"""Type stubs of quantcodec._history: the stream's bookkeeping around the delta coder."""

from typing import Any, Callable, Dict, Optional, Tuple, Type, Union, final

import numpy as np
import numpy.typing as npt

from ._delta import DeltaDecoder, DeltaEncoder, SnapshotData

_Buffer = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

_Check = Union[int, bytes]     # a CRC seed, or a 16-byte SipHash key

CHECK: int
TAG: int
FRAGMENT_HEADER: int
HELLO_BODY: int
MAX_FRAGMENTS: int
MIN_DATAGRAM: int
MAX_DATAGRAM: int
SNAPSHOT_COST: int
REPLY_ACK: int
REPLY_HELLO: int

def seal(data: _Buffer, check: _Check) -> bytes:
    """``data`` followed by its check (4-byte CRC-32C or 8-byte SipHash-2-4 tag)."""
def holds(data: _Buffer, check: _Check) -> bool:
    """Whether a datagram's check (at its end) holds."""
def seq_distance(a: int, b: int) -> int: ...
def seq_newer(a: int, b: int) -> bool: ...
def seq_arg(seq: Any, owner: str) -> int: ...

@final
class PacketCache:
    """Packets shared by the SnapshotEncoders of many clients."""

    @property
    def size(self) -> int: ...
    @property
    def hits(self) -> int: ...
    @property
    def misses(self) -> int: ...
    def __init__(self, size: int = 64) -> None: ...
    def clear(self) -> None: ...
    def __len__(self) -> int: ...

@final
class EncoderState:
    """The state and per-packet work of one SnapshotEncoder."""

    @property
    def history(self) -> int: ...
    @property
    def predict(self) -> bool: ...
    @property
    def sent(self) -> Dict[int, SnapshotData]: ...
    @property
    def last(self) -> Tuple[Optional[int], Optional[int]]: ...
    @property
    def last_bits(self) -> int: ...
    @property
    def cache(self) -> Optional[PacketCache]: ...
    @property
    def offers_used(self) -> int: ...
    def __init__(self, coder: DeltaEncoder, schema: Any, history: int, predict: bool,
                 cache: Optional[PacketCache] = None, seed: _Check = 0,
                 snapshot_type: Type[SnapshotData] = SnapshotData) -> None: ...
    def encode(self, seq: int, snapshot: SnapshotData, /) -> bytes:
        """The whole datagram: the packet and its check, sealed with ``seed``."""
    def offer(self, seq: int, snapshot: SnapshotData, bdist: int, base: Optional[SnapshotData],
              pdist: int, pred: Optional[SnapshotData], packet: bytes, bits: int, plan: Any) -> None:
        """A packet already coded for the next ``encode(seq, snapshot)`` against these references."""
    def refs(self, seq: int) -> Tuple[int, Optional[SnapshotData], int, Optional[SnapshotData]]:
        """(bdist, base, pdist, pred) a packet ``seq`` would be coded against now."""
    def ack(self, seq: Optional[int], /) -> bool: ...
    def reset(self) -> None: ...
    def state(self) -> Tuple[Optional[int], Tuple[int, ...], Tuple[int, ...]]: ...

@final
class DecoderState:
    """The state and per-packet work of one SnapshotDecoder."""

    @property
    def history(self) -> int: ...
    @property
    def keep(self) -> int: ...
    @property
    def held(self) -> Dict[int, SnapshotData]: ...
    @property
    def latest(self) -> Optional[int]: ...
    @property
    def max_bytes(self) -> int: ...
    @property
    def reserve(self) -> int: ...
    @property
    def holding(self) -> int: ...
    @property
    def bound_stream(self) -> Optional[int]: ...
    def __init__(self, coder: DeltaDecoder, schema: Any, history: int,
                 on_fragment: Optional[Callable[[bytes], Optional[SnapshotData]]] = None,
                 on_hello: Optional[Callable[[bytes], None]] = None, hello_check: _Check = 0,
                 snapshot_type: Type[SnapshotData] = SnapshotData, max_bytes: int = ...) -> None: ...
    def adopt(self, history: int, check: Optional[_Check], check_f: _Check, stream_id: int,
              reserve: int) -> None: ...
    def decode(self, datagram: _Buffer, /) -> Optional[SnapshotData]:
        """The classifier of every datagram: a whole packet decoded here, a fragment or a hello
        handed on, anything else refused."""
    def decode_packet(self, packet: _Buffer) -> SnapshotData:
        """A packet whose check already held (reassembled from fragments)."""
    def get(self, seq: int) -> Optional[SnapshotData]: ...
    def reset(self) -> None: ...
    def state(self) -> Tuple[Optional[int], Tuple[int, ...]]: ...
