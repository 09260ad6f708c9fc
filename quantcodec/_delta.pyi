"""Type stubs of quantcodec._delta: snapshot delta coding on code matrices (SPEC section 5)."""

from typing import Any, Dict, List, Optional, Tuple, Union, final

from typing_extensions import disjoint_base

import numpy as np
import numpy.typing as npt

from ._plan import Plan

_Buffer = Union[bytes, bytearray, memoryview, npt.NDArray[np.uint8]]

@disjoint_base
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
    _clamped: Optional[Tuple[int, ...]]
    _columns: Optional[Dict[str, npt.NDArray[Any]]]
    _codes: Optional[Dict[str, npt.NDArray[Any]]]
    @property
    def _diff(self) -> Optional[Tuple[Any, bytes]]: ...
    @property
    def kw(self) -> int: ...
    @property
    def _kplan(self) -> Optional[Plan]: ...
    def _bind(
        self, ids: npt.NDArray[np.uint64], matrix: npt.NDArray[np.uint64], plan: Optional[Plan] = None
    ) -> None: ...

@final
class Layout:
    """What the delta coder knows of one schema's plan: compiled once, read-only, shared."""

    @property
    def plan(self) -> Plan: ...
    @property
    def nslots(self) -> int: ...
    @property
    def nfields(self) -> int: ...
    @property
    def ncomps(self) -> int: ...
    @property
    def general(self) -> bool: ...
    @property
    def shapes(self) -> List[str]: ...
    @property
    def vector(self) -> bool: ...
    def __init__(self, plan: Plan, general: bool = False) -> None: ...

@disjoint_base
class CoderBase:
    """What the encoder's and decoder's workspaces share: their Layout."""

    @property
    def layout(self) -> Layout: ...
    def __init__(self, layout: Union[Layout, Plan], general: bool = False) -> None: ...

@final
class DeltaEncoder(CoderBase):
    """One client's encoding workspace over a Layout."""

    @property
    def last_bits(self) -> int: ...
    def encode(
        self,
        seq: int,
        cur: SnapshotData,
        bdist: int = 0,
        base: Optional[SnapshotData] = None,
        pdist: int = 0,
        pred: Optional[SnapshotData] = None,
    ) -> bytes: ...

@final
class DeltaDecoder(CoderBase):
    """One client's decoding workspace over a Layout."""

    max_entities: int

    def decode(
        self,
        data: _Buffer,
        base: Optional[SnapshotData] = None,
        pred: Optional[SnapshotData] = None,
    ) -> Tuple[int, npt.NDArray[np.uint64], npt.NDArray[np.uint64]]: ...
    def _slot_valid(self, s: int, code: int) -> bool: ...
    def _quat_surely_valid(self, s: int, code: int) -> Optional[bool]: ...

def ascending_ids(ids: npt.NDArray[np.uint64]) -> bool: ...
def same_ids(a: npt.NDArray[np.uint64], b: npt.NDArray[np.uint64]) -> bool: ...
def ids_u64(a: object) -> Optional[npt.NDArray[np.uint64]]: ...
def _untracked_class(cls: type, on: bool = True) -> None: ...
