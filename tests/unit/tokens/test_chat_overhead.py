"""The registry's chat overhead for open-weight families, against their chat templates.

A request is budgeted as ``reply_priming + sum(tokens_per_message + count(role) +
count(content))`` (formatting/openai.py). For Llama 3 and Qwen that sum must equal the tokens
of the conversation rendered with the family's template, special tokens parsed as the server
parses them; for Mistral, whose formats do not add a fixed amount per message, it must never be
below what mistral-common encodes.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest
from open_weight_corpus import SPECIAL_LOOKING, corpus, hf_reference

from ctxasm import default_registry
from ctxasm.models import ModelSpec
from ctxasm.tokens import get_counter, pinned
from ctxasm.tokens.bpe import _tiktoken_ranks

Conversation = list[tuple[str, str]]  # (role, content)

# The system prompt Hugging Face's Llama 3.1 to 3.3 templates open with (date_string defaults to
# "26 Jul 2024"; the 3.2 template writes today's date).
LLAMA_PREAMBLE = "Cutting Knowledge Date: December 2023\nToday Date: {date}\n\n"


def _contents() -> list[str]:
    """Texts as templates receive them: trimmed (Llama's template trims), no control-looking
    strings (a server parses those as control tokens; ctxasm counts them as text, more)."""
    texts = [t.strip() for t in corpus(4000, seed=7)]
    return [t for t in texts if t and not any(token in t for token in SPECIAL_LOOKING)]


def _conversations(count: int = 300) -> list[Conversation]:
    rng = random.Random(11)
    contents = _contents()
    conversations = []
    for _ in range(count):
        messages = [("system", rng.choice(contents))]
        for _ in range(rng.choice((0, 0, 1, 2, 4))):
            messages += [("user", rng.choice(contents)), ("assistant", rng.choice(contents))]
        messages.append(("user", rng.choice(contents)))
        conversations.append(messages)
    return conversations


def _budgeted(spec: ModelSpec, messages: Conversation) -> int:
    counter = get_counter(spec.tokenizer)
    per_message = (
        spec.tokens_per_message + counter.count(r) + counter.count(c) for r, c in messages
    )
    return spec.reply_priming + sum(per_message)


def _family(prefix: str) -> list[ModelSpec]:
    found = [spec for spec in default_registry() if spec.name.startswith(prefix)]
    assert found
    return found


# --- Llama 3.x ----------------------------------------------------------------------------------


def _llama_hf_template(messages: Conversation, day: str = "26 Jul 2024") -> str:
    """Hugging Face's chat_template of Llama 3.1 to 3.3, without tools."""
    (_, system), *rest = messages
    text = "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
    text += LLAMA_PREAMBLE.format(date=day) + system.strip() + "<|eot_id|>"
    for role, content in rest:
        text += f"<|start_header_id|>{role}<|end_header_id|>\n\n{content.strip()}<|eot_id|>"
    return text + "<|start_header_id|>assistant<|end_header_id|>\n\n"


def test_llama3_overhead_equals_hugging_faces_template() -> None:
    from llama_models.llama3.tokenizer import Tokenizer

    meta = Tokenizer(pinned.PINNED["llama-3"].file.locate())
    for spec in _family("llama-3"):
        assert (spec.tokenizer, spec.tokens_per_message, spec.reply_priming) == (
            "pinned:llama-3",
            4,
            25,
        )
    spec = _family("llama-3")[0]
    wrong = []
    for messages in _conversations():
        rendered = meta.encode(
            _llama_hf_template(messages), bos=False, eos=False, allowed_special="all"
        )
        if len(rendered) != _budgeted(spec, messages):
            wrong.append(messages)
    assert wrong == []


def test_llama3_overhead_is_metas_chat_format_plus_the_date_lines() -> None:
    from llama_models.datatypes import RawMessage
    from llama_models.llama3.chat_format import ChatFormat
    from llama_models.llama3.tokenizer import Tokenizer

    chat = ChatFormat(Tokenizer(pinned.PINNED["llama-3"].file.locate()))
    spec = _family("llama-3")[0]
    wrong = []
    for messages in _conversations(100):
        raw = [RawMessage(role=role, content=content) for role, content in messages]
        tokens = chat.encode_dialog_prompt(raw).tokens
        if len(tokens) + 20 != _budgeted(spec, messages):
            wrong.append(messages)
    assert wrong == []


def test_llama_date_lines_are_twenty_tokens_on_any_day() -> None:
    counter = get_counter("pinned:llama-3")
    day, lengths = date(2024, 1, 1), set()
    while day < date(2031, 1, 1):
        lengths.add(counter.count(LLAMA_PREAMBLE.format(date=day.strftime("%d %b %Y"))))
        day += timedelta(days=1)
    assert lengths == {20}


# --- Qwen (ChatML) ------------------------------------------------------------------------------


def _chatml(messages: Conversation) -> str:
    """Qwen 2.5's and Qwen 3's chat_template for a conversation that has a system message."""
    text = "".join(f"<|im_start|>{role}\n{content}<|im_end|>\n" for role, content in messages)
    return text + "<|im_start|>assistant\n"


@pytest.mark.parametrize(("prefix", "name"), [("qwen2.5", "qwen2.5"), ("qwen3", "qwen3")])
def test_qwen_overhead_equals_chatml(prefix: str, name: str) -> None:
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
    for spec in _family(prefix):
        assert (spec.tokenizer, spec.tokens_per_message, spec.reply_priming) == (
            f"pinned:{name}",
            4,
            3,
        )
    spec = _family(prefix)[0]
    wrong = []
    for messages in _conversations():
        rendered = server.encode(_chatml(messages), add_special_tokens=False)
        if len(rendered.ids) != _budgeted(spec, messages):
            wrong.append(messages)
    assert wrong == []


# --- Mistral ------------------------------------------------------------------------------------

MISTRAL = {
    "mixtral-8x7b-instruct": "mistral-v1",
    "mistral-7b-instruct": "mistral-v3",
    "mistral-large": "mistral-v7",
    "mistral-small": "mistral-tekken",
}


@pytest.mark.parametrize("model", sorted(MISTRAL))
def test_mistral_overhead_is_an_upper_bound_of_mistral_common(model: str) -> None:
    from mistral_common.protocol.instruct.messages import (
        AssistantMessage,
        SystemMessage,
        UserMessage,
    )
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    spec = default_registry().get(model)
    assert spec.tokenizer == f"pinned:{MISTRAL[model]}"
    official = MistralTokenizer.from_file(str(pinned.PINNED[MISTRAL[model]].file.locate()))
    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}
    slack: dict[int, list[int]] = {}  # budgeted minus encoded, by number of messages
    for messages in _conversations(600):
        request = ChatCompletionRequest(messages=[kinds[r](content=c) for r, c in messages])
        encoded = len(official.encode_chat_completion(request).tokens)
        slack.setdefault(len(messages), []).append(_budgeted(spec, messages) - encoded)
    assert min(min(values) for values in slack.values()) >= 0
    # ...and not by much for a system prompt and one question, ctxasm's usual request
    assert max(slack[2]) <= spec.tokens_per_message + 4
