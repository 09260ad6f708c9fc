"""The ``quantcodec`` command (also ``python -m quantcodec``).

    quantcodec demo                       the main job on the embedded scene: raw / quantized / delta over a lossy link
    quantcodec describe SCHEMA_FILE       schema.describe() of a JSON or TOML schema file
    quantcodec report SCHEMA_FILE TRACE   per-field bit accounting over a recorded trace (.npz)
    quantcodec bench                      the microbenchmarks beside their NumPy / struct baselines
    quantcodec decode-stream SCHEMA DATAGRAMS   the reference runner of the clients (docs/wire-format.md section 16)
    quantcodec conformance make DIR       write the conformance kit (docs/wire-format.md section 16)
    quantcodec codegen SCHEMA             typed C# records over clients/csharp (Unity, Godot, .NET)

Exit status: 0 on success, 1 when an input is wrong (a missing or unreadable file, a schema or a
trace that does not load, a missing optional dependency), 2 for a wrong command line (argparse's
convention: a bad option value too). Errors go to stderr as one line, ``quantcodec <command>:
error: <what>`` (a usage error prints the command's usage before it), never as a traceback; a
traceback means a bug in quantcodec. Output cut short by a reader that left (``| head``) ends
quietly.
"""

import argparse
import errno
import math
import os
import sys

from . import __version__
from .errors import UserError  # the tools raise it; also importable as quantcodec.cli.UserError

__all__ = ["main", "build_parser", "UserError"]


# --------------------------------------------------------------------------------------------
# option types: argparse turns their ValueError / ArgumentTypeError into a usage error (status 2)


def _positive_int(text):
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return value


def _int_range(lo, hi, what, *, digits=False):
    """A whole number in lo..hi; ``digits``: ASCII decimal digits only (the conformance runner's
    options, decode-stream, as every client's runner reads them: conformance/README.md), not
    what int() takes besides (a sign, spaces, underscores)."""
    def convert(text):
        value = _int(text) if not digits or (text.isascii() and text.isdigit()) else None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{what} in {lo}..{hi}{' (decimal digits)' if digits else ''}, "
                                             f"got {text!r}")
        return value
    return convert


def _float_range(lo, hi):
    def convert(text):
        value = _finite_float(text)
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo:g}..{hi:g}, got {text!r}")
        return value
    return convert


MAX_DEMO_ENTITIES = 10_000      # (memory and time grow faster than the count: 10,000 bodies take ~0.4 GB)
MAX_BYTES_LIMIT = 2**63 - 1     # decode-stream --max-bytes: a C ssize_t
REPORT_HZ = (1e-3, 1e6)         # report --hz: a tick a quarter hour to a million a second


def _key_hex(text):
    """decode-stream --key: 1 to 255 bytes in hex (docs/wire-format.md section 17)."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not hex: {text!r}") from None
    if not 1 <= len(key) <= 255:
        raise argparse.ArgumentTypeError(f"a key is 1 to 255 bytes, got {len(key)}")
    return key


def _path(text):
    if not text:
        raise argparse.ArgumentTypeError("an empty path")
    return text


def _int(text):
    try:
        return int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _positive_float(text):
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, got {text!r}")
    return value


def _non_negative_float(text):
    value = _finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def _finite_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def _loss(text):
    """A packet loss rate: a fraction in [0, 1), or a percentage such as ``5%``."""
    raw = text.strip()
    if raw.endswith("%"):
        value = _finite_float(raw[:-1]) / 100.0
    else:
        value = _finite_float(raw)
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in [0, 1) such as 0.05, or a percentage such as 5%, got {text!r}")
    return value


def _port(text):
    value = _int(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number in 0..65535, got {text!r}")
    return value


def _seed(text):
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


# --------------------------------------------------------------------------------------------
# the parser


_DEMO_EPILOG = """\
examples:
  quantcodec demo                              300 bodies, 10 s at 60 Hz, 5% loss, acks 100 ms late
  quantcodec demo -n 900 --seconds 20          a bigger world, like Gaffer On Games' 901 cubes
  quantcodec demo --loss 0.2 --ack-delay 250   a bad link: the delta baseline gets older
  quantcodec demo --json > demo.json           machine-readable, only JSON on stdout
  quantcodec demo --plot demo.png              kbit/s over time and the error distribution (needs matplotlib)

Streams: 'raw' sends every body as float32s (position 3, rotation 4, velocity 3: 40 bytes);
'quantized' sends every body quantized by the scene's schema in full, every tick; 'delta' sends
snapshot deltas against the newest snapshot the client acknowledged (SnapshotEncoder). Packets are
lost at random at the given rate; acks (of the packets that arrive) reach the server after the ack
delay. Errors are measured between what the client decoded and the server's float state.
"""

_DESCRIBE_EPILOG = """\
examples:
  quantcodec describe player.json
  quantcodec describe player.toml

The file has the structure of schema.spec() (docs/schema-format.md); in TOML, keys whose value
would be null are left out.
"""

_REPORT_EPILOG = """\
examples:
  quantcodec report player.json match.npz
  quantcodec report player.json match.npz --hz 30 --ack-delay 200
  quantcodec report player.json match.npz --json > bits.json

The trace is a NumPy .npz with one array per schema field, shaped (ticks, entities, ...) like a
schema batch column, plus optional 'ids' of shape (ticks, entities) or (entities,) and an optional
scalar 'hz' (docs/trace-format.md). Save one with
  numpy.savez("match.npz", position=pos, rotation=rot, ids=ids)
"""

_BENCH_EPILOG = """\
examples:
  quantcodec bench             the full run: 15 repeats a row
  quantcodec bench --quick     a short run: the same table with 5 repeats
  quantcodec bench --json      the rows and the machine they were measured on, as JSON

Times are in process CPU time, ours and each baseline in alternation; a speedup is the median of
the pairs' ratios, so it holds on a busy machine; absolute numbers do not transfer between
machines, ratios from one run do. The schema and snapshot paths have their own benchmarks in the
source tree: bench/bench_schema.py and bench/bench_snapshot.py.

bitstruct, when installed (pip install 'quantcodec[bench]'), joins the baselines.
"""


_DECODE_STREAM_EPILOG = """\
examples:
  quantcodec decode-stream player.json capture.bin             one JSON line per datagram
  quantcodec decode-stream conformance/schemas/pose.json conformance/streams/pose_lossy.bin

Write DATAGRAMS.bin from Python as each datagram's length and bytes:
  with open("capture.bin", "wb") as fh:
      for d in datagrams:
          fh.write(len(d).to_bytes(4, "little") + d)
A client's runner (clients/*/qc-decode) prints the same lines for the same file.
"""

_CONFORMANCE_EPILOG = """\
examples:
  quantcodec conformance make kit/          write the kit into ./kit (created if missing)
  clients/js/qc-decode kit/schemas/pose.json kit/streams/pose_lossy.bin   a client's runner on one stream

kit/manifest.json lists every file; each stream's expected runner output is beside it
(kit/streams/pose_lossy.jsonl: compare it with the runner's lines; conformance/README.md).
"""


def build_parser():
    parser = argparse.ArgumentParser(
        prog="quantcodec",
        description="Quantize, bit-pack and delta-compress game and simulation state.",
        epilog="Run 'quantcodec COMMAND --help' for a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"quantcodec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.commands = sub.choices       # name -> its parser (filled below): main's usage errors
    fmt = argparse.RawDescriptionHelpFormatter

    demo = sub.add_parser(
        "demo", formatter_class=fmt, epilog=_DEMO_EPILOG,
        help="stream the embedded scene raw, quantized and delta-compressed over a lossy link",
        description="Simulate a world of moving and resting bodies and stream it three ways over a "
                    "simulated lossy link: raw float32s, per-field quantization, snapshot delta "
                    "compression. Prints bytes per entity per update, kbit/s, the share of entities "
                    "that changed and the worst errors of each stream.")
    demo.add_argument("-n", "--entities", type=_int_range(1, MAX_DEMO_ENTITIES, "a number of bodies"),
                      default=300, metavar="N",
                      help=f"number of bodies, the 2 driven ones included, at most {MAX_DEMO_ENTITIES:,} "
                           f"(default: %(default)s)")
    demo.add_argument("-s", "--seconds", type=_positive_float, default=10.0, metavar="S",
                      help="simulated seconds (default: %(default)s)")
    demo.add_argument("--hz", type=_positive_int, default=60, metavar="HZ",
                      help="tick rate: snapshots per second (default: %(default)s; at most 240 with --serve)")
    demo.add_argument("--loss", type=_loss, default=0.05, metavar="RATE",
                      help="packet loss, 0.05 or 5%% (default: 0.05)")
    demo.add_argument("--ack-delay", type=_non_negative_float, default=100.0, metavar="MS",
                      help="time from sending a snapshot to the server hearing its ack, in ms "
                           "(default: %(default)s)")
    demo.add_argument("--seed", type=_seed, default=0, help="scene and loss seed (default: %(default)s)")
    demo.add_argument("--json", action="store_true", help="print the results as JSON, and nothing else, on stdout")
    demo.add_argument("--plot", metavar="FILE.png",
                      help="also draw kbit/s over time and the error distributions (needs matplotlib)")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr is not a terminal)")
    live = demo.add_argument_group(
        "live view", "--serve streams the world to a web page instead, decoded in the browser by "
                     "clients/js and drawn on a canvas, with bytes and kbit/s of the three streams "
                     "(needs: pip install 'quantcodec[serve]'); Ctrl-C stops it")
    live.add_argument("--serve", action="store_true", help="serve the live view at http://HOST:PORT/")
    live.add_argument("--host", default="127.0.0.1",
                      help="the address to bind (default: %(default)s; a non-loopback one needs --allow-remote)")
    live.add_argument("--port", type=_port, default=8765, help="the port (default: %(default)s; 0: any free one)")
    live.add_argument("--allow-remote", action="store_true",
                      help="serve on a non-loopback address on purpose (other machines can then connect)")
    live.add_argument("--open", action="store_true", help="open the page in the default browser")
    demo.set_defaults(run=_cmd_demo, usage_error=demo.error)     # (--serve's checks: status 2, the demo's usage)

    describe = sub.add_parser(
        "describe", formatter_class=fmt, epilog=_DESCRIBE_EPILOG,
        help="print schema.describe() for a JSON or TOML schema file",
        description="Load a schema file (JSON or TOML) and print its table: field, codec, bits, step, "
                    "worst error, and the total against raw 32-bit floats.")
    describe.add_argument("schema", metavar="SCHEMA_FILE", help="a .json or .toml schema file")
    describe.set_defaults(run=_cmd_describe)

    report = sub.add_parser(
        "report", formatter_class=fmt, epilog=_REPORT_EPILOG,
        help="per-field bit accounting of a schema over a recorded trace",
        description="Quantize a recorded trace with a schema and account for every field: bits per "
                    "update in full and in delta snapshots, the fields that cost most, how many "
                    "values clamped, and the worst errors seen. The what-if tool for choosing bits "
                    "on real data: edit the schema file and run it again.")
    report.add_argument("schema", metavar="SCHEMA_FILE", help="a .json or .toml schema file")
    report.add_argument("trace", metavar="TRACE.npz", help="recorded per-tick values by field name (docs/trace-format.md)")
    report.add_argument("--hz", type=_float_range(*REPORT_HZ), default=None,
                        help=f"tick rate of the trace, for kbit/s, {REPORT_HZ[0]:g} to {REPORT_HZ[1]:g} "
                             f"(default: the trace's 'hz', else 60)")
    report.add_argument("--ack-delay", type=_non_negative_float, default=100.0, metavar="MS",
                        help="delta snapshots are taken against the snapshot sent this long before "
                             "(acked, no loss) (default: %(default)s)")
    report.add_argument("--json", action="store_true", help="print the results as JSON, and nothing else, on stdout")
    report.add_argument("--no-progress", action="store_true", help="no progress bar (it is off anyway when stderr is not a terminal)")
    report.set_defaults(run=_cmd_report)

    bench = sub.add_parser(
        "bench", formatter_class=fmt, epilog=_BENCH_EPILOG,
        help="run the microbenchmarks beside their NumPy / struct baselines",
        description="Time quantcodec's codecs (one value; arrays of a million values and "
                    "quaternions) and bit packing against the plain NumPy / struct (and bitstruct) "
                    "ways of doing the same job.")
    bench.add_argument("--quick", action="store_true", help="a short run with fewer repeats (5 instead of 15)")
    bench.add_argument("--json", action="store_true",
                       help="print the environment and the rows as JSON, and nothing else, on stdout")
    bench.set_defaults(run=_cmd_bench)

    ds = sub.add_parser(
        "decode-stream", formatter_class=fmt, epilog=_DECODE_STREAM_EPILOG,
        help="decode a file of datagrams: the reference runner every client is checked against",
        description="Decode DATAGRAMS.bin (each datagram as a 4-byte little-endian length and its "
                    "bytes) with a SnapshotDecoder of the schema that starts with no hello, and "
                    "print one JSON line per datagram: {\"seq\":S,\"ids\":[...],\"codes\":[[...]]} "
                    "for a completed snapshot, {\"error\":\"KIND\"} for a refused datagram, "
                    "{\"pending\":true} for one that completes nothing (docs/wire-format.md section "
                    "14 says which refusal each error is).")
    ds.add_argument("--key", metavar="HEX", type=_key_hex, help="the shared key, 1 to 255 bytes in hex: "
                    "keyed checks (docs/wire-format.md section 17)")
    ds.add_argument("--max-bytes", type=_int_range(1, MAX_BYTES_LIMIT, "a byte count", digits=True), metavar="N",
                    help="the client's limit on what it holds (section 19; default 268435456)")
    ds.add_argument("--replies", type=_int_range(0, 0xFFFFFFFF, "a nonce", digits=True), metavar="NONCE",
                    help="decode with a StreamClient of this "
                    "nonce and end each line with the reply it makes after that datagram "
                    "(\"reply\": hex or null; section 18)")
    ds.add_argument("--idle", type=_int_range(0, 1000, "a count of calls", digits=True), metavar="N",
                    help="with --replies: after each datagram's reply, N more calls of reply() "
                    "with nothing arriving, listed in order (\"idle\": [hex or null, ...]): the "
                    "keep-alives a client makes while nothing arrives (section 18)")
    ds.add_argument("schema", metavar="SCHEMA_FILE", help="a .json or .toml schema file")
    ds.add_argument("datagrams", metavar="DATAGRAMS.bin", help="length-prefixed datagrams")
    ds.set_defaults(run=_cmd_decode_stream)

    kit = sub.add_parser(
        "conformance", formatter_class=fmt, epilog=_CONFORMANCE_EPILOG,
        help="write the conformance kit the clients are checked against",
        description="'conformance make DIR' writes the conformance kit (schemas, value and record "
                    "vectors, datagram streams and their expected runner output) into DIR. The "
                    "same package version writes the same bytes.")
    kit.add_argument("action", choices=["make"], help="make: write the kit")
    kit.add_argument("directory", metavar="DIR", type=_path, help="the folder to write (created if missing)")
    kit.set_defaults(run=_cmd_conformance)

    from . import codegen
    gen = sub.add_parser(
        "codegen", formatter_class=fmt,
        help="write typed record code for a schema (C#: a struct over clients/csharp)",
        description="Write one C# struct for a schema file: a typed property per field, a Step "
                    "constant per field, AreCodesInRange, Encode/Decode over clients/csharp's "
                    "runtime, and the schema fingerprint to check at connect.",
        epilog="examples:\n  quantcodec codegen player.json -o PlayerState.cs    C# (--lang csharp, the default)\n"
               "  quantcodec codegen player.toml > PlayerState.cs\n")
    codegen.add_arguments(gen)
    gen.set_defaults(run=_cmd_codegen)
    return parser


# --------------------------------------------------------------------------------------------
# commands


def _cmd_demo(args):
    if args.serve:
        return _cmd_serve(args)
    from .tools import demo
    if args.plot:
        demo.require_matplotlib()
        _check_writable(args.plot)          # before the run, not after it
    result = demo.run(n_entities=args.entities, seconds=args.seconds, hz=args.hz, loss=args.loss,
                      ack_delay_ms=args.ack_delay, seed=args.seed,
                      progress=not args.no_progress, series=bool(args.plot))
    if args.plot:
        demo.plot(result, args.plot)
    if args.json:
        _print_json(demo.to_json(result))
    else:
        print(demo.format_text(result))
        if args.plot:
            print(f"\nwrote {args.plot}")
    return 0


def _cmd_serve(args):
    from .tools import liveview
    # a wrong command line, in the options' words (before the dependency): status 2
    if args.json or args.plot:
        args.usage_error("--serve streams to a web page: --json and --plot go with the plain demo")
    if args.hz > liveview.MAX_HZ:
        args.usage_error(f"--hz: the live view ticks at most {liveview.MAX_HZ} times a second, got {args.hz}")
    if not args.host:
        args.usage_error("--host: an address to bind, such as 127.0.0.1")
    if not liveview.is_local_host(args.host) and not args.allow_remote:
        args.usage_error(f"--host {args.host}: not a loopback address; the live view is for this machine "
                         f"(add --allow-remote to serve other machines on purpose)")
    try:
        liveview.require_websockets()
        liveview.serve(args.host, args.port, allow_remote=args.allow_remote, open_browser=args.open,
                       n_entities=args.entities, hz=args.hz, loss=args.loss,
                       ack_delay_ms=args.ack_delay, seed=args.seed, seconds=args.seconds)
    except liveview.ServeError as e:
        raise UserError(str(e)) from None
    except OSError as e:
        raise UserError(f"cannot serve on {args.host}:{args.port}: {e.strerror or e}") from None
    return 0


def _cmd_describe(args):
    from .tools.report import load_schema
    schema = load_schema(args.schema)
    print(schema.describe())
    return 0


def _cmd_report(args):
    from .tools import report
    schema = report.load_schema(args.schema)
    trace = report.load_trace(args.trace, schema)
    hz = args.hz if args.hz is not None else (trace.hz if trace.hz is not None else 60.0)
    result = report.run(schema, trace, hz=hz, ack_delay_ms=args.ack_delay, progress=not args.no_progress)
    if args.json:
        _print_json(result)
    else:
        print(report.format_text(result))
    return 0


def _cmd_bench(args):
    from .tools import bench
    rows = bench.run(quick=args.quick, out=None if args.json else print)
    if args.json:
        _print_json(bench.to_json(rows))
    return 0


def _cmd_decode_stream(args):
    from .tools.report import load_schema
    from .conformance import read_datagrams, runner_lines
    schema = load_schema(args.schema)
    try:
        datagrams = read_datagrams(args.datagrams)
    except OSError as e:
        raise UserError(f"cannot read {args.datagrams}: {e.strerror or e}") from None
    except ValueError as e:
        raise UserError(str(e)) from None
    out = sys.stdout
    for line in runner_lines(schema, datagrams, key=args.key, max_bytes=args.max_bytes, replies=args.replies,
                             idle=args.idle or 0):
        out.write(line + "\n")
    return 0


def _cmd_conformance(args):
    from .conformance import make
    if os.path.exists(args.directory) and not os.path.isdir(args.directory):
        raise UserError(f"cannot write the kit to {args.directory}: not a directory")
    try:
        manifest = make(args.directory)
    except OSError as e:        # (a parent that cannot be made or written, a full disk)
        raise UserError(f"cannot write the kit to {args.directory}: "
                        f"{e.strerror or e} ({e.filename or args.directory})") from None
    print(f"wrote the conformance kit to {args.directory}: {len(manifest['schemas'])} schemas, "
          f"{len(manifest['values'])} value files, {len(manifest['records'])} record files, "
          f"{len(manifest['streams'])} streams")
    return 0


def _cmd_codegen(args):
    from . import codegen
    from .tools.report import load_schema
    load_schema(args.schema)            # a missing or broken file: one line, exit status 1
    if args.output:
        _check_writable(args.output)
    return codegen.run(args)


def _check_writable(path):
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"cannot write {path}: no such directory {folder}")
    if os.path.isdir(path):
        raise UserError(f"cannot write {path}: it is a directory")
    if not os.access(folder, os.W_OK):
        raise UserError(f"cannot write {path}: the directory is not writable")


def _print_json(obj):
    import json
    print(json.dumps(obj, indent=2, allow_nan=False))


# --------------------------------------------------------------------------------------------


def main(argv=None):
    """Run the command line; returns the exit status (the console script passes it to sys.exit)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:       # (told by the command's own parser: its usage, not the top level's)
        (parser.commands.get(args.command) or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "decode-stream" and args.idle is not None and args.replies is None:
        parser.commands["decode-stream"].error("--idle counts calls of reply(): give --replies NONCE too")
    try:
        status = args.run(args)
        sys.stdout.flush()          # (a write error of buffered output: here, not at exit)
        return status
    except UserError as e:
        return _error(args, e)
    except KeyboardInterrupt:
        print(f"quantcodec {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `quantcodec demo | head`: the reader left; end quietly, as Unix tools do
        _detach_stdout()
        return 1
    except OSError as e:
        # a write error (a full disk, /dev/full) or another OS refusal: one line, not a traceback
        if e.filename is not None:
            return _error(args, f"{e.strerror or e} ({e.filename})")
        _detach_stdout()            # (most likely stdout's own write: no file named)
        if e.errno in _WRITE_ERRNOS:
            return _error(args, f"cannot write the output: {e.strerror}")
        return _error(args, f"{e.strerror or e}")
    except MemoryError:
        return _error(args, "not enough memory for this run (try a smaller one)")
    except (ValueError, OverflowError) as e:
        # a value no option check caught: still one line (and worth a bug report)
        return _error(args, str(e) or type(e).__name__)


def _error(args, what):
    print(f"quantcodec {args.command}: error: {what}", file=sys.stderr)
    return 1


_WRITE_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EBADF}


def _detach_stdout():
    """Point stdout at devnull, so that the interpreter's final flush of what is still buffered
    does not raise again (the recipe of Python's signal docs)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):     # (a stdout without a file descriptor: pytest's)
        pass
