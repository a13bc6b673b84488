"""The guard slot: passages are data, never instructions.

The ``scan`` strategy looks for what prompt injections are made of:

- ``instruction_override``: "ignore (all) previous instructions" and its variants, "you are now
  ...", "new instructions:", "developer mode", "do anything now";
- ``role_marker``: fake role or system markers and chat-template tokens (a line starting
  ``system:`` or ``assistant:``, ``<|im_start|>``, ``[INST]``, ``<<SYS>>``,
  ``<|start_header_id|>``, ``<start_of_turn>``, ``</s>`` ...), and tags that imitate the
  structure ctxasm renders (``<document>``, ``</document_content>``, ``<source>``,
  ``<system>``, ``<instructions>``);
- ``tool_call``: tool or function call look-alikes (``"tool_calls"``, ``"function_call"``,
  ``<tool_call>``, ``<function=...>``);
- ``hidden_text``: the zero-width space, word joiners, the byte-order mark, bidirectional
  embedding, override and isolate controls, and Unicode tag characters, which hide text from a
  human reader but not from the model (the left-to-right and right-to-left marks and the
  zero-width (non-)joiners, common in names and emoji, are not flagged);
- ``encoded_blob``: long base64 or hex runs (``min_blob_chars`` or more), a common way to
  smuggle instructions past filters;
- ``exfiltration_link``: Markdown images or links whose URL carries a query string or a
  placeholder (``![](https://x.example/?q={data})``), which a model rendering Markdown would fetch
  with data in it, and phrases asking to send or append data to a URL.

Policy ``flag`` (the default) keeps the passage and marks it: its header line says which checks
fired, in every format, and its ``included`` entry lists the ``flags``. Policy ``drop`` excludes
it with reason ``injection``. Every format's system text already states that sources are data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ctxasm.registry import Strategy, register, require_choice, require_int

__all__ = ["CHECKS", "InjectionScan", "clear_caches"]

STAGE = "guard"

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass|skip)\b[^.\n]{0,40}?"
    r"\b(?:previous|prior|above|earlier|preceding|all|any|the|your|system|these)\b[^.\n]{0,20}?"
    r"\b(?:instructions?|rules|directions|directives|guidelines|prompts?|context|constraints)\b"
    r"|\b(?:ignore|disregard|forget)\s+(?:everything|all|anything)\s+(?:above|before|said|you)\b"
    r"|\bignore the above\b|\bdo not (?:follow|obey) (?:the|your|any) (?:instructions|rules)\b"
    r"|\bpretend (?:you are|to be) (?:an? )?(?:unrestricted|unfiltered|different|evil)\b"
    r"|\byou are now (?:an?|the|in|dan|free)\b|\bnew (?:instructions|rules|system prompt)\s*:"
    r"|\b(?:developer|god|jailbreak|dan) mode\b|\bdo anything now\b"
    r"|\bfrom now on,? (?:you|ignore|answer|respond)\b",
    re.IGNORECASE,
)
_ROLE = re.compile(
    r"(?:^|\n)\s*(?:#{1,4}\s*)?(?:system|assistant|developer|human)\s*:"
    r"|(?:^|\n)\s*#{2,4}\s*(?:instruction|response|system)\s*:?\s*(?:\n|$)"
    r"|(?:^|\n)\s*\[Source \d+\]"
    r"|<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|"
    r"end_header_id|begin_of_text)\|>"
    r"|\[/?INST\]|<</?SYS>>|<start_of_turn>|<end_of_turn>|</s>|<s>\s*\[INST\]"
    r"|</?(?:documents?|document_content|source|system|instructions?)\b[^<>]*>",
    re.IGNORECASE,
)
_TOOL = re.compile(
    r"\"(?:tool_calls|function_call|tool_call)\"\s*:|</?tool_call>|<function=|"
    r"\"name\"\s*:\s*\"[\w.-]+\"\s*,\s*\"(?:arguments|parameters)\"\s*:",
    re.IGNORECASE,
)
_HIDDEN = re.compile("[\u200b\u2060-\u2064\ufeff\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
_EXFIL = re.compile(
    r"!\[[^\]\n]*\]\(\s*https?://[^)\s]*(?:\?|\{|%7B|\$)[^)]*\)"
    r"|\[[^\]\n]*\]\(\s*https?://[^)\s]*(?:\{|%7B|\$\{)[^)]*\)"
    r"|\b(?:send|post|append|forward|upload|include)\b[^.\n]{0,60}?"
    r"\b(?:conversation|chat history|system prompt|password|api key|secret|token|data)\b"
    r"[^.\n]{0,60}?https?://",
    re.IGNORECASE,
)

# Cheap substring tests (on the lower-cased text) that every match of a check contains: a
# passage without any of them skips that check's regular expression.
_HINTS = {
    "instruction_override": (
        "ignore",
        "pretend",
        "do not follow",
        "do not obey",
        "disregard",
        "forget",
        "override",
        "bypass",
        "skip",
        "you are now",
        "new instructions",
        "new rules",
        "new system prompt",
        "developer mode",
        "god mode",
        "jailbreak mode",
        "dan mode",
        "do anything now",
        "from now on",
    ),
    "role_marker": (
        "<|",
        "inst]",
        "<<sys",
        "<</sys",
        "_of_turn>",
        "</s>",
        "[source ",
        "### ",
        "<document",
        "</document",
        "<source",
        "</source",
        "<system",
        "</system",
        "<instruction",
        "</instruction",
    ),
    "tool_call": ("tool_call", "function_call", "<function=", '"arguments"', '"parameters"'),
    "exfiltration_link": ("http",),
}
# A role line ("system:", "assistant :") also needs a colon and one of these words.
_ROLE_WORDS = ("system", "assistant", "developer", "human")


CHECKS = (
    "instruction_override",
    "role_marker",
    "tool_call",
    "hidden_text",
    "encoded_blob",
    "exfiltration_link",
)


@lru_cache(maxsize=16)
def _blob_regex(size: int) -> re.Pattern[str]:
    return re.compile(r"[A-Za-z0-9+/]{%d,}" % size)  # noqa: UP031 - a regex quantifier


@register
@dataclass(frozen=True)
class InjectionScan(Strategy):
    """Scan passages for prompt-injection patterns (see the module docstring); ``flag`` marks
    them, ``drop`` excludes them with reason ``injection``."""

    name: ClassVar[str] = "scan"
    slot: ClassVar[str] = "guard"
    policy: str = "flag"
    min_blob_chars: int = 200

    def __post_init__(self) -> None:
        require_choice("policy", self.policy, ("flag", "drop"))
        require_int("min_blob_chars", self.min_blob_chars, low=16)

    def scan(self, text: str) -> tuple[str, ...]:
        """The names of the checks ``text`` fails, in ``CHECKS`` order (cached by text)."""
        return _scan(text, self.min_blob_chars)


def clear_caches() -> None:
    """Forget cached scan results (for cold-start measurements)."""
    _scan.cache_clear()


@lru_cache(maxsize=16384)
def _scan(text: str, min_blob_chars: int) -> tuple[str, ...]:
    found = []
    lowered = text.lower()

    def hinted(check: str) -> bool:
        return any(hint in lowered for hint in _HINTS[check])

    if hinted("instruction_override") and _OVERRIDE.search(text):
        found.append("instruction_override")
    role_line = ":" in text and any(word in lowered for word in _ROLE_WORDS)
    if (role_line or hinted("role_marker")) and _ROLE.search(text):
        found.append("role_marker")
    if hinted("tool_call") and _TOOL.search(text):
        found.append("tool_call")
    if not text.isascii() and _HIDDEN.search(text):
        found.append("hidden_text")
    # Hex is a subset of the base64 alphabet, so one run of either alphabet covers both.
    if len(text) >= min_blob_chars and _blob_regex(min_blob_chars).search(text):
        found.append("encoded_blob")
    if hinted("exfiltration_link") and _EXFIL.search(text):
        found.append("exfiltration_link")
    return tuple(found)
