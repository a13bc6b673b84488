"""Start-up cost of ctxasm (issue 2, "Speed"): ``ctxasm --help`` and ``import ctxasm``.

Run from the repository root::

    python benchmarks/startup.py            # 10 runs each
    python benchmarks/startup.py --runs 20 --json

Measures, each in a fresh interpreter, the median wall time of

* ``ctxasm --help`` through the installed console script (next to this interpreter), the
  target (< 300 ms); where the script is missing or fails, that is reported and
  ``python -c "import ctxasm"`` is timed in its place;
* ``python -c "import ctxasm"`` and ``python -c "pass"`` (the interpreter's own floor);

and lists which heavy optional libraries end up in ``sys.modules`` after ``import ctxasm`` (the
target: none) and after the CLI has printed its help, plus the slowest imports from
``python -X importtime -c "import ctxasm"``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIKTOKEN_CACHE = ROOT.parent / "shared" / "tiktoken-cache"
HEAVY = ("numpy", "scipy", "datasketch", "tokenizers", "rich", "typer", "tiktoken", "click")
HELP_TARGET_MS = 300.0

_PROBE_IMPORT = f"""
import json, sys
import ctxasm
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""
_PROBE_HELP = f"""
import contextlib, io, json, sys
sys.argv = ["ctxasm", "--help"]
from ctxasm.cli.main import run
with contextlib.redirect_stdout(io.StringIO()):
    try:
        run()
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    if "TIKTOKEN_CACHE_DIR" not in env and TIKTOKEN_CACHE.is_dir():
        env["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)
    return env


def _time(command: Sequence[str], runs: int) -> tuple[float, list[float], int, str]:
    """Median wall ms of ``command`` over ``runs`` fresh processes (after one untimed run)."""
    first = subprocess.run(command, capture_output=True, text=True, env=_env(), check=False)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, env=_env(), check=False)
        times.append((time.perf_counter() - started) * 1000)
    tail = (first.stderr or first.stdout).strip().splitlines()[-1:] if first.returncode else []
    return statistics.median(times), times, first.returncode, "".join(tail)


def _probe(code: str) -> list[str] | str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=False
    )
    if done.returncode:
        return f"failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
    result: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _import_times(top: int) -> list[tuple[int, str]]:
    """The ``top`` largest cumulative import times (µs) of ``import ctxasm``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import ctxasm"],
        capture_output=True,
        text=True,
        env=_env(),
        check=False,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(cumulative), name.rstrip()))
    return sorted(rows, reverse=True)[:top]


def measure(runs: int) -> dict[str, Any]:
    python = sys.executable
    script = Path(python).with_name("ctxasm")
    result: dict[str, Any] = {"runs": runs, "python": python}
    if script.is_file():
        median, times, exit_code, error = _time([str(script), "--help"], runs)
        result["help"] = {
            "command": f"{script} --help",
            "median_ms": round(median, 1),
            "times_ms": [round(t, 1) for t in times],
            "exit_code": exit_code,
            "error": error,
        }
    else:
        result["help"] = {"command": f"{script} --help", "missing": True}
    for key, snippet in (("import", "import ctxasm"), ("interpreter", "pass")):
        median, times, exit_code, error = _time([python, "-c", snippet], runs)
        result[key] = {
            "command": f'python -c "{snippet}"',
            "median_ms": round(median, 1),
            "times_ms": [round(t, 1) for t in times],
            "exit_code": exit_code,
            "error": error,
        }
    result["heavy_after_import"] = _probe(_PROBE_IMPORT)
    result["heavy_after_help"] = _probe(_PROBE_HELP)
    result["slowest_imports_us"] = _import_times(12)
    return result


def report(result: dict[str, Any]) -> tuple[str, bool]:
    lines = [f"ctxasm start-up: median of {result['runs']} fresh processes"]
    ok = True
    help_ = result["help"]
    if help_.get("missing") or help_.get("exit_code"):
        why = "not installed" if help_.get("missing") else f"exit {help_['exit_code']}"
        lines.append(f"  {help_['command']}: FAILS ({why}) {help_.get('error', '')}")
        fallback = result["import"]["median_ms"]
        verdict = "PASS" if fallback < HELP_TARGET_MS else "MISS"
        lines.append(
            f"  fallback python -c 'import ctxasm': {fallback:.1f} ms "
            f"(target < {HELP_TARGET_MS:g} ms for --help) {verdict}, but --help itself: MISS"
        )
        ok = False
    else:
        verdict = "PASS" if help_["median_ms"] < HELP_TARGET_MS else "MISS"
        ok &= verdict == "PASS"
        lines.append(
            f"  ctxasm --help            {help_['median_ms']:8.1f} ms   "
            f"target < {HELP_TARGET_MS:g} ms  {verdict}"
        )
    lines.append(f"  python -c 'import ctxasm' {result['import']['median_ms']:7.1f} ms")
    lines.append(f"  python -c 'pass'          {result['interpreter']['median_ms']:7.1f} ms")
    heavy = result["heavy_after_import"]
    verdict = "PASS" if heavy == [] else "MISS"
    ok &= verdict == "PASS"
    lines.append(
        f"  heavy modules after 'import ctxasm': {heavy or 'none'}  (target: none)  {verdict}"
    )
    lines.append(f"  heavy modules after 'ctxasm --help': {result['heavy_after_help'] or 'none'}")
    lines.append("  slowest imports of 'import ctxasm' (cumulative µs):")
    lines += [f"    {us:>9,}  {name}" for us, name in result["slowest_imports_us"]]
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    text, ok = report(result)
    print(json.dumps(result, indent=2) if args.json else text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
