"""Type stub for quantcodec._arrays (private: the array dispatch of the codecs and the plan; its C
functions are cimported through _arrays.pxd). The choice of array loops is re-exported by
quantcodec._codecs."""

__all__: list[str]

def _simd() -> str:
    """The instruction set of the array loops in use: "baseline", "avx2" or "avx512"."""
def _simd_available() -> tuple[str, ...]:
    """The instruction sets whose array loops this CPU runs and this install holds, worst first."""
def _simd_select(level: str | None = None) -> str:
    """Use the array loops of `level` (None: the best available, capped by QUANTCODEC_SIMD)."""
