"""Build the compiled core of quantcodec.

Metadata lives in pyproject.toml; this file only declares the Cython extensions and their
compiler directives, set here in one place for every module.

Environment switches:
  QUANTCODEC_CYTHON_DEBUG=1  bounds, wraparound and initialization checks on (the debug build CI runs)
  QUANTCODEC_ASAN=1          AddressSanitizer build (run with LD_PRELOAD=$(gcc -print-file-name=libasan.so))
  QUANTCODEC_UBSAN=1         UndefinedBehaviorSanitizer build (run with LD_PRELOAD=$(gcc -print-file-name=libubsan.so)
                             and UBSAN_OPTIONS=print_stacktrace=1:log_path=/tmp/ubsan: pytest hides the reports;
                             halt_on_error=1 instead makes a report fail the run, as CI does); with
                             CC=clang LDSHARED="clang -shared" a clang build, which also checks
                             arithmetic on NULL (preload $(clang -print-file-name=
                             libclang_rt.ubsan_standalone-x86_64.so); Debian: libclang-rt-dev)
  QUANTCODEC_MODULES=a,b     build only these extensions (development: one module at a time);
                             _arrays brings its loop modules (_loops_baseline, _avx2, _avx512) along
  QUANTCODEC_FORCE_CYTHON=0  reuse generated C files that are newer than their .pyx
  QUANTCODEC_DEBUG_INFO=1    keep the compiler's debug info (-g), the local symbols and, on Linux, the
                             unwind tables in a release build (for perf and gdb); release builds
                             otherwise carry none of them (-g0, -Wl,-S -Wl,-x, no .eh_frame), so a
                             wheel stays under 2 MB. The debug, ASan and UBSan builds keep -g.
"""
import glob
import hashlib
import os
import sys
import sysconfig

from Cython.Build import cythonize
from Cython import __version__ as cython_version
from setuptools import Extension, setup
from setuptools.command.build_py import build_py

DEBUG = os.environ.get("QUANTCODEC_CYTHON_DEBUG", "0") not in ("", "0")
ASAN = os.environ.get("QUANTCODEC_ASAN", "0") not in ("", "0")
UBSAN = os.environ.get("QUANTCODEC_UBSAN", "0") not in ("", "0")
DEBUG_INFO = os.environ.get("QUANTCODEC_DEBUG_INFO", "0") not in ("", "0")
ONLY = [m for m in os.environ.get("QUANTCODEC_MODULES", "").split(",") if m]

directives = dict(
    language_level=3,
    embedsignature=True,
    binding=True,
    boundscheck=DEBUG,
    wraparound=DEBUG,
    initializedcheck=DEBUG,
    nonecheck=False,
    cdivision=True,
    cpow=True,
)
if tuple(int(p) for p in cython_version.split(".")[:2] if p.isdigit()) >= (3, 1):
    directives["freethreading_compatible"] = True

if os.name == "nt":
    cflags = ["/O2"]
    ldflags = []
else:
    # -O3 for the auto-vectorizer; never -march=native or -ffast-math (portable wheels, exact NaN
    # handling and rounding); -ffp-contract=off so no platform fuses a*b+c into an FMA, which
    # would change the last bit of a decoded value (aarch64 gcc contracts by default).
    # -fno-math-errno and -fno-trapping-math change no value (sqrt need not set errno; no code
    # reads the floating-point exception flags) but let gcc turn selects into vector blends and
    # vectorize sqrt: without them the array loops of _loops.pxd stay scalar.
    cflags = ["-O3", "-fno-strict-aliasing", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math"]
    ldflags = []
    if DEBUG:
        cflags = ["-O1", "-g", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math"]
    if ASAN:
        cflags = ["-O1", "-g", "-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math",
                  "-fsanitize=address", "-fno-omit-frame-pointer"]
        ldflags = ["-fsanitize=address"]
    if UBSAN:
        cflags += ["-fsanitize=undefined", "-fno-omit-frame-pointer", "-g"]
        ldflags += ["-fsanitize=undefined"]
    if not (DEBUG_INFO or DEBUG or ASAN or UBSAN):
        # A release build carries no debug info. Python's own CFLAGS (sysconfig) usually hold -g,
        # which made the wheel 7.9 MB (21 MB unpacked): -g0 comes after them on the command line
        # and wins, and -Wl,-S drops the debug sections of anything linked in (GNU ld and lld:
        # --strip-debug; Apple ld64: -S). -Wl,-x leaves the local symbols (the static functions)
        # out of the symbol table too (GNU ld, lld and ld64 alike): 83 KB of the wheel, which was
        # over its 2 MB with the view builder and the split-out modules. The exported symbols stay;
        # a native backtrace names the module and offset, and QUANTCODEC_DEBUG_INFO=1 builds keep
        # everything. The debug, ASan and UBSan builds keep -g.
        cflags += ["-g0"]
        ldflags += ["-Wl,-S", "-Wl,-x"]
        if sys.platform.startswith("linux"):
            # No unwind tables (.eh_frame) on Linux: the modules are C, nothing unwinds through
            # them (no C++ exceptions, no thread cancellation), and the code is the same. 154 KB
            # of the modules, 64 KB of the wheel, which was over its 2 MB on CPython 3.13
            # (2,113,625 bytes; 3.11's 2,094,871). The price: a native profiler or debugger can
            # no longer unwind through a release build's frames (perf --call-graph dwarf, gdb's
            # bt): QUANTCODEC_DEBUG_INFO=1 builds keep the tables, with everything else.
            cflags += ["-fno-asynchronous-unwind-tables", "-fno-unwind-tables"]


def _x86_64_gcc():
    """Whether the build targets x86-64 with gcc or clang only (not MSVC, not a universal2 or
    arm64 cross build of macOS, where x86 flags would reach the arm64 compiler)."""
    plat = sysconfig.get_platform()
    return (os.name != "nt" and plat.endswith(("x86_64", "amd64"))
            and "arm64" not in os.environ.get("ARCHFLAGS", ""))


# The array loops of Bounded, Quat and UnitVector (quantcodec/_loops.pxd) are compiled once per
# instruction set, each into its own module: _loops_baseline everywhere, and on x86-64 with gcc
# or clang _loops_avx2 and _loops_avx512, which quantcodec._arrays loads when the CPU runs them
# (quantcodec/_cpu.h, the one CPU dispatch). Feature flags, not -march: they enable exactly what the
# runtime check tests, and no FMA.
LOOPS = ["_loops_baseline", "_loops_avx2", "_loops_avx512"]
SIMD = {
    "_loops_avx2": ["-mavx2"],
    "_loops_avx512": ["-mavx512f", "-mavx512cd", "-mavx512bw", "-mavx512dq", "-mavx512vl",
                      "-mprefer-vector-width=512"],
}

macros = []
# -O3 only where it pays: the array loops (vectorized) and the packet coders (_delta); -O2 for the
# per-call modules, whose time is Python's call overhead and where -O3's unrolling only grows the
# code, and -Os for the test hooks. Measured against -O3 for all (bench/ideal_loops.py at ticks 60,
# 150 and 280, alternated): the same; _delta at -O2 was 5% slower to encode at tick 280, so it keeps
# -O3. The wheel: 0.15 MB smaller.
# -Os for _history too (a stream's bookkeeping and its datagrams' checks; the packets are coded by
# _delta): 22.6 KB less of the wheel, which was 1.3 KB over its 2 MiB on CPython 3.13 (2,098,492
# bytes). A 200-tick, 1,000-body stream, encoded and decoded whole, best of 5, three alternated
# pairs: encode 12.04 / 11.82 ms, decode 9.52 / 9.41 ms (medians, -O2 / -Os); keyed, decode 10.43
# / 10.51 ms: the same. (_schemabase at -Os saved 4.8 KB but its calls took 5% longer: not taken.)
OPT = {m: ["-Os" if m in ("_testing", "_history") else "-O2"] for m in (
    "_arrays", "_bitstream", "_codecs", "_history", "_interest", "_plan", "_schemabase", "_testing", "_viewbuild")}
if DEBUG or ASAN:
    OPT = {}
modules = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob("quantcodec/_*.pyx"))
if not _x86_64_gcc():
    modules = [m for m in modules if m not in SIMD]
if ONLY:
    if "_arrays" in ONLY:
        ONLY = ONLY + LOOPS
    modules = [m for m in modules if m in ONLY]

# The loop modules must come from the same _kernels.pxd and _loops.pxd as _arrays, which refuses
# a loop module of another build (a leftover of an earlier build in the source tree).
_digest = hashlib.sha1()
for _src in ("quantcodec/_kernels.pxd", "quantcodec/_loops.pxd"):
    with open(_src, "rb") as f:
        _digest.update(f.read())
loops_build = [("QC_LOOPS_BUILD", '"%s"' % _digest.hexdigest()[:16])]

extensions = [
    Extension(
        f"quantcodec.{m}",
        [f"quantcodec/{m}.pyx"],
        extra_compile_args=cflags + SIMD.get(m, []) + OPT.get(m, []),
        extra_link_args=ldflags,
        define_macros=macros + (loops_build if m == "_arrays" or m in LOOPS else []),
    )
    for m in modules
]

class build_py_with_client(build_py):
    """The live view's page decodes with the JavaScript client: clients/js/quantcodec.mjs and the
    modules it imports (clients/js/src/*.mjs) go into the package as quantcodec/web/quantcodec.mjs
    and quantcodec/web/src/ when it is built (one copy in the
    repository; a source checkout's live view reads clients/js directly)."""

    def run(self):
        super().run()
        client = os.path.join("clients", "js")
        if os.path.isfile(os.path.join(client, "quantcodec.mjs")):
            web = os.path.join(self.build_lib, "quantcodec", "web")
            parts = sorted(f for f in os.listdir(os.path.join(client, "src")) if f.endswith(".mjs"))
            self.mkpath(os.path.join(web, "src"))
            self.copy_file(os.path.join(client, "quantcodec.mjs"), os.path.join(web, "quantcodec.mjs"))
            for f in parts:       # the modules the entry imports (./src/*.mjs)
                self.copy_file(os.path.join(client, "src", f), os.path.join(web, "src", f))


setup(
    cmdclass={"build_py": build_py_with_client},
    # compile the extensions side by side (threads: safe on every platform)
    options={"build_ext": {"parallel": os.cpu_count() or 1}},
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        # Always regenerate the C: a .c left by a build with other directives (debug, ASan)
        # must never be compiled into a release. QUANTCODEC_FORCE_CYTHON=0 skips it in development.
        force=os.environ.get("QUANTCODEC_FORCE_CYTHON", "1") != "0",
        # translate the .pyx side by side too: worker processes, so only where they fork
        nthreads=(os.cpu_count() or 1) if sys.platform.startswith("linux") else 0,
    ),
)
