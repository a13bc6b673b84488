"""Chat templates: the tokens a model's server turns a list of chat messages into.

A model's ``chat`` (a registry field) names its template; :func:`chat_template` returns it.
A template counts a conversation from the model tokenizer's counts of the texts it writes
(``count``), adding one token for each control token:

``openai``
    OpenAI's published method: ``tokens_per_message`` plus the role and content of every
    message, and ``reply_priming`` before the reply. The default, for any model without a
    template of its own.
``llama3``
    Hugging Face's chat template of Llama 3.1 to 3.3, which vLLM and TGI apply.
``chatml``
    ChatML, the template of Qwen 2.5 and 3.
``mistral-v1``, ``mistral-v3``, ``mistral-v7``
    mistral-common's ``encode_chat_completion`` for its v1, v2/v3 and v7 (and later) instruct
    tokenizers, SentencePiece or Tekken alike.
``gemma``
    Hugging Face's chat template of Gemma 3.
``deepseek-v3``
    Hugging Face's chat template of DeepSeek V3 (V3-0324's writes the same tokens).

The open-weight templates are exact: a text the template writes between two control tokens is
counted on its own only where no token can span its edges (each template says why), and
otherwise as the joined string the server tokenizes. A control-token string written inside a
message is counted as text (a server that parses it finds fewer tokens). Which messages a
template receives: a system message first, then user and assistant turns, the last one a user
turn (what ``OpenAIChatFormat`` renders); other shapes are counted as each server encodes them.

A template also counts the tokens it writes before the sources when they come first
(``head``), where the prompt cache's identical prefix starts being measured, and says when it
moves the system prompt between turns (``mistral-v3``), which ends that prefix.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ctxasm.errors import ConfigError

__all__ = [
    "CHAT_NAMES",
    "CHAT_TEMPLATES",
    "LLAMA3_DATE_LINES",
    "TRIMMED",
    "ChatMLChat",
    "ChatTemplate",
    "DeepSeekChat",
    "GemmaChat",
    "Llama3Chat",
    "MistralChat",
    "PerMessageChat",
    "chat_template",
    "check_chat_name",
]

CountText = Callable[[str], int]
Messages = Sequence[Mapping[str, str]]

# What every server's trim removes from a message's ends: Python's Jinja (vLLM, transformers)
# strips all of str.isspace, Rust's minijinja (TGI) Unicode's White_Space, llama.cpp's own
# formats ASCII white space and its Jinja engine (minja, --jinja) space, tab and line breaks
# only. A message is counted trimmed of these alone, so the count is never below any of theirs
# (a question ending in U+3000, common in Japanese, or a form feed from a PDF keeps it there).
TRIMMED = " \t\n\r"

# The system prompt Hugging Face's Llama 3.1 to 3.3 templates open with (the 3.1 and 3.3
# templates write this date; 3.2 writes today's, and every date takes as many tokens).
LLAMA3_DATE_LINES = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"


class ChatTemplate(Protocol):
    """How one family's server tokenizes a chat request."""

    @property
    def name(self) -> str: ...

    @property
    def text_start(self) -> int:
        """The tokens a server of this family writes before a prompt sent as one text (a
        completion, not messages): the tokenizer's BOS, which vLLM, llama.cpp and
        mistral-common add to Llama 3 and Mistral prompts."""
        ...

    @property
    def alternates(self) -> bool:
        """Whether the template refuses two messages of one role in a row (Gemma's): the
        ``openai`` format then joins them into one, with a blank line between."""
        ...

    def count(self, messages: Messages, count: CountText) -> int:
        """The tokens of ``messages`` and the reply prompt, each text counted with ``count``."""
        ...

    def turn(self, role: str, content: str, count: CountText) -> int:
        """The tokens one user or assistant turn adds to a conversation whose turns alternate,
        when it holds neither the system prompt nor the question (a history turn)."""
        ...

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        """The tokens before the sources in a chat that puts them first (planning for the
        prompt cache): a system message ``system``, a user message that opens with the
        sources, then the history and the question; ``replies``: the history has an assistant
        turn. With them, what else decides those tokens: empty where the template always
        writes the system prompt before the sources, else where it put it. A lower bound
        where the tokens before the sources are not known exactly."""
        ...


@dataclass(frozen=True, slots=True)
class PerMessageChat:
    """``openai``: a fixed number of tokens per message and before the reply."""

    tokens_per_message: int
    reply_priming: int
    name: str = "openai"

    text_start = 0
    alternates = False

    def count(self, messages: Messages, count: CountText) -> int:
        turns = (self.turn(m["role"], m["content"], count) for m in messages)
        return self.reply_priming + sum(turns)

    def turn(self, role: str, content: str, count: CountText) -> int:
        return self.tokens_per_message + count(role) + count(content)

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        # OpenAI writes <|im_start|>{role}<|im_sep|>{content}<|im_end|>: two of a message's
        # tokens before its content, one after. Other servers counted this way may write
        # fewer before it, never all (one ends the message).
        before = max(0, min(2, self.tokens_per_message - 1))
        return self.turn("system", system, count) + before + count("user"), ""


@dataclass(frozen=True, slots=True)
class Llama3Chat:
    """``llama3``: ``<|begin_of_text|>``, then per message
    ``<|start_header_id|>{role}<|end_header_id|>\\n\\n{content, trimmed}<|eot_id|>`` with the
    date lines opening the system message (written, empty, when there is none), then the
    assistant header.

    Control tokens are split off before the text is tokenized, so the role and each
    ``"\\n\\n" + content`` are tokenized alone. The trimmed content starts with a character that
    is not white space, where Llama 3's pattern ends a run of newlines: the blank line after
    the header (and at the end of the date lines) is a piece of its own, counted apart.
    """

    name: str = "llama3"

    text_start = 1
    alternates = False

    def count(self, messages: Messages, count: CountText) -> int:
        rest = list(messages)
        system = rest.pop(0)["content"] if rest and rest[0]["role"] == "system" else ""
        total = 1 + self.turn("system", system, count) + count(LLAMA3_DATE_LINES)
        total += sum(self.turn(m["role"], m["content"], count) for m in rest)
        return total + 2 + count("assistant") + count("\n\n")

    def turn(self, role: str, content: str, count: CountText) -> int:
        # The template trims the content, each server its own way: counted trimmed as they all
        # trim (TRIMMED), never below any of them (3,000 U+001F closing a question were 3,000
        # tokens TGI sent that a count trimmed as Python trims left out).
        return 3 + count(role) + count("\n\n") + count(content.strip(TRIMMED))

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        system_turn = 1 + self.turn("system", system, count) + count(LLAMA3_DATE_LINES)
        return system_turn + 2 + count("user") + count("\n\n"), ""


@dataclass(frozen=True, slots=True)
class ChatMLChat:
    """``chatml``: per message ``<|im_start|>{role}\\n{content}<|im_end|>\\n``, then
    ``<|im_start|>assistant\\n``.

    ``role + "\\n" + content`` is tokenized as one text. The role ends before the newline (a
    letter run never takes one), and the newline is a piece of its own unless the content
    opens with white space that holds a line break (Qwen's pattern then takes the whole run of
    line breaks): only then is ``"\\n" + content`` counted joined.
    """

    name: str = "chatml"

    text_start = 0
    alternates = False

    def count(self, messages: Messages, count: CountText) -> int:
        total = sum(self.turn(m["role"], m["content"], count) for m in messages)
        return total + 1 + count("assistant") + count("\n")

    def turn(self, role: str, content: str, count: CountText) -> int:
        lead = content[: len(content) - len(content.lstrip())]
        if "\n" in lead or "\r" in lead:
            text = count("\n" + content)
        else:
            text = count("\n") + count(content)
        return 2 + count(role) + text + count("\n")

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        # the sources open with a letter: the newline after the role is a piece of its own
        return self.turn("system", system, count) + 1 + count("user") + count("\n"), ""


@dataclass(frozen=True, slots=True)
class MistralChat:
    """``mistral-v1``, ``mistral-v3``, ``mistral-v7``: mistral-common's encoding of a chat.

    mistral-common first joins consecutive messages of one role with a blank line (empty ones
    left out) and, before v7, gathers the system messages into one system prompt and opens
    the chat with an empty user turn if it does not open with one. It then writes ``<s>``
    and, per turn:

    - v1: a user turn as the text ``[INST] {content} [/INST]`` (no control tokens), the system
      prompt and a blank line before the *first* user turn's content; an assistant turn as its
      content and ``</s>``;
    - v3 (v2 alike): a user turn as ``[INST]{content}[/INST]``, the system prompt and a blank
      line before the *last* user turn's content; an assistant turn as its content with
      trailing spaces removed, and ``</s>``;
    - v7: as v3, but each system message in its place as
      ``[SYSTEM_PROMPT]{content}[/SYSTEM_PROMPT]``, never joined to a user turn.

    Each turn's text is encoded by a call of its own, so no token spans two turns and a turn
    is counted alone. Texts joined before encoding are counted joined: tokens do merge across
    a blank line (Tekken's ``".\\n\\n"``) and SentencePiece drops its leading space from what
    follows one, so the sum of the parts would be wrong. Counting the joined text costs no
    more: SentencePiece counts are not split into cached parts anyway, and a Tekken count
    still reuses the cached passages of the sources block.
    """

    version: int

    @property
    def name(self) -> str:
        return f"mistral-v{self.version}"

    text_start = 1
    alternates = False

    def count(self, messages: Messages, count: CountText) -> int:
        turns = _turns(messages, keep_system=self.version >= 7)
        if self.version >= 7:
            turns = turns or [("user", "")]
        else:
            if not turns or turns[0][0] != "user":
                turns.insert(0, ("user", ""))
            system = [m["content"] for m in messages if m["role"] == "system" and m["content"]]
            if system:
                users = [i for i, (role, _) in enumerate(turns) if role == "user"]
                at = users[0] if self.version == 1 else users[-1]
                turns[at] = ("user", "\n\n".join([*system, turns[at][1]]))
        return 1 + sum(self.turn(role, content, count) for role, content in turns)

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        if self.version >= 7:  # <s>, the system prompt in its place, [INST]
            return 1 + self.turn("system", system, count) + 1, ""
        if self.version == 1:  # the system prompt opens the first user turn, always
            return 1 + count(f"[INST] {system}\n\n" if system else "[INST]"), ""
        # v3 writes the system prompt in the last user turn: the sources' own, joined, until
        # an assistant turn follows them; then it moves to the question's
        if not system:
            return 2, ""
        if replies:
            return 2, "the system prompt in the last user turn"
        return 2 + count(f"{system}\n\n"), ""

    def turn(self, role: str, content: str, count: CountText) -> int:
        if role == "assistant":
            return 1 + count(content if self.version == 1 else content.rstrip(" "))
        if self.version == 1:  # [INST] is text to the v1 tokenizer
            return count(f"[INST] {content} [/INST]")
        return 2 + count(content)


@dataclass(frozen=True, slots=True)
class GemmaChat:
    """``gemma``: Gemma 3's template. ``<bos>``, then per message
    ``<start_of_turn>{role}\\n{content, trimmed}<end_of_turn>\\n`` with ``model`` for the
    assistant's role, the system prompt and a blank line opening the first turn's content (the
    system message itself is no turn), then ``<start_of_turn>model\\n``.

    Control tokens are split off before the text is tokenized, so the role line with the
    content (one text: SentencePiece has no pre-tokenizer to end a token at the line break) and
    the newline after each ``<end_of_turn>`` are tokenized apart. The template refuses turns
    that do not alternate user, model, user (``alternates``), so the ``openai`` format joins
    two user messages in a row (the sources and the question of a request planned for the
    prompt cache) into one; llama.cpp's Gemma format writes each message as a turn, as other
    shapes are counted here.
    """

    name: str = "gemma"

    text_start = 1
    alternates = True

    def count(self, messages: Messages, count: CountText) -> int:
        rest = list(messages)
        prefix = rest.pop(0)["content"] + "\n\n" if rest and rest[0]["role"] == "system" else ""
        turns = (
            self._turn(m["role"], prefix if i == 0 else "", m["content"], count)
            for i, m in enumerate(rest)
        )
        return 1 + sum(turns) + 1 + count("model\n")

    def turn(self, role: str, content: str, count: CountText) -> int:
        return self._turn(role, "", content, count)

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        # the sources open the text that the role line and the system prompt begin: an
        # estimate of the tokens before them (SentencePiece may join the two)
        return 2 + count(f"user\n{system}\n\n" if system else "user\n"), ""

    @staticmethod
    def _turn(role: str, prefix: str, content: str, count: CountText) -> int:
        # trimmed as every server trims (TRIMMED): never below any server's count
        role = "model" if role == "assistant" else role
        return 2 + count(f"{role}\n{prefix}{content.strip(TRIMMED)}") + count("\n")


@dataclass(frozen=True, slots=True)
class DeepSeekChat:
    """``deepseek-v3``: DeepSeek V3's (and V3-0324's) template. ``<｜begin▁of▁sentence｜>``,
    the system messages joined by a blank line, then per turn ``<｜User｜>{content}`` or
    ``<｜Assistant｜>{content}<｜end▁of▁sentence｜>``, then ``<｜Assistant｜>``. Nothing is
    trimmed.

    Every text stands between two control tokens, so each is counted on its own. llama.cpp's
    own DeepSeek V3 format ends each system message with a blank line, which the system prompt
    is counted with where that is more. Later DeepSeek templates (R1, V3.1, V3.2) write
    ``<think>`` or ``</think>`` tokens this one does not: they are not counted.
    """

    name: str = "deepseek-v3"

    text_start = 1
    alternates = False

    def count(self, messages: Messages, count: CountText) -> int:
        system = [m["content"] for m in messages if m["role"] == "system"]
        turns = (self.turn(m["role"], m["content"], count) for m in messages)
        return 1 + self._system(system, count) + sum(turns) + 1

    def turn(self, role: str, content: str, count: CountText) -> int:
        if role == "user":
            return 1 + count(content)
        if role == "assistant":
            return 2 + count(content)
        return 0  # the system prompt opens the chat; the template writes no other role

    def head(self, system: str, count: CountText, *, replies: bool) -> tuple[int, str]:
        return 1 + self._system([system], count) + 1, ""

    @staticmethod
    def _system(prompts: list[str], count: CountText) -> int:
        """The system prompts' tokens: joined by a blank line (Hugging Face's template), or
        each followed by one (llama.cpp's format), whichever is more; none without any."""
        if not prompts:
            return 0
        joined = "\n\n".join(prompts)
        return max(count(joined), count(joined + "\n\n"))


def _turns(messages: Messages, *, keep_system: bool) -> list[tuple[str, str]]:
    """The turns mistral-common encodes: runs of one role joined by a blank line, empty
    contents left out; system messages each kept in place, or left out."""
    runs: list[tuple[str, list[str]]] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system" and not keep_system:
            continue
        if runs and runs[-1][0] == role and role != "system":
            runs[-1][1].append(content)
        else:
            runs.append((role, [content]))
    return [(role, "\n\n".join(part for part in parts if part)) for role, parts in runs]


CHAT_TEMPLATES: dict[str, ChatTemplate] = {
    "llama3": Llama3Chat(),
    "chatml": ChatMLChat(),
    "mistral-v1": MistralChat(1),
    "mistral-v3": MistralChat(3),
    "mistral-v7": MistralChat(7),
    "gemma": GemmaChat(),
    "deepseek-v3": DeepSeekChat(),
}
CHAT_NAMES = ("openai", *CHAT_TEMPLATES)


def check_chat_name(name: object, where: str) -> None:
    """Raise a :class:`ConfigError` unless ``name`` names a chat template."""
    if name in CHAT_NAMES:
        return
    close = difflib.get_close_matches(str(name).lower(), CHAT_NAMES, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise ConfigError(
        f"{where} must be one of {', '.join(CHAT_NAMES)}, got {name!r}{hint} "
        "(docs/models.md#chat-overhead)",
        field=where,
    )


def chat_template(name: str, tokens_per_message: int, reply_priming: int) -> ChatTemplate:
    """The template ``name`` names; ``openai`` counts with the two per-message constants."""
    if name == "openai":
        return PerMessageChat(tokens_per_message, reply_priming)
    return CHAT_TEMPLATES[name]
