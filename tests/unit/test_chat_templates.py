"""ctxasm.models.chat: the templates' structure, their names in the registry and in configs,
and the budget's plan around them.

The templates are checked against each server's own encoding in
tests/unit/tokens/test_chat_overhead.py; here each is counted with ``len`` (one token per
character), so every control token and every joined text shows in the total.
"""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

import ctxasm
from ctxasm import ConfigError, default_registry
from ctxasm.data import Candidate, Message, Passage
from ctxasm.formatting.base import PromptParts
from ctxasm.formatting.blocks import RULES
from ctxasm.formatting.openai import OpenAIChatFormat
from ctxasm.models.chat import (
    CHAT_NAMES,
    LLAMA3_DATE_LINES,
    ChatMLChat,
    DeepSeekChat,
    GemmaChat,
    Llama3Chat,
    MistralChat,
    PerMessageChat,
    chat_template,
)
from ctxasm.tokens import get_counter


def _messages(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"role": role, "content": content} for role, content in pairs]


CHAT = _messages(("system", "S"), ("user", "u1"), ("assistant", "a "), ("user", "q"))


def test_the_template_names() -> None:
    names = ["openai", "llama3", "chatml", "mistral-v1", "mistral-v3", "mistral-v7"]
    assert list(CHAT_NAMES) == [*names, "gemma", "deepseek-v3"]
    assert [chat_template(name, 3, 3).name for name in CHAT_NAMES] == list(CHAT_NAMES)


def test_openai_adds_its_constants_to_every_message_and_the_reply() -> None:
    # 7 before the reply; per message 5 plus its role and content
    messages = (5 + 6 + 1) + (5 + 4 + 2) + (5 + 9 + 2) + (5 + 4 + 1)
    assert PerMessageChat(5, 7).count(CHAT, len) == 7 + messages
    assert PerMessageChat(5, 7).turn("user", "u1", len) == 5 + 4 + 2


def test_llama3_trims_each_message_and_opens_the_system_message_with_the_date_lines() -> None:
    header = 3 + len("\n\n")  # <|start_header_id|>, <|end_header_id|>, <|eot_id|>, "\n\n"
    system = header + len("system") + len(LLAMA3_DATE_LINES) + len("S")
    turns = header * 3 + len("user") * 2 + len("assistant") + len("u1") + len("a") + len("q")
    reply = 2 + len("assistant") + len("\n\n")
    assert Llama3Chat().count(CHAT, len) == 1 + system + turns + reply
    assert Llama3Chat().turn("assistant", " a \n", len) == header + len("assistant") + 1
    # no system message: the template writes the date lines with an empty one
    no_system = 1 + header + len("system") + len(LLAMA3_DATE_LINES) + header + 4 + 1 + reply
    assert Llama3Chat().count(_messages(("user", " q")), len) == no_system


@pytest.mark.parametrize("chat", [Llama3Chat(), GemmaChat()])
def test_a_message_is_trimmed_as_every_server_trims_at_least(chat: Llama3Chat | GemmaChat) -> None:
    # Python's Jinja (vLLM) trims U+001C to U+001F too, Rust's minijinja (TGI) White_Space,
    # llama.cpp ASCII white space only: the count keeps what any of them sends (review rv18:
    # 3,000 U+001F closing a question were left out of the count, and TGI's request overflowed
    # the window; rv23: a question closed by U+3000 was a token over on llama.cpp)
    bare = chat.turn("user", "q", len) - 1
    assert chat.turn("user", "\x1fq?\x1f\u3000\n", len) == bare + len("\x1fq?\x1f\u3000")
    assert chat.turn("user", " \xa0q\x85\u2028\t\r\x0b\x0c", len) == bare + 8
    assert chat.turn("user", "\x0c q\t\r\n", len) == bare + 3  # rv24: minja keeps a form feed


def test_chatml_counts_a_content_opening_with_a_line_break_joined_to_the_role_line() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    # <|im_start|>, <|im_end|>, the role, "\n", the content, "\n"
    assert ChatMLChat().turn("user", " q", count) == 2 + 4 + 1 + 2 + 1
    assert sorted(counted) == sorted(["user", "\n", " q", "\n"])
    counted.clear()
    assert ChatMLChat().turn("user", " \nq", count) == 2 + 4 + 4 + 1
    assert sorted(counted) == sorted(["user", "\n \nq", "\n"])
    messages = (2 + 6 + 1 + 1 + 1) + (2 + 4 + 1 + 2 + 1) + (2 + 9 + 1 + 2 + 1) + (2 + 4 + 1 + 1 + 1)
    reply = 1 + len("assistant") + 1
    assert ChatMLChat().count(CHAT, len) == messages + reply


def test_mistral_v1_writes_inst_as_text_and_joins_the_system_prompt_to_the_first_user_turn() -> (
    None
):
    first = len("[INST] S\n\nu1 [/INST]")
    assert MistralChat(1).count(CHAT, len) == 1 + first + (len("a ") + 1) + len("[INST] q [/INST]")


def test_mistral_v3_joins_the_system_prompt_to_the_last_user_turn() -> None:
    # <s>, [INST] u1 [/INST], "a" (trailing space removed) </s>, [INST] S\n\nq [/INST]
    assert MistralChat(3).count(CHAT, len) == 1 + (2 + 2) + (1 + 1) + (2 + len("S\n\nq"))


def test_mistral_v7_writes_the_system_prompt_in_its_place() -> None:
    # <s>, [SYSTEM_PROMPT] S [/SYSTEM_PROMPT], [INST] u1 [/INST], a </s>, [INST] q [/INST]
    assert MistralChat(7).count(CHAT, len) == 1 + (2 + 1) + (2 + 2) + (1 + 1) + (2 + 1)


@pytest.mark.parametrize("version", [1, 3, 7])
def test_mistral_joins_turns_of_one_role_and_opens_with_a_user_turn(version: int) -> None:
    chat = _messages(("assistant", "a"), ("user", "x"), ("user", ""), ("user", "y"))
    # before v7 an empty user turn opens the chat; every version joins x and y
    opening = {1: len("[INST]  [/INST]"), 3: 2, 7: 0}[version]
    joined = len("[INST] x\n\ny [/INST]") if version == 1 else 2 + len("x\n\ny")
    assert MistralChat(version).count(chat, len) == 1 + opening + 2 + joined


def test_gemma_opens_the_first_turn_with_the_system_prompt_and_calls_the_assistant_model() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    # <bos>; per turn <start_of_turn>, <end_of_turn> and the newline after it; the reply's
    # <start_of_turn> and "model\n"
    turns = (2 + len("user\nS\n\nu1") + 1) + (2 + len("model\na") + 1) + (2 + len("user\nq") + 1)
    assert GemmaChat().count(CHAT, count) == 1 + turns + 1 + len("model\n")
    assert counted == ["user\nS\n\nu1", "\n", "model\na", "\n", "user\nq", "\n", "model\n"]
    # no system message: nothing opens the first turn; contents are trimmed of White_Space only
    assert GemmaChat().count(_messages(("user", " \x1fq\n")), len) == 1 + (2 + 7 + 1) + 1 + 6
    assert GemmaChat().turn("assistant", " a ", len) == 2 + len("model\na") + 1
    assert GemmaChat().text_start == 1


def test_deepseek_writes_the_system_prompts_first_and_trims_nothing() -> None:
    chat = _messages(("system", "S"), ("user", " u1"), ("assistant", "a "), ("system", "T"))
    chat += _messages(("user", "q"))
    # <｜begin▁of▁sentence｜> S\n\nT (and the blank line llama.cpp's format ends it with),
    # <｜User｜> u1, <｜Assistant｜> a <｜end▁of▁sentence｜>, <｜User｜> q, <｜Assistant｜>
    assert DeepSeekChat().count(chat, len) == 1 + len("S\n\nT\n\n") + 4 + 4 + 2 + 1
    assert DeepSeekChat().count(_messages(("user", "q")), len) == 1 + 2 + 1
    assert DeepSeekChat().turn("assistant", "a ", len) == 4
    assert DeepSeekChat().head("S", len, replies=True) == (1 + 3 + 1, "")
    assert DeepSeekChat().text_start == 1
    # llama.cpp's blank line is counted only where it is more (a tokenizer may fold it in)
    assert DeepSeekChat().count(_messages(("system", "S")), lambda text: 1) == 1 + 1 + 1


def test_gemma_counts_the_tokens_before_the_sources() -> None:
    # <bos>, <start_of_turn>, then the text the sources continue: an estimate (review rv23)
    assert GemmaChat().head("S", len, replies=False) == (2 + len("user\nS\n\n"), "")
    assert GemmaChat().head("", len, replies=True) == (2 + len("user\n"), "")


def test_registry_models_name_their_template() -> None:
    chats = {spec.name: spec.chat for spec in default_registry() if spec.chat != "openai"}
    llama = ("3.1-8b", "3.1-70b", "3.1-405b", "3.2-1b", "3.2-3b", "3.3-70b")
    qwen = ("2.5-7b-instruct", "2.5-72b-instruct", "3-8b", "3-32b", "3-235b-a22b")
    assert chats == {
        **{f"llama-{size}-instruct": "llama3" for size in llama},
        **{f"qwen{name}": "chatml" for name in qwen},
        "mixtral-8x7b-instruct": "mistral-v1",
        "mistral-7b-instruct": "mistral-v3",
        "mistral-small": "mistral-v3",
        "mistral-nemo": "mistral-v3",
        "mistral-large": "mistral-v7",
    }
    assert {s.provider for s in default_registry() if s.chat == "openai"} == {
        "openai",
        "anthropic",
        "google",
    }
    gpt = default_registry().get("gpt-4o")
    assert gpt.chat_template == PerMessageChat(3, 3)


def test_a_config_chooses_the_template() -> None:
    model = {
        "context_window": 8192,
        "max_output": 1024,
        "tokenizer": "pinned:mistral-tekken",
        "chat": "mistral-v7",
    }
    assembler = ctxasm.Assembler({"models": {"house-model": model}})
    assert assembler.config.models.get("house-model").chat_template == MistralChat(7)


@pytest.mark.parametrize(
    ("chat", "fragment"),
    [
        (
            "mistral-v2",
            "models.gpt-4o.chat must be one of openai, llama3, chatml, mistral-v1, mistral-v3, "
            "mistral-v7, gemma, deepseek-v3, got 'mistral-v2'; did you mean",
        ),
        ("ChatML", "got 'ChatML'; did you mean 'chatml'?"),
        (3, "models.gpt-4o.chat must be a string, got 3"),
    ],
)
def test_an_unknown_template_is_a_config_error(chat: object, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"gpt-4o": {"chat": chat}}})
    assert fragment in caught.value.message


def test_reply_priming_is_refused_where_a_template_would_leave_it_unused() -> None:
    with pytest.raises(ConfigError) as caught:
        ctxasm.Assembler({"models": {"llama-3.1-8b-instruct": {"reply_priming": 5}}})
    assert caught.value.message == (
        "models.llama-3.1-8b-instruct.reply_priming is only used with chat = 'openai', and "
        "llama-3.1-8b-instruct is counted with the 'llama3' template; set chat = 'openai' too "
        "to count with tokens_per_message and reply_priming (docs/models.md#chat-overhead)"
    )
    assembler = ctxasm.Assembler(
        {"models": {"llama-3.1-8b-instruct": {"chat": "openai", "reply_priming": 5}}}
    )
    spec = assembler.config.models.get("llama-3.1-8b-instruct")
    assert spec.chat_template == PerMessageChat(4, 5)


def test_a_model_spec_refuses_an_unknown_template() -> None:
    with pytest.raises(ConfigError) as caught:
        replace(default_registry().get("gpt-4o"), chat="llama-3")
    assert "did you mean 'llama3'?" in caught.value.message


TEMPLATE_MODELS = [spec.name for spec in default_registry() if spec.chat != "openai"]


# The templates no registry model uses, on a model whose tokenizer stands in for theirs.
STAND_INS = ["mistral-7b-instruct+gemma", "llama-3.1-8b-instruct+deepseek-v3"]


@pytest.mark.parametrize("model", ["gpt-4o", *TEMPLATE_MODELS, *STAND_INS])
def test_a_sources_block_adds_its_own_count_and_at_most_two_tokens(model: str) -> None:
    """The budget measures the request with an empty sources block before any passage is
    chosen, and plans the block at its own count plus two tokens for its seams: with every
    template the request with the block takes no more than that."""
    name, _, chat = model.partition("+")
    spec = default_registry().get(name)
    spec = replace(spec, chat=chat) if chat else spec
    counter, fmt = get_counter(spec.tokenizer), OpenAIChatFormat()
    rng = random.Random(29)
    words = "the river of time flows past ancient stone bridges, while merchants argue".split()
    words += ["Straße", "東京都の天気", "😀", "x = [i for i in range(10)]", "3.14", "`code`"]

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 30)))

    extra = set()
    for _ in range(60):
        history = tuple(
            Message(role, text())
            for _ in range(rng.randint(0, 2))
            for role in ("user", "assistant")
        )
        parts = PromptParts(f"{text()}\n\n{RULES}", history, text())
        passages = [
            Candidate.of(Passage(f"p{i}", text()), i, 1.0) for i in range(rng.randint(1, 5))
        ]
        block = fmt.block.render(passages)
        bare = fmt.count(fmt.render(parts, ""), counter, spec)
        full = fmt.count(fmt.render(parts, block, passages), counter, spec)
        extra.add(full - bare - counter.count(block))
    assert max(extra) <= 2, sorted(extra)


@pytest.mark.parametrize("model", TEMPLATE_MODELS)
def test_a_history_turn_is_planned_at_no_less_than_it_takes(model: str) -> None:
    """History is trimmed before the exact recount, each turn priced at
    ``tokens_per_message`` plus its role and content: with turns that alternate, no turn
    takes more."""
    spec = default_registry().get(model)
    counter, template = get_counter(spec.tokenizer), spec.chat_template
    for role in ("user", "assistant"):
        for content in ("Hello", "A longer answer, with punctuation.", "東京都 😀", "x\ny"):
            planned = spec.tokens_per_message + counter.count(role) + counter.count(content)
            assert template.turn(role, content, counter.count) <= planned, (role, content)
