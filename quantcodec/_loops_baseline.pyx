"""The array loops of `_loops.pxd` compiled for the baseline instruction set of the platform (any
x86-64, aarch64, ...).

Do not import it directly: `quantcodec._codecs` loads it, and the wider ones where the CPU runs them.
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
