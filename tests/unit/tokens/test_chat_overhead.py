"""The chat templates of the open-weight families, against their servers' own encodings.

A chat request is counted with its model's template (``ctxasm.models.chat``, applied by
``OpenAIChatFormat.count``, which the budget and the verify recount use). The count must equal
the tokens of the conversation as the family's server encodes it: Llama 3 rendered with Hugging
Face's chat template and Qwen with ChatML, control tokens parsed, and Mistral by
mistral-common's ``encode_chat_completion`` (a request ending with a user turn ends with
``[/INST]``: Mistral writes nothing more before the reply).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from datetime import date, timedelta
from typing import Any

import pytest
from open_weight_corpus import SPECIAL_LOOKING, corpus, hf_reference

import ctxasm
from chat_templates import GEMMA3_TEMPLATE
from ctxasm import default_registry
from ctxasm.formatting import Rendered
from ctxasm.formatting.openai import OpenAIChatFormat
from ctxasm.models import ModelSpec
from ctxasm.models.chat import LLAMA3_DATE_LINES
from ctxasm.tokens import get_counter, pinned
from ctxasm.tokens.bpe import _tiktoken_ranks

Conversation = list[tuple[str, str]]  # (role, content)


def _contents(*, trimmed: bool = False) -> list[str]:
    """Texts without control-looking strings (a server parses those as control tokens; ctxasm
    counts them as text, more); white space at either end is kept unless ``trimmed``."""
    texts = corpus(4000, seed=7)
    if trimmed:
        texts = [t.strip() for t in texts]
    return [t for t in texts if t.strip() and not any(token in t for token in SPECIAL_LOOKING)]


def _conversations(count: int = 300, *, trimmed: bool = False) -> list[Conversation]:
    """What ctxasm renders: a system message, alternating history turns, the question."""
    rng = random.Random(11)
    contents = _contents(trimmed=trimmed)
    conversations = []
    for _ in range(count):
        messages = [("system", rng.choice(contents))]
        for _ in range(rng.choice((0, 0, 1, 2, 4))):
            messages += [("user", rng.choice(contents)), ("assistant", rng.choice(contents))]
        messages.append(("user", rng.choice(contents)))
        conversations.append(messages)
    return conversations


def _counted(spec: ModelSpec, messages: Conversation) -> int:
    """The count the budget and the verify recount take."""
    rendered = Rendered(tuple({"role": r, "content": c} for r, c in messages), None, None)
    return OpenAIChatFormat().count(rendered, get_counter(spec.tokenizer), spec)


def _family(prefix: str) -> list[ModelSpec]:
    found = [spec for spec in default_registry() if spec.name.startswith(prefix)]
    assert found
    return found


def _mismatches(
    conversations: list[Conversation], spec: ModelSpec, reference: Callable[[Conversation], int]
) -> list[tuple[int, int, Conversation]]:
    found = []
    for messages in conversations:
        expected, counted = reference(messages), _counted(spec, messages)
        if expected != counted:
            found.append((expected, counted, messages))
    return found


# --- Llama 3.x ----------------------------------------------------------------------------------


def _llama_cpp_trim(text: str) -> str:
    """The trim of llama.cpp's Jinja engine (minja): space, tab and line breaks only (Python's
    Jinja trims all of str.isspace)."""
    return text.strip(" \t\n\r")


def _llama_hf_template(
    messages: Conversation, day: str = "26 Jul 2024", trim: Callable[[str], str] = str.strip
) -> str:
    """Hugging Face's chat_template of Llama 3.1 to 3.3, without tools, its ``trim`` filter
    Python's (vLLM's, transformers') unless another is given."""
    (_, system), *rest = messages
    preamble = LLAMA3_DATE_LINES.replace("26 Jul 2024", day)
    text = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    text += preamble + trim(system) + "<|eot_id|>"
    for role, content in rest:
        text += f"<|start_header_id|>{role}<|end_header_id|>\n\n{trim(content)}<|eot_id|>"
    return text + "<|start_header_id|>assistant<|end_header_id|>\n\n"


def _meta_tokenizer() -> Any:
    from llama_models.llama3.tokenizer import Tokenizer

    return Tokenizer(pinned.PINNED["llama-3"].file.locate())


def _llama_reference(trim: Callable[[str], str] = str.strip) -> Callable[[Conversation], int]:
    meta = _meta_tokenizer()

    def encoded(messages: Conversation) -> int:
        text = _llama_hf_template(messages, trim=trim)
        return len(meta.encode(text, bos=False, eos=False, allowed_special="all"))

    return encoded


def _below(
    conversations: list[Conversation], spec: ModelSpec, reference: Callable[[Conversation], int]
) -> list[tuple[int, int, Conversation]]:
    """The conversations counted below ``reference``'s count."""
    return [
        (expected, counted, messages)
        for messages in conversations
        if (counted := _counted(spec, messages)) < (expected := reference(messages))
    ]


def test_llama3_count_equals_hugging_faces_template() -> None:
    for spec in _family("llama-3"):
        assert (spec.tokenizer, spec.chat) == ("pinned:llama-3", "llama3")
    spec = _family("llama-3")[0]
    # contents keep their white space: the template trims it, and so does the count, as
    # llama.cpp's Jinja engine trims, never below Python's trim (vLLM)
    assert _mismatches(_conversations(), spec, _llama_reference(_llama_cpp_trim)) == []
    assert _below(_conversations(), spec, _llama_reference()) == []


def test_metas_chat_format_is_openais_method_with_four_and_five() -> None:
    """docs/models.md: a server that uses Meta's own chat format (no date lines, nothing
    trimmed) is counted exactly with chat = "openai", 4 a message and 5 before the reply."""
    from llama_models.datatypes import RawMessage
    from llama_models.llama3.chat_format import ChatFormat

    chat = ChatFormat(_meta_tokenizer())

    def meta(messages: Conversation) -> int:
        raw = [RawMessage(role=role, content=content) for role, content in messages]
        return len(chat.encode_dialog_prompt(raw).tokens)

    spec = default_registry().with_overrides(
        {"llama-3.1-8b-instruct": {"chat": "openai", "reply_priming": 5}}
    )
    assert _mismatches(_conversations(100), spec.get("llama-3.1-8b-instruct"), meta) == []


def test_llama_date_lines_are_twenty_tokens_on_any_day() -> None:
    counter = get_counter("pinned:llama-3")
    day, lengths = date(2024, 1, 1), set()
    while day < date(2031, 1, 1):
        lengths.add(
            counter.count(LLAMA3_DATE_LINES.replace("26 Jul 2024", day.strftime("%d %b %Y")))
        )
        day += timedelta(days=1)
    assert lengths == {20}


# --- Qwen (ChatML) ------------------------------------------------------------------------------


def _chatml(messages: Conversation) -> str:
    """Qwen 2.5's and Qwen 3's chat_template for a conversation that has a system message."""
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)
    return text + "<|im_start|>assistant\n"


def _qwen_reference(name: str, after_reply_prompt: str = "") -> Callable[[Conversation], int]:
    ranks = _tiktoken_ranks(pinned.PINNED[name].file, pinned.PINNED[name].file.read())
    text_tokens = pinned.QWEN3_TEXT_TOKENS if name == "qwen3" else pinned.QWEN25_TEXT_TOKENS
    server = hf_reference(
        ranks,
        pinned.QWEN_PATTERN,
        nfc=True,
        text_tokens=text_tokens,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
    )
    server.encode_special_tokens = False  # the server parses the template's control tokens

    def encoded(messages: Conversation) -> int:
        text = _chatml(messages) + after_reply_prompt
        return len(server.encode(text, add_special_tokens=False).ids)

    return encoded


@pytest.mark.parametrize(("prefix", "name"), [("qwen2.5", "qwen2.5"), ("qwen3", "qwen3")])
def test_qwen_count_equals_chatml(prefix: str, name: str) -> None:
    for spec in _family(prefix):
        assert (spec.tokenizer, spec.chat) == (f"pinned:{name}", "chatml")
    spec = _family(prefix)[0]
    # contents keep their white space, line breaks that merge with ChatML's newline included
    assert _mismatches(_conversations(), spec, _qwen_reference(name)) == []


def test_qwen3_without_thinking_is_openais_method_with_four_and_seven() -> None:
    """docs/models.md: Qwen 3 called with enable_thinking=False writes <think>\n\n</think>\n\n
    before the reply; chat = "openai" with 4 and 7 counts it exactly when no message opens
    with a line break."""
    server = _qwen_reference("qwen3", after_reply_prompt="<think>\n\n</think>\n\n")
    spec = default_registry().with_overrides({"qwen3-8b": {"chat": "openai", "reply_priming": 7}})
    conversations = _conversations(100, trimmed=True)
    assert _mismatches(conversations, spec.get("qwen3-8b"), server) == []


# --- Mistral ------------------------------------------------------------------------------------

MISTRAL = {
    "mixtral-8x7b-instruct": ("mistral-v1", "mistral-v1"),
    "mistral-7b-instruct": ("mistral-v3", "mistral-v3"),
    "mistral-large": ("mistral-v7", "mistral-v7"),
    "mistral-small": ("mistral-v3", "mistral-v3"),
    "mistral-nemo": ("mistral-tekken", "mistral-v3"),
}


def _mistral_conversations(count: int = 400, seed: int = 13) -> list[Conversation]:
    """A system prompt or none, 1 to 6 user turns alternating with assistant turns, the last a
    user turn; a user turn may be empty, and one in eight conversations repeats a role (the
    server joins such turns)."""
    rng = random.Random(seed)
    contents = _contents()
    conversations = []
    for _ in range(count):
        messages = [("system", rng.choice(contents))] if rng.random() < 0.8 else []
        for turn in range(rng.randint(1, 6)):
            if turn:
                messages.append(("assistant", rng.choice(contents)))
            messages.append(("user", "" if rng.random() < 0.05 else rng.choice(contents)))
        if rng.random() < 0.125:
            at = rng.randrange(len(messages))
            messages.insert(at, (messages[at][0], rng.choice(contents)))
        # mistral-common refuses an assistant turn with no text
        messages = [(r, c) for r, c in messages if r != "assistant" or c.rstrip(" ")]
        conversations.append(messages)
    return conversations


def _mistral_reference(official: Any) -> Callable[[Conversation], int]:
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest

    kinds: dict[str, Any] = {
        "system": SystemMessage,
        "user": UserMessage,
        "assistant": AssistantMessage,
    }

    def encoded(messages: Conversation) -> int:
        request = ChatCompletionRequest(messages=[kinds[r](content=c) for r, c in messages])
        return len(official.encode_chat_completion(request).tokens)

    return encoded


def _official(path: str, version: str | None = None) -> Any:
    """mistral-common's tokenizer for a file, with the instruct version it declares or
    ``version``."""
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    official = MistralTokenizer.from_file(path)
    if version is None:
        return official
    from mistral_common.protocol.instruct.normalize import get_normalizer
    from mistral_common.protocol.instruct.validator import ValidationMode, get_validator
    from mistral_common.tokens.tokenizers.base import TokenizerVersion
    from mistral_common.tokens.tokenizers.instruct import InstructTokenizerV7

    assert version == "v7"
    return MistralTokenizer(
        InstructTokenizerV7(official.instruct_tokenizer.tokenizer),
        get_validator(TokenizerVersion.v7, mode=ValidationMode.test),
        get_normalizer(TokenizerVersion.v7, None),
    )


@pytest.mark.parametrize("model", sorted(MISTRAL))
def test_mistral_count_equals_mistral_common(model: str) -> None:
    file, chat = MISTRAL[model]
    spec = default_registry().get(model)
    assert (spec.tokenizer, spec.chat) == (f"pinned:{file}", chat)
    official = _official(str(pinned.PINNED[file].file.locate()))
    conversations = _mistral_conversations()
    assert _mismatches(conversations, spec, _mistral_reference(official)) == []
    # ...and ctxasm's own requests, alternating, always with a system prompt
    assert _mismatches(_conversations(), spec, _mistral_reference(official)) == []


def test_mistral_v7_rules_hold_for_tekken() -> None:
    """Mistral Small 3 and later: a Tekken file of their own, the v7 instruct format."""
    path = str(pinned.PINNED["mistral-tekken"].file.locate())
    spec = replace(default_registry().get("mistral-nemo"), chat="mistral-v7")
    reference = _mistral_reference(_official(path, "v7"))
    assert _mismatches(_mistral_conversations(200, seed=17), spec, reference) == []


def test_mistral_v2_file_counts_with_the_v3_rules() -> None:
    from importlib import resources

    path = resources.files("mistral_common") / "data" / "mistral_instruct_tokenizer_240216.model.v2"
    spec = replace(default_registry().get("mistral-7b-instruct"), tokenizer=f"sentencepiece:{path}")
    reference = _mistral_reference(_official(str(path)))
    assert _mismatches(_mistral_conversations(200, seed=19), spec, reference) == []


# --- Gemma and DeepSeek V3 (no official file offline: pinned files stand in) --------------------


DEEPSEEK_CONTROL = [
    *("<｜begin▁of▁sentence｜>", "<｜User｜>"),
    *("<｜Assistant｜>", "<｜end▁of▁sentence｜>"),
]


def _deepseek_template(messages: Conversation, *, llama_cpp: bool = False) -> str:
    """DeepSeek V3's chat_template for a conversation with no tool calls (a transcription of
    its Jinja); ``llama_cpp``: llama.cpp's own DeepSeek V3 format, which ends each system
    message with a blank line."""
    system = [c + "\n\n" if llama_cpp else c for r, c in messages if r == "system"]
    text = DEEPSEEK_CONTROL[0] + ("" if llama_cpp else "\n\n").join(system)
    for role, content in messages:
        if role == "user":
            text += "<｜User｜>" + content
        elif role == "assistant":
            text += "<｜Assistant｜>" + content + "<｜end▁of▁sentence｜>"
    return text + "<｜Assistant｜>"


def _split_count(text: str, control: list[str], count: Callable[[str], int]) -> int:
    """A server's count of ``text``: each control token one token, each text between two of
    them tokenized on its own (how Hugging Face's tokenizers split added tokens off)."""
    import re

    pieces = re.split("(" + "|".join(map(re.escape, control)) + ")", text)
    return sum(1 if piece in control else count(piece) for piece in pieces if piece)


def test_gemma_count_equals_its_template_rendered_by_jinja() -> None:
    """Gemma's SentencePiece file stood in for by Mistral's (pinned); the reference renders
    Gemma 3's own template with Jinja and tokenizes it with sentencepiece itself."""
    import jinja2
    import sentencepiece

    def refuse(message: str) -> None:
        raise ValueError(message)

    file = pinned.PINNED["mistral-v3"].file.locate()
    processor = sentencepiece.SentencePieceProcessor(model_file=str(file))
    control = ["<bos>", "<start_of_turn>", "<end_of_turn>"]

    def server(trim: Callable[[str], str]) -> Callable[[Conversation], int]:
        environment = jinja2.Environment()
        environment.filters["trim"] = trim
        template = environment.from_string(GEMMA3_TEMPLATE)

        def encoded(messages: Conversation) -> int:
            text = template.render(
                messages=[{"role": r, "content": c} for r, c in messages],
                bos_token="<bos>",
                add_generation_prompt=True,
                raise_exception=refuse,
            )
            return _split_count(text, control, lambda piece: len(processor.encode(piece)))

        return encoded

    spec = replace(default_registry().get("mistral-7b-instruct"), chat="gemma")
    conversations = _conversations(200)
    conversations += [c[1:] for c in _conversations(50)]  # no system message
    # trimmed as llama.cpp's Jinja engine trims, never below Python's trim (vLLM)
    assert _mismatches(conversations, spec, server(_llama_cpp_trim)) == []
    assert _below(conversations, spec, server(str.strip)) == []


def test_deepseek_count_equals_its_template() -> None:
    """DeepSeek's byte-level BPE stood in for by Llama 3's ranks, as Hugging Face's tokenizers
    would hold them with DeepSeek's control tokens added."""
    file = pinned.PINNED["llama-3"].file
    ranks = _tiktoken_ranks(file, file.read())
    server = hf_reference(
        ranks, pinned.LLAMA3_PATTERN, ignore_merges=True, control_tokens=DEEPSEEK_CONTROL
    )
    server.encode_special_tokens = False  # the server parses the template's control tokens

    def reference(messages: Conversation) -> int:
        """The more of Hugging Face's template and llama.cpp's format (review rv23)."""
        texts = (_deepseek_template(messages, llama_cpp=c) for c in (False, True))
        return max(len(server.encode(t, add_special_tokens=False).ids) for t in texts)

    spec = replace(default_registry().get("llama-3.1-8b-instruct"), chat="deepseek-v3")
    conversations = _conversations(200) + _mistral_conversations(100, seed=29)
    assert _mismatches(conversations, spec, reference) == []
    text = "".join(DEEPSEEK_CONTROL)  # the reference does parse them
    assert len(server.encode(text, add_special_tokens=False).ids) == 4


# --- Whole assemblies ---------------------------------------------------------------------------


def _reference_for(spec: ModelSpec) -> Callable[[Conversation], int]:
    if spec.chat == "llama3":
        return _llama_reference()
    if spec.chat == "chatml":
        return _qwen_reference(spec.tokenizer.removeprefix("pinned:"))
    file = spec.tokenizer.removeprefix("pinned:")
    return _mistral_reference(_official(str(pinned.PINNED[file].file.locate())))


@pytest.mark.parametrize(
    "model",
    [
        "llama-3.1-8b-instruct",
        "qwen2.5-7b-instruct",
        "qwen3-8b",
        "mixtral-8x7b-instruct",
        "mistral-7b-instruct",
        "mistral-large",
        "mistral-small",
        "mistral-nemo",
    ],
)
def test_assembled_requests_are_counted_as_the_server_counts_them(model: str) -> None:
    """The total a report gives is the server's count of the messages it returns, and within
    the request's limit, with history kept and passages dropped by the exact recount."""
    spec = default_registry().get(model)
    reference = _reference_for(spec)
    rng = random.Random(23)
    contents = _contents(trimmed=True)
    seen = []
    for _ in range(12):
        passages = [
            {"id": f"p{i}", "text": rng.choice(contents), "score": rng.random()} for i in range(20)
        ]
        history = []
        for _ in range(rng.randint(0, 2)):
            history += [
                {"role": "user", "content": rng.choice(contents)},
                {"role": "assistant", "content": rng.choice(contents)},
            ]
        result = ctxasm.assemble(
            query=rng.choice(contents)[:200],
            passages=passages,
            model=model,
            history=history,
            context_window=rng.randint(1500, 3000),
            reserve_output_tokens=256,
        )
        report = result.report
        messages = [(m["role"], m["content"]) for m in result.messages]
        seen.append((reference(messages), report.total_tokens))
        assert report.total_tokens <= report.budget.prompt_limit
        assert report.included
    assert [server for server, _ in seen] == [total for _, total in seen]


@pytest.mark.parametrize("model", ["llama-3.1-8b-instruct", "qwen2.5-7b-instruct", "qwen3-8b"])
def test_control_tokens_written_in_passages_stay_text_to_the_server(model: str) -> None:
    """A passage that writes a template's control tokens ("<|im_end|><|im_start|>system") is
    rendered so that the server, parsing control tokens in the conversation, reads them as
    text: its count is the report's, so no turn was ended or opened by the passage."""
    spec = default_registry().get(model)
    reference = _reference_for(spec)
    rng = random.Random(29)
    contents = _contents(trimmed=True)
    for _ in range(8):
        passages = []
        for i in range(12):
            words = rng.choice(contents).split() or ["text"]
            for _ in range(rng.randint(1, 3)):
                words.insert(rng.randint(0, len(words)), rng.choice(SPECIAL_LOOKING) * 2)
            passages.append({"id": f"p{i}", "text": " ".join(words), "score": rng.random()})
        result = ctxasm.assemble(
            query="what do the passages say", passages=passages, model=model, allow_public=True
        )
        messages = [(m["role"], m["content"]) for m in result.messages]
        assert result.report.included
        assert reference(messages) == result.report.total_tokens


@pytest.mark.parametrize(
    ("model", "form"),
    [
        ("llama-3.1-8b-instruct", "text"),
        ("mistral-7b-instruct", "markdown"),
        ("qwen3-8b", "text"),
        ("llama-3.1-8b-instruct", "template"),
    ],
)
def test_a_prompt_sent_as_one_text_is_counted_with_the_servers_bos(model: str, form: str) -> None:
    """A completions server encodes a text prompt with the tokenizer's BOS (Llama 3's
    <|begin_of_text|>, Mistral's <s>; Qwen has none): the report counts it (review rv18: one
    token short, so a request filled to its limit was one over the window)."""
    spec = default_registry().get(model)
    if spec.chat == "llama3":
        meta = _meta_tokenizer()

        def server(text: str) -> int:
            return len(meta.encode(text, bos=True, eos=False, allowed_special=set()))
    elif spec.chat == "chatml":
        counter = get_counter(spec.tokenizer)

        def server(text: str) -> int:
            return counter.count(text)  # Qwen's tokenizer adds no BOS
    else:
        file = pinned.PINNED[spec.tokenizer.removeprefix("pinned:")].file.locate()
        raw = _official(str(file)).instruct_tokenizer.tokenizer

        def server(text: str) -> int:
            return len(raw.encode(text, bos=True, eos=False))

    rng = random.Random(29)
    contents = _contents(trimmed=True)
    extra: dict[str, Any] = {"template": "{{ query }}\n\n{{ sources_block }}"}
    for _ in range(6):
        passages = [{"id": f"p{i}", "text": rng.choice(contents)} for i in range(12)]
        result = ctxasm.assemble(
            query=rng.choice(contents)[:200],
            passages=passages,
            model=model,
            format=form,
            context_window=rng.randint(900, 1600),
            reserve_output_tokens=100,
            **(extra if form == "template" else {}),
        )
        assert result.text is not None
        assert result.report.total_tokens == server(result.text)
        assert result.report.total_tokens <= result.report.budget.prompt_limit
