"""Measuring how much evidence an assembly strategy keeps inside a budget, on QA data.

>>> from ctxasm.evaluation import evaluate, load_dataset, resolve_strategy
>>> rows = evaluate(load_dataset(path), [resolve_strategy("default")], [512])  # doctest: +SKIP
"""

from ctxasm.evaluation.comention import comention_subset
from ctxasm.evaluation.composed import composed_subset
from ctxasm.evaluation.dataset import (
    EvalPassage,
    EvalQuestion,
    load_dataset,
    read_dataset,
    select_ids,
    write_dataset,
)
from ctxasm.evaluation.metrics import QuestionScore, score_question
from ctxasm.evaluation.runner import EvalRow, evaluate
from ctxasm.evaluation.scores import NOISY_ORACLE, SCORE_KINDS, attach_scores
from ctxasm.evaluation.strategies import (
    PRESETS,
    EvalStrategy,
    choose_model,
    choose_strategies,
    resolve_strategy,
)
from ctxasm.evaluation.subsets import SUBSETS, bridge_titles, hard_subset

__all__ = [
    "NOISY_ORACLE",
    "PRESETS",
    "SCORE_KINDS",
    "SUBSETS",
    "EvalPassage",
    "EvalQuestion",
    "EvalRow",
    "EvalStrategy",
    "QuestionScore",
    "attach_scores",
    "bridge_titles",
    "choose_model",
    "choose_strategies",
    "comention_subset",
    "composed_subset",
    "evaluate",
    "hard_subset",
    "load_dataset",
    "read_dataset",
    "resolve_strategy",
    "score_question",
    "select_ids",
    "write_dataset",
]
