"""Control characters in a title, id or url never reach a header in any format (a NUL or an
escape sequence reached the OpenAI, markdown and text headers as it was, while the anthropic
format wrote U+FFFD); a question of invisible characters only is refused as empty."""

from __future__ import annotations

import pytest

import ctxasm
from ctxasm.errors import RequestError

HOSTILE = "Atlas\x00\x1b[2J\x7f\x85end"


@pytest.mark.parametrize("fmt", ["openai", "anthropic", "markdown", "text"])
def test_control_characters_in_a_title_or_id_become_the_replacement_character(fmt: str) -> None:
    passages = [
        {"id": "a", "title": HOSTILE, "text": "The Danube ends in the Black Sea."},
        {"id": f"b{HOSTILE}", "text": "The Rhine ends in the North Sea."},
    ]
    result = ctxasm.assemble("Where does the Danube end?", passages, format=fmt)
    prompt = result.text or "".join(str(m["content"]) for m in result.messages)
    assert "Atlas\ufffd\ufffd(2J\ufffd end" in prompt  # U+0085 is a line break: a space
    for control in ("\x00", "\x1b", "\x7f", "\x85"):
        assert control not in prompt


@pytest.mark.parametrize("query", ["\u200b\u200b", "\x00", "\u200e \u2060\t"])
def test_a_question_of_invisible_characters_is_refused(query: str) -> None:
    with pytest.raises(RequestError) as error:
        ctxasm.assemble(query, [{"id": "a", "text": "x"}])
    assert error.value.field == "query"
    assert error.value.message.startswith("query has no visible character")


def test_a_question_with_one_visible_character_is_a_question() -> None:
    assert ctxasm.assemble("\u200b?", [{"id": "a", "text": "x"}]).report.total_tokens > 0
