"""The array loops of `_loops.pxd` compiled with AVX2 (x86-64 with gcc or clang only; see setup.py).

Do not import it directly: `quantcodec._codecs` loads it when the CPU runs AVX2.
"""

# Before the cimport, so that _loops.pxd sees it: this module holds the loops (see there).
cdef extern from *:
    """
    #define QC_LOOPS_MODULE 1
    """

from cpython.pycapsule cimport PyCapsule_New

from quantcodec._loops cimport fill_loop_table, loop_table

cdef loop_table _TABLE
fill_loop_table(&_TABLE)


def _table():
    return PyCapsule_New(<void*>&_TABLE, "quantcodec._loops.loop_table", NULL)
