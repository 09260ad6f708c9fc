"""Type stubs for quantcodec._interest: GridIndex's radius query for every client at once
(quantcodec.interest documents it)."""


import numpy as np
import numpy.typing as npt
from typing_extensions import disjoint_base

__all__ = ["grid_cells", "grid_sort", "grid_within_csr", "Linger"]

def grid_cells(
    cols: list[npt.NDArray[np.float64]],
    lo: npt.NDArray[np.float64] | None,
    cell: float,
    cx: npt.NDArray[np.int64],
    cy: npt.NDArray[np.int64],
) -> tuple[bool, float, float, float, float]: ...

def grid_sort(
    cx: npt.NDArray[np.int64],
    cy: npt.NDArray[np.int64],
    ny: int,
    start: npt.NDArray[np.int64],
    order: npt.NDArray[np.intp],
    cols: list[npt.NDArray[np.float64]],
    gcols: list[npt.NDArray[np.float64]],
    ids: npt.NDArray[np.uint64],
    gids: npt.NDArray[np.uint64],
) -> None: ...

def grid_within_csr(
    lo: npt.NDArray[np.int64],
    cnt: npt.NDArray[np.int64],
    cols: list[npt.NDArray[np.float64]],
    q: npt.NDArray[np.float64],
    r2: float,
    gids: npt.NDArray[np.uint64],
    order: npt.NDArray[np.intp],
    distances: bool,
    sort: bool,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64], npt.NDArray[np.float64] | None]: ...

@disjoint_base
class Linger:
    def step(self, ids: npt.NDArray[np.uint64] | None, now: int, span: int) -> npt.NDArray[np.uint64] | None: ...
    def commit(self) -> None: ...
    @property
    def state(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]: ...
    @state.setter
    def state(self, value: tuple[npt.ArrayLike, npt.ArrayLike]) -> None: ...
