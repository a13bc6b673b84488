"""How well the injection scan separates hostile from benign text (issue 10, item 11).

Run from the repository root::

    python benchmarks/guard_quality.py              # the tables
    python benchmarks/guard_quality.py --misses     # also list every miss and false alarm
    python benchmarks/guard_quality.py --baseline 31bcb59   # compare with the scan of a commit

Hostile text:

* ``bastioncorpus`` (PyPI, 0.6.0): 118 malicious rows in 7 kinds, en/de/fr/es/it, plus 63
  benign "false-positive traps"; its ``{canary}`` slot is filled with a fixed token;
* ``jailbreak-corpus-mini-py`` (PyPI, 0.1.0): 15 short prompts;
* ``tests/data/guard/multilingual.jsonl``: three hostile lines (override, persona, leak) and
  two or three benign lines using the same words innocently, in each of 20 languages;
* ``tests/data/guard/paraphrases.jsonl``: 128 English injections worded without the stock
  phrases (what the model "was told" set aside, the AI reader addressed, answers steered, data
  put into links, actions taken without asking) and 114 benign lines using the same words, in
  the genres such text comes in (reviews, issues, mails, code comments, docs); the word tables
  were written looking at all of them, so they are all ``tune``;
* ``tests/data/guard/paraphrases_reviewer.jsonl``: 70 such injections and 70 benign look-alikes
  written by a reviewer who saw neither the scan nor its tables, and not read while writing
  them: all ``held-out``.

Benign text: HotpotQA and Wikipedia paragraphs from ``../shared/eval`` (English), and
technical prose (docstrings of installed packages and of the standard library that use
"ignore", "system", "instructions", "override" or "execute").

Rows are split in two halves by a hash of their id (unless their source says which half they
belong to): ``tune`` (looked at while writing the word tables) and ``held-out`` (not looked
at); both are reported. A source that is not installed or not present is skipped with a note.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVAL_DIR = ROOT.parent / "shared" / "eval"
MULTILINGUAL = ROOT / "tests" / "data" / "guard" / "multilingual.jsonl"
PARAPHRASES = ROOT / "tests" / "data" / "guard" / "paraphrases.jsonl"
REVIEWER_PARAPHRASES = ROOT / "tests" / "data" / "guard" / "paraphrases_reviewer.jsonl"
CANARY = "REF-7731-QX"
TECH_WORDS = ("ignore", "system", "instruction", "override", "execute")
TECH_PACKAGES = ("pip", "setuptools", "jinja2", "numpy", "click", "httpx", "pydantic")
STDLIB_MODULES = ("argparse", "subprocess", "os", "logging", "unittest", "tarfile", "warnings")

Scan = Callable[[str], tuple[str, ...]]


@dataclass(frozen=True)
class Row:
    source: str
    id: str
    text: str
    hostile: bool
    kind: str
    lang: str
    fixed_half: str = ""  # "tune" or "held-out" where the source decides

    @property
    def half(self) -> str:
        if self.fixed_half:
            return self.fixed_half
        digest = hashlib.sha256(f"{self.source}/{self.id}".encode()).digest()
        return "tune" if digest[0] % 2 == 0 else "held-out"


def bastion() -> Iterator[Row]:
    spec = importlib.util.find_spec("bastioncorpus")
    if spec is None or spec.origin is None:
        print("skipped: bastioncorpus is not installed (pip install bastioncorpus==0.6.0)")
        return
    path = Path(spec.origin).parent / "corpus" / "injections.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        hostile = row["label"] == "malicious"
        yield Row(
            "bastion",
            row["id"],
            row["text"].replace("{canary}", CANARY),
            hostile,
            row["category"] if hostile else "benign_trap",
            row.get("lang", "en"),
        )


def jailbreak_mini() -> Iterator[Row]:
    try:
        import jailbreak_corpus_mini  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        print("skipped: jailbreak-corpus-mini-py is not installed")
        return
    for item in jailbreak_corpus_mini.load_corpus():
        record = item if isinstance(item, dict) else vars(item)
        yield Row("jailbreak-mini", record["id"], record["prompt"], True, record["category"], "en")


def multilingual() -> Iterator[Row]:
    for n, line in enumerate(MULTILINGUAL.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        hostile = row["label"] == "hostile"
        kind = row["kind"] if hostile else "benign_multilingual"
        yield Row("multilingual", str(n), row["text"], hostile, kind, row["lang"])


def paraphrases() -> Iterator[Row]:
    for n, line in enumerate(PARAPHRASES.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        hostile = row["label"] == "hostile"
        kind = f"paraphrase_{row['kind']}" if hostile else "benign_paraphrase"
        yield Row("paraphrases", str(n), row["text"], hostile, kind, "en", "tune")


def reviewer_paraphrases() -> Iterator[Row]:
    for line in REVIEWER_PARAPHRASES.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        kind = f"reviewer_{row['kind']}" if row["hostile"] else "benign_reviewer"
        yield Row("reviewer", row["id"], row["text"], row["hostile"], kind, "en", "held-out")


def wiki_paragraphs() -> Iterator[Row]:
    seen: set[str] = set()
    for name in ("hotpotqa_distractor.unified.jsonl", "hotpotqa_fullwiki.unified.jsonl"):
        path = EVAL_DIR / name
        if not path.exists():
            print(f"skipped: {path} is not present")
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            for passage in json.loads(line)["passages"]:
                text = passage["text"]
                if text not in seen:
                    seen.add(text)
                    yield Row("hotpotqa", passage["pid"], text, False, "benign_wiki", "en")
    path = EVAL_DIR / "wikipedia_10_articles.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            article = json.loads(line)
            for n, paragraph in enumerate(article["text"].split("\n\n")):
                if len(paragraph) > 80:
                    yield Row("wikipedia", f"{article['doc_id']}/{n}", paragraph, False,
                              "benign_wiki", "en")  # fmt: skip


def technical_prose() -> Iterator[Row]:
    roots = [Path(sysconfig.get_paths()["purelib"]) / name for name in TECH_PACKAGES]
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = [p for root in roots if root.is_dir() for p in sorted(root.rglob("*.py"))]
    files += [stdlib / f"{name}.py" for name in STDLIB_MODULES if (stdlib / f"{name}.py").exists()]
    for path in files:
        for n, doc in enumerate(_docstrings(path)):
            if any(word in doc.lower() for word in TECH_WORDS):
                yield Row("tech-prose", f"{path.name}/{n}", doc, False, "benign_technical", "en")


def _docstrings(path: Path) -> Iterator[str]:
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node)
            if doc and len(doc) > 60:
                yield doc


@contextmanager
def unpacked_source(ref: str) -> Iterator[Path]:
    """The ``src`` folder of commit ``ref``, unpacked to a temporary folder (removed after)."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(
            ["git", "archive", ref, "src"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as unpacked:
            unpacked.extractall(folder, filter="data")
        yield Path(folder) / "src"


def baseline_scan(ref: str, texts: list[str]) -> Scan:
    """The scan of ``texts`` as it was at commit ``ref``: that commit's whole package (the scan
    spans several modules), run in a process of its own."""
    program = (
        "import json, sys\n"
        "from ctxasm.stages import guard\n"
        "scan = getattr(guard, 'InjectionScanGuard', None) or guard.InjectionScan\n"
        "texts = json.load(sys.stdin)\n"
        "json.dump([list(scan().scan(t)) for t in texts], sys.stdout)\n"
    )
    with unpacked_source(ref) as source:
        done = subprocess.run(
            [sys.executable, "-c", program],
            input=json.dumps(texts), capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONPATH": str(source)},
        )  # fmt: skip
    flags = dict(zip(texts, map(tuple, json.loads(done.stdout)), strict=True))
    return flags.__getitem__


def report(rows: list[Row], scan: Scan, title: str, misses: bool) -> None:
    print(f"\n=== {title} ===")
    flagged = {id(row): scan(row.text) for row in rows}
    for half in ("tune", "held-out", "all"):
        part = [r for r in rows if half in ("all", r.half)]
        hostile = [r for r in part if r.hostile]
        benign = [r for r in part if not r.hostile]
        caught = sum(1 for r in hostile if flagged[id(r)])
        alarms = sum(1 for r in benign if flagged[id(r)])
        non_en = [r for r in hostile if r.lang != "en"]
        non_en_caught = sum(1 for r in non_en if flagged[id(r)])
        print(
            f"{half:>8}: caught {_pct(caught, len(hostile))} of {len(hostile)} hostile "
            f"(non-English {_pct(non_en_caught, len(non_en))} of {len(non_en)}), "
            f"benign flagged {_pct(alarms, len(benign))} of {len(benign)}, "
            f"precision {_pct(caught, caught + alarms)}"
        )
    _table(rows, flagged, "kind", lambda r: r.kind)
    _table(rows, flagged, "language", lambda r: r.lang)
    if misses:
        for row in rows:
            if bool(flagged[id(row)]) != row.hostile:
                label = "MISS" if row.hostile else "FALSE"
                print(f"{label} {row.source}/{row.kind}/{row.lang} {flagged[id(row)]} "
                      f"{row.text[:140]!r}")  # fmt: skip


def _table(rows: list[Row], flagged: dict[int, tuple[str, ...]], name: str,
           key: Callable[[Row], str]) -> None:  # fmt: skip
    groups: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    print(f"\n{name:<22} {'hostile':>8} {'caught':>8} {'benign':>8} {'flagged':>8}")
    for group, members in sorted(groups.items()):
        hostile = [r for r in members if r.hostile]
        benign = [r for r in members if not r.hostile]
        caught = sum(1 for r in hostile if flagged[id(r)])
        alarms = sum(1 for r in benign if flagged[id(r)])
        print(
            f"{group:<22} {len(hostile):>8} {_pct(caught, len(hostile)):>8} "
            f"{len(benign):>8} {_pct(alarms, len(benign)):>8}"
        )


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="list misses and false alarms")
    parser.add_argument("--baseline", metavar="REF", help="also score the scan of a commit")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from ctxasm.stages.guard import InjectionScanGuard

    rows = [*bastion(), *jailbreak_mini(), *multilingual(), *paraphrases(),
            *reviewer_paraphrases(), *wiki_paragraphs(), *technical_prose()]  # fmt: skip
    report(rows, InjectionScanGuard().scan, "scan (this tree)", args.misses)
    if args.baseline:
        texts = list(dict.fromkeys(row.text for row in rows))
        report(rows, baseline_scan(args.baseline, texts), f"scan at {args.baseline}", False)


if __name__ == "__main__":
    main()
