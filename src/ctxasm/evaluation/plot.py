"""Recall-versus-budget curves (needs the ``plot`` extra: matplotlib)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ctxasm.errors import ConfigError, install_hint
from ctxasm.evaluation.runner import EvalRow

__all__ = ["plot_rows"]

_METRICS = (("all_gold", "all-gold rate"), ("gold_recall", "gold recall"))


def plot_rows(rows: Sequence[EvalRow], path: str | Path, title: str = "") -> Path:
    """Draw one line per strategy (x: budget in tokens, log scale) for all-gold rate and gold
    recall, side by side, and save the figure to ``path`` (the format follows the suffix)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib import ticker
    except ImportError:
        needs = f"--plot needs matplotlib: {install_hint('plot')}"
        raise ConfigError(needs, field="plot") from None
    path = Path(path)
    strategies = list(dict.fromkeys(row.strategy for row in rows))
    figure, axes = plt.subplots(1, len(_METRICS), figsize=(11, 4.2), sharey=True)
    for axis, (metric, label) in zip(axes, _METRICS, strict=True):
        for strategy in strategies:
            points = sorted(
                (row.budget, getattr(row, metric))
                for row in rows
                if row.strategy == strategy and getattr(row, metric) is not None
            )
            if points:
                budgets, values = zip(*points, strict=True)
                axis.plot(budgets, values, marker="o", label=strategy)
        axis.set_xscale("log", base=2)
        axis.set_xticks(sorted({row.budget for row in rows}))
        axis.xaxis.set_major_formatter(ticker.ScalarFormatter())
        axis.xaxis.set_minor_locator(ticker.NullLocator())
        axis.set_xlabel("context budget (tokens)")
        axis.set_title(label)
        axis.grid(True, alpha=0.3)
        axis.set_ylim(0, 1.02)
    axes[0].set_ylabel("share of questions / gold passages")
    axes[-1].legend(loc="lower right", fontsize=8)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    try:
        figure.savefig(path, dpi=110)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}", field="plot") from None
    except ValueError as exc:  # an image format matplotlib does not know
        raise ConfigError(f"cannot save {path.name}: {exc}", field="plot") from None
    finally:
        plt.close(figure)
    return path
