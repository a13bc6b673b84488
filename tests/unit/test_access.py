"""The access slot: tenant, readers and groups, default-deny, and the no-principal refusal."""

from __future__ import annotations

from typing import Any

import pytest

import ctxasm
from ctxasm import AccessPolicyError, Passage, Principal, Reason
from ctxasm.stages.access import check_access, filter_readable

QUERY = "quarterly revenue report"


def _passage(pid: str, **access: Any) -> dict[str, Any]:
    return {"id": pid, "text": f"The quarterly revenue report, part {pid}.", "score": 1.0, **access}


def _run(passages: list[dict[str, Any]], **fields: Any) -> ctxasm.Assembly:
    return ctxasm.assemble(QUERY, passages, strategy={"dedup": "none"}, **fields)


def _denied(result: ctxasm.Assembly) -> list[tuple[str, str, str, str]]:
    return [
        (e.candidate_id, e.stage, e.reason.value, e.detail)
        for e in result.report.excluded
        if e.reason is Reason.ACCESS_DENIED
    ]


def test_tenant_readers_and_groups() -> None:
    passages = [
        _passage("own-tenant", tenant="acme"),
        _passage("other-tenant", tenant="globex"),
        _passage("reader-by-id", tenant="acme", readers=["alice"]),
        _passage("reader-by-group", readers=["finance"]),
        _passage("not-a-reader", readers=["bob", "hr"]),
        _passage("no-readers", readers=[]),
        _passage("tenant-ok-reader-not", tenant="acme", readers=["bob"]),
        _passage("reader-ok-tenant-not", tenant="globex", readers=["alice"]),
    ]
    result = _run(
        passages,
        principal={"id": "alice", "tenant": "acme", "groups": ["finance", "staff"]},
    )
    assert sorted(item.id for item in result.report.included) == [
        "own-tenant",
        "reader-by-group",
        "reader-by-id",
    ]
    assert _denied(result) == [
        ("other-tenant", "access", "access_denied", "belongs to another tenant"),
        ("not-a-reader", "access", "access_denied", "principal is not among its readers"),
        ("no-readers", "access", "access_denied", "principal is not among its readers"),
        ("tenant-ok-reader-not", "access", "access_denied", "principal is not among its readers"),
        ("reader-ok-tenant-not", "access", "access_denied", "belongs to another tenant"),
    ]
    content = result.messages[-1]["content"]
    for pid in ("other-tenant", "not-a-reader", "no-readers", "tenant-ok-reader-not"):
        assert pid not in content


def test_principal_without_tenant_sees_nothing_tenant_scoped() -> None:
    result = _run(
        [_passage("scoped", tenant="acme"), _passage("readers", readers=["alice"])],
        principal={"id": "alice"},
    )
    assert [item.id for item in result.report.included] == ["readers"]
    assert [(e.candidate_id, e.reason) for e in result.report.excluded] == [
        ("scoped", Reason.ACCESS_DENIED)
    ]


def test_default_deny_for_passages_without_access_data() -> None:
    passages = [_passage("public"), _passage("scoped", tenant="acme")]
    result = _run(passages, principal={"id": "alice", "tenant": "acme"})
    assert [item.id for item in result.report.included] == ["scoped"]
    assert _denied(result) == [
        ("public", "access", "access_denied", "no access data and allow_public is false")
    ]


def test_allow_public_admits_passages_without_access_data() -> None:
    passages = [_passage("public"), _passage("scoped", tenant="acme"), _passage("x", tenant="b")]
    result = _run(passages, principal={"id": "alice", "tenant": "acme"}, allow_public=True)
    assert sorted(item.id for item in result.report.included) == ["public", "scoped"]
    assert [(e.candidate_id, e.reason) for e in result.report.excluded] == [
        ("x", Reason.ACCESS_DENIED)
    ]


def test_no_principal_and_no_access_data_passes_everything() -> None:
    result = _run([_passage("a"), _passage("b")])
    assert sorted(item.id for item in result.report.included) == ["a", "b"]
    assert result.report.excluded == ()


@pytest.mark.parametrize("access", [{"tenant": "acme"}, {"readers": ["alice"]}, {"readers": []}])
def test_access_data_without_principal_is_refused(access: dict[str, Any]) -> None:
    with pytest.raises(AccessPolicyError) as caught:
        _run([_passage("public"), _passage("scoped", **access)])
    error = caught.value
    assert error.field == "principal"
    assert error.code == "principal_required"
    assert "passage 'scoped' carries access data" in error.message


def test_access_data_without_principal_is_refused_even_with_allow_public() -> None:
    with pytest.raises(AccessPolicyError):
        _run([_passage("scoped", tenant="acme")], allow_public=True)


def test_everything_denied_means_no_relevant_context() -> None:
    result = _run([_passage("a", tenant="globex")], principal={"id": "u", "tenant": "acme"})
    assert result.report.included == ()
    assert result.report.no_relevant_context is True
    assert "No relevant sources were found" in result.messages[-1]["content"]
    assert "part a" not in result.messages[-1]["content"]


def test_denied_passages_do_not_shape_bm25_scores() -> None:
    # BM25 statistics (document frequency, average length) come from readable passages only.
    readable = [
        {"id": "r1", "text": "Solar panels convert sunlight.", "tenant": "acme"},
        {"id": "r2", "text": "Wind turbines and solar farms.", "tenant": "acme"},
    ]
    secret = [
        {"id": f"s{i}", "text": "solar solar solar " * (i + 5), "tenant": "globex"}
        for i in range(5)
    ]
    principal = {"id": "alice", "tenant": "acme"}
    fields = {"principal": principal, "strategy": {"dedup": "none", "ordering": "score"}}
    alone = ctxasm.assemble("solar sunlight", readable, **fields)
    mixed = ctxasm.assemble("solar sunlight", readable + secret, **fields)
    scores = [(i.id, i.score) for i in alone.report.included]
    assert [pid for pid, _ in scores] == ["r1", "r2"]
    assert scores[0][1] == 1.0
    assert 0 < scores[1][1] < 1
    assert [(i.id, i.score) for i in mixed.report.included] == scores
    assert mixed.messages == alone.messages
    # Without access control the same texts do change the scores: the check above can fail.
    public = ctxasm.assemble(
        "solar sunlight",
        [{k: v for k, v in p.items() if k != "tenant"} for p in readable + secret],
        strategy={"dedup": "none", "ordering": "score"},
    )
    assert {i.id: i.score for i in public.report.included}["r2"] != scores[1][1]


def test_check_access_directly() -> None:
    principal = Principal(id="alice", tenant="acme", groups=("finance",))
    assert check_access(Passage("a", "x"), principal, allow_public=True) is None
    assert check_access(Passage("a", "x", tenant="acme"), principal, allow_public=False) is None
    assert (
        check_access(Passage("a", "x", readers=("hr",)), principal, allow_public=False)
        == "principal is not among its readers"
    )


def test_filter_readable_keeps_request_positions() -> None:
    passages = [
        Passage("a", "x", tenant="acme"),
        Passage("b", "x", tenant="globex"),
        Passage("c", "x", readers=("alice",)),
    ]
    readable, excluded = filter_readable(passages, Principal("alice", "acme"), allow_public=False)
    assert [(index, p.id) for index, p in readable] == [(0, "a"), (2, "c")]
    assert [e.to_dict() for e in excluded] == [
        {
            "id": "b",
            "stage": "access",
            "reason": "access_denied",
            "detail": "belongs to another tenant",
        }
    ]


# --- issue 10, item 6: a Principal object is checked like the JSON principal --------------------


def test_groups_given_as_a_string_never_reach_access_as_characters() -> None:
    """Reproducer: Principal("ann", "acme", "staff") used to have groups s, t, a, f, and a
    passage readable by "s" reached the prompt."""
    passages = [_passage("s-only", tenant="acme", readers=["s"])]
    with pytest.raises(ctxasm.RequestError) as caught:
        _run(passages, principal=Principal("ann", "acme", "staff"))
    assert caught.value.field == "principal.groups"
    with pytest.raises(ctxasm.RequestError) as caught:
        _run(passages, principal={"id": "ann", "tenant": "acme", "groups": "staff"})
    assert caught.value.field == "principal.groups"
    # Given as a list, the group is the whole name: "s" does not admit "staff".
    result = _run(passages, principal=Principal("ann", "acme", ["staff"]))  # type: ignore[arg-type]
    assert _denied(result) == [
        ("s-only", "access", "access_denied", "principal is not among its readers")
    ]


def test_an_empty_principal_id_and_null_groups() -> None:
    with pytest.raises(ctxasm.RequestError) as caught:
        Principal("")
    assert (caught.value.field, caught.value.message) == (
        "principal.id",
        "principal.id must not be empty; got ''",
    )
    who = Principal("ann", "acme", None)  # type: ignore[arg-type]
    result = _run([_passage("p", tenant="acme", readers=["ann"])], principal=who)
    assert [item.id for item in result.report.included] == ["p"]


def test_filter_readable_refuses_what_is_not_a_principal() -> None:
    fake = type("Fake", (), {"id": "ann", "tenant": "acme", "groups": "staff"})()
    with pytest.raises(ctxasm.RequestError) as caught:
        filter_readable([Passage("p", "x", readers=("s",))], fake, allow_public=False)
    assert caught.value.field == "principal"
    assert caught.value.message.startswith("principal must be a ctxasm.Principal or None; got Fake")
