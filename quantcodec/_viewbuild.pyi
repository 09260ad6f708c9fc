"""Type stubs for quantcodec._viewbuild: the compiled per-client view builder (quantcodec._views
documents the steps; ``ViewBuilderPy`` there is the Python reference it reproduces exactly)."""

from typing import Any, final

import numpy as np
import numpy.typing as npt

from .snapshot import Snapshot, SnapshotEncoder

__all__ = ["ViewBuilder", "ViewShare", "compute"]

@final
class ViewShare:
    """What the builders of one server's clients share within a tick: interned views (an equal
    view is one Snapshot, so a shared PacketCache codes its packet once) and trial sizes."""
    hits: int
    trial_hits: int
    paused: int
    def __init__(self) -> None: ...

@final
class ViewBuilder:
    live: float
    trials: int
    last_bytes: int | None
    last_sent: int
    last_chosen: int
    last_inflight: int
    def __init__(self, schema: Any, encoder: SnapshotEncoder, share: ViewShare | None = ...) -> None: ...
    @property
    def schema(self) -> Any: ...
    @property
    def encoder(self) -> SnapshotEncoder: ...
    @property
    def share(self) -> ViewShare | None: ...
    def priorities(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.float64]]: ...
    def reset(self) -> None: ...
    def build(self, seq: int, world: Snapshot, ids: npt.ArrayLike | None, weights: npt.ArrayLike | None,
              room: int | None) -> Snapshot | None: ...
    def begin(self, seq: int, world: Snapshot, ids: npt.ArrayLike | None, weights: npt.ArrayLike | None,
              room: int | None) -> None: ...
    def end(self) -> Snapshot | None: ...
    def abandon(self) -> None: ...

def compute(builders: list[ViewBuilder]) -> None:
    """The second step of the builds begun on ``builders`` (ViewBuilder.begin), all in one span
    without the GIL; each build's ``end`` makes its view."""

def start_view(prev: Snapshot | None, seq: int, base: Snapshot | None, history: int,
               nb_seq: int) -> tuple[Snapshot | None, int]:
    """The view a build starts from (``prev``, or None once the packets have had no baseline
    for ``history`` ticks) and the first packet of that run (``nb_seq``, -1: none), updated."""
