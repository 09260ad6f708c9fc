"""Type stub for quantcodec._loops_baseline (private: the array loops, loaded by quantcodec._arrays)."""

def _table() -> object:
    """A capsule holding the module's table of loop functions."""
    ...
