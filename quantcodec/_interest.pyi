"""Type stubs for quantcodec._interest: GridIndex's radius query for every client at once
(quantcodec.interest documents it)."""


import numpy as np
import numpy.typing as npt

__all__ = ["grid_build", "grid_within_csr"]

def grid_build(
    cols: list[npt.NDArray[np.float64]],
    ids: npt.NDArray[np.uint64],
    lo: npt.NDArray[np.float64] | None,
    cell: float,
) -> tuple[
    npt.NDArray[np.float64],
    int,
    int,
    npt.NDArray[np.int64],
    npt.NDArray[np.intp],
    list[npt.NDArray[np.float64]],
    npt.NDArray[np.uint64],
]: ...

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
