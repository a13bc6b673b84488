"""What every adapter shares: a framework document's fields and metadata as a passage, headed
by its file or its position rather than an id, an assembly as the (role, content) pairs of a
chat, and the checks of the request fields a component is built with."""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.data import Assembly
from ctxasm.errors import RequestError
from ctxasm.loader_metadata import json_value
from ctxasm.models import ModelRegistry, default_registry
from ctxasm.schema import REQUEST_FIELDS, parse_request
from ctxasm.validation import close_name, shown

__all__ = [
    "FIXED_FIELDS",
    "chat_turns",
    "checked_fields",
    "checked_options",
    "headed",
    "kept_originals",
    "passage_from",
    "without_repeats",
]

# The request fields of the components whose constructors are pydantic's (LangChain's document
# compressor, LlamaIndex's node postprocessor), the model first.
FIXED_FIELDS = ("model", "max_context_tokens", "min_score", "strategy")

# Metadata keys that are passage fields; other plain values stay as passage metadata.
FIELDS = ("title", "source", "url", "doc_id", "start", "end", "timestamp", "authority", "tenant")


def passage_from(
    passage_id: str, text: str, score: object, metadata: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A passage for ``ctxasm.assemble``; non-plain metadata values, which JSON cannot carry,
    are left out. Scores and access data go as given, for the core to check and name the field
    (``passages[0].readers``): a bare string as ``readers`` is refused there, never read as the
    list of its letters. Only numeric scalars (numpy's) become floats, and a tuple or set of
    readers a list."""
    meta = dict(metadata or {})
    passage: dict[str, Any] = {"id": passage_id, "text": text}
    if score is not None:
        passage["score"] = _score(score)
    for key in FIELDS:
        if meta.get(key) is not None:
            passage[key] = json_value(meta.pop(key))
    readers = meta.pop("readers", None)
    if readers is not None:
        passage["readers"] = (
            list(readers) if isinstance(readers, tuple | set | frozenset) else readers
        )
    passage["metadata"] = {
        key: value
        for key, value in ((key, json_value(value)) for key, value in meta.items())
        if isinstance(value, str | int | float | bool) or value is None
    }
    return passage


def without_repeats(passages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``passages`` without a later copy of an earlier one: the same id and every field the
    same but the score (a document a retriever returned twice, as hybrid retrieval without a
    joiner does), which the request would refuse for its repeated id. The copy that stays
    has the higher score. Passages that share an id and differ otherwise all stay, for the
    request to refuse: which one is meant cannot be told."""
    first: dict[Any, int] = {}
    kept: list[dict[str, Any]] = []
    for passage in passages:
        at = first.get(passage["id"])
        if at is None:
            first[passage["id"]] = len(kept)
            kept.append(passage)
            continue
        earlier = kept[at]
        if not _same_but_score(earlier, passage):
            kept.append(passage)
            continue
        score, before = passage.get("score"), earlier.get("score")
        if _number(score) and (before is None or (_number(before) and score > before)):
            kept[at] = {**earlier, "score": score}  # (a score that is no number: the core's)
    return kept


def kept_originals(passages: list[dict[str, Any]], originals: list[Any]) -> dict[Any, Any]:
    """For each passage id, the framework object (``originals[i]`` made ``passages[i]``) whose
    copy :func:`without_repeats` keeps the score of: the highest, the first of equals. What an
    adapter hands back for a kept passage is then that copy, its metadata and score."""
    chosen: dict[Any, tuple[object, Any]] = {}
    for passage, original in zip(passages, originals, strict=True):
        score, held = passage.get("score"), chosen.get(passage["id"])
        if held is None or (
            _number(score) and (held[0] is None or (_number(held[0]) and score > held[0]))  # type: ignore[operator]
        ):
            chosen[passage["id"]] = (score, original)
    return {key: original for key, (_, original) in chosen.items()}


def _same_but_score(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Whether two passages agree in every field but the score; a field that cannot be
    compared (a numpy array of readers) makes them differ, for the request to name it."""
    try:
        return bool(_but_score(first) == _but_score(second))
    except Exception:  # any value's __eq__ may raise
        return False


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _but_score(passage: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in passage.items() if key != "score"}


def _score(score: object) -> object:
    """A real number that is not a Python ``int`` or ``float`` (numpy's) as a float; anything
    else as given (a string, a list, a bool), for the core to refuse by name."""
    if isinstance(score, numbers.Real) and not isinstance(score, bool | int | float):
        try:
            return float(score)
        except (OverflowError, ValueError):
            return score
    return score


def chat_turns(assembly: Assembly) -> list[tuple[str, str]]:
    """The assembled prompt as ``(role, content)`` pairs, roles ``system``, ``user`` and
    ``assistant``: a separate system prompt first, a text format's prompt as one user turn."""
    turns = []
    if assembly.system is not None:
        turns.append(("system", assembly.system))
    turns.extend((message["role"], message["content"]) for message in assembly.messages)
    if assembly.text is not None:
        turns.append(("user", assembly.text))
    return turns


def checked_fields(
    fields: Mapping[str, Any], models: ModelRegistry | None = None
) -> dict[str, Any]:
    """``fields``, request fields given to an adapter's constructor, validated at once, so a
    misspelt field or an unknown model (looked up in ``models``, the assembler's, by default
    the bundled registry) fails where the component is built rather than on its first run,
    with the error and close matches the request would get."""
    request = parse_request({"query": "check", "passages": [], **fields})
    if "model" in fields:
        (default_registry() if models is None else models).get(request.model)
    return dict(fields)


def checked_options(
    component: str,
    given: Mapping[str, Any],
    options: Sequence[str],
    *,
    framework: Sequence[str] = (),
    instead: str,
) -> None:
    """Refuse what a component with fixed request fields (``options``, besides the framework's
    own ``framework`` arguments) was built with that it would otherwise ignore: a misspelt
    field, or a request field it does not take (``instead`` names what takes it); then check
    the fields given a value as :func:`checked_fields` does."""
    for key in given:
        if key in options or key in framework:
            continue
        allowed = ", ".join((*options, *framework))
        if key in REQUEST_FIELDS:
            raise RequestError(
                f"{component} does not take the request field {shown(key)}; allowed: "
                f"{allowed} ({instead} takes every request field)",
                field=key,
            )
        hint = close_name(key, (*options, *framework))
        raise RequestError(
            f"unknown request field {shown(key)}{hint}; allowed: {allowed}", field=key
        )
    checked_fields({key: given[key] for key in options if given.get(key) is not None})


def headed(
    passages: Sequence[dict[str, Any]], files: Sequence[str | None], kind: str
) -> list[dict[str, Any]]:
    """``passages``, each that has neither a ``title`` nor a ``url`` titled ``files[i]`` (its
    file's title, :mod:`ctxasm.loader_metadata`), else by its position, ``<kind> <n>``: never
    by its id, which frameworks fill with a UUID or a hash that costs tokens and tells the
    model nothing. A passage whose id came before is numbered where it came first, so a
    document returned twice stays one (see :func:`without_repeats`)."""
    firsts: dict[Any, int] = {}
    titled = []
    for position, (passage, file) in enumerate(zip(passages, files, strict=True), start=1):
        first = firsts.setdefault(passage["id"], position)
        if "title" in passage or "url" in passage:
            titled.append(passage)
        else:
            titled.append({**passage, "title": file or f"{kind} {first}"})
    return titled
