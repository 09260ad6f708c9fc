"""``quantcodec demo --serve``: the demo's world streamed live to a browser.

The server runs the embedded scene (``quantcodec.tools.scene``: bodies dropping, bouncing,
rolling and going to sleep, two driven bodies pushing through the pile) tick by tick, quantizes
each tick once with the demo's schema, and streams it to every connected page over a WebSocket
exactly as a game server streams it over UDP, with the session both ways (SPEC section 8): one
:class:`~quantcodec.StreamServer` for all pages, each WebSocket a client of it (``connect`` when
it opens, ``disconnect`` when it closes), ``send`` once a tick for every page (the hello until
the page has acked, then packets or fragments above ``max_datagram``), and every binary message
a page sends back, the replies of its ``StreamClient`` (hello requests and acks,
docs/wire-format.md section 18), given to ``receive`` (after the simulated link's delay; junk
is refused and changes nothing).

The page (``quantcodec/web/index.html`` and ``view.mjs``) decodes the datagrams with the
JavaScript client's ``StreamClient`` (``quantcodec/web/quantcodec.mjs``, ``clients/js/quantcodec.mjs``
put there by the build, kept in the package data so that an installed package needs no
repository), sends its ``reply()`` back over the WebSocket, and draws the bodies on a canvas seen
from above with the client's ``Interpolator`` (a playout delay behind the newest view, at the
screen's frame rate), with the bytes per entity per update, the kbit/s of the raw, quantized and
delta streams, the worst error and the interpolation buffer's statistics.

The errors are each page's own: beside every page the server keeps a shadow ``StreamClient`` fed
exactly the datagrams that page is sent (after the simulated loss), so it holds the view the page
decodes; each view it completes, of tick ``s``, is measured against the world's floats of tick
``s`` over the entities the view holds (under a budget a page starts with part of the world, and
the entities waiting their turn are stale: the errors grow as the budget comes down). The tick
message says how many of the world's entities the view holds.

One slow page does not hold up the others: the tick loop never waits on a socket. Each page has
its own outgoing queue of at most ``QUEUE_TICKS`` ticks' messages and a task that writes it; when
a page's queue is full, that page's messages of the tick are dropped (counted, and told to the
page in its next tick message): datagrams are unreliable anyway, and the session recovers by
itself. A page that stops reading altogether is closed by the WebSocket keepalive (a ping every
20 s, 20 s to answer).

What a page sends is checked field by field: a budget is None or a whole number of bytes in
1..MAX_BUDGET (a number the StreamServer refuses, such as one below the hello, changes nothing);
a report's line is a string of at most ``max_report_line`` characters holding an object with an
integer ``seq`` in 0..65535 and lists ``ids`` and ``codes``. Anything else is ignored and counted
(``invalid`` of the page), never raised: no traceback, the connection stays open. The reports
(the test hook ``?report=N``) are kept as summaries, not as sent: ``{"seq", "entities",
"_match"}``, each compared with the snapshot when it arrives, at most ``MAX_REPORTS`` of them;
so a line costs at most ``max_report_line`` characters while it is parsed (256 characters an
entity, 64 KiB at least) and the store at most about ``MAX_REPORTS`` x 200 bytes (2 MB) in total,
whatever the pages send.

Everything is served from the package data by the WebSocket server itself (``/``,
``/view.mjs``, ``/quantcodec.mjs`` and the client's modules ``/src/*.mjs``; the stream is ``/ws``; ``/wait?n=N`` answers once the pages
have reported N decoded snapshots, for the test): no other file is reachable and nothing is
fetched from the network. The server binds 127.0.0.1 by default and refuses to bind a
host that is not a loopback address unless ``allow_remote=True``.

Needs the ``websockets`` package (``pip install 'quantcodec[serve]'``), version 13 or later.

    python -m quantcodec.tools.liveview [--port 8765] [--entities 300]
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import math
import pathlib
import random
import threading
import time
from http import HTTPStatus
from importlib import resources

import numpy as np

from ..errors import DecodeError

__all__ = ["LiveServer", "serve", "main", "check_host", "is_local_host", "require_websockets", "PAGES"]

# path -> (package data file, content type)
PAGES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/view.mjs": ("view.mjs", "text/javascript; charset=utf-8"),
    "/quantcodec.mjs": ("quantcodec.mjs", "text/javascript; charset=utf-8"),
}
WS_PATH = "/ws"
WAIT_PATH = "/wait"
RAW_FLOATS = 10                   # position 3, rotation 4, velocity 3 float32 a body: the raw stream
MAX_HZ = 240                      # the live view's fastest tick rate
QUEUE_TICKS = 30                  # a page's outgoing queue: ticks' messages waiting (0.5 s at 60 Hz)
MAX_BUDGET = 1 << 20              # the largest budget a page may ask for, bytes a tick
MAX_REPORTS = 10000               # reports kept (summaries: seq, entity count, match)


class ServeError(RuntimeError):
    """The live view cannot start (the optional dependency is missing, a host is refused)."""


def require_websockets():
    """The ``websockets`` modules the server uses, or ServeError saying how to install them."""
    try:
        from websockets.asyncio.server import serve as ws_serve
        from websockets.datastructures import Headers
        from websockets.exceptions import ConnectionClosed
        from websockets.http11 import Response
    except ImportError:
        raise ServeError("the live view needs the websockets package (13 or later): "
                         "pip install 'quantcodec[serve]'") from None
    return ws_serve, Headers, Response, ConnectionClosed


def check_host(host, allow_remote=False):
    """ServeError unless the live view may serve on `host`: a loopback address, or any host with
    `allow_remote`. Needs no websockets: the command checks it before the dependency."""
    if not isinstance(host, str) or not host:
        raise ServeError(f"host must be a non-empty string, got {host!r}")
    if not is_local_host(host) and not allow_remote:
        raise ServeError(f"refusing to serve on {host!r}, which is not a loopback address: the "
                         f"live view is for this machine; pass allow_remote=True (--allow-remote) "
                         f"to serve other machines on purpose")


def is_local_host(host):
    """Whether ``host`` names this machine only (a loopback address, or ``localhost``)."""
    if host in ("localhost", "localhost.", "ip6-localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


_REPO_CLIENT = pathlib.Path(__file__).resolve().parents[2] / "clients" / "js"   # quantcodec/tools/..


def _client_parts():
    """The JavaScript client's modules beside its entry quantcodec.mjs (``src/*.mjs``, which the
    entry imports): from the package data, else from clients/js in a source checkout."""
    web = resources.files("quantcodec").joinpath("web", "src")
    if web.is_dir():
        names = [f.name for f in web.iterdir() if f.name.endswith(".mjs")]
    elif (_REPO_CLIENT / "src").is_dir():
        names = [f.name for f in (_REPO_CLIENT / "src").iterdir() if f.name.endswith(".mjs")]
    else:
        names = []
    return sorted("src/" + n for n in names)


def _page(name):
    """A file of the page: package data; the JavaScript client (quantcodec.mjs and its src/
    modules) is put there when the package is built (setup.py), and read from clients/js in a
    source checkout built in place."""
    res = resources.files("quantcodec").joinpath("web", *name.split("/"))
    if res.is_file():
        return res.read_bytes()
    repo = _REPO_CLIENT.joinpath(*name.split("/"))
    if (name == "quantcodec.mjs" or name in _client_parts()) and repo.is_file():
        return repo.read_bytes()
    raise ServeError(f"the live view's {name} is missing from this installation (quantcodec/web/)")


def _pages():
    """PAGES and the client's modules: path -> (package data file, content type)."""
    pages = dict(PAGES)
    for name in _client_parts():
        pages["/" + name] = (name, "text/javascript; charset=utf-8")
    return pages


class _Client:
    """One connected page (a client of the StreamServer, hashed by identity): its WebSocket, its
    outgoing queue (lists of a tick's messages, written by its own task), its replies on their
    way (delayed by the simulated link), and a shadow StreamClient fed the datagrams it is sent,
    which holds the view the page decodes (for the page's errors)."""

    def __init__(self, ws, schema):
        import quantcodec
        self.ws = ws
        self.queue = asyncio.Queue(maxsize=QUEUE_TICKS)
        self.writer = None
        self.shadow = quantcodec.StreamClient(schema)
        self.pending_replies = []     # (due time, datagram): the page's replies, delayed by the link
        self.refused_replies = 0
        self.invalid = 0              # page messages ignored: not JSON, unknown, a field out of range
        self.dropped_ticks = 0        # ticks not sent to this page: its queue was full
        self.pos_err = self.rot_err = None    # the errors of the page's newest view (None: no view yet)
        self.shown = 0                # entities the page's newest view holds


class LiveServer:
    """The live view's server. ``start()`` runs it in a background thread (for tests and
    embedding; ``port`` is the bound port afterwards); ``run()`` blocks in the calling thread.

    ``n_entities`` bodies at ``hz`` ticks a second from ``seed``; the world starts over every
    ``seconds`` (a fresh scene each time; the streams go on). ``loss`` drops that share of the
    datagrams and ``ack_delay_ms`` delays the page's acks, as the demo's link does, so that the
    delta stream shows what it does over a real network. ``keep`` snapshots are kept by sequence
    number for :meth:`check_reports`.
    """

    def __init__(self, host="127.0.0.1", port=8765, *, allow_remote=False, n_entities=300, hz=60,
                 seconds=30.0, seed=0, loss=0.0, ack_delay_ms=100.0, history=64, max_datagram=1200,
                 keep=256):
        check_host(host, allow_remote)
        if not (isinstance(port, int) and 0 <= port <= 65535):
            raise ServeError(f"port must be in 0..65535, got {port!r}")
        if not (isinstance(n_entities, int) and n_entities >= 1):
            raise ServeError(f"n_entities must be a positive integer, got {n_entities!r}")
        if not (isinstance(hz, int) and 1 <= hz <= MAX_HZ):
            raise ServeError(f"hz must be in 1..{MAX_HZ}, got {hz!r}")
        if not 0.0 <= loss < 1.0:
            raise ServeError(f"loss must be in [0, 1), got {loss!r}")
        from .demo import scene_schema
        self.host, self.port = host, port
        self.allow_remote = allow_remote
        self.n_entities, self.hz, self.seconds, self.seed = n_entities, hz, float(seconds), seed
        self.loss, self.ack_delay = float(loss), float(ack_delay_ms) / 1000.0
        self.history, self.max_datagram, self.keep = history, max_datagram, keep
        from ..session import StreamServer
        self.schema = scene_schema()
        self.stream = StreamServer(self.schema, history=history, max_datagram=max_datagram)
        self.clients = set()
        self.snapshots = {}             # seq -> server snapshot (the last `keep`)
        self.floats = {}                # seq -> (ids sorted, positions, orientations): the world's floats (the last `keep`)
        self.reports = []               # what pages reported decoding: {"seq", "entities", "_match"}
        self.max_report_line = max(1 << 16, 256 * n_entities)
        self.ticks = 0
        self._rng = random.Random(seed)
        self._pages = {path: (_page(name), ctype) for path, (name, ctype) in _pages().items()}
        self._loop = None
        self._thread = None
        self._stop = None
        self._ready = threading.Event()
        self._error = None

    # -- the world ---------------------------------------------------------------------------

    def _world(self):
        from .demo import N_DRIVEN
        from .scene import iter_ticks
        run = 0
        while True:
            yield from iter_ticks(self.n_entities, self.seconds, self.hz, self.seed + run,
                                  n_kinematic=min(N_DRIVEN, self.n_entities))
            run += 1

    def _keep_floats(self, seq, tick):
        order = np.argsort(tick.ids, kind="stable")
        self.floats[seq] = (np.asarray(tick.ids)[order], tick.positions[order].astype(np.float64),
                            tick.orientations[order])
        self.floats.pop((seq - self.keep) & 0xFFFF, None)

    def view_errors(self, view):
        """The worst position and rotation errors of a decoded ``view`` (a Snapshot of seq ``s``)
        against the world's floats of tick ``s``, over the entities the view holds, and how many
        it holds: (pos_err, rot_err, shown), or None when tick ``s`` is no longer kept."""
        from .report import quat_angle_deg
        world = self.floats.get(view.seq)
        if world is None:
            return None
        ids, positions, orientations = world
        vids = np.asarray(view.ids)
        if len(vids) == 0 or len(ids) == 0:
            return 0.0, 0.0, 0
        at = np.minimum(np.searchsorted(ids, vids), len(ids) - 1)
        mask = ids[at] == vids                       # (an entity the world no longer has: not measured)
        if not mask.any():
            return 0.0, 0.0, 0
        cols = view.columns
        pos_err = float(np.abs(cols["position"][mask] - positions[at[mask]]).max())
        rot_err = float(quat_angle_deg(orientations[at[mask]], cols["rotation"][mask]).max())
        return pos_err, rot_err, int(mask.sum())

    # -- serving -----------------------------------------------------------------------------

    async def _process_request(self, connection, request):
        """Plain HTTP for the page and its modules; the WebSocket upgrade on /ws."""
        _, Headers, Response, _ = require_websockets()
        path, _, query = request.path.partition("?")
        if path == WS_PATH:
            return None
        if path == WAIT_PATH:
            # a page in report mode holds this request open until the pages have reported n
            # snapshots (at most 30 s): a headless browser's virtual time stands still meanwhile,
            # so its --screenshot shows the bodies drawn (tests/test_liveview.py)
            try:
                n = min(1000, max(0, int(query.partition("n=")[2] or 0)))
            except ValueError:
                n = 0
            deadline = time.monotonic() + 30.0
            while len(self.reports) < n and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            body = json.dumps({"reports": len(self.reports)}).encode()
            return Response(HTTPStatus.OK.value, "OK",
                            Headers([("Content-Type", "application/json"), ("Content-Length", str(len(body))),
                                     ("Cache-Control", "no-store")]), body)
        page = self._pages.get(path)
        if page is None:
            body = b"not found\n"
            return Response(HTTPStatus.NOT_FOUND.value, "Not Found",
                            Headers([("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]), body)
        body, ctype = page
        return Response(HTTPStatus.OK.value, "OK",
                        Headers([("Content-Type", ctype), ("Content-Length", str(len(body))),
                                 ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")]), body)

    async def _handler(self, ws):
        _, _, _, ConnectionClosed = require_websockets()
        client = _Client(ws, self.schema)
        setup = {"type": "setup", "schema": self.schema.to_json(indent=None), "hz": self.hz,
                 "entities": self.n_entities, "raw_floats": RAW_FLOATS, "loss": self.loss,
                 "ack_delay_ms": self.ack_delay * 1000.0, "max_datagram": self.max_datagram,
                 "history": self.history, "world_half_width": 64.0}
        try:
            await ws.send(json.dumps(setup))
            client.writer = asyncio.ensure_future(self._writer(client))
            self.stream.connect(client)                      # its stream: the hello goes with the next tick
            self.clients.add(client)
            async for message in ws:
                if isinstance(message, bytes):
                    # a reply of the page's StreamClient (an ack, a hello request), over the link
                    if len(client.pending_replies) < 1024:
                        client.pending_replies.append((time.monotonic() + self.ack_delay, message))
                    continue
                if not self._on_text(client, message):
                    client.invalid += 1
        except ConnectionClosed:
            pass
        finally:
            self.clients.discard(client)
            if client.writer is not None:
                client.writer.cancel()
            if client in self.stream.clients:
                self.stream.disconnect(client)

    async def _writer(self, client):
        """Write a page's queue to its WebSocket, a tick's messages at a time (its own task: a
        page that reads slowly holds up only itself)."""
        _, _, _, ConnectionClosed = require_websockets()
        try:
            while True:
                for m in await client.queue.get():
                    await client.ws.send(m)
        except ConnectionClosed:
            pass

    def _on_text(self, client, message):
        """A page's text message, checked field by field: True if it was valid (and done)."""
        try:
            msg = json.loads(message)
        except (ValueError, RecursionError):
            return False
        if not isinstance(msg, dict):
            return False
        kind = msg.get("type")
        if kind == "budget":
            # the page's budget control (docs/views.md): bytes a tick, or None for none
            b = msg.get("bytes", 0)
            if b is not None:
                if isinstance(b, bool) or not isinstance(b, (int, float)):
                    return False
                if isinstance(b, float) and not (math.isfinite(b) and b.is_integer()):
                    return False
                if not 1 <= b <= MAX_BUDGET:
                    return False
                b = int(b)
            try:
                self.stream.set_budget(client, b)
            except (TypeError, ValueError):
                return False                             # (below the hello: refused, unchanged)
            return True
        if kind == "report":
            line = msg.get("line")
            if not isinstance(line, str) or len(line) > self.max_report_line:
                return False
            try:
                rep = json.loads(line)
            except (ValueError, RecursionError):
                return False
            if not isinstance(rep, dict):
                return False
            seq, ids, codes = rep.get("seq"), rep.get("ids"), rep.get("codes")
            if isinstance(seq, bool) or not isinstance(seq, int) or not 0 <= seq <= 0xFFFF:
                return False
            if not isinstance(ids, list) or not isinstance(codes, list):
                return False
            if len(self.reports) < MAX_REPORTS:
                # compared at once (the snapshot is held now), kept as a summary
                self.reports.append({"seq": seq, "entities": len(ids), "_match": self._matches(rep)})
            return True
        return False

    async def _ticker(self):
        world = self._world()
        period = 1.0 / self.hz
        next_at = time.monotonic()
        seq = 0
        while True:
            tick = next(world)
            snap = self.schema.snapshot(tick.ids, {"position": tick.positions, "rotation": tick.orientations,
                                                   "velocity": tick.velocities})
            self.snapshots[seq] = snap
            self.snapshots.pop((seq - self.keep) & 0xFFFF, None)
            self._keep_floats(seq, tick)
            now = time.monotonic()
            for client in list(self.clients):
                due = [d for t, d in client.pending_replies if t <= now]
                client.pending_replies = [(t, d) for t, d in client.pending_replies if t > now]
                for d in due:
                    try:
                        self.stream.receive(client, d)
                    except DecodeError:
                        client.refused_replies += 1          # junk, stale or of an older stream
            sent = self.stream.send(seq, snap)               # every page's datagrams of this tick
            for client in list(self.clients):
                out = sent.get(client)
                if out is None:
                    continue
                if client.queue.full():
                    client.dropped_ticks += 1                # (the page reads too slowly: not sent)
                    continue
                delivered = [d for d in out if not (self.loss and self._rng.random() < self.loss)]
                view = None
                for d in delivered:                          # the page's view, decoded beside it
                    try:
                        v = client.shadow.receive(d)
                    except DecodeError:
                        continue
                    if v is not None:
                        view = v
                if view is not None:
                    errs = self.view_errors(view)
                    if errs is not None:
                        client.pos_err, client.rot_err, client.shown = errs
                link = self.stream.link(client)              # what the page's acks told the server
                msg = json.dumps({"type": "tick", "seq": seq, "tick": tick.index,
                                  "entities": int(len(tick.ids)), "delta_bytes": sum(len(d) for d in out),
                                  "baseline": self.stream.encoder(client).last_baseline,
                                  "pos_err": client.pos_err, "rot_err": client.rot_err, "shown": client.shown,
                                  "dropped_ticks": client.dropped_ticks, "invalid": client.invalid,
                                  "link": {"srtt": link.srtt, "delivered": link.delivered,
                                           "ack_age": link.ack_age}})
                client.queue.put_nowait([msg, *delivered])
            self.ticks += 1
            seq = (seq + 1) & 0xFFFF
            next_at += period
            delay = next_at - time.monotonic()
            if delay < -1.0:                      # far behind (a slow machine): do not race to catch up
                next_at = time.monotonic()
                delay = 0.0
            await asyncio.sleep(max(0.0, delay))

    async def _main(self):
        ws_serve, _, _, _ = require_websockets()
        self._stop = asyncio.Event()
        async with ws_serve(self._handler, self.host, self.port, process_request=self._process_request,
                            max_size=1 << 20, compression=None, open_timeout=60) as server:
            self.port = server.sockets[0].getsockname()[1]
            ticker = asyncio.ensure_future(self._ticker())
            self._ready.set()
            try:
                await self._stop.wait()
            finally:
                ticker.cancel()
                try:
                    await ticker
                except asyncio.CancelledError:
                    pass

    def run(self):
        """Serve until interrupted (Ctrl-C) or :meth:`stop`."""
        require_websockets()
        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(self._main())
        except OSError as e:
            raise ServeError(f"cannot serve on {self.host}:{self.port}: {e.strerror or e}") from None
        finally:
            self._loop.close()

    def start(self, timeout=30.0):
        """Serve in a background thread; returns once the port is bound (``self.port``)."""
        require_websockets()

        def target():
            try:
                self.run()
            except BaseException as e:         # (reported to the starting thread)
                self._error = e
                self._ready.set()

        self._thread = threading.Thread(target=target, name="quantcodec-liveview", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise ServeError(f"the live view did not start within {timeout} s")
        if isinstance(self._error, ServeError):
            raise ServeError(str(self._error)) from None       # (its own words: port taken, ...)
        if self._error is not None:
            raise ServeError(f"the live view could not start: {self._error}") from self._error
        return self

    def stop(self, timeout=10.0):
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def url(self):
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    def _matches(self, rep):
        """Whether a page's report (a runner line) equals the snapshot sent under its number:
        True, False, or None when that number is no longer held."""
        from ..conformance import signed_slots
        snap = self.snapshots.get(rep.get("seq"))
        if snap is None:
            return None
        m = snap.matrix
        cols = [(m[:, j].view(np.int64) if s else m[:, j]).tolist() for j, s in enumerate(signed_slots(self.schema))]
        rows = [list(r) for r in zip(*cols)]
        return rep.get("ids") == snap.ids.tolist() and rep.get("codes") == rows

    def check_reports(self):
        """What the pages reported decoding against the snapshots sent under those numbers
        (each compared when it arrived): (matched, mismatched seqs, seqs no longer held)."""
        matched = sum(1 for r in self.reports if r["_match"] is True)
        bad = [r.get("seq") for r in self.reports if r["_match"] is False]
        unknown = [r.get("seq") for r in self.reports if r["_match"] is None]
        return matched, bad, unknown


def _wait(thread):
    """Wait for ``thread`` to end or for Ctrl-C: True on Ctrl-C. On the main thread, SIGINT only
    appends to a list that the wait polls between joins of half a second: a KeyboardInterrupt
    raised inside Thread.join can, on Python 3.11, release the still running thread's lock and
    leave the join's state wrong (bpo-45274's fix checks only that the lock is held, and a live
    thread always holds it). (Not an Event: its set() from a handler that interrupts its own
    wait() would take the lock that wait() holds.)"""
    if threading.current_thread() is not threading.main_thread():
        try:
            while thread.is_alive():
                thread.join(0.5)
        except KeyboardInterrupt:
            return True
        return False
    import signal
    hit = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: hit.append(signum))
    try:
        while thread.is_alive() and not hit:
            thread.join(0.5)
    finally:
        signal.signal(signal.SIGINT, previous)
    return bool(hit)


def serve(host="127.0.0.1", port=8765, *, allow_remote=False, open_browser=False, out=print, **options):
    """Run the live view until Ctrl-C (what ``quantcodec demo --serve`` calls).

    The server runs in a background thread and binds its port before anything is printed, so a
    port in use is a ServeError and no URL; Ctrl-C stops it cleanly (the event loop is closed
    after the server, never under it) and prints one line."""
    server = LiveServer(host, port, allow_remote=allow_remote, **options)
    server.start()                  # ServeError (port taken, ...) before the URL is printed
    out(f"quantcodec live view on {server.url} (Ctrl-C to stop)")
    if open_browser:
        import webbrowser
        threading.Timer(0.5, webbrowser.open, (server.url,)).start()
    if _wait(server._thread):
        server.stop()
        out("quantcodec live view: stopped")
        return
    if server._error is not None:   # (the thread ended by itself: an error while serving)
        raise ServeError(f"the live view stopped: {server._error}")


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(prog="python -m quantcodec.tools.liveview",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--allow-remote", action="store_true", help="serve on a non-loopback host on purpose")
    ap.add_argument("--entities", type=int, default=300)
    ap.add_argument("--hz", type=int, default=60)
    ap.add_argument("--loss", type=float, default=0.0)
    ap.add_argument("--ack-delay-ms", type=float, default=100.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--open", action="store_true", help="open the page in the default browser")
    args = ap.parse_args(argv)
    try:
        serve(args.host, args.port, allow_remote=args.allow_remote, open_browser=args.open,
              n_entities=args.entities, hz=args.hz, loss=args.loss, ack_delay_ms=args.ack_delay_ms,
              seed=args.seed)
    except ServeError as e:
        raise SystemExit(f"quantcodec: {e}") from None


if __name__ == "__main__":
    main()
