"""examples/udp_stream.py: a bounded run on 127.0.0.1 through a lossy switch; the client's state
must match the server's quantized state at every decoded tick."""

import asyncio
import re
import importlib.util
import pathlib

import pytest

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples" / "udp_stream.py"


@pytest.fixture(scope="module")
def udp():
    spec = importlib.util.spec_from_file_location("udp_stream", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_loopback_only_and_public_names_only(udp):
    assert udp.HOST == "127.0.0.1"
    text = EXAMPLE.read_text()
    assert "quantcodec._" not in text and "from quantcodec." not in text


def test_clean_link_every_tick_matches(udp):
    res = asyncio.run(udp.run(ticks=60, hz=60, bodies=40, loss=0.0, dup=0.0, reorder=0.0, seed=1))
    assert res["mismatches"] == 0
    # the hello until a packet is acked: once, beside the first (full) packet; 60 packets
    assert res["hellos"] == 1 and res["pending"] == 1
    assert res["decoded"] == 60 and res["received"] == 61
    assert res["server_refused"] == {}
    assert res["latest"] == res["last_seq"]
    assert res["stale"] == 0 and res["refused"] == {}
    assert res["fragments"] == 0
    # what the acks told the server: every packet arrived, each acked a tick or more later
    link = res["per_client"][0]["link"]
    assert link.delivered == 1.0 and link.rtt >= 1 and link.quiet <= 2


def test_fragmented_lossy_link_is_exact_at_every_tick(udp):
    """Full snapshots of 300 bodies and the larger deltas go as fragments of at most 256 bytes
    through loss, duplicates and reordering: every completed state is the server's, code for code."""
    res = asyncio.run(udp.run(ticks=90, hz=60, bodies=300, loss=0.05, dup=0.1, reorder=0.3, seed=3,
                              max_datagram=256))
    assert res["mismatches"] == 0
    assert res["fragments"] > res["ticks"]                  # most packets went in pieces
    assert res["dropped"] > 0 and res["duplicated"] > 0 and res["delayed"] > 0
    assert res["decoded"] > 0.4 * res["ticks"]
    assert set(res["refused"]) <= {"baseline", "no-hello", "fragment"}


def test_lossy_link_states_match(udp):
    res = asyncio.run(udp.run(ticks=120, hz=60, bodies=60, loss=0.25, dup=0.1, reorder=0.3, seed=2))
    assert res["mismatches"] == 0
    assert res["dropped"] > 0 and res["duplicated"] > 0 and res["delayed"] > 0
    assert res["decoded"] > 0.5 * res["ticks"]
    # the client keeps up: most ticks it holds a recent state, and acks flow back
    assert res["acks"] > 0.4 * res["ticks"]
    assert res["latest"] is not None


def test_several_clients_over_a_lossy_link_are_each_exact(udp):
    res = asyncio.run(udp.run(ticks=90, hz=60, bodies=50, loss=0.2, dup=0.1, reorder=0.3, seed=4,
                              clients=4))
    assert res["mismatches"] == 0
    assert all(c["decoded"] > 0.5 * res["ticks"] and c["mismatches"] == 0 for c in res["per_client"])
    # replies are made by the session and taken by the server (late duplicates refused as stale)
    assert res["acks"] > 0.4 * res["ticks"] * 4
    assert set(res["server_refused"]) <= {"stale", "check"}
    # a fifth of the datagrams lost on the way down: the acks say so
    assert all(0.5 < c["link"].delivered < 1.0 for c in res["per_client"])


def test_main_prints_summary(udp, capsys):
    assert udp.main(["--ticks", "30", "--bodies", "20", "--hz", "120"]) == 0
    out = capsys.readouterr().out
    assert "127.0.0.1" in out and "always" in out
    assert re.search(r"the server's view of each link \(its acks\): round trip [0-9.]+, [0-9.]+, "
                     r"[0-9.]+ ticks; packets delivered \d+%, \d+%, \d+%", out)


@pytest.mark.parametrize("args, message", [
    (["--loss", "1.5"], "--loss is a share of datagrams, from 0 to 1; got 1.5"),
    (["--dup", "-0.1"], "--dup is a share of datagrams"),
    (["--reorder", "2"], "--reorder is a share of datagrams"),
    (["--ticks", "0"], "--ticks must be at least 1, got 0"),
    (["--hz", "-5"], "--hz must be at least 1"),
    (["--bodies", "0"], "--bodies must be at least 1"),
    (["--clients", "0"], "--clients must be at least 1"),
    (["--max-datagram", "40"], "--max-datagram must be in 64..65507 bytes, got 40"),
])
def test_main_refuses_arguments_out_of_range(udp, capsys, args, message):
    with pytest.raises(SystemExit) as e:
        udp.main(args)
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_main_says_when_nothing_was_decoded(udp, capsys):
    assert udp.main(["--ticks", "5", "--bodies", "3", "--hz", "240", "--loss", "1"]) == 1
    assert "nothing decoded to compare" in capsys.readouterr().out
