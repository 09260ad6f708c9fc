"""The parameters of the codec constructors (quantcodec._codecs): each checked, every failure a
SchemaError naming the parameter and its value; and the error budgets behind ``bits_for`` and the
fewest-bits constructors (``for_error`` / ``for_step``). Construction only: no array, no kernel,
no codec class of its own (the constructors pass theirs in).
"""

import math

import numpy as np

from .errors import SchemaError

__all__ = ["int_param", "float_param", "bits_for", "budget", "fewest_bits", "signed_option", "unit_text",
           "fixed_cover", "grid_for"]


# ------------------------------------------------------------------------------------------------
# Parameter checks (construction): every failure is a SchemaError naming the parameter and value.

def int_param(owner, name, v, lo, hi):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise SchemaError(f"{owner}: {name} must be an integer, got {v!r}")
    iv = int(v)
    if iv < lo or iv > hi:
        raise SchemaError(f"{owner}: {name} must be in {lo}..{hi}, got {iv}")
    return iv


def float_param(owner, name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise SchemaError(f"{owner}: {name} must be a number, got {v!r}")
    try:
        fv = float(v)
    except OverflowError:
        raise SchemaError(f"{owner}: {name} must be finite, got {v!r}") from None
    if not math.isfinite(fv):
        raise SchemaError(f"{owner}: {name} must be finite, got {fv!r}")
    return fv + 0.0   # -0.0 -> 0.0: parameters compare and hash by value


def bits_for(range, max_error, *, mode="endpoints"):
    """Bits needed for `range` at `max_error`: ceil(log2(range / (2 * max_error) + 1)) for endpoints,
    ceil(log2(range / (2 * max_error))) for bins; never below 0 (a codec needs at least 1).

    Computed exactly: the fewest b whose step range / (2**b - 1) (or range / 2**b) is at most
    2 * max_error, which is what the formula says without its floating-point edge cases.
    """
    r = float_param("bits_for", "range", range)
    e = float_param("bits_for", "max_error", max_error)
    if r <= 0:
        raise SchemaError(f"bits_for: range must be positive, got {r!r}")
    if e <= 0:
        raise SchemaError(f"bits_for: max_error must be positive, got {e!r}")
    if mode not in ("endpoints", "bins", "midpoint"):
        raise SchemaError(f"bits_for: mode must be 'endpoints', 'bins' or 'midpoint', got {mode!r}")
    b = 0
    while True:
        if mode == "bins":
            st = r / 2.0 ** b
        elif mode == "midpoint":
            st = r / (2.0 ** b - 2.0) if b > 1 else math.inf
        else:
            st = r / (2.0 ** b - 1.0) if b > 0 else math.inf
        if st / 2.0 <= e:
            return b
        b += 1


# Error budgets: the fewest-bits constructors (``for_error`` / ``for_step``) of the lossy codecs.
# Each tries bit counts from the fewest up and keeps the first codec whose own ``max_error``
# (resp. ``step``) attribute is at most the request, so the guarantee is exactly what the
# attribute says, with no formula of its own to drift from it.

def budget(owner, name, v):
    """A positive, finite error or step budget (SchemaError naming the parameter)."""
    e = float_param(owner, name, v)
    if e <= 0:
        raise SchemaError(f"{owner}: {name} must be positive, got {e!r}")
    return e


def fewest_bits(owner, attr, target, make, lo, hi, unit):
    """make(b) for the fewest b in lo..hi whose `attr` is at most `target`; SchemaError naming
    `attr` (the parameter asked for) when even make(hi) misses it."""
    c = None
    for b in range(lo, hi + 1):
        c = make(b)
        if getattr(c, attr) <= target:
            return c
    raise SchemaError(f"{owner}: {attr} {target!r}{unit} is finer than the codec reaches: its most bits, "
                      f"{c!r}, give {attr} {getattr(c, attr)!r}{unit}")


def signed_option(owner, options, default):
    signed = options.pop("signed", default)
    if options:
        raise TypeError(f"{owner}() got unexpected keyword arguments {sorted(options)}")
    return signed


def unit_text(unit):
    return f" {unit}" if unit in ("rad", "deg") else ""


def fixed_cover(cls, owner, attr, target, st, min, max, offset, options):
    """Fixed(st, b, signed=..., offset=...) for the fewest b whose end codes decode to values
    at or beyond min and max (computed as the kernel decodes: offset + code * step in double)."""
    lo = float_param(owner, "min", min)
    hi = float_param(owner, "max", max)
    off = float_param(owner, "offset", offset)
    signed = options.pop("signed", None)
    if options:
        raise TypeError(f"{owner}() got unexpected keyword arguments {sorted(options)}")
    if not lo < hi:
        raise SchemaError(f"{owner}: min must be less than max, got min={lo!r}, max={hi!r}")
    if signed is None:
        signed = lo < off
    elif not isinstance(signed, (bool, np.bool_)):
        raise SchemaError(f"{owner}: signed must be True, False or None (the fewer bits), got {signed!r}")
    elif not signed and lo < off:
        raise SchemaError(f"{owner}: min {lo!r} is below offset {off!r}, which unsigned codes cannot reach "
                          f"(pass signed=True, or an offset at most min)")
    for b in range(1, 65):
        cmin, cmax = ((-(1 << (b - 1)), (1 << (b - 1)) - 1) if signed else (0, (1 << b) - 1))
        if off + float(cmin) * st <= lo and off + float(cmax) * st >= hi:
            try:
                c = cls(st, b, offset=off, signed=bool(signed))
            except SchemaError as e:
                raise SchemaError(f"{owner}: {attr} {target!r} over [{lo!r}, {hi!r}]: {e}") from None
            if getattr(c, attr) <= target:
                return c
            break
    raise SchemaError(f"{owner}: {attr} {target!r} over [{lo!r}, {hi!r}] (offset {off!r}, "
                      f"{'signed' if signed else 'unsigned'}) needs more than 64 bits")


def grid_for(cls, owner, attr, target, extent, cell_size):
    """Grid(cell_size, cb, ob): the fewest ob meeting the target, the fewest cb covering +-extent."""
    cs = float_param(owner, "cell_size", cell_size)
    if cs <= 0:
        raise SchemaError(f"{owner}: cell_size must be positive, got {cs!r}")
    ext = float_param(owner, "extent", extent)
    if ext <= 0:
        raise SchemaError(f"{owner}: extent must be positive, got {ext!r}")
    for ob in range(1, 64):
        # (the codec's own attribute: Grid(cs, 1, ob) has the step and error of any cell_bits)
        if getattr(cls(cs, 1, ob), attr) <= target:
            break
    else:
        raise SchemaError(f"{owner}: {attr} {target!r} is finer than cells of {cs!r} reach: 63 offset bits "
                          f"give {attr} {getattr(cls(cs, 1, 63), attr)!r}")
    for cb in range(1, 64):
        if cs * 2.0 ** (cb - 1) > ext:
            break
    else:
        raise SchemaError(f"{owner}: extent {ext!r} needs more than 63 cell bits of {cs!r}")
    if cb + ob > 64:
        raise SchemaError(f"{owner}: {attr} {target!r} over +-{ext!r} in cells of {cs!r} needs {cb} cell bits "
                          f"+ {ob} offset bits = {cb + ob}, more than 64")
    try:
        return cls(cs, cb, ob)
    except SchemaError as e:
        raise SchemaError(f"{owner}: extent {ext!r} with cell_size {cs!r}: {e}") from None
