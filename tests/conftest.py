"""Fixtures shared by several test modules."""

import pytest

from quantcodec import _codecs

# The array-loop tables this machine runs and this build holds, worst first.
SIMD_LEVELS = _codecs._simd_available()


@pytest.fixture(params=SIMD_LEVELS)
def level(request):
    """Each available array-loop table in turn (the one in use restored after)."""
    before = _codecs._simd()
    _codecs._simd_select(request.param)
    yield request.param
    _codecs._simd_select(before)
