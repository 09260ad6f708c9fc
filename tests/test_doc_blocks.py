"""Every Python block of the README and of docs/ runs as a reader runs it: the blocks of a page
in order, in one namespace (a later block may use an earlier one's names, never another
page's), in an empty directory. A page whose blocks need an optional extra (Zarr, Dask,
protobuf's compiler) is skipped naming it; CI's extras step installs them and runs this file
again, so every block runs on every commit."""

import contextlib
import io
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", re.S | re.M)
# the optional extras' top-level modules, and the extra that brings each (pyproject.toml)
EXTRAS = {"dask": "zarr", "zarr": "zarr", "numcodecs": "zarr", "grpc_tools": "protobuf"}


def blocks(page):
    """The page's Python blocks as ``(first line number, source)``."""
    text = page.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in BLOCK.finditer(text)]


def test_the_pages_have_blocks():
    # the pattern finds what the pages hold (a change of fence style would silently run nothing)
    counts = {p.name: len(blocks(p)) for p in PAGES}
    assert counts["README.md"] >= 2 and counts["codecs.md"] >= 10 and counts["views.md"] >= 3
    assert sum(counts.values()) >= 60


@pytest.mark.parametrize("page", [p for p in PAGES if blocks(p)], ids=lambda p: p.name)
def test_every_block_of_the_page_runs(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__doc_block__"}
    for line, source in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, where, "exec"), namespace)
        except ModuleNotFoundError as e:
            top = (e.name or "").split(".")[0]
            if top in EXTRAS:
                pytest.skip(f"{where} needs {top} (pip install 'quantcodec[{EXTRAS[top]}]')")
            raise AssertionError(f"the block at {where} failed: {e!r}") from e
        except Exception as e:
            raise AssertionError(f"the block at {where} failed: {e!r}") from e
