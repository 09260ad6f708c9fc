"""Type stubs of quantcodec._delta: snapshot delta coding on code matrices (SPEC section 5)."""

from typing import Any, Dict, Optional, Set, Tuple, Type, Union

import numpy as np
import numpy.typing as npt

from ._plan import Plan

_Buffer = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

class SnapshotData:
    """A snapshot's ids (uint64, ascending, unique) and code matrix (N x nslots uint64)."""

    @property
    def _ids(self) -> npt.NDArray[np.uint64]: ...
    @property
    def _matrix(self) -> npt.NDArray[np.uint64]: ...
    @property
    def n(self) -> int: ...
    @property
    def ncol(self) -> int: ...
    _schema: Any
    _seq: Optional[int]
    _clamped: Optional[Dict[str, int]]
    _columns: Optional[Dict[str, npt.NDArray[Any]]]
    _codes: Optional[Dict[str, npt.NDArray[Any]]]
    @property
    def _diff(self) -> Optional[Tuple[Any, bytes]]: ...
    def _bind(self, ids: npt.NDArray[np.uint64], matrix: npt.NDArray[np.uint64]) -> None: ...

def _set_snapshot_type(cls: Type[SnapshotData]) -> None: ...
def store(
    held: Dict[int, Any], acked: Optional[Set[int]], newest: Optional[int], seq: int, snap: Any,
    hist: int,
) -> None: ...
def references(
    acked: Set[int], seq: int, hist: int, predict: bool
) -> Tuple[Optional[int], int, Optional[int], int]: ...

class DeltaCoder:
    """The delta coder of one plan; holds scratch buffers (one per encoder or decoder)."""

    @property
    def nslots(self) -> int: ...
    @property
    def nfields(self) -> int: ...
    @property
    def ncomps(self) -> int: ...
    @property
    def last_bits(self) -> int: ...
    def __init__(self, plan: Plan) -> None: ...
    def encode(
        self,
        seq: int,
        cur: SnapshotData,
        bdist: int = 0,
        base: Optional[SnapshotData] = None,
        pdist: int = 0,
        pred: Optional[SnapshotData] = None,
    ) -> bytes: ...
    def decode(
        self,
        data: _Buffer,
        base: Optional[SnapshotData] = None,
        pred: Optional[SnapshotData] = None,
    ) -> Tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    def encode_stream(
        self,
        seq: int,
        cur: SnapshotData,
        sent: Dict[int, SnapshotData],
        acked: Set[int],
        newest: Optional[int],
        hist: int,
        predict: bool,
    ) -> Tuple[bytes, Optional[int], Optional[int], Optional[int]]: ...
    def decode_stream(
        self,
        data: _Buffer,
        held: Dict[int, SnapshotData],
        latest: Optional[int],
        hist: int,
        schema: Any,
    ) -> Tuple[Any, ...]: ...
    def _slot_valid(self, s: int, code: int) -> bool: ...
