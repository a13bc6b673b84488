"""How fast the HTML report of a 2,000-passage assembly opens in a headless Chromium.

Run from the repository root (needs Debian's chromium, which ``make unit`` installs)::

    python benchmarks/report_html.py              # 9 runs
    python benchmarks/report_html.py --runs 15 --passages 5000 --json

The workload is ``tests/browser/pages.big_request``: 2,000 short passages, every tenth an exact
copy, every seventh under ``min_score``, more than the budget holds, so the page has hundreds of
included rows, hundreds of excluded ones in three groups, and a prompt of about 30,000 tokens.
It is assembled once by the real assembler and written as one page. Each run opens it in a fresh
tab of one browser (an untimed run first) and reports, from the page's own clock (ms since the
navigation started):

* ``drawn``: the view is built (the ``ctxasm-ready`` mark that view.js sets last);
* ``interactive``: the first frame after that has been laid out and painted, and the page
  answers a task (a ``requestAnimationFrame`` then a ``setTimeout``): from here a click works.

The target is an ``interactive`` median under 2,000 ms.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from chromium import Browser, chromium_missing  # noqa: E402
from pages import READY, big_request  # noqa: E402

from ctxasm import Assembler  # noqa: E402
from ctxasm.html import render_report_html  # noqa: E402

TARGET_MS = 2000.0
_INTERACTIVE = (
    "new Promise(done => requestAnimationFrame(() => setTimeout(() => done(performance.now()))))"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--passages", type=int, default=2000)
    parser.add_argument("--json", action="store_true", help="print the timings as JSON")
    options = parser.parse_args()
    missing = chromium_missing()
    if missing is not None:
        sys.exit(f"report_html: {missing}")

    result = Assembler().assemble(big_request(options.passages)).to_dict()
    report = result["report"]
    with tempfile.TemporaryDirectory(prefix="ctxasm-bench-") as folder:
        page = Path(folder) / "report.html"
        started = time.perf_counter()
        page.write_text(render_report_html(result), encoding="utf-8")
        render_ms = 1000 * (time.perf_counter() - started)
        drawn, interactive = [], []
        with Browser() as browser:
            for run in range(options.runs + 1):
                browser.open("about:blank")
                browser.open(page.as_uri(), ready=READY)
                mark = browser.evaluate("performance.getEntriesByName('ctxasm-ready')[0].startTime")
                ready = browser.evaluate(_INTERACTIVE)
                if run:  # the first run warms the browser's caches and is not counted
                    drawn.append(mark)
                    interactive.append(ready)
        size = page.stat().st_size
    summary = {
        "passages": options.passages,
        "included": len(report["included"]),
        "excluded": len(report["excluded"]),
        "page_bytes": size,
        "python_render_ms": round(render_ms, 1),
        "runs": options.runs,
        "drawn_ms_median": round(statistics.median(drawn), 1),
        "interactive_ms_median": round(statistics.median(interactive), 1),
        "interactive_ms_max": round(max(interactive), 1),
    }
    if options.json:
        print(json.dumps({**summary, "drawn_ms": drawn, "interactive_ms": interactive}, indent=2))
    else:
        print(
            f"{options.passages} passages ({summary['included']} included, "
            f"{summary['excluded']} excluded), page {size / 1e6:.2f} MB, written in "
            f"{render_ms:.0f} ms by Python"
        )
        print(
            f"drawn: median {summary['drawn_ms_median']:.0f} ms; interactive: median "
            f"{summary['interactive_ms_median']:.0f} ms, "
            f"max {summary['interactive_ms_max']:.0f} ms "
            f"over {options.runs} runs"
        )
    hit = summary["interactive_ms_median"] < TARGET_MS
    print(f"{'PASS' if hit else 'MISS'}: interactive under {TARGET_MS:.0f} ms")
    return 0 if hit else 1


if __name__ == "__main__":
    sys.exit(main())
