"""Measuring how much evidence an assembly strategy keeps inside a budget, on QA data.

>>> from ctxasm.evaluation import evaluate, load_dataset, resolve_strategy
>>> rows = evaluate(load_dataset(path), [resolve_strategy("default")], [512])  # doctest: +SKIP
"""

from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion, load_dataset, read_dataset
from ctxasm.evaluation.metrics import QuestionScore, score_question
from ctxasm.evaluation.runner import PRESETS, EvalRow, EvalStrategy, evaluate, resolve_strategy

__all__ = [
    "PRESETS",
    "EvalPassage",
    "EvalQuestion",
    "EvalRow",
    "EvalStrategy",
    "QuestionScore",
    "evaluate",
    "load_dataset",
    "read_dataset",
    "resolve_strategy",
    "score_question",
]
