"""The guard slot: passages are data, never instructions.

The ``scan`` strategy scores a passage for what prompt injections are made of and names the
checks whose evidence carried it over ``threshold``:

- ``instruction_override``: "ignore (all) previous instructions", "disregard the above",
  "forget your rules", "you are now ...", "act as an unrestricted ...", "developer mode", text
  that addresses an AI reader and tells it what to put in its reply, in twenty languages; and
  in English, an AI reader addressed ("hey bot,", "[For assistants: ...]", "AI agents must
  ...") and given a directive of any kind, to act, write or leave out (``stages.guard_address``);
- ``prompt_leak``: asking for the system prompt or the instructions, word for word;
- ``role_marker``: fake role lines (``system:``, ``User:``, ``SYSTEM NOTE:``, ``[SYSTEM]``),
  chat-template tokens (``<|im_start|>``, ``[INST]``, ``<<SYS>>`` ...), tags that imitate the
  structure ctxasm renders (``<document>``, ``<source>``, ``<system>``), and look-alikes of a
  ``[Source N]`` label (``[Source: 1]``, full-width or CJK brackets and digits) anywhere;
- ``tool_call``: tool or function call look-alikes (``"tool_calls":``, ``<function=``),
  ``{"role": "system", ...}`` objects (JSON or Python quotes), and "call send_email ...";
- ``hidden_text``: invisible characters that hide text from a human reader but not from a
  model (zero-width space, word joiners, BOM, bidirectional controls, Unicode tag characters),
  and, weakly, an HTML comment with words in it;
- ``encoded_blob``: base64 or hex runs of ``min_blob_chars`` or more, "decode this and do what
  it says", and any short encoded payload (base64, base32, hex, binary, ascii85 or base85,
  escapes, tag characters, Morse, ROT13, text written backwards) whose decoded text itself
  scores as an injection;
- ``exfiltration_link``: Markdown images or links, and ``<img src>``, whose url carries data
  (a query string, a placeholder, a data-like path segment), and "send the customer data to
  ``someone@example.com`` / ``https://...``".

Matching reads folded text (``stages.guard_text``: NFKC, case, accents, invisible characters,
look-alike letters, leetspeak) against the tables of ``stages.guard_lexicon``; text whose
words cannot make up any rule (most prose) is known as such from the set of its words and is
not walked word by word (``stages.guard_phrases.may_fire``). Every rule that fires adds its
weight; a passage is flagged when the sum within one scan window reaches ``threshold`` (1.0 by
default): strong signals (a chat-template token, "ignore all previous instructions") reach it
alone, weak ones ("system", "ignore", "your answer") need corroboration.
Text is scanned in windows of ``SCAN_WINDOW`` characters overlapping by ``SCAN_OVERLAP``; every
step is linear in the length, so a scan's time is too.

Policy ``flag`` (the default) keeps the passage and marks it: its header line says which checks
fired, in every format, and its ``included`` entry lists the ``flags``. Policy ``drop`` excludes
it with reason ``injection``. Every format's system text already states that sources are data.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ctxasm.deadline import checkpoint
from ctxasm.keys import CACHE_CHARS, text_cache
from ctxasm.stages.guard_address import address_hits
from ctxasm.stages.guard_markers import blob_hits, hidden_hits, line_hits, link_hits, token_hits
from ctxasm.stages.guard_phrases import (
    Hit,
    ciphers,
    clear_word_cache,
    concept_events,
    letters_in_a_row,
    load_tables,
    may_address,
    may_fire,
    may_fire_anywhere,
    merged_sentences,
    score_events,
    spell,
    with_parts,
)
from ctxasm.stages.guard_text import (
    camel_read,
    clear_text_cache,
    decoded_payloads,
    encoded_runs,
    fold,
    fold_spaced,
    load_fold_table,
    markdown_read,
    markup_read,
    separated_read,
    symbols_read,
    uncommented_read,
    without_padding,
)
from ctxasm.strategy import Strategy, require_choice, require_int, require_number

__all__ = ["CHECKS", "SCAN_OVERLAP", "SCAN_WINDOW", "InjectionScanGuard", "clear_caches"]

STAGE = "guard"

CHECKS = (
    "instruction_override",
    "role_marker",
    "tool_call",
    "hidden_text",
    "encoded_blob",
    "exfiltration_link",
    "prompt_leak",
)

SCAN_WINDOW = 8192  # characters scored together
SCAN_OVERLAP = 256  # shared by neighbouring windows, so no short pattern is cut in two
MIN_CHECK_WEIGHT = 0.3  # a check is named when its own evidence in the window weighs this much


@dataclass(frozen=True)
class InjectionScanGuard(Strategy):
    """Score passages for prompt-injection evidence (see the module docstring); ``flag`` marks
    those at or over ``threshold``, ``drop`` excludes them with reason ``injection``."""

    name: ClassVar[str] = "scan"
    slot: ClassVar[str] = "guard"
    policy: str = "flag"
    min_blob_chars: int = 200
    threshold: float = 1.0
    # a text of up to this many characters is read in one window (see SCAN_WINDOW)
    window_chars: ClassVar[int] = SCAN_WINDOW

    def __post_init__(self) -> None:
        require_choice("policy", self.policy, ("flag", "drop"))
        require_int("min_blob_chars", self.min_blob_chars, low=16)
        require_number("threshold", self.threshold, low=0.1, high=10.0)

    def prepare(self) -> None:
        load_tables()
        load_fold_table()

    def scan(self, text: str) -> tuple[str, ...]:
        """The names of the checks ``text`` fails, in ``CHECKS`` order (cached by text)."""
        return _scan(text, self.min_blob_chars, float(self.threshold))

    def scan_new(self, text: str, new: Sequence[tuple[int, int]]) -> tuple[str, ...]:
        """What ``scan(text)`` finds where ``text`` is new: in the ``new`` spans (start, end) of
        ``text``, whose other characters were scanned before (a passage grown by stitching).
        A text read in one window is read whole; a longer one, in those of its windows (the
        same windows as ``scan``'s) that hold new characters, with the checks of the whole text
        (invisible characters, blobs) run on the new spans and their surroundings. A passage
        grown window by window so costs a scan of at most a few windows per stitch."""
        threshold = float(self.threshold)
        if len(text) <= SCAN_WINDOW:
            return self.scan(text)
        found: set[str] = set()
        margin = max(SCAN_OVERLAP, self.min_blob_chars)
        for start, end in new:
            around = text[max(0, start - margin) : end + margin]
            hits = (*hidden_hits(around), *blob_hits(around, self.min_blob_chars))
            found.update(hit.check for hit in hits)
        unpadded = without_padding(text)
        if len(unpadded) <= SCAN_WINDOW:
            found |= _window_checks(unpadded, threshold, None)
        else:  # where each span lies once padding is made one character (give or take a run)
            spans = [_unpadded_span(text, start, end, len(unpadded)) for start, end in new]
            step = SCAN_WINDOW - SCAN_OVERLAP
            for start in range(0, len(unpadded) - SCAN_OVERLAP, step):
                stop = start + SCAN_WINDOW
                if any(low < stop and start < high for low, high in spans):
                    checkpoint()
                    found |= _window_checks(unpadded[start:stop], threshold, None)
        return tuple(check for check in CHECKS if check in found)


def clear_caches() -> None:
    """Forget cached scan results and looked-up words (for cold-start measurements)."""
    _scan.cache_clear()
    clear_word_cache()
    clear_text_cache()


@text_cache(CACHE_CHARS)
def _scan(text: str, min_blob_chars: int, threshold: float) -> tuple[str, ...]:
    found: set[str] = set()
    runs = encoded_runs(text)
    for hit in (*hidden_hits(text), *blob_hits(text, min_blob_chars, runs)):
        found.add(hit.check)
    if len(text) > SCAN_WINDOW:  # cut into windows where padding cannot split a phrase
        text = without_padding(text)
    if len(text) <= SCAN_WINDOW:
        found |= _window_checks(text, threshold, runs)
    else:
        for window in _windows(text):
            checkpoint()  # a long passage is many windows' work
            found |= _window_checks(window, threshold, None)
    return tuple(check for check in CHECKS if check in found) if found else ()


def _unpadded_span(text: str, start: int, end: int, unpadded: int) -> tuple[int, int]:
    """Where ``text[start:end]`` lies in ``without_padding(text)`` (``unpadded`` characters
    long), widened by ``SCAN_OVERLAP`` each side (a run of padding across a bound is made one
    character either side of it). Worked out from the shorter side: a span that ends the text
    from what follows its start, any other from what precedes its end."""
    if end == len(text):
        low = unpadded - len(without_padding(text[start:]))
        return low - SCAN_OVERLAP, unpadded
    low, high = len(without_padding(text[:start])), len(without_padding(text[:end]))
    return low - SCAN_OVERLAP, high + SCAN_OVERLAP


def _windows(text: str) -> Iterable[str]:
    if len(text) <= SCAN_WINDOW:
        yield text
        return
    step = SCAN_WINDOW - SCAN_OVERLAP
    for start in range(0, len(text) - SCAN_OVERLAP, step):
        yield text[start : start + SCAN_WINDOW]


def _window_checks(window: str, threshold: float, runs: list[str] | None) -> set[str]:
    folded = fold(window)
    words = with_parts(folded)  # joined words ("previous-instructions") read both ways
    spelled = spell(words)
    marks = _mark_hits(window, folded, spelled)
    phrases = _phrase_hits(words, spelled)
    checks = _flagged([*phrases, *marks], threshold)
    # Invisible characters, dropped by folding, read as spaces too: between two words,
    # dropping one joins them ("ignore\u180eall"). This reading is judged with the same marks.
    spaced = fold_spaced(window)
    if spaced is not None and spaced != folded:
        spaced = with_parts(spaced)
        checks |= _flagged([*_phrase_hits(spaced, spell(spaced)), *marks], threshold)
    # Symbols that stand for letters ("@ll", "in$tructions") are read as them too, words
    # CamelCase joins ("IgnoreAllPrevious") apart, and letters a symbol separates ("i_g_n_o_r_e",
    # "i|g|n|o|r|e") joined.
    separated = separated_read(folded) if "_" in folded or letters_in_a_row(spelled) else None
    # A reading the same as the window's, or as one already read, finds the same phrases: they
    # are found once (a text without symbols, capitals or markup is walked once).
    read = {words: phrases}
    for other in (symbols_read(folded), camel_read(window), separated):
        if other is not None and (reading := with_parts(other)) not in read:
            read[reading] = _phrase_hits(reading, spell(reading))
            checks |= _flagged([*read[reading], *marks], threshold)
    # HTML is read as it renders: "Ignore&nbsp;all", "<b>Set</b> <b>aside</b>", and again
    # without its comments ("ign<!-- -->ore"). What its structure shows once tags are gone (a
    # role line a paragraph tag hid) counts too. So is Markdown: "Ign**ore** prev*ious*".
    for shown in (markup_read(window), uncommented_read(window), markdown_read(window)):
        if shown is not None:
            folded_shown = fold(shown)
            reading = with_parts(folded_shown)
            shown_marks = _mark_hits(shown, folded_shown, None)  # a rule met in both counts once
            if reading not in read:
                read[reading] = _phrase_hits(reading, spell(reading))
            checks |= _flagged([*read[reading], *marks, *shown_marks], threshold)
    for payload in decoded_payloads(window, runs, ciphers(spelled)):
        decoded = _flagged(_text_hits(payload), threshold)
        if decoded:
            checks |= decoded | {"encoded_blob"}
    return checks


def _text_hits(text: str) -> list[Hit]:
    folded = fold(text)
    words = with_parts(folded)
    spelled = spell(words)
    return [*_phrase_hits(words, spelled), *_mark_hits(text, folded, spelled)]


def _phrase_hits(folded: str, spelled: int | None) -> list[Hit]:
    """The phrase rules that fire on ``folded`` text, which ``spell`` read as ``spelled`` (the
    concept walk is skipped where no rule can fire), with sentences of one or two words read
    as part of the next ("Ignore. All. Previous. Instructions.": only more rules can fire)."""
    if not may_fire_anywhere(spelled):
        return []  # most text: no rule's concepts anywhere in it
    merged = merged_sentences(folded)
    if merged is not None:
        folded, spelled = merged, spell(merged)
    return score_events(concept_events(folded)) if may_fire(folded, spelled) else []


def _mark_hits(text: str, folded: str, spelled: int | None) -> list[Hit]:
    """The structural rules that fire on ``text`` (``folded`` as matched, read by ``spell``
    as ``spelled`` where known): template tokens, tags, role lines, labels, links, and an AI
    reader addressed and given a directive (looked for where a word may name one)."""
    addressed = address_hits(folded) if may_address(spelled) else []
    return [*token_hits(folded), *line_hits(text, folded), *link_hits(text, folded), *addressed]


def _flagged(hits: list[Hit], threshold: float) -> set[str]:
    """The checks to name when ``hits`` together reach ``threshold`` (none otherwise)."""
    if not hits:
        return set()
    # Each rule adds its weight once, however often it fires (two plain images are one).
    weights: dict[str, Hit] = {}
    for hit in hits:
        known = weights.get(hit.rule)
        if known is None or hit.weight > known.weight:
            weights[hit.rule] = hit
    if sum(hit.weight for hit in weights.values()) < threshold:
        return set()
    by_check: dict[str, float] = {}
    for hit in weights.values():
        by_check[hit.check] = by_check.get(hit.check, 0.0) + hit.weight
    return {check for check, weight in by_check.items() if weight >= MIN_CHECK_WEIGHT}


def explain(text: str) -> list[Hit]:
    """The rules that fire on ``text`` (its first window), for tuning and debugging."""
    return _text_hits(text[:SCAN_WINDOW])


InjectionScan = InjectionScanGuard  # former name, kept importable
