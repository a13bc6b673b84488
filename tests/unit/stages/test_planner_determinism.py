"""The same request gives the same prompt and report in every process: nothing the planner
decides (its picks, nor why each was chosen) depends on how Python hashes strings, which
changes from one process to the next (``PYTHONHASHSEED``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "eval" / "hotpotqa_distractor_20.jsonl"

SCRIPT = """
import hashlib, json, sys
import ctxasm
from ctxasm.evaluation import load_dataset, resolve_strategy
from ctxasm.evaluation.runner import _request

digest = hashlib.sha256()
for question in load_dataset(sys.argv[1]):
    for budget in (128, 256, 512):
        request = _request(question, resolve_strategy("default"), budget)
        found = ctxasm.Assembler().assemble(request).to_dict()
        found["report"].pop("timings_ms", None)
        digest.update(json.dumps(found, sort_keys=True, default=str).encode())
print(digest.hexdigest())
"""


def _digest(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, "CTXASM_BPE_BACKEND": "tiktoken"}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(SAMPLE)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stdout.strip()


def test_results_do_not_depend_on_the_hash_seed() -> None:
    first = _digest("0")
    assert len(first) == 64
    assert {_digest(seed) for seed in ("1", "2", "3")} == {first}
