"""The live view (quantcodec.tools.liveview, ``quantcodec demo --serve``): the server streams the demo's
world over a WebSocket to a page that decodes it with the JavaScript client.

The end-to-end test starts the server and headless Chromium on the page, which reports back the
runner line of each of the first snapshots it decoded; each must equal the snapshot the server
sent under that number, code for code. Chromium's screenshot (saved to $QC_TEST_ARTIFACTS, or the
test's temporary directory) must show bodies drawn on the canvas, not a blank one.
"""

import os
import shutil
import struct
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import zlib
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REPORTS = 20


def _server_module():
    pytest.importorskip("websockets", reason="the live view needs the websockets package: "
                                             "pip install 'quantcodec[serve]'")
    from quantcodec.tools import liveview
    try:
        liveview.require_websockets()
    except liveview.ServeError as e:
        pytest.skip(str(e))
    return liveview


@pytest.fixture
def server():
    liveview = _server_module()
    srv = liveview.LiveServer("127.0.0.1", 0, n_entities=300, hz=60).start()
    try:
        yield srv
    finally:
        srv.stop()


def read_png(data):
    """(width, height, channels, rows): a non-interlaced 8-bit RGB or RGBA PNG, unfiltered."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, head = 8, [], None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat.append(chunk)
        elif kind == b"IEND":
            break
    width, height, depth, ctype, _, _, interlace = head
    assert depth == 8 and ctype in (2, 6) and interlace == 0, head
    ch = 3 if ctype == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * ch
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b = prev[i]
            c = prev[i - ch] if i >= ch else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, ch, rows


def test_refuses_a_non_local_host_unless_asked(monkeypatch):
    # no websockets needed: the host is checked first, and building a server serves nothing
    from quantcodec.tools import liveview
    monkeypatch.setitem(sys.modules, "websockets", None)
    for host in ("0.0.0.0", "192.168.1.20", "example.com", "::"):
        with pytest.raises(liveview.ServeError, match="not a loopback address"):
            liveview.LiveServer(host, 0)
    liveview.LiveServer("0.0.0.0", 0, allow_remote=True)          # (built, not started)
    for host in ("127.0.0.1", "localhost", "::1", "127.5.6.7"):
        assert liveview.is_local_host(host)


def test_serves_the_page_and_modules_only(server):
    def get(path):
        with urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read()

    status, ctype, body = get("/")
    assert status == 200 and ctype.startswith("text/html") and b"view.mjs" in body
    status, ctype, body = get("/view.mjs")
    assert ctype.startswith("text/javascript") and b"./quantcodec.mjs" in body
    status, ctype, body = get("/quantcodec.mjs")
    assert ctype.startswith("text/javascript") and b"SnapshotDecoder" in body and b"./src/stream.mjs" in body
    status, ctype, body = get("/src/stream.mjs")
    assert ctype.startswith("text/javascript") and b"export class SnapshotDecoder" in body
    for path in ("/../quantcodec/tools/liveview.py", "/web/index.html", "/tools/liveview.py", "/liveview.py", "/etc/passwd"):
        with pytest.raises(urllib.error.HTTPError) as e:
            get(path)
        e.value.close()                              # (its response holds the socket)
        assert e.value.code == 404


def test_the_served_client_is_clients_js():
    # the page decodes with clients/js/quantcodec.mjs: the build puts it into the package
    # (setup.py); a source checkout serves it from clients/js
    from quantcodec.tools import liveview
    repo = ROOT / "clients" / "js" / "quantcodec.mjs"
    if not repo.is_file():
        pytest.skip("no clients/js beside this installation")
    assert liveview._page("quantcodec.mjs") == repo.read_bytes()
    parts = sorted(p.name for p in (repo.parent / "src").glob("*.mjs"))
    assert parts and liveview._client_parts() == ["src/" + n for n in parts]
    for n in parts:
        assert liveview._page("src/" + n) == (repo.parent / "src" / n).read_bytes()


def test_page_decodes_what_the_server_sent(server, tmp_path):
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("no chromium binary on PATH (Debian: apt-get install chromium)")
    out_dir = Path(os.environ.get("QC_TEST_ARTIFACTS") or tmp_path)
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / "liveview.png"
    if shot.exists():
        shot.unlink()
    with tempfile.TemporaryDirectory() as profile:
        cmd = [chromium, "--headless=new", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
               "--no-default-browser-check", f"--user-data-dir={profile}", "--window-size=1200,760",
               "--enable-logging=stderr", "--v=0",        # (the page's console, its errors too)
               f"--screenshot={shot}", f"{server.url}?report={REPORTS}"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            cmd.insert(1, "--no-sandbox")           # (Chromium's sandbox refuses to run as root)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # no error thrown in the page: one in the setup handler (a write to the client's read-only
    # `due`) went unseen, the page decoding all the same but never sending its first reply
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line]
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console

    # the page's reports: the runner line of each of the first snapshots it decoded
    assert len(server.reports) >= REPORTS, (len(server.reports), proc.stderr[-3000:])
    matched, bad, unknown = server.check_reports()
    assert not bad, f"the page decoded other codes than the server sent under {bad}"
    assert not unknown, f"reports of snapshots the server no longer held: {unknown}"
    assert matched >= REPORTS
    assert len({r["seq"] for r in server.reports}) >= REPORTS
    assert all(r["entities"] == 300 for r in server.reports)

    # the screenshot: bodies drawn on the canvas (top left, 640 x 640 CSS pixels), not a blank one
    width, height, ch, rows = read_png(shot.read_bytes())
    assert width >= 660 and height >= 660, (width, height)
    drawn = 0
    for y in range(20, 640):
        row = rows[y]
        for x in range(20, 640):
            r, g, b = row[x * ch], row[x * ch + 1], row[x * ch + 2]
            if max(r, g, b) > 90:                  # the canvas and its grid are darker than any body
                drawn += 1
    assert drawn > 5000, f"{drawn} body pixels in the canvas of {shot}: a blank canvas?"


def test_the_budget_control_caps_a_page_s_bytes(server):
    """A WebSocket client of the live view: a StreamClient that replies, then sets a budget of
    300 bytes a tick; from then on every tick's datagrams total at most 300 bytes, and its views
    are still exact (the server's own check of the page's reports is left to the browser test)."""
    import asyncio
    import json

    import quantcodec as qc
    from websockets.asyncio.client import connect

    async def run():
        async with connect(server.url.replace("http", "ws") + "ws") as ws:
            setup = json.loads(await ws.recv())
            client = qc.StreamClient(qc.Schema.from_json(setup["schema"]))
            await ws.send(client.reply())                        # the hello request
            per_tick, views, budget_sent, links = [], 0, False, []
            for _ in range(3000):
                m = await asyncio.wait_for(ws.recv(), 10)
                if isinstance(m, str):
                    msg = json.loads(m)
                    if msg.get("type") == "tick":
                        per_tick.append([budget_sent, 0])
                        links.append(msg["link"])             # the server's StreamServer.link
                    continue
                if per_tick:
                    per_tick[-1][1] += len(m)
                views += await _page_takes(client, ws, m)
                if views >= 20 and not budget_sent:
                    await ws.send(json.dumps({"type": "budget", "bytes": 300}))
                    budget_sent = True
                if budget_sent and views >= 80:
                    break
            return per_tick, views, links

    per_tick, views, links = asyncio.run(run())
    # each tick tells the page what its acks told the server: a round trip, the share delivered
    assert links[0] == {"srtt": None, "delivered": None, "ack_age": None}
    last = links[-1]
    assert last["srtt"] >= 1 and last["ack_age"] >= 0 and 0.0 < last["delivered"] <= 1.0
    capped = [n for sent, n in per_tick[len(per_tick) // 2:] if sent]
    assert views >= 80 and capped and max(capped) <= 300
    assert max(n for sent, n in per_tick if not sent) > 300          # the whole world before


# --------------------------------------------------------------------------------------------
# a page played by a WebSocket client (no browser): its StreamClient replies, so acks flow



async def _page_takes(client, ws, datagram):
    """A datagram as the page takes it: decoded (junk refused, as the page does), its reply
    sent back; 1 when it completed a view."""
    try:
        got = client.receive(datagram) is not None
    except qc.DecodeError:
        got = False
    r = client.reply()
    if r is not None:
        await ws.send(r)
    return int(got)

async def play_page(url, seconds, budget=None, warmup=0.0):
    """Be a page for `seconds`: decode the datagrams with a StreamClient, send its replies back,
    set `budget` once connected; returns the tick messages received after `warmup` seconds (each
    with "_at", its time since the start) and the number of views decoded."""
    import asyncio
    import json
    import time

    import quantcodec as qc
    from websockets.asyncio.client import connect

    async with connect(url.replace("http", "ws") + "ws") as ws:
        setup = json.loads(await ws.recv())
        client = qc.StreamClient(qc.Schema.from_json(setup["schema"]))
        await ws.send(client.reply())                            # the hello request
        if budget is not None:
            await ws.send(json.dumps({"type": "budget", "bytes": budget}))
        ticks, views, t0 = [], 0, time.monotonic()
        while time.monotonic() - t0 < seconds:
            try:
                m = await asyncio.wait_for(ws.recv(), 0.25)
            except asyncio.TimeoutError:
                continue
            if isinstance(m, str):
                msg = json.loads(m)
                if msg.get("type") == "tick" and time.monotonic() - t0 >= warmup:
                    msg["_at"] = time.monotonic() - t0
                    ticks.append(msg)
                continue
            views += await _page_takes(client, ws, m)
        return ticks, views


def test_errors_are_each_page_s_own_and_grow_under_a_budget(server):
    """The page's worst errors are those of the view that page decodes (the server decodes the
    same datagrams beside it) against the world's floats of that view's tick: a page with a
    budget of 150 bytes a tick holds stale entities, far off; a page with none is within the
    quantization error. (Before: both showed the schema's roundtrip error, 0.98 mm.)"""
    import asyncio

    async def both():
        return await asyncio.gather(play_page(server.url, 3.0, None, warmup=1.5),
                                    play_page(server.url, 3.0, 150, warmup=1.5))

    (free, free_views), (tight, tight_views) = asyncio.run(both())
    assert free and tight and free_views > 30 and tight_views > 30
    q_err = 0.002                                                  # (the scene's step is 1.95 mm)
    free_pos = max(t["pos_err"] for t in free if t["pos_err"] is not None)
    tight_pos = max(t["pos_err"] for t in tight if t["pos_err"] is not None)
    free_rot = max(t["rot_err"] for t in free if t["rot_err"] is not None)
    tight_rot = max(t["rot_err"] for t in tight if t["rot_err"] is not None)
    print(f"worst position error: no budget {free_pos * 1000:.2f} mm, 150 bytes {tight_pos * 1000:.1f} mm; "
          f"rotation {free_rot:.3f} / {tight_rot:.2f} deg; shown {tight[-1].get('shown')} of {tight[-1]['entities']}")
    assert free_pos <= q_err, free_pos                             # exact views: the quantization error
    assert tight_pos > 10 * q_err, tight_pos                       # stale entities: far more
    assert tight_rot > 10 * free_rot
    # how many of the world's entities the view holds: all of them without a budget
    assert all(t["shown"] == t["entities"] for t in free[-10:])
    assert 0 < tight[0]["shown"] <= tight[0]["entities"]


def _stalled_reader(port):
    """A WebSocket client that upgrades and then never reads: a raw socket with a small buffer."""
    import base64
    import socket
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)
    s.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def test_a_page_that_stops_reading_holds_up_no_other(server):
    """Each page has its own bounded queue and writer: a client that never reads does not stop
    the ticks of a well-behaved page (before: the tick loop awaited each page's send in turn,
    and every page froze for about 30 s)."""
    import asyncio
    import socket
    import time

    stalled = _stalled_reader(server.port)
    try:
        deadline = time.monotonic() + 10
        while not server.clients and time.monotonic() < deadline:
            time.sleep(0.01)
        (peer,) = list(server.clients)

        def shrink():             # its server side buffers small, so that they fill at once
            peer.ws.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            peer.ws.transport.set_write_buffer_limits(high=4096)
        server._loop.call_soon_threadsafe(shrink)
        ticks, _ = asyncio.run(play_page(server.url, 2.5, warmup=0.5))
    finally:
        stalled.close()
    rate = len(ticks) / 2.0
    print(f"ticks received beside a stalled reader: {len(ticks)} in 2 s ({rate:.0f}/s at {server.hz} Hz)")
    assert rate >= 0.8 * server.hz, rate
    assert peer.dropped_ticks > 0                                  # the stalled one's ticks were dropped


BOGUS = [
    "not json", "[1, 2]", '{"type": "budget", "bytes": "300"}', '{"type": "budget", "bytes": -5}',
    '{"type": "budget", "bytes": 1000000000000000000000000000000}', '{"type": "budget", "bytes": NaN}',
    '{"type": "budget", "bytes": [1]}', '{"type": "budget", "bytes": 1e400}', '{"type": "report", "line": 5}',
    '{"type": "report", "line": "{\\"seq\\": [1], \\"ids\\": []}"}', b"\x00junk", b"", b"\x01" * ((1 << 20) - 64),
    '{"type": "report", "line": "' + "[" * 50000 + '"}', "[" * 50000, '{"type": "budget", "bytes": 1e3000}',
    '{"type": "report", "line": "{\\"seq\\": 70000, \\"ids\\": [], \\"codes\\": []}"}', '{"type": "nope"}',
]


def test_bogus_page_messages_are_ignored_without_a_traceback(server, capfd):
    """Every junk message a page may send leaves its connection open and the server ticking,
    with nothing on stderr (docs/index.md: errors are one line, never a traceback)."""
    import asyncio
    import json

    from websockets.asyncio.client import connect

    async def run():
        async with connect(server.url.replace("http", "ws") + "ws", max_size=None) as ws:
            assert json.loads(await ws.recv())["type"] == "setup"
            for m in BOGUS:
                await ws.send(m)
            ticks = 0
            while ticks < 20:                                     # still open, still ticking
                m = await asyncio.wait_for(ws.recv(), 10)
                if isinstance(m, str) and json.loads(m)["type"] == "tick":
                    ticks += 1
                    last = json.loads(m)
            return last

    last = asyncio.run(run())
    text_bogus = sum(isinstance(m, str) for m in BOGUS)
    assert last["invalid"] == text_bogus, last                   # each counted, none acted on
    assert server.reports == []
    out, err = capfd.readouterr()
    assert "Traceback" not in err and err.strip() == "", err[-3000:]


def _deep_size(obj, seen=None):
    """Bytes of an object and everything it holds (lists, dicts, their items)."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, (list, tuple)):
        size += sum(_deep_size(v, seen) for v in obj)
    return size


def test_reports_are_bounded_in_bytes():
    """Reports are kept as summaries (seq, entity count, match), at most MAX_REPORTS, and a line
    above the cap is refused: 10 reports of 0.9 MB and 10 of 60 kB leave the server holding a
    few kB (before: each parsed line was kept whole, some 40 MB here)."""
    import asyncio
    import json

    liveview = _server_module()                      # (skips without websockets)
    from websockets.asyncio.client import connect
    server = liveview.LiveServer("127.0.0.1", 0, n_entities=300, hz=60).start()
    big = json.dumps({"seq": 1, "ids": list(range(125000)), "codes": [[1]] * 10})
    assert 0.8e6 < len(big) < 1e6 and len(big) > getattr(server, "max_report_line", 0)
    small = json.dumps({"seq": 2, "ids": [0] * 20000, "codes": []})          # under the cap: kept, summarized

    async def run():
        async with connect(server.url.replace("http", "ws") + "ws", max_size=None) as ws:
            await ws.recv()
            for _ in range(10):
                await ws.send(json.dumps({"type": "report", "line": big}))
                await ws.send(json.dumps({"type": "report", "line": small}))
            while len(server.reports) < 10:
                try:                                     # (reading: an unread backlog would stall the close)
                    await asyncio.wait_for(ws.recv(), 0.05)
                except asyncio.TimeoutError:
                    pass

    asyncio.run(run())
    server.stop()
    held = _deep_size(server.reports)
    print(f"reports held after 10 of {len(big) / 1e6:.2f} MB and 10 of {len(small) / 1e3:.0f} kB: {held / 1e3:.1f} kB")
    assert len(server.reports) == 10
    assert all(r["seq"] == 2 and r["entities"] == 20000 and len(r) == 3 for r in server.reports)
    assert held < 10e3, held
    assert liveview.MAX_REPORTS == 10000


def _view_function(name):
    """The source of an exported top-level function of quantcodec/web/view.mjs (the page module
    itself needs a browser: its DOM code runs on import)."""
    # (from the package imported, not the checkout: the wheels' tests run outside the tree)
    src = resources.files("quantcodec").joinpath("web", "view.mjs").read_text(encoding="utf-8")
    start = src.index(f"export function {name}(")
    end = src.index("\n}\n", start) + 3
    return src[start:end]


def test_render_time_holds_during_a_stall_and_never_goes_back(tmp_path):
    """The page's render time (view.mjs nextRenderTick): a playout delay behind the newest view,
    advancing with the frames; while no view comes it stops at newest + the extrapolation bound
    and holds (docs/interpolation.md: extrapolate at most max_extrapolation, then hold); after
    a long stall it jumps forward to the delay behind, never back. (Before: it went back to
    newest - delay whenever it passed newest + 2, and the bodies slid and snapped back ~10 times
    a second during a stall.)"""
    import json
    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on PATH")
    script = tmp_path / "render.mjs"
    script.write_text(_view_function("nextRenderTick") + """
const hz = 60, dt = 1000 / 60, delay = 3, ext = 2, out = [];
let t = null, newest = 1000;
for (let f = 0; f < 120; f++) {                         // running: a view a frame
  t = nextRenderTick(t, newest, delay, dt, hz, ext); out.push([newest, t]); newest += 1;
}
newest -= 1;
for (let f = 0; f < 300; f++) {                         // a stall of 5 s: no view
  t = nextRenderTick(t, newest, delay, dt * (f % 7 === 0 ? 3 : 1), hz, ext); out.push([newest, t]);
}
newest += 300;                                          // views again, 300 ticks on
for (let f = 0; f < 60; f++) { t = nextRenderTick(t, newest, delay, dt, hz, ext); out.push([newest, t]); newest += 1; }
console.log(JSON.stringify(out));
""")
    proc = subprocess.run([node, str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    frames = json.loads(proc.stdout)
    delay, ext = 3, 2
    assert frames[0] == [1000, 1000 - delay]                               # starts a delay behind
    running = frames[1:120]
    assert all(abs((n - t) - delay) < 1e-9 for n, t in running)           # and keeps that distance
    stall = frames[120:420]
    newest = stall[0][0]
    ts = [t for _, t in stall]
    assert all(b >= a for a, b in zip(ts, ts[1:])), "the render time went back during a stall"
    assert max(ts) == newest + ext and ts[-1] == newest + ext             # held at the bound
    after = frames[420:]
    assert after[0][1] == after[0][0] - delay                             # jumped forward, once
    assert all(b[1] > a[1] for a, b in zip(after, after[1:]))
