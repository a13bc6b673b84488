"""Start-up cost of ctxasm: ``ctxasm --help``, ``import ctxasm`` and a cold ``ctxasm assemble``.

Run from the repository root::

    python benchmarks/startup.py            # 20 runs each
    python benchmarks/startup.py --runs 40 --json

Measures, each in a fresh interpreter, the median wall time of

* ``ctxasm --help`` through the installed console script (next to this interpreter), the
  target (< 300 ms); where the script is missing or fails, that is reported and
  ``python -c "import ctxasm"`` is timed in its place;
* ``ctxasm assemble FILE`` through the same script, FILE a request of 20 short passages for
  gpt-4o, against ``python -c "import tiktoken; tiktoken.get_encoding('o200k_base')"``: the
  work no exact count for gpt-4o can skip. The target is at most 1.3 times the baseline.
  tiktoken reads the rank file ctxasm ships, through a cache folder made for the run
  (``TIKTOKEN_CACHE_DIR``, unless it is set already), so neither needs the network;
* the same request with ``max_context_tokens`` 200, where the passages do not all fit whole and
  the default strategy compresses them: the first compression of a process loads the English
  lemma dictionary (simplemma; its table, which the untimed round writes to the cache folder),
  which a request that fits never needs. Same target;
* ``python -c "import ctxasm"`` and ``python -c "pass"`` (the interpreter's own floor).

All of them run interleaved (one of each per round, after an untimed round), with their
bytecode cached in a folder made for the run (``PYTHONPYCACHEPREFIX``) as an installed package
has it, even where ``PYTHONDONTWRITEBYTECODE`` is set; the CPU time (user + system) is reported
too, as it depends less than the wall time on what else a busy machine runs.

and lists which heavy optional libraries end up in ``sys.modules`` after ``import ctxasm`` (the
target: none), after the CLI has printed its help and after ``ctxasm assemble``, plus the slowest
imports from ``python -X importtime -c "import ctxasm"``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

HEAVY = ("numpy", "scipy", "datasketch", "tokenizers", "rich", "typer", "tiktoken", "click")
# What `ctxasm assemble` needs none of (tiktoken it does need, for gpt-4o).
UNUSED_BY_ASSEMBLE = (
    "numpy",
    "scipy",
    "datasketch",
    "tokenizers",
    "rich",
    "typer",
    "click",
    "pydantic",
    "jinja2",
    "simplemma",
    "ctxasm.service",
    "ctxasm.store",
    "ctxasm.evaluation",
    "ctxasm.batch",
)
HELP_TARGET_MS = 300.0
ASSEMBLE_TARGET_RATIO = 1.3
TIGHT_BUDGET = 200  # tokens: the 20 passages do not fit whole, so the default compresses
BASELINE = "import tiktoken; tiktoken.get_encoding('o200k_base')"
# Twenty short passages about rivers: (river, where it rises, where it ends, length in km).
RIVERS = (
    ("Rhine", "the Swiss Alps", "the North Sea", 1230),
    ("Danube", "the Black Forest", "the Black Sea", 2850),
    ("Elbe", "the Krkonose mountains", "the North Sea", 1094),
    ("Loire", "the Massif Central", "the Bay of Biscay", 1006),
    ("Rhone", "the Rhone Glacier", "the Mediterranean", 813),
    ("Po", "Monte Viso", "the Adriatic Sea", 652),
    ("Vistula", "the Beskids", "the Baltic Sea", 1047),
    ("Oder", "the Oder Mountains", "the Baltic Sea", 840),
    ("Seine", "the Langres plateau", "the English Channel", 777),
    ("Thames", "the Cotswolds", "the North Sea", 346),
    ("Tagus", "the Universal Mountains", "the Atlantic Ocean", 1007),
    ("Ebro", "the Cantabrian Mountains", "the Mediterranean", 930),
    ("Dnieper", "the Valdai Hills", "the Black Sea", 2201),
    ("Volga", "the Valdai Hills", "the Caspian Sea", 3531),
    ("Don", "the Central Russian Upland", "the Sea of Azov", 1870),
    ("Meuse", "the Langres plateau", "the North Sea", 925),
    ("Weser", "Hann. Muenden", "the North Sea", 452),
    ("Garonne", "the Pyrenees", "the Gironde estuary", 529),
    ("Douro", "the Picos de Urbion", "the Atlantic Ocean", 897),
    ("Dniester", "the Eastern Carpathians", "the Black Sea", 1362),
)

# The modules a probe reports, when loaded, are substituted for WATCHED.
_PROBE_IMPORT = """
import json, sys
import ctxasm
print(json.dumps(sorted(m for m in WATCHED if m in sys.modules)))
"""
_PROBE_COMMAND = """
import contextlib, io, json, sys
sys.argv = ARGV
from ctxasm.cli.main import run
with contextlib.redirect_stdout(io.StringIO()):
    try:
        run()
    except SystemExit:
        pass
print(json.dumps(sorted(m for m in WATCHED if m in sys.modules)))
"""


def _environments(folder: Path) -> tuple[dict[str, str], dict[str, str]]:
    """The environment of every measured command, and the tiktoken baseline's.

    Each command reads compiled bytecode, written under ``folder`` by the untimed first round,
    as an installed package does: where ``PYTHONDONTWRITEBYTECODE`` is set (a development
    set-up running ctxasm from its source tree), ctxasm would compile every module on every
    run while tiktoken comes compiled in site-packages. The baseline reads the rank files
    ctxasm ships, through a cache folder in tiktoken's layout, unless ``TIKTOKEN_CACHE_DIR``
    is set already. The lemma table a compressing request reads is written under ``folder``
    by the untimed round too, as a user's first compressing process writes it (see
    ``ctxasm.stages.lemmas``)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.setdefault("PYTHONPYCACHEPREFIX", str(folder / "bytecode"))
    env["CTXASM_CACHE_DIR"] = str(folder / "ctxasm-cache")
    baseline = dict(env)
    if "TIKTOKEN_CACHE_DIR" not in baseline:
        from ctxasm.tokens.tiktoken_source import BUNDLED_RANKS, OFFICIAL_RANKS

        cache = folder / "tiktoken"
        cache.mkdir()
        for name, ranks in OFFICIAL_RANKS.items():
            (cache / ranks.cache_name).symlink_to(BUNDLED_RANKS / f"{name}.tiktoken")
        baseline["TIKTOKEN_CACHE_DIR"] = str(cache)
    return env, baseline


def _interleaved(
    commands: Mapping[str, Sequence[str]], runs: int, envs: Mapping[str, Mapping[str, str]]
) -> dict[str, dict[str, Any]]:
    """Each command's median wall and CPU ms over ``runs`` rounds of one run each (after one
    untimed round), so that a busy spell of the machine slows all of them alike. The CPU time
    (user + system) depends less on what else the machine runs."""
    first = {
        key: subprocess.run(command, capture_output=True, text=True, env=envs.get(key), check=False)
        for key, command in commands.items()
    }
    wall: dict[str, list[float]] = {key: [] for key in commands}
    cpu: dict[str, list[float]] = {key: [] for key in commands}
    for _ in range(runs):
        for key, command in commands.items():
            started = time.perf_counter()
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=envs.get(key)
            )
            _pid, _status, usage = os.wait4(process.pid, 0)
            wall[key].append((time.perf_counter() - started) * 1000)
            cpu[key].append((usage.ru_utime + usage.ru_stime) * 1000)
    result = {}
    for key, done in first.items():
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] if done.returncode else []
        result[key] = {
            "median_ms": round(statistics.median(wall[key]), 1),
            "cpu_median_ms": round(statistics.median(cpu[key]), 1),
            "times_ms": [round(t, 1) for t in wall[key]],
            "exit_code": done.returncode,
            "error": "".join(tail),
        }
    return result


def _write_request(folder: Path, budget: int | None = None) -> Path:
    """A request of 20 short passages for gpt-4o, written to ``folder`` (with
    ``max_context_tokens`` ``budget``, when given)."""
    passages = [
        {
            "id": river.lower(),
            "title": river,
            "text": (
                f"The {river} rises in {source} and flows into {mouth}. It is {km:,} km long, "
                f"and for centuries the towns along the {river} have lived from its trade."
            ),
            "score": round(0.95 - 0.03 * i, 2),
        }
        for i, (river, source, mouth, km) in enumerate(RIVERS)
    ]
    request: dict[str, Any] = {"query": "Which rivers flow into the North Sea?", "model": "gpt-4o"}
    if budget is not None:
        request["max_context_tokens"] = budget
    path = folder / ("request.json" if budget is None else f"request-{budget}.json")
    path.write_text(json.dumps({**request, "passages": passages}))
    return path


def _probe(code: str, watched: Sequence[str], argv: Sequence[str] = ()) -> list[str] | str:
    code = code.replace("WATCHED", repr(tuple(watched))).replace("ARGV", repr(list(argv)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
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
    commands = {"import": [python, "-c", "import ctxasm"], "interpreter": [python, "-c", "pass"]}
    with tempfile.TemporaryDirectory(prefix="ctxasm-startup-") as folder:
        env, baseline_env = _environments(Path(folder))
        request = _write_request(Path(folder))
        tight = _write_request(Path(folder), TIGHT_BUDGET)
        if script.is_file():
            commands["help"] = [str(script), "--help"]
            commands["assemble"] = [str(script), "assemble", str(request)]
            commands["assemble_tight"] = [str(script), "assemble", str(tight)]
            commands["baseline"] = [python, "-c", BASELINE]
        envs = {key: baseline_env if key == "baseline" else env for key in commands}
        measured = _interleaved(commands, runs, envs)
        result["unused_after_assemble"] = _probe(
            _PROBE_COMMAND, UNUSED_BY_ASSEMBLE, ["ctxasm", "assemble", str(request)]
        )
    for key, command in commands.items():
        shown = " ".join(command[1:] if command[0] == python else command)
        prefix = "python " if command[0] == python else ""
        result[key] = {"command": prefix + shown, **measured[key]}
    for key in ("help", "assemble", "assemble_tight"):
        result.setdefault(key, {"command": f"{script} {key}", "missing": True})
    if "baseline" in result:
        for run, suffix in (("assemble", ""), ("assemble_tight", "_tight")):
            for key, median in (("assemble_ratio", "median_ms"), ("cpu_ratio", "cpu_median_ms")):
                result[key + suffix] = round(result[run][median] / result["baseline"][median], 3)
    result["heavy_after_import"] = _probe(_PROBE_IMPORT, HEAVY)
    result["heavy_after_help"] = _probe(_PROBE_COMMAND, HEAVY, ["ctxasm", "--help"])
    result["slowest_imports_us"] = _import_times(12)
    return result


def _failed(entry: Mapping[str, Any]) -> str | None:
    if entry.get("missing"):
        return "not installed"
    return f"exit {entry['exit_code']}: {entry['error']}" if entry.get("exit_code") else None


def report(result: dict[str, Any]) -> tuple[str, bool]:
    lines = [f"ctxasm start-up: median of {result['runs']} fresh processes, interleaved"]
    ok = True
    help_ = result["help"]
    if why := _failed(help_):
        lines.append(f"  {help_['command']}: FAILS ({why})")
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
    baseline = result.get("baseline")
    for run, suffix, what in (
        ("assemble", "", "20 passages, gpt-4o, a cold process"),
        ("assemble_tight", "_tight", f"the same in {TIGHT_BUDGET} tokens: it compresses"),
    ):
        assemble = result[run]
        if why := _failed(assemble) or (baseline and _failed(baseline)):
            lines.append(f"  cold ctxasm assemble ({what}): FAILS ({why})  MISS")
            ok = False
            continue
        assert baseline is not None
        ratio = result["assemble_ratio" + suffix]
        verdict = "PASS" if ratio <= ASSEMBLE_TARGET_RATIO else "MISS"
        ok &= verdict == "PASS"
        if not suffix:
            lines.append(
                f"  tiktoken baseline        {baseline['median_ms']:8.1f} ms   "
                f"(CPU {baseline['cpu_median_ms']:.1f} ms) python -c {BASELINE!r}"
            )
        lines += [
            f"  ctxasm assemble FILE     {assemble['median_ms']:8.1f} ms   "
            f"(CPU {assemble['cpu_median_ms']:.1f} ms; {what})",
            f"    ratio                  {ratio:8.2f}x     target <= {ASSEMBLE_TARGET_RATIO:g}x  "
            f"{verdict}  (CPU: {result['cpu_ratio' + suffix]:.2f}x)",
        ]
    heavy = result["heavy_after_import"]
    verdict = "PASS" if heavy == [] else "MISS"
    ok &= verdict == "PASS"
    lines.append(
        f"  heavy modules after 'import ctxasm': {heavy or 'none'}  (target: none)  {verdict}"
    )
    lines.append(f"  heavy modules after 'ctxasm --help': {result['heavy_after_help'] or 'none'}")
    unused = result["unused_after_assemble"]
    lines.append(f"  unused modules after 'ctxasm assemble': {unused or 'none'}")
    lines.append("  slowest imports of 'import ctxasm' (cumulative µs):")
    lines += [f"    {us:>9,}  {name}" for us, name in result["slowest_imports_us"]]
    return "\n".join(lines), ok


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the measurements as JSON")
    args = parser.parse_args(argv)
    result = measure(args.runs)
    text, ok = report(result)
    print(json.dumps(result, indent=2) if args.json else text)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
