"""ctxasm.hits: retriever hits mapped onto passage fields."""

from __future__ import annotations

import pytest

from ctxasm.errors import RequestError
from ctxasm.hits import hit_text, passages_from_hits


def test_each_retriever_spelling_maps_to_the_passage_fields() -> None:
    hits = [
        {
            "page_content": "A.",
            "similarity": 0.5,
            "metadata": {"title": "T", "url": "https://a", "source": "s", "page": 2},
            "type": "Document",
        },
        {"content": "B.", "score": 0.4, "id": 12, "title": "own title", "metadata": {"title": "x"}},
        {"text": "C.", "doc_id": "d", "start": 0, "end": 2},
    ]
    assert passages_from_hits(hits) == [
        {
            "text": "A.",
            "score": 0.5,
            "title": "T",
            "url": "https://a",
            "source": "s",
            "metadata": {
                "title": "T",
                "url": "https://a",
                "source": "s",
                "page": 2,
                "type": "Document",
            },
            "id": "hit-e53657178c",
        },
        {"text": "B.", "score": 0.4, "id": "12", "title": "own title", "metadata": {"title": "x"}},
        {"text": "C.", "doc_id": "d", "start": 0, "end": 2, "id": "hit-acbbb70838"},
    ]


def test_generated_ids_do_not_depend_on_position_and_repeats_are_numbered() -> None:
    forward = [p["id"] for p in passages_from_hits([{"text": "x"}, {"text": "y"}, {"text": "x"}])]
    backward = [p["id"] for p in passages_from_hits([{"text": "y"}, {"text": "x"}])]
    assert forward == ["hit-2d711642b7", "hit-a1fce43638", "hit-2d711642b7-2"]
    assert backward == ["hit-a1fce43638", "hit-2d711642b7"]


@pytest.mark.parametrize(
    ("hit", "message", "field"),
    [
        (
            "text",
            "hits[0] must be an object with the text in 'text', 'content' or "
            "'page_content'; got str",
            "hits[0]",
        ),
        (
            {},
            "hits[0] needs its text as a string in one of text, content, page_content; "
            "found an empty object",
            "hits[0].text",
        ),
        (
            {"text": "a", "metadata": [1]},
            "hits[0].metadata must be an object; got list",
            "hits[0].metadata",
        ),
        # a value the passage refuses is named where the hit has it (it was "passages[0].title")
        (
            {"content": "a", "metadata": {"title": 5}},
            "hits[0].metadata.title must be a string; got int 5",
            "hits[0].metadata.title",
        ),
        (
            {"content": "a", "similarity": "0.9"},
            "hits[0].similarity must be a number or null; got str '0.9'",
            "hits[0].similarity",
        ),
        (
            {"page_content": "a", "start": 5},
            "hits[0] needs both start and end (character offsets in its document) or neither",
            "hits[0].start",
        ),
        (
            {"page_content": "a", "start": 5, "end": 2},
            "hits[0].end (2) is before start (5)",
            "hits[0].end",
        ),
    ],
)
def test_a_bad_hit_is_named(hit: object, message: str, field: str) -> None:
    with pytest.raises(RequestError) as caught:
        passages_from_hits([hit])
    assert (caught.value.message, caught.value.field) == (message, field)


def test_a_made_id_is_never_one_a_hit_has() -> None:
    # "hit-2d711642b7" is the id made from "x": the hit that has it keeps it
    hits = [{"text": "x"}, {"text": "y", "id": "hit-2d711642b7"}, {"text": "x"}]
    assert [p["id"] for p in passages_from_hits(hits)] == [
        "hit-2d711642b7-2",
        "hit-2d711642b7",
        "hit-2d711642b7-3",
    ]


def test_a_repeated_id_is_named_where_it_repeats() -> None:
    with pytest.raises(RequestError) as caught:
        passages_from_hits([{"text": "a", "id": 7}, {"text": "b"}, {"text": "c", "id": "7"}])
    assert (caught.value.message, caught.value.field) == (
        "hits[2].id '7' repeats hits[0].id; the ids of hits must be unique (leave a hit's id "
        "out for one made from its text)",
        "hits[2].id",
    )


@pytest.mark.parametrize("hits", [{"text": "a"}, "a", None])
def test_hits_must_be_a_list(hits: object) -> None:
    with pytest.raises(RequestError) as caught:
        passages_from_hits(hits)
    assert caught.value.field == "hits"
    assert caught.value.message.startswith("hits must be a list of a retriever's hits")


def test_hit_text_is_the_first_text_field_the_hit_holds() -> None:
    assert hit_text({"text": None, "content": "b", "page_content": "c"}) == ("content", "b")
    assert [hit_text(hit) for hit in ({"content": 5}, {"body": "x"}, "text")] == [None] * 3


def test_a_score_in_the_metadata_is_the_hits_score() -> None:
    # LangChain's rerankers put relevance_score in the metadata: it was kept there, unused, and
    # the passages ranked by their words alone (second first-hour review M5)
    hits = [
        {"page_content": "a", "metadata": {"relevance_score": 0.9, "source": "x.md"}},
        {"page_content": "b", "metadata": {"score": 0.2}},
        {"page_content": "c", "similarity": 0.5, "metadata": {"relevance_score": 0.1}},
    ]
    passages = passages_from_hits(hits)
    assert [p["score"] if isinstance(p, dict) else p.score for p in passages] == [0.9, 0.2, 0.5]
    with pytest.raises(RequestError) as error:
        passages_from_hits([{"text": "a", "metadata": {"relevance_score": "high"}}])
    assert error.value.field == "hits[0].metadata.relevance_score"
