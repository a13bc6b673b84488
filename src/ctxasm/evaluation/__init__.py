"""Measuring how much evidence an assembly strategy keeps inside a budget, on QA data.

>>> from ctxasm.evaluation import evaluate, load_dataset, resolve_strategy
>>> rows = evaluate(load_dataset(path), [resolve_strategy("default")], [512])  # doctest: +SKIP
"""

from ctxasm.evaluation.dataset import EvalPassage, EvalQuestion, load_dataset, read_dataset
from ctxasm.evaluation.metrics import QuestionScore, score_question
from ctxasm.evaluation.runner import EvalRow, evaluate
from ctxasm.evaluation.strategies import (
    PRESETS,
    EvalStrategy,
    choose_model,
    choose_strategies,
    resolve_strategy,
)

__all__ = [
    "PRESETS",
    "EvalPassage",
    "EvalQuestion",
    "EvalRow",
    "EvalStrategy",
    "QuestionScore",
    "choose_model",
    "choose_strategies",
    "evaluate",
    "load_dataset",
    "read_dataset",
    "resolve_strategy",
    "score_question",
]
