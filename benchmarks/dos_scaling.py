"""Time against input size for hostile shapes (issue 10, items 2 and 3): linear or not.

For each shape the input grows x1, x2, x4, x8; the script prints the median time, the time per
unit of input, and ``t(x8) / t(x1)``: about 8 means linear, about 64 quadratic. Shapes:

* ``cjk run``: one passage of N CJK characters without punctuation (plus a normal passage);
* ``ascii run``: one passage of ``"a" * N``;
* ``newline run``: one passage of N newlines between two words;
* ``near copies``: N short passages, one sentence each with two words replaced, all with the
  same title, on a 2M-token model so that thousands are kept (dedup and stitching at scale);
* ``chained windows``: N overlapping windows of one document (100 characters every 50, cut
  without regard to words, as a naive chunker cuts), scored in document order and all kept on
  a 2M-token model, so that each is stitched into the passage the windows before it grew
  (caches cleared each run: a new document);
* ``strategy keys``: a request to the service whose strategy holds an N-character key over a
  list of N/100 items (the check for embedders read from files walks it before validation);
* ``cited urls``: checking an answer that cites a source with an N-character url by N/25
  different links;
* ``index run``: chunking a document that holds an N-character unbroken run;
* ``label lines``: one passage of N lines ``source 1,`` (a list of label look-alikes over many
  lines, which the renderers neutralise);
* ``html tags``: reading an HTML page of N unclosed tags ``<a `` (``ctxasm index``);
* ``md brackets``, ``md images``, ``md emphasis``, ``md table``, ``md empty cells``, ``md wide
  tables``, ``md comments``, ``md references``: reading a Markdown file that holds a comment (so
  it is parsed and rendered, ``ctxasm index``) and N characters of ``[``, of ``![``, of ``*_``, of
  a table's rows, of rows of empty cells (``|||``, 32 columns), of tables of ``isqrt(TABLE_FILL)``
  columns and as many rows of one cell each (filled out to the header's width, as far as the
  reader's limit lets them), of unclosed inline comments ``x <!-- a``, or of links that use one
  definition half the file long (``[x] `` ... ``[x]: https://...``: copied into each link, it
  made the page grow with the square of the file);
* ``mark runs``: counting N characters of 7,990-mark runs, each the reverse of canonical order,
  with Qwen 3's tokenizer, which normalizes to NFC first (the library's own normalization sorts
  each run quadratically: 4 s a megabyte);
* ``raw tiktoken``: for reference, tiktoken alone on the CJK run (quadratic, smaller sizes).

Run: ``TIKTOKEN_CACHE_DIR=../shared/tiktoken-cache python benchmarks/dos_scaling.py`` (about a
minute and a half; ``--repeats`` for more runs per size).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable

import ctxasm
from ctxasm.formatting.labels import neutral_text
from ctxasm.store.chunking import chunk_text
from ctxasm.store.html_text import visible_text
from ctxasm.store.markdown_text import TABLE_FILL, markdown_text
from ctxasm.tokens.tiktoken_source import load_encoding

GOOD = {"id": "good", "text": "Aristotle taught at the Lyceum in Athens.", "score": 0.5}
QUERY = "Where did Aristotle teach philosophy?"
SENTENCE = (
    "Aristotle was an Ancient Greek philosopher and polymath whose writings cover "
    "the natural sciences philosophy linguistics economics and politics"
).split()


def cjk(n: int) -> str:
    rnd = random.Random(n)
    return "".join(chr(0x4E00 + rnd.randrange(2000)) for _ in range(n))


def near_copies(n: int) -> list[dict[str, object]]:
    rnd = random.Random(7)
    out: list[dict[str, object]] = []
    for i in range(n):
        words = list(SENTENCE)
        for _ in range(2):
            words[rnd.randrange(len(words))] = f"w{rnd.randrange(10**6)}"
        out.append({"id": f"p{i}", "text": " ".join(words), "title": "Aristotle"})
    return out


def one_passage(n: int, text: str) -> Callable[[], object]:
    passages = [GOOD, {"id": "bad", "text": text, "score": 0.9}]
    return lambda: ctxasm.assemble(QUERY, passages, model="gpt-4o")


def copies_case(n: int) -> Callable[[], object]:
    passages = near_copies(n)
    return lambda: ctxasm.assemble(QUERY, passages, model="gemini-1.5-pro")


def windows_case(n: int) -> Callable[[], object]:
    words = SENTENCE * (n // 2 + 1)
    rnd = random.Random(n)
    text = " ".join(f"{word}{rnd.randrange(100)}" if rnd.random() < 0.3 else word for word in words)
    passages = [
        {
            "id": f"w{i}",
            "text": text[i * 50 : i * 50 + 100],
            "doc_id": "doc",
            "title": "Aristotle",
            "start": i * 50,
            "end": i * 50 + 100,
            "score": 1.0 - i / n,
        }
        for i in range(n)
    ]

    def run() -> object:
        ctxasm.clear_caches()
        return ctxasm.assemble(QUERY, passages, model="gemini-1.5-pro")

    return run


def strategy_case(n: int) -> Callable[[], object]:
    from ctxasm.service.app import _Endpoints

    endpoints = _Endpoints(ctxasm.Assembler(), allow_request_templates=False)
    strategy = {"relevance": {"name": "auto", "k" * n: [[0] * 100] * (n // 10_000)}}
    raw = json.dumps({"query": "x", "passages": [], "strategy": strategy}).encode()
    return lambda: endpoints.assemble(raw, "dos")


def cited_urls_case(n: int) -> Callable[[], object]:
    from ctxasm.citations import check_citations

    url = "https://example.org/" + "u" * n
    result = {"report": {"included": [{"id": "d", "label": "Source 1", "url": url}]}}
    answer = " ".join(f"[Source 1](https://x.example/{i})" for i in range(n // 25))
    return lambda: check_citations(answer, result)


def index_case(n: int) -> Callable[[], object]:
    text = "Intro. " + cjk(n) + " Outro."
    return lambda: chunk_text(text, 512, 64)


def label_lines_case(n: int) -> Callable[[], object]:
    passages = [GOOD, {"id": "bad", "text": "Aristotle taught.\n" + "source 1,\n" * n}]

    def run() -> object:
        neutral_text.cache_clear()  # rendered anew each run, as a new document would be
        return ctxasm.assemble(QUERY, passages, model="gpt-4o")

    return run


def html_case(n: int) -> Callable[[], object]:
    page = "<p>Aristotle taught.</p>" + "<a " * n
    return lambda: visible_text(page)


def repeated(unit: str, head: str = "") -> Callable[[int], str]:
    return lambda n: head + unit * (n // len(unit))


def wide_tables(n: int) -> str:
    side = math.isqrt(TABLE_FILL)
    table = "|" + "a|" * side + "\n|" + "-|" * side + "\n" + "|x\n" * side + "\n"
    return table * max(1, n // len(table))


def references(n: int) -> str:
    return "[x] " * (n // 8) + "\n\n[x]: https://example.org/" + "a" * (n // 2) + "\n"


MARKDOWN: dict[str, Callable[[int], str]] = {
    "brackets": repeated("["),
    "images": repeated("!["),
    "emphasis": repeated("*_"),
    "table": repeated("|x|y|\n", "|a|b|\n|-|-|\n"),
    "empty cells": repeated("|" * 33 + "\n", "|" + "a|" * 32 + "\n|" + "-|" * 32 + "\n"),
    "wide tables": wide_tables,
    "comments": repeated("x <!-- a"),
    "references": references,
}


def markdown_case(shape: str, n: int) -> Callable[[], object]:
    text = "# Aristotle <!-- hidden -->\n\n" + MARKDOWN[shape](n)
    return lambda: markdown_text(text)


def mark_runs_case(n: int) -> Callable[[], object]:
    from ctxasm.tokens import get_counter

    run = "a" + "\u0301\u0316" * 3995 + " "
    text = run * max(1, n // len(run))
    counter = get_counter("pinned:qwen3")

    def run() -> object:
        counter.clear()  # counted anew each run, as a new document would be
        return counter.count(text)

    return run


def raw_case(n: int) -> Callable[[], object]:
    text = cjk(n)
    return lambda: load_encoding("o200k_base").encode_ordinary(text)


SHAPES: dict[str, tuple[int, str, Callable[[int], Callable[[], object]]]] = {
    "cjk run": (100_000, "char", lambda n: one_passage(n, cjk(n))),
    "ascii run": (200_000, "char", lambda n: one_passage(n, "a" * n)),
    "newline run": (200_000, "char", lambda n: one_passage(n, "x" + "\n" * n + "y")),
    "near copies": (1_000, "passage", copies_case),
    "chained windows": (250, "window", windows_case),
    "strategy keys": (125_000, "char", strategy_case),
    "cited urls": (25_000, "char", cited_urls_case),
    "index run": (25_000, "char", index_case),
    "label lines": (1_000, "line", label_lines_case),
    "html tags": (25_000, "tag", html_case),
    **{
        f"md {shape}": (25_000, "char", lambda n, shape=shape: markdown_case(shape, n))
        for shape in MARKDOWN
    },
    "mark runs": (125_000, "char", mark_runs_case),
    "raw tiktoken": (5_000, "char", raw_case),
}


def median_time(run: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per size (3)")
    parser.add_argument("--shape", action="append", choices=sorted(SHAPES), help="only these")
    args = parser.parse_args()
    ctxasm.assemble(QUERY, [GOOD], model="gpt-4o")  # load the tokenizer outside the timings
    print(
        f"{'shape':<15} {'x1 size':>9} {'unit':>8} "
        + " ".join(f"{f'x{m} ms':>10}" for m in (1, 2, 4, 8)),
        end="",
    )
    print(f" {'us/unit x1':>11} {'us/unit x8':>11} {'t8/t1':>6}")
    for name in args.shape or list(SHAPES):
        base, unit, make = SHAPES[name]
        times = [median_time(make(base * m), args.repeats) for m in (1, 2, 4, 8)]
        per_unit = [t / (base * m) * 1e6 for t, m in zip(times, (1, 2, 4, 8), strict=True)]
        cells = " ".join(f"{t * 1000:>10.1f}" for t in times)
        print(
            f"{name:<15} {base:>9,} {unit:>8} {cells} {per_unit[0]:>11.3f} {per_unit[3]:>11.3f} "
            f"{times[3] / times[0]:>6.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
