"""The type-checking regression check: `python tests/typing/check.py` (from any directory).

- ``ok_*.py``: typed user programs written as the docs show; ``mypy --strict`` must find nothing.
- ``bad_*.py``: misuse; each line marked ``# E: <code>[, <code>...]`` must get exactly those mypy
  error codes, and no other line any error (an unmarked error, or a marked line mypy lets pass,
  fails the check: the annotations went loose, or the file is wrong).

mypy reads the quantcodec that Python imports here (the installed package, or PYTHONPATH):
it runs in this directory, not the checkout's root, and ``--follow-imports=silent`` keeps
quantcodec's own bodies out of the report, as for a user whose quantcodec is installed.
Exit status 0 when both hold, 1 otherwise. Needs mypy (not in the test extra: .ci/run installs it).
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Set, Tuple

HERE = Path(__file__).resolve().parent
_ERROR = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[\w-]+)\]$")
_MARK = re.compile(r"#\s*E:\s*(?P<codes>[\w-]+(?:\s*,\s*[\w-]+)*)\s*$")


def run_mypy(files: List[Path]) -> Tuple[int, str]:
    with tempfile.TemporaryDirectory() as cache:
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-error-summary",
             "--hide-error-context", "--no-pretty", "--cache-dir", cache, *[f.name for f in files]],
            cwd=HERE, capture_output=True, text=True)
    return proc.returncode, proc.stdout + proc.stderr


def expected(path: Path) -> Dict[int, Set[str]]:
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = _MARK.search(line)
        if m:
            out[i] = {c.strip() for c in m.group("codes").split(",")}
    return out


def check_ok(files: List[Path]) -> List[str]:
    rc, text = run_mypy(files)
    return [] if rc == 0 else [f"mypy --strict must pass on {', '.join(f.name for f in files)}:\n{text}"]


def check_bad(files: List[Path]) -> List[str]:
    rc, text = run_mypy(files)
    got: Dict[Tuple[str, int], Set[str]] = {}
    for line in text.splitlines():
        m = _ERROR.match(line.strip())
        if m:
            got.setdefault((Path(m.group("file")).name, int(m.group("line"))), set()).add(m.group("code"))
        elif ": error:" in line:
            return [f"unparsed mypy error: {line}"]
    problems = []
    for f in files:
        want = expected(f)
        if not want:
            problems.append(f"{f.name}: no line marked '# E: <code>'")
        mine = {line: codes for (name, line), codes in got.items() if name == f.name}
        for line in sorted(set(want) | set(mine)):
            w, g = want.get(line, set()), mine.get(line, set())
            if w != g:
                src = f.read_text().splitlines()[line - 1].strip()
                problems.append(f"{f.name}:{line}: expected {sorted(w) or 'no error'}, mypy gave "
                                f"{sorted(g) or 'no error'}: {src}")
    if rc not in (0, 1) or (rc == 0 and files):
        problems.append(f"mypy exited {rc}:\n{text}")
    return problems


def main() -> int:
    ok = sorted(HERE.glob("ok_*.py"))
    bad = sorted(HERE.glob("bad_*.py"))
    problems = check_ok(ok) + check_bad(bad)
    for p in problems:
        print(p)
    if not problems:
        print(f"typing check: {len(ok)} ok programs pass mypy --strict; "
              f"{sum(len(expected(f)) for f in bad)} misuses in {len(bad)} files flagged as expected")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
