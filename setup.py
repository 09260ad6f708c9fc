"""Build the compiled core of quantcodec.

Metadata lives in pyproject.toml; this file only declares the Cython extensions and their
compiler directives, set here in one place for every module.

Environment switches:
  QUANTCODEC_CYTHON_DEBUG=1  bounds, wraparound and initialization checks on (the debug build CI runs)
  QUANTCODEC_ASAN=1          AddressSanitizer build (run with LD_PRELOAD=$(gcc -print-file-name=libasan.so))
  QUANTCODEC_MODULES=a,b     build only these extensions (development: one module at a time)
  QUANTCODEC_FORCE_CYTHON=0  reuse generated C files that are newer than their .pyx
"""
import glob
import os

from Cython.Build import cythonize
from Cython import __version__ as cython_version
from setuptools import Extension, setup

DEBUG = os.environ.get("QUANTCODEC_CYTHON_DEBUG", "0") not in ("", "0")
ASAN = os.environ.get("QUANTCODEC_ASAN", "0") not in ("", "0")
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
    cflags = ["-O3", "-fno-strict-aliasing", "-ffp-contract=off"]
    ldflags = []
    if DEBUG:
        cflags = ["-O1", "-g", "-ffp-contract=off"]
    if ASAN:
        cflags = ["-O1", "-g", "-ffp-contract=off", "-fsanitize=address", "-fno-omit-frame-pointer"]
        ldflags = ["-fsanitize=address"]

macros = []
modules = sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob("quantcodec/_*.pyx"))
if ONLY:
    modules = [m for m in modules if m in ONLY]

extensions = [
    Extension(
        f"quantcodec.{m}",
        [f"quantcodec/{m}.pyx"],
        extra_compile_args=cflags,
        extra_link_args=ldflags,
        define_macros=macros,
    )
    for m in modules
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives=directives,
        # Always regenerate the C: a .c left by a build with other directives (debug, ASan)
        # must never be compiled into a release. QUANTCODEC_FORCE_CYTHON=0 skips it in development.
        force=os.environ.get("QUANTCODEC_FORCE_CYTHON", "1") != "0",
    ),
)
