"""A retriever's hits as request passages: the field names retrievers emit, mapped once.

Retrievers and vector stores return lists of hits, each a JSON object, with their own names
for the same things. :func:`passages_from_hits` maps them onto passage fields:

- **text** from ``text``, ``content`` or ``page_content`` (LangChain), the first one present;
- **score** from ``score``, ``similarity`` or ``relevance_score``, the first one present, else
  from the hit's ``metadata`` (where LangChain's rerankers put ``relevance_score``) (optional);
- **id** from ``id`` (a string or an integer, unique among the hits); without one, a stable id
  from the text (``hit-`` and 10 hex digits of its SHA-256), the same whatever the hit's
  position (``-2``, ``-3`` where texts repeat, and never the id of another hit);
- **title**, **url** and **source**, and the access data **tenant** and **readers**, from the
  hit, else from its ``metadata`` object (where LangChain and LlamaIndex keep them, and the
  framework adapters read them);
- every other passage field (``doc_id``, ``timestamp``, ...) as is; any other key of the hit
  goes into the passage's ``metadata``, so nothing the retriever sent is lost or refused.

A hit with neither a title nor a url is headed as the framework adapters head a document
(:mod:`ctxasm.loader_metadata`), never by its id: a ``source`` that is an http(s) url is its
url; else its title is the source's file name and page (LangChain's ``source``, with
``page_label``, else ``page`` counted from 1), else its ``file_name`` or ``file_path`` and
``page_label`` (LlamaIndex's), read from its metadata (or its own keys). A heading that would
not be valid Unicode is not made.

A hit with no text of its own but a ``node`` object is a LlamaIndex ``NodeWithScore`` as JSON
(``model_dump`` or ``to_dict``): its score is the hit's, and its node gives the text (``text``,
else ``text_resource.text``), the id (``id_``), the metadata (the title, url and source in it
lifted as above), the embedding, the source document's id as ``doc_id`` (the ``node_id`` of
its ``SOURCE`` relationship, ``relationships["1"]``) and, with it, the character offsets
``start_char_idx`` and ``end_char_idx`` as ``start`` and ``end`` where they span the text, so
overlapping chunks are stitched, as :mod:`ctxasm.adapters.llamaindex` does for node objects.
LlamaIndex's bookkeeping (templates, excluded metadata keys, mimetype, other relationships,
media resources, ``class_name``) is dropped; any other key of the node goes into the metadata,
and any other key of the hit is read as any hit's, over the node's.

Errors are :class:`~ctxasm.errors.RequestError` naming the hit's own field (``hits[3].text``,
``hits[2].node.text``). A request gives its hits as ``hits``, in place of ``passages``
(:func:`ctxasm.schema.parse_request` maps them here), so every entry point takes them: the
Python API, ``ctxasm assemble`` and ``batch``, and the HTTP service.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ctxasm.data import Passage, default_passage_id
from ctxasm.errors import RequestError
from ctxasm.loader_metadata import file_name_title, is_web_url, source_title
from ctxasm.validation import encodable, invalid, shown

__all__ = [
    "SCORE_FIELDS",
    "TEXT_FIELDS",
    "adapter_hint",
    "hit_list",
    "hit_text",
    "passages_from_hits",
]

TEXT_FIELDS = ("text", "content", "page_content")
SCORE_FIELDS = ("score", "similarity", "relevance_score")
# Read from a hit's metadata where the hit has none of its own: LangChain and LlamaIndex keep a
# document's title, url and source there, and its access data too, which the framework adapters
# read from there (a hit left public because its tenant was in its metadata would be shown to
# anyone).
_LIFTED = ("title", "url", "source", "tenant", "readers")
_ALIASES = frozenset((*TEXT_FIELDS, *SCORE_FIELDS, "id", "metadata"))
_KEPT = frozenset(f.name for f in dataclasses.fields(Passage)) - _ALIASES
_PASSAGE = "passage"  # the name the Passage constructor's errors give the passage
_NODE = "node"  # a LlamaIndex NodeWithScore's node
_SOURCE = "1"  # NodeRelationship.SOURCE, as a node's relationships are serialised
# The keys of a serialised node read here, or LlamaIndex's own bookkeeping: none goes into the
# passage's metadata.
_NODE_KEYS = frozenset(
    (
        "id_",
        "text",
        "text_resource",
        "metadata",
        "embedding",
        "relationships",
        "start_char_idx",
        "end_char_idx",
        "excluded_embed_metadata_keys",
        "excluded_llm_metadata_keys",
        "metadata_template",
        "metadata_separator",
        "metadata_seperator",  # the alias LlamaIndex also accepts
        "text_template",
        "mimetype",
        "image_resource",
        "audio_resource",
        "video_resource",
        "class_name",
    )
)


def hit_list(hits: object) -> Sequence[object]:
    """``hits`` when it is a list (or a tuple) of hits, else a :class:`RequestError` naming
    ``hits``."""
    if not isinstance(hits, list | tuple):
        raise invalid(
            "hits",
            "a list of a retriever's hits (objects with their text in text, content or "
            "page_content)",
            hits,
        )
    return hits


def hit_text(hit: object) -> tuple[str, str] | None:
    """Where a hit's text is and the text: the first of :data:`TEXT_FIELDS` it holds, else its
    node's (``node.text``, ``node.text_resource.text``); ``None`` when that is no string or the
    hit is no object."""
    if not isinstance(hit, Mapping):
        return None
    name = next((name for name in TEXT_FIELDS if hit.get(name) is not None), None)
    if name is None:
        found = _node_text(hit.get(_NODE))
        name, text = (None, None) if found is None else (f"{_NODE}.{found[0]}", found[1])
    else:
        text = hit[name]
    return (name, text) if name is not None and isinstance(text, str) else None


def passages_from_hits(hits: object) -> list[dict[str, Any]]:
    """Passage objects (request JSON) for a list of retriever hits, in the same order, each
    with an id: its own (unique, or the error names the repeat), else one made from its text
    (:mod:`ctxasm.hits`), numbered where texts repeat and never one a hit has."""
    passages: list[dict[str, Any]] = []
    given: dict[str, int] = {}
    for index, hit in enumerate(hit_list(hits)):
        where = f"hits[{index}]"
        passage, origins = _passage(hit, where)
        try:  # checked here, so that an error names the hit's own field
            checked = Passage(**{"id": where, **passage})  # an id is made below, from the text
        except RequestError as error:
            raise _in_hit(error, where, origins) from None
        _head(passage, checked)
        if "id" in passage:
            passage["id"] = checked.id  # an integer as its decimal string: 7 repeats "7"
            first = given.setdefault(passage["id"], index)
            if first != index:
                raise RequestError(
                    f"{where}.id {shown(passage['id'])} repeats hits[{first}].id; the ids of "
                    "hits must be unique (leave a hit's id out for one made from its text)",
                    field=f"{where}.id",
                )
        passages.append(passage)
    taken = set(given)
    for passage in passages:
        if "id" not in passage:
            base = default_passage_id(passage["text"], "hit")
            made, repeat = base, 1
            while made in taken:
                repeat += 1
                made = f"{base}-{repeat}"
            taken.add(made)
            passage["id"] = made
    return passages


def _in_hit(error: RequestError, where: str, origins: Mapping[str, str]) -> RequestError:
    """``error``, raised by the :class:`Passage` built from the hit at ``where`` (about its
    field ``passage.<name>...``), about the hit's own field."""
    field = error.field or _PASSAGE
    if not field.startswith(_PASSAGE):
        return error
    name = field[len(_PASSAGE) + 1 :].split(".", 1)[0].split("[", 1)[0]
    moved = f"{where}.{origins.get(name, name)}" if name else where  # one it lacks: its name
    message = error.message
    if name and message.startswith(f"{_PASSAGE}.{name}"):
        message = moved + message[len(_PASSAGE) + 1 + len(name) :]
    elif message.startswith(_PASSAGE):  # "passage needs both start and end"
        message = where + message[len(_PASSAGE) :]
    rest = field[len(_PASSAGE) + 1 + len(name) :] if name else ""
    return type(error)(message, field=moved + rest)


def adapter_hint(data: object) -> str | None:
    """Where a framework's document given as a passage or a hit is converted (read by its
    attributes alone: the framework is not imported), or ``None``."""
    if hasattr(data, "page_content"):
        return "a LangChain Document? convert with ctxasm.adapters.langchain.documents_to_passages"
    if hasattr(data, "node") and hasattr(data, "score"):
        return "a LlamaIndex node? convert with ctxasm.adapters.llamaindex.nodes_to_passages"
    if hasattr(data, "content") and hasattr(data, "meta"):
        return "a Haystack Document? convert with ctxasm.adapters.haystack.documents_to_passages"
    return None


def _passage(hit: object, where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The passage fields of ``hit``, and where in the hit each came from."""
    if not isinstance(hit, Mapping):
        hint = adapter_hint(hit)
        raise RequestError(
            f"{where} must be an object with the text in 'text', 'content' or 'page_content'; "
            f"got {type(hit).__name__}"
            + ("" if hint is None else f"; {hint} and pass what it returns as passages"),
            field=where,
        )
    if _first(hit, TEXT_FIELDS) is None and hit.get(_NODE) is not None:
        flat, paths = _node_hit(hit, where)
        passage, origins = _fields(flat, where)
        return passage, {name: _path(origin, paths) for name, origin in origins.items()}
    return _fields(hit, where)


def _fields(hit: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The passage fields of the object ``hit``, and where in it each came from."""
    text = _first(hit, TEXT_FIELDS)
    if not isinstance(text, str):
        raise RequestError(
            f"{where} needs its text as a string in one of {', '.join(TEXT_FIELDS)}; "
            f"found {_found(hit)}",
            field=f"{where}.text",
        )
    passage: dict[str, Any] = {"text": text}
    origins = {"text": _first_name(hit, TEXT_FIELDS)}
    score = _first(hit, SCORE_FIELDS)
    if score is not None:
        passage["score"] = score
        origins["score"] = _first_name(hit, SCORE_FIELDS)
    given = hit.get("id")  # an integer is the passage's to judge, as in passages
    if given is not None:
        passage["id"] = given
        origins["id"] = "id"
    metadata = hit.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise RequestError(
            f"{where}.metadata must be an object; got {type(metadata).__name__}",
            field=f"{where}.metadata",
        )
    extra = dict(metadata or {})
    if "score" not in passage and _first(extra, SCORE_FIELDS) is not None:
        passage["score"] = _first(extra, SCORE_FIELDS)
        origins["score"] = f"metadata.{_first_name(extra, SCORE_FIELDS)}"
    for name in _LIFTED:
        # a null of the hit's own is none (serialisers write unset fields so): a tenant in the
        # metadata behind {"tenant": null} must not leave the hit public
        if hit.get(name) is None and extra.get(name) is not None:
            passage[name] = extra[name]
            origins[name] = f"metadata.{name}"
    for key, value in hit.items():
        if key in _KEPT:
            if value is None and key in passage:
                continue  # lifted from the metadata above
            passage[key] = value
            origins[key] = key
        elif key not in _ALIASES:
            extra[key] = value
    if extra:
        passage["metadata"] = extra
        origins["metadata"] = "metadata"
    return passage, origins


def _head(passage: dict[str, Any], checked: Passage) -> None:
    """Head ``passage`` (``checked`` is it as the Passage constructor checked it), where it has
    neither a title nor a url, by the url or the file its source or metadata names (see the
    module docstring)."""
    if checked.title is not None or checked.url is not None:
        return
    if is_web_url(checked.source):
        passage["url"] = checked.source
        return
    metadata = passage.get("metadata") or {}
    title = source_title(checked.source, metadata) or file_name_title(metadata)
    if title is not None and encodable(title):
        passage["title"] = title


def _node_hit(hit: Mapping[str, Any], where: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The hit a serialised ``NodeWithScore`` stands for (its node's fields under the names of
    a hit's, with the outer object's keys over them), and for each of its keys, and each key of
    its metadata, that is not where the hit has it, where the hit has it."""
    node, at = hit[_NODE], f"{where}.{_NODE}"
    if not isinstance(node, Mapping):
        raise invalid(at, "an object (a LlamaIndex node, as NodeWithScore serialises it)", node)
    found = _node_text(node)
    if found is None:
        raise RequestError(
            f"{at} needs its text as a string in text or text_resource.text; found {_found(node)}",
            field=f"{at}.text",
        )
    if not isinstance(found[1], str):
        raise invalid(f"{at}.{found[0]}", "a string", found[1])
    flat: dict[str, Any] = {"text": found[1]}
    paths = {"text": f"{_NODE}.{found[0]}", "metadata": f"{_NODE}.metadata"}
    for name, key in (("id", "id_"), ("embedding", "embedding")):
        if node.get(key) is not None:
            flat[name], paths[name] = node[key], f"{_NODE}.{key}"
    metadata = node.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise invalid(f"{at}.metadata", "an object", metadata)
    extra = dict(metadata or {})
    for key, value in node.items():
        if key not in _NODE_KEYS and key not in extra:
            extra[key], paths[f"metadata.{key}"] = value, f"{_NODE}.{key}"
    flat.update(_node_offsets(node, at, found[1], paths))
    for key, value in hit.items():  # the score, and any field given beside the node
        if key == "metadata" and isinstance(value, Mapping):
            extra.update(value)
            paths.update({f"metadata.{name}": f"metadata.{name}" for name in value})
        elif key not in (_NODE, "class_name") and value is not None:
            flat[key] = value  # a metadata that is no object too, refused as any hit's
            paths.pop(key, None)
    flat.setdefault("metadata", extra)
    return flat, paths


def _node_offsets(
    node: Mapping[str, Any], at: str, text: str, paths: dict[str, str]
) -> dict[str, Any]:
    """``doc_id``, the id of the node's source document, and with it ``start`` and ``end``, its
    character offsets, where both are integers that span ``text`` (else none); none of them
    for a node without a source. ``paths`` gets where each is in the hit."""
    relationships = node.get("relationships")
    if relationships is None:
        return {}
    if not isinstance(relationships, Mapping):
        raise invalid(f"{at}.relationships", "an object", relationships)
    source = relationships.get(_SOURCE)
    if source is None:
        return {}
    if not isinstance(source, Mapping):
        raise invalid(f"{at}.relationships.{_SOURCE}", "an object (a RelatedNodeInfo)", source)
    if source.get("node_id") is None:
        return {}
    found: dict[str, Any] = {"doc_id": source["node_id"]}
    paths["doc_id"] = f"{_NODE}.relationships.{_SOURCE}.node_id"
    start, end = node.get("start_char_idx"), node.get("end_char_idx")
    if type(start) is int and type(end) is int and end - start == len(text):
        found["start"], found["end"] = start, end
        paths["start"], paths["end"] = f"{_NODE}.start_char_idx", f"{_NODE}.end_char_idx"
    return found


def _node_text(node: object) -> tuple[str, object] | None:
    """Where in a serialised node its text is (``text``, else ``text_resource.text``) and the
    text, or None when it has none (or is no object)."""
    if not isinstance(node, Mapping):
        return None
    if node.get("text") is not None:
        return "text", node["text"]
    resource = node.get("text_resource")
    if isinstance(resource, Mapping) and resource.get("text") is not None:
        return "text_resource.text", resource["text"]
    return None


def _path(origin: str, paths: Mapping[str, str]) -> str:
    """Where in a hit the field its flat form has at ``origin`` (``metadata.title``) is."""
    if origin in paths:
        return paths[origin]
    head, dot, rest = origin.partition(".")
    return paths[head] + dot + rest if head in paths else origin


def _first(hit: Mapping[str, Any], names: Sequence[str]) -> Any:
    for name in names:
        if hit.get(name) is not None:
            return hit[name]
    return None


def _first_name(hit: Mapping[str, Any], names: Sequence[str]) -> str:
    return next(name for name in names if hit.get(name) is not None)


def _found(hit: Mapping[str, Any]) -> str:
    keys = ", ".join(repr(key) for key in list(hit)[:8])
    return f"the keys {keys}" if keys else "an empty object"
