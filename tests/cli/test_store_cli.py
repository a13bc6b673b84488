"""``ctxasm index``, ``delete`` and ``ask``: the real console script against a store in a temporary
folder, with a loopback server that speaks the OpenAI chat-completions shape."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

STORE = "sqlite:///store.db"
TOPICS = {
    "danube": "The Danube flows east through Vienna and Budapest to the Black Sea.",
    "rhine": "The Rhine flows north from the Alps through Basel to the North Sea.",
    "seine": "The Seine flows west through Paris to the English Channel.",
}
SECRET = "The river Tiber flows through Rome; the river plan is confidential."
QUESTION = "Which river flows through a capital?"
ASKER = ("--principal", "alice", "--tenant", "t1", "--groups", "g1,staff")


def _console() -> list[str]:
    """The command that runs the console script of this environment."""
    script = shutil.which("ctxasm", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "ctxasm"]


def ctxasm(
    *args: str, cwd: Path, env: dict[str, str] | None = None, within: Sequence[str] = ()
) -> subprocess.CompletedProcess[str]:
    """The console script run with ``args`` (by the command ``within``, when given)."""
    command = [*within, *_console()]
    clean = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("CTXASM_LLM_")
        and key not in ("CTXASM_STORE", "CTXASM_CONFIG", "CTXASM_ROOT", "OPENAI_API_KEY")
    }
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        cwd=cwd,
        env={**clean, **(env or {})},
        text=True,
        timeout=120,
    )


def _corpus(root: Path) -> None:
    docs = root / "docs"
    docs.mkdir()
    for name, sentence in TOPICS.items():
        (docs / f"{name}.md").write_text(f"# {name.title()}\n\n{sentence}\n", encoding="utf-8")
    (docs / "bad.jsonl").write_text(
        '{"doc_id": "fine", "text": "The river Po."}\n{"doc_id": "broken", "text": 3}\n',
        encoding="utf-8",
    )
    (root / "secret").mkdir()
    (root / "secret" / "tiber.txt").write_text(SECRET, encoding="utf-8")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Three readable documents for tenant t1 / group g1 and one for group g2 only, indexed once
    for the module (each test works on a copy); also what the first run reported."""
    root = tmp_path_factory.mktemp("site")
    _corpus(root)
    done = ctxasm("index", "docs", "--store", STORE, "--tenant", "t1", "--readers", "g1", cwd=root)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    secret = ctxasm(
        "index", "secret", "--store", STORE, "--tenant", "t1", "--readers", "g2", cwd=root
    )
    assert secret.returncode == 0, secret.stderr
    return root, done.stderr


@pytest.fixture()
def indexed(built: tuple[Path, str], tmp_path: Path) -> Path:
    return Path(shutil.copytree(built[0], tmp_path / "site"))


def test_a_bad_file_is_named_and_the_others_indexed(built: tuple[Path, str]) -> None:
    assert built[1].splitlines() == [
        # the bad line is skipped; the good line of the same file is indexed
        "ctxasm: skipped docs/bad.jsonl:2: text must be a non-empty string",
        "ctxasm: 4 added, 0 updated, 0 unchanged (4 chunks written), 1 failed",
    ]


@pytest.mark.parametrize("readers", [" , ", "a,,b", ""])
def test_a_blank_reader_name_stops_the_run_before_the_store_is_made(
    tmp_path: Path, readers: str
) -> None:
    # Blank names were dropped: " , " indexed the document readable by nobody, exit 0.
    (tmp_path / "a.txt").write_text("Some text.")
    store = f"sqlite:///{tmp_path / 's.db'}"
    done = ctxasm("index", "a.txt", "--store", store, "--readers", readers, cwd=tmp_path)
    assert (
        done.returncode == 2 and "--readers" in done.stderr and "has an empty name" in done.stderr
    )
    assert not (tmp_path / "s.db").exists()


def _ask(root: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    done = ctxasm("ask", QUESTION, "--store", STORE, "--json", *args, cwd=root, env=env)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_reindexing_reports_every_document_unchanged(indexed: Path) -> None:
    (indexed / "docs" / "bad.jsonl").unlink()
    done = ctxasm(
        "index", "docs", "--store", STORE, "--tenant", "t1", "--readers", "g1", cwd=indexed
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "ctxasm: 0 added, 0 updated, 3 unchanged (0 chunks written), 0 failed\n"


def test_ask_returns_only_what_the_principal_may_read(indexed: Path) -> None:
    report = _ask(indexed, *ASKER)["report"]
    assert sorted(item["id"] for item in report["included"]) == sorted(
        [*(f"docs/{name}.md#0" for name in TOPICS), "fine#0"]
    )
    assert report["no_relevant_context"] is False
    assert [e for e in report["excluded"] if e["reason"] == "access_denied"] == []


def test_the_other_group_sees_only_its_document(indexed: Path) -> None:
    report = _ask(indexed, "--principal", "bob", "--tenant", "t1", "--groups", "g2")["report"]
    assert [item["id"] for item in report["included"]] == ["secret/tiber.txt#0"]


@pytest.mark.parametrize(
    "who",
    [
        ("--principal", "alice", "--tenant", "t2", "--groups", "g1,g2"),
        ("--principal", "alice", "--groups", "g1,g2"),
        (),
    ],
    ids=["other-tenant", "no-tenant", "no-principal"],
)
def test_outsiders_get_no_relevant_context(indexed: Path, who: tuple[str, ...]) -> None:
    result = _ask(indexed, *who)
    report = result["report"]
    assert (report["included"], report["excluded"], report["no_relevant_context"]) == (
        [],
        [],
        True,
    )
    # matches exist that they may not read: one boolean says so, nothing says which
    assert result["hidden_matches"] is True
    for name in ("Danube", "Tiber", "Rhine", "danube", "tiber", "secret"):
        assert name not in json.dumps(result)


def test_hidden_matches_is_false_when_the_asker_reads_a_match_or_nothing_matches(
    indexed: Path,
) -> None:
    assert _ask(indexed, *ASKER)["hidden_matches"] is False
    nothing = ctxasm("ask", "quokka habitat", "--store", STORE, "--json", *ASKER, cwd=indexed)
    assert nothing.returncode == 0, nothing.stderr
    assert json.loads(nothing.stdout)["hidden_matches"] is False


def _notice(stderr: str) -> str:
    return " ".join(stderr.split())


HIDDEN = (
    "o context this principal may read: the store holds documents that match, but this "
    "principal may not read them (documents with neither tenant nor readers need "
    "--allow-public). Which documents they are is not shown."
)


def test_ask_says_matches_exist_that_the_principal_may_not_read(indexed: Path) -> None:
    # "Tiber" and "Rome" are only in the document of group g2
    done = ctxasm("ask", "Tiber Rome", "--store", STORE, *ASKER, cwd=indexed)
    assert done.returncode == 0, done.stderr
    assert f"N{HIDDEN}" in _notice(done.stderr)
    assert "No relevant context" not in done.stderr
    for name in ("tiber", "secret"):
        assert name not in (done.stdout + done.stderr).lower().replace("tiber rome", "")
    quiet = ctxasm("ask", "Tiber Rome", "--store", STORE, *ASKER, "--quiet", cwd=indexed)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == f"ctxasm: n{HIDDEN}\n"
    seen = ctxasm(
        "ask",
        "Tiber Rome",
        "--store",
        STORE,
        "--principal",
        "bob",
        "--tenant",
        "t1",
        "--groups",
        "g2",
        cwd=indexed,
    )
    assert seen.returncode == 0, seen.stderr
    assert HIDDEN not in _notice(seen.stderr)


def test_ask_without_a_principal_is_told_so_and_nothing_matching_says_no_relevant_context(
    indexed: Path,
) -> None:
    done = ctxasm("ask", QUESTION, "--store", STORE, "--allow-public", "-q", cwd=indexed)
    assert done.stderr == (
        "ctxasm: no context an asker without --principal may read: the store holds documents "
        "that match, but an asker without --principal may not read them. Which documents they "
        "are is not shown.\n"
    )
    nothing = ctxasm("ask", "quokka habitat", "--store", STORE, *ASKER, cwd=indexed)
    assert "No relevant context: the prompt tells the model so." in _notice(nothing.stderr)
    assert "may not read" not in nothing.stderr


def test_delete_removes_a_document_once(indexed: Path) -> None:
    done = ctxasm("delete", "docs/danube.md", "--store", STORE, cwd=indexed)
    assert (done.returncode, done.stderr) == (0, "ctxasm: deleted docs/danube.md\n")
    report = _ask(indexed, *ASKER)["report"]
    assert sorted(item["id"] for item in report["included"]) == [
        "docs/rhine.md#0",
        "docs/seine.md#0",
        "fine#0",
    ]
    again = ctxasm("delete", "docs/danube.md", "--store", STORE, cwd=indexed)
    assert again.returncode == 2
    assert again.stderr == "ctxasm: error: no document 'docs/danube.md' in the store\n"


def test_delete_takes_a_files_path_as_index_took_it(indexed: Path) -> None:
    # `index ./docs/x.md` and `index /abs/docs/x.md` store docs/x.md; delete said no such document.
    (indexed / "docs" / "seine.md").unlink()  # gone from the disk, still in the store
    for given, deleted in (
        ("./docs/danube.md", "docs/danube.md"),
        (str(indexed / "docs" / "rhine.md"), "docs/rhine.md"),
        ("docs/../docs/seine.md", "docs/seine.md"),
        ("fine", "fine"),  # a JSONL document's id, as its line gave it
    ):
        done = ctxasm("delete", given, "--store", STORE, cwd=indexed)
        assert (done.returncode, done.stderr) == (0, f"ctxasm: deleted {deleted}\n")
    assert _ask(indexed, *ASKER)["report"]["included"] == []
    again = ctxasm("delete", "./docs/danube.md", "--store", STORE, cwd=indexed)
    assert (again.returncode, again.stderr) == (
        2,
        "ctxasm: error: no document './docs/danube.md' in the store, nor 'docs/danube.md', the "
        "id `index` gives that path here\n",
    )


OLD_SALT = "# Salt\n\nSalt was traded along the amber road.\n"
NEW_SALT = "# Salt\n\nSalt was carried over the Alps on mules.\n"


def _project(tmp_path: Path) -> tuple[Path, str]:
    """A project with docs/sal.md, and the URL of a store outside it."""
    (tmp_path / "project" / "docs").mkdir(parents=True)
    (tmp_path / "project" / "docs" / "sal.md").write_text(OLD_SALT, encoding="utf-8")
    return tmp_path / "project", f"sqlite:///{tmp_path / 'store.db'}"


def _salt(store: str, cwd: Path) -> tuple[list[str], str]:
    """The ids of the chunks ``ask`` includes about salt, and the prompt they make."""
    done = ctxasm(
        "ask", "salt", "--store", store, "--json", "--principal", "ann", "--tenant", "t1", cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    prompt = json.dumps(result["messages"], ensure_ascii=False)
    return sorted(item["id"] for item in result["report"]["included"]), prompt


def test_index_with_root_gives_a_file_one_id_from_any_working_folder(tmp_path: Path) -> None:
    project, store = _project(tmp_path)
    first = ctxasm(
        "index", "docs/sal.md", "--store", store, "--tenant", "t1", "--root", ".", cwd=project
    )
    assert (first.returncode, first.stderr) == (
        0,
        "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 0 failed\n",
    )
    (project / "docs" / "sal.md").write_text(NEW_SALT, encoding="utf-8")
    again = ctxasm(
        "index", "sal.md", "--store", store, "--tenant", "t1", "--root", "..", cwd=project / "docs"
    )
    assert (again.returncode, again.stderr) == (
        0,
        "ctxasm: 0 added, 1 updated, 0 unchanged (1 chunks written), 0 failed\n",
    )
    ids, prompt = _salt(store, tmp_path)
    assert ids == ["docs/sal.md#0"]
    assert "mules" in prompt and "amber" not in prompt
    # $CTXASM_ROOT is the default of --root: the same id again, nothing written
    env = {"CTXASM_ROOT": str(project)}
    same = ctxasm(
        "index", "sal.md", "--store", store, "--tenant", "t1", cwd=project / "docs", env=env
    )
    assert (same.returncode, same.stderr) == (
        0,
        "ctxasm: 0 added, 0 updated, 1 unchanged (0 chunks written), 0 failed\n",
    )
    # delete resolves a path as index does, from the working folder, relative to --root
    gone = ctxasm("delete", "./sal.md", "--store", store, "--root", "..", cwd=project / "docs")
    assert (gone.returncode, gone.stderr) == (0, "ctxasm: deleted docs/sal.md\n")
    again = ctxasm("delete", "sal.md", "--store", store, "--root", "..", cwd=project / "docs")
    assert (again.returncode, again.stderr) == (
        2,
        "ctxasm: error: no document 'sal.md' in the store, nor 'docs/sal.md', the id `index` "
        "gives that path with --root ..\n",
    )


def test_index_without_root_keeps_ids_of_the_working_folder_and_warns_of_a_twin(
    tmp_path: Path,
) -> None:
    # The trap: `index docs/sal.md` in the project, then `index sal.md` in docs/, keeps both.
    project, store = _project(tmp_path)
    first = ctxasm("index", "docs/sal.md", "--store", store, "--tenant", "t1", cwd=project)
    assert (first.returncode, first.stderr) == (
        0,
        "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 0 failed\n",
    )
    (project / "docs" / "sal.md").write_text(NEW_SALT, encoding="utf-8")
    again = ctxasm("index", "sal.md", "--store", store, "--tenant", "t1", cwd=project / "docs")
    assert (again.returncode, again.stderr.splitlines()) == (
        0,
        [
            "ctxasm: warning: sal.md is also in the store as docs/sal.md, its id when indexed "
            "from another working folder; ask returns both: give --root DIR for the same ids "
            "from any folder, and `ctxasm delete` the old one",
            "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 0 failed",
        ],
    )
    ids, prompt = _salt(store, project)
    assert ids == ["docs/sal.md#0", "sal.md#0"]
    assert "mules" in prompt and "amber" in prompt
    # as the warning says: delete the old id (its path from here: ./docs/sal.md)
    gone = ctxasm("delete", "./docs/sal.md", "--store", store, cwd=project)
    assert (gone.returncode, gone.stderr) == (0, "ctxasm: deleted docs/sal.md\n")
    assert _salt(store, project)[0] == ["sal.md#0"]


@pytest.mark.parametrize("command", ["index", "delete"])
def test_a_root_that_is_no_folder_exits_2_naming_root(tmp_path: Path, command: str) -> None:
    project, store = _project(tmp_path)
    advice = "give the folder that files' document ids are relative to"
    for root, why in (("nowhere", "does not exist"), ("docs/sal.md", "is a file, not a folder")):
        done = ctxasm(command, "docs/sal.md", "--store", store, "--root", root, cwd=project)
        assert (done.returncode, done.stdout, done.stderr) == (
            2,
            "",
            f"ctxasm: error: --root {root!r} {why}; {advice}\n",
        )
    env = {"CTXASM_ROOT": "gone"}  # a stale default is named as such
    done = ctxasm(command, "docs/sal.md", "--store", store, cwd=project, env=env)
    assert (done.returncode, done.stderr) == (
        2,
        f"ctxasm: error: --root ($CTXASM_ROOT) 'gone' does not exist; {advice}\n",
    )
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--chunk-tokens", "64", "--overlap", "33"), "--overlap must be at most half"),
        (("--chunk-tokens", "7"), "--chunk-tokens"),
        (("--overlap", "-1"), "--overlap"),
        (("--workers", "-1"), "--workers"),
    ],
)
def test_bad_chunk_options_exit_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    _corpus(tmp_path)
    done = ctxasm("index", "docs", "--store", STORE, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "store.db").exists()


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("postgresql://localhost:1/db", "cannot open the PostgreSQL store"),
        ("mysql://localhost/db", "unknown store URL"),
    ],
)
def test_bad_store_urls_exit_2(tmp_path: Path, store: str, message: str) -> None:
    _corpus(tmp_path)
    done = ctxasm("index", "docs", "--store", store, cwd=tmp_path)
    assert done.returncode == 2
    assert message in done.stderr
    assert "[store]" in done.stderr


def test_a_store_under_a_file_names_the_file(tmp_path: Path) -> None:
    # It said "[Errno 17] File exists: 'h.db'", naming neither the problem nor the fix.
    _corpus(tmp_path)
    (tmp_path / "h.db").write_text("not a folder")
    done = ctxasm("index", "docs", "--store", "sqlite:///h.db/sub.db", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "ctxasm: error: cannot open the store h.db/sub.db: h.db is a file, not a folder\n",
    )
    assert (tmp_path / "h.db").read_text() == "not a folder"


def test_ctrl_c_while_indexing_says_what_is_kept(tmp_path: Path) -> None:
    # Typer turned Ctrl-C into exit 130 with nothing on standard error.
    lines = [
        json.dumps({"doc_id": f"d{n}", "text": f"Item {n} of the list. " * 400})
        for n in range(3000)
    ]
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    command = _console()
    process = subprocess.Popen(
        [*command, "index", "big.jsonl", "--store", STORE, "--tenant", "t1", "--no-progress"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal gives it, whatever this process ignores: an ignored SIGINT is
        # inherited, and Python then leaves it ignored (the index ran to its end, exit 0)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # noqa: PLW1509
    )
    deadline = time.monotonic() + 60
    while not (tmp_path / "store.db").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err) == (
        130,
        "ctxasm: interrupted: the documents written before are kept, each whole; run the same "
        "command again to index the rest (what is stored already is skipped as unchanged)\n",
    )
    again = ctxasm("index", "big.jsonl", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    added, _, unchanged = again.stderr.splitlines()[-1].partition(" added, 0 updated, ")
    assert int(added.removeprefix("ctxasm: ")) + int(unchanged.split()[0]) == 3000


def test_a_large_input_is_indexed_alike_with_and_without_a_worker(tmp_path: Path) -> None:
    """About 600 KB of text: past the first group, the default chunks in a worker process
    where the machine allows (see ctxasm.store.chunk_pool), --workers 2 in two, and
    --workers 0 in process: the same chunks and the same report."""
    lines = [
        json.dumps({"doc_id": f"d{n}", "text": f"{sentence} Item {n} of the list. " * 25})
        for n in range(300)
        for sentence in [list(TOPICS.values())[n % 3]]
    ]
    lines.insert(150, '{"doc_id": "broken", "text": 3}')
    (tmp_path / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    runs = {}
    variants = (("default", ()), ("two", ("--workers", "2")), ("alone", ("--workers", "0")))
    for name, extra in variants:
        store = f"sqlite:///{name}.db"
        done = ctxasm(
            "index", "big.jsonl", "--store", store, "--tenant", "t1", *extra, cwd=tmp_path
        )
        assert done.returncode == 1, done.stderr
        with sqlite3.connect(tmp_path / f"{name}.db") as db:
            rows = db.execute('SELECT chunk_id, start, "end", text FROM chunks ORDER BY id')
            runs[name] = (done.stderr, rows.fetchall())
    assert runs["default"] == runs["two"] == runs["alone"]
    assert runs["alone"][0].splitlines() == [
        "ctxasm: skipped big.jsonl:151: text must be a non-empty string",
        "ctxasm: 300 added, 0 updated, 0 unchanged (800 chunks written), 1 failed",
    ]


def test_a_missing_path_is_skipped_and_the_others_indexed(tmp_path: Path) -> None:
    _corpus(tmp_path)
    done = ctxasm("index", "nowhere", "secret", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            "ctxasm: skipped nowhere: no such file or folder",
            "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 1 failed",
        ],
    )


def test_a_folder_of_other_types_only_says_so_and_fails(tmp_path: Path) -> None:
    # It said "0 added, ..., 0 failed" with exit 0, as if the folder had been indexed.
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "handbook.pdf").write_bytes(b"%PDF-1.4\n")
    (tmp_path / "docs" / "notes.rst").write_text("Title\n=====\n", encoding="utf-8")
    done = ctxasm("index", "docs", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            "ctxasm: 2 files passed over: not a type ctxasm reads (.pdf, .rst); it reads .txt, "
            ".md, .markdown, .html, .htm, .jsonl",
            "ctxasm: 0 added, 0 updated, 0 unchanged (0 chunks written), 0 failed",
            "ctxasm: error: nothing was indexed: the folders given hold no file of a type "
            "ctxasm reads",
        ],
    )


def test_an_empty_folder_or_jsonl_file_says_nothing_was_indexed(tmp_path: Path) -> None:
    # An empty folder said "0 added, ..., 0 failed" with exit 0, as if it had been indexed.
    (tmp_path / "empty").mkdir()
    (tmp_path / "none.jsonl").write_text("", encoding="utf-8")
    for path in ("empty", "none.jsonl"):
        done = ctxasm("index", path, "--store", STORE, "--tenant", "t1", cwd=tmp_path)
        assert (done.returncode, done.stderr.splitlines()) == (
            1,
            [
                "ctxasm: 0 added, 0 updated, 0 unchanged (0 chunks written), 0 failed",
                "ctxasm: error: nothing was indexed: the paths given hold no document (an "
                "empty folder or .jsonl file)",
            ],
        ), path


def test_files_of_other_types_beside_documents_are_counted_not_failed(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nThe river Po.\n", encoding="utf-8")
    (tmp_path / "docs" / "logo.png").write_bytes(b"\x89PNG")
    done = ctxasm("index", "docs", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (
        0,
        [
            "ctxasm: 1 file passed over: not a type ctxasm reads (.png); it reads .txt, .md, "
            ".markdown, .html, .htm, .jsonl",
            "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 0 failed",
        ],
    )


def test_a_file_that_is_not_utf8_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes(b"caf\xe9")
    done = ctxasm("index", "latin.txt", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            "ctxasm: skipped latin.txt: not UTF-8 text",
            "ctxasm: 0 added, 0 updated, 0 unchanged (0 chunks written), 1 failed",
        ],
    )


def test_a_named_pipe_or_device_is_skipped_unread(tmp_path: Path) -> None:
    # A named pipe with a supported suffix was read until a writer closed it: the run hung.
    os.mkfifo(tmp_path / "pipe.txt")
    (tmp_path / "device.md").symlink_to(os.devnull)
    (tmp_path / "fine.txt").write_text("The river Po.", encoding="utf-8")
    done = ctxasm(
        "index",
        "pipe.txt",
        "device.md",
        "fine.txt",
        "--store",
        STORE,
        "--tenant",
        "t1",
        cwd=tmp_path,
    )
    only = "only regular files are read (write what it holds to a file and index that)"
    assert (done.returncode, done.stderr.splitlines()) == (
        1,
        [
            f"ctxasm: skipped pipe.txt: not a regular file but a named pipe; {only}",
            f"ctxasm: skipped device.md: not a regular file but a device; {only}",
            "ctxasm: 1 added, 0 updated, 0 unchanged (1 chunks written), 2 failed",
        ],
    )


class _ChatCompletions(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict[str, Any]]] = []
    content: ClassVar[str] = ""
    finish: ClassVar[str] = "stop"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        headers = {key.lower(): value for key, value in self.headers.items()}
        _ChatCompletions.seen.append({"path": self.path, "headers": headers, "body": body})
        if "/moved/" in self.path:  # elsewhere: a client that follows sends the key there
            self.send_response(302)
            self.send_header("location", f"http://localhost:{self.server.server_address[1]}/v1/")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if "/refusing/" in self.path:  # as OpenAI refuses a key, naming it in its message
            key = headers.get("authorization", "").removeprefix("Bearer ")
            said = f"Incorrect API key provided: {key}.\nYou can find your API key elsewhere."
            error = {"message": said, "type": "invalid_request_error", "code": "invalid_api_key"}
            self._json(401, {"error": error})
            return
        payload = json.dumps(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": _ChatCompletions.content},
                        "finish_reason": _ChatCompletions.finish,
                    }
                ],
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _json(self, status: int, value: Any) -> None:
        payload = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass


@pytest.fixture()
def endpoint() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _ChatCompletions)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _ChatCompletions.seen.clear()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/"
    finally:
        server.shutdown()
        server.server_close()


def _ask_model(root: Path, endpoint: str, answer: str) -> tuple[int, dict[str, Any], str]:
    _ChatCompletions.content = answer
    env = {
        "CTXASM_LLM_BASE_URL": endpoint,
        "CTXASM_LLM_API_KEY": "test-key",
        "CTXASM_LLM_MODEL": "served-model",
    }
    done = ctxasm(
        "ask",
        "Which river flows through Paris?",
        "--store",
        STORE,
        "--json",
        *ASKER,
        cwd=root,
        env=env,
    )
    result = json.loads(done.stdout)  # one object: the result, the answer and its check
    assert result["answer"] == answer
    citations = result["citations"]
    [sent] = _ChatCompletions.seen
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == "Bearer test-key"
    assert sent["body"] == {
        "model": "served-model",
        "messages": result["messages"],
        "max_tokens": result["report"]["budget"]["reserve_output"],
    }
    return done.returncode, citations, done.stderr


def test_ask_sends_the_prompt_and_checks_valid_citations(indexed: Path, endpoint: str) -> None:
    code, citations, stderr = _ask_model(
        indexed, endpoint, "The Seine flows through Paris [Source 1]."
    )
    assert code == 0, stderr
    assert citations["invalid"] == []
    assert [c["valid"] for c in citations["citations"]] == [True]
    assert citations["citations"][0]["label"] == "Source 1"


def test_ask_exits_1_on_an_invalid_citation(indexed: Path, endpoint: str) -> None:
    code, citations, _ = _ask_model(indexed, endpoint, "The Seine flows through Paris [Source 9].")
    assert code == 1
    assert citations["invalid"] == ["Source 9"]
    assert citations["cited_ids"] == []


def test_ask_exits_1_on_a_citation_linked_elsewhere(indexed: Path, endpoint: str) -> None:
    # check-citations exits 1 on the same answer; ask exited 0
    code, citations, stderr = _ask_model(
        indexed, endpoint, "The Seine flows through Paris [Source 1](https://phish.example/a)."
    )
    assert code == 1
    assert citations["mislinked"] == ["Source 1"]
    assert "citations linked elsewhere than their source: Source 1" in stderr


def test_ask_keeps_its_output_when_the_citation_check_is_too_large(
    indexed: Path, endpoint: str
) -> None:
    # A 300 KB answer of ranges (fewer markers than MAX_MARKERS): its citation report is
    # refused as out of proportion. The prompt and the answer are printed all the same
    # (--json printed nothing, with exit 2).
    _ChatCompletions.content = "[1-100, 1-100] " * 20_000
    env = {"CTXASM_LLM_BASE_URL": endpoint, "CTXASM_LLM_API_KEY": "k"}
    done = ctxasm(
        "ask", "Which river flows through Paris?", "--store", STORE, "--json", *ASKER,
        cwd=indexed, env=env,
    )  # fmt: skip
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["answer"] == _ChatCompletions.content
    assert result["citations"] is None
    assert "the citation check is left out (citations: null)" in done.stderr


def test_ask_prints_an_answer_no_citation_check_can_be_made_of(
    indexed: Path, endpoint: str
) -> None:
    # More citation markers than any model writes: the check is refused, the answer printed.
    _ChatCompletions.content = "[1] " * 60_000
    env = {"CTXASM_LLM_BASE_URL": endpoint, "CTXASM_LLM_API_KEY": "k"}
    done = ctxasm(
        "ask", "Which river flows through Paris?", "--store", STORE, *ASKER, "-q",
        cwd=indexed, env=env,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"--- answer ---\n{_ChatCompletions.content}" in done.stdout
    assert "the citation check is left out (citations: null)" in done.stderr
    assert "more than 50,000 citation markers" in done.stderr
    assert "Traceback" not in done.stderr


def test_ask_follows_no_redirect_and_shows_no_key(indexed: Path, endpoint: str) -> None:
    env = {"CTXASM_LLM_BASE_URL": f"{endpoint}moved/", "CTXASM_LLM_API_KEY": "sk-secret-123"}
    done = ctxasm(
        "ask", "Which river flows through Paris?", "--store", STORE, *ASKER, "-q",
        cwd=indexed, env=env,
    )  # fmt: skip
    assert done.returncode == 1
    assert "HTTP 302, a redirect; redirects are not followed" in done.stderr
    assert [sent["path"] for sent in _ChatCompletions.seen] == ["/v1/moved/chat/completions"]
    assert "sk-secret-123" not in done.stdout + done.stderr


def test_ask_shows_the_endpoints_own_error_message_without_the_key(
    indexed: Path, endpoint: str
) -> None:
    env = {"CTXASM_LLM_BASE_URL": f"{endpoint}refusing/", "CTXASM_LLM_API_KEY": "sk-secret-123"}
    done = ctxasm(
        "ask", "Which river flows through Paris?", "--store", STORE, *ASKER, "-q",
        cwd=indexed, env=env,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "ctxasm: error: the model endpoint failed: the endpoint answered HTTP 401 Unauthorized; "
        "its message: Incorrect API key provided: ***. You can find your API key elsewhere."
    )
    assert "secret" not in done.stdout + done.stderr


def _ask_readable(
    root: Path,
    endpoint: str,
    *args: str,
    answer: str = "The Seine flows through Paris [Source 1]. It is long.",
) -> subprocess.CompletedProcess[str]:
    _ChatCompletions.content = answer
    env = {"CTXASM_LLM_BASE_URL": endpoint, "CTXASM_LLM_API_KEY": "k"}
    return ctxasm(
        "ask",
        "Which river flows through Paris?",
        "--store",
        STORE,
        *ASKER,
        *args,
        cwd=root,
        env=env,
    )


def test_ask_prints_the_answer_and_a_readable_citation_check(indexed: Path, endpoint: str) -> None:
    done = _ask_readable(indexed, endpoint, "--quiet")
    assert (done.returncode, done.stderr) == (0, "")
    answer = done.stdout[done.stdout.index("--- answer ---") :]
    assert answer.splitlines() == [
        "--- answer ---",
        "The Seine flows through Paris [Source 1]. It is long.",
        "",
        "--- citations ---",
        "citations: 1 (1 valid)",
        "forms: bracket 1",
        "invalid: -",
        "cited: fine#0",
        "uncited sources: docs/danube.md#0, docs/rhine.md#0, docs/seine.md#0",
        "coverage: 50% of sentences cite a valid source",
        "uncited: It is long.",
    ]


def test_ask_without_quiet_prints_the_report_on_stderr(indexed: Path, endpoint: str) -> None:
    done = _ask_readable(indexed, endpoint)
    assert done.returncode == 0
    for shown in ("Budget: gpt-4o", "reserve_output", "Included:"):
        assert shown in done.stderr


def test_ask_sends_a_text_prompt_as_one_user_message(indexed: Path, endpoint: str) -> None:
    config = indexed / "ctxasm.toml"
    config.write_text('[defaults]\nmodel = "gpt-4o-mini"\nreserve_output_tokens = 300\n')
    done = _ask_readable(
        indexed, endpoint, "--format", "markdown", "--budget", "500", "--config", str(config), "-q"
    )
    assert done.returncode == 0, done.stderr
    [sent] = _ChatCompletions.seen
    [message] = sent["body"]["messages"]
    assert (message["role"], sent["body"]["model"], sent["body"]["max_tokens"]) == (
        "user",
        "gpt-4o-mini",
        300,
    )
    assert message["content"].startswith("## Instructions")
    assert done.stdout.startswith(message["content"])


@pytest.mark.parametrize("model", ["o3", "o4-mini", "gpt-5-mini"])
def test_ask_sends_a_reasoning_models_limit_as_max_completion_tokens(
    indexed: Path, endpoint: str, model: str
) -> None:
    # OpenAI's reasoning models refuse max_tokens; they reason within max_completion_tokens,
    # so the default reserve leaves them room to (docs/models.md).
    done = _ask_readable(indexed, endpoint, "--model", model, "--json")
    assert done.returncode == 0, done.stderr
    [sent] = _ChatCompletions.seen
    assert json.loads(done.stdout)["report"]["budget"]["reserve_output"] == 25_000
    assert {k: v for k, v in sent["body"].items() if k != "messages"} == {
        "model": model,
        "max_completion_tokens": 25_000,
    }


def test_ask_says_when_the_output_limit_cut_the_answer(indexed: Path, endpoint: str) -> None:
    """A reasoning model that spends its whole limit thinking answers nothing, cut at the
    length: that fails, saying so; a cut answer is printed with a warning (review)."""
    try:
        _ChatCompletions.finish = "length"
        done = _ask_readable(indexed, endpoint, "--model", "o3", "-q", answer="")
        assert done.returncode == 1
        assert "no answer within its limit of 25000 output tokens" in done.stderr
        done = _ask_readable(indexed, endpoint, "--model", "o3", "-q", answer="The Seine is")
        assert done.returncode == 0, done.stderr
        assert "the answer was cut at the limit of 25000 output tokens" in done.stderr
    finally:
        _ChatCompletions.finish, _ChatCompletions.content = "stop", ""


def test_ask_follows_the_configs_reasoning_flag(indexed: Path, endpoint: str) -> None:
    config = indexed / "ctxasm.toml"
    config.write_text(
        '[models."house-thinker"]\ncontext_window = 32000\nmax_output = 4000\n'
        'tokenizer = "tiktoken:o200k_base"\nreasoning = true\n'
        '[models."gpt-5"]\nreasoning = false\n'  # say, a proxy that takes only max_tokens
    )
    for model, limit in (("house-thinker", "max_completion_tokens"), ("gpt-5", "max_tokens")):
        _ChatCompletions.seen.clear()
        done = _ask_readable(indexed, endpoint, "--model", model, "--config", str(config), "-q")
        assert done.returncode == 0, done.stderr
        [sent] = _ChatCompletions.seen
        expected = 4000 if model == "house-thinker" else 1024
        assert {k: v for k, v in sent["body"].items() if k != "messages"} == {
            "model": model,
            limit: expected,
        }


def test_ask_sends_the_anthropic_system_prompt_first(indexed: Path, endpoint: str) -> None:
    done = _ask_readable(indexed, endpoint, "--format", "anthropic", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    [sent] = _ChatCompletions.seen
    assert sent["body"]["messages"] == [
        {"role": "system", "content": result["system"]},
        *result["messages"],
    ]


def test_public_documents_need_allow_public_and_index_says_so(tmp_path: Path) -> None:
    (tmp_path / "b.txt").write_text("The Danube ends in the Black Sea.", encoding="utf-8")
    indexed = ctxasm("index", "b.txt", "--store", STORE, cwd=tmp_path)
    assert indexed.returncode == 0
    assert "public" in indexed.stderr and "--allow-public" in indexed.stderr
    hidden = ctxasm("ask", "Danube", "--store", STORE, "--json", cwd=tmp_path)
    assert json.loads(hidden.stdout)["report"]["no_relevant_context"] is True
    shown = ctxasm("ask", "Danube", "--store", STORE, "--json", "--allow-public", cwd=tmp_path)
    assert [i["id"] for i in json.loads(shown.stdout)["report"]["included"]] == ["b.txt#0"]


def test_asking_a_store_that_does_not_exist_is_bad_input(tmp_path: Path) -> None:
    done = ctxasm("ask", "Danube", "--store", "sqlite:///nosuch/typo.db", cwd=tmp_path)
    assert done.returncode == 2
    assert "no store at nosuch/typo.db" in done.stderr
    assert not (tmp_path / "nosuch").exists()


def _limited_file_size() -> None:
    """In the child: files of at most 160 KiB, and a write past that fails (EFBIG) instead of
    killing the process, as a full disk makes writes fail."""
    import resource

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (160 * 1024, 160 * 1024))


def test_index_stops_at_a_store_that_cannot_be_written_and_resumes_after(tmp_path: Path) -> None:
    """A full disk fails every later write alike: the run stops at the first, saying why, not
    once per document with SQLite's bare 'disk I/O error'; the store stays whole, and the same
    command, run again with room, indexes the rest."""
    lines = [
        json.dumps({"doc_id": f"d{i}", "text": f"Report {i} on the river trade. " * 40})
        for i in range(400)
    ]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    command = _console()
    args = [*command, "index", "docs.jsonl", "--store", STORE, "--tenant", "t1"]
    full = subprocess.run(
        args,
        capture_output=True,
        cwd=tmp_path,
        text=True,
        timeout=120,
        preexec_fn=_limited_file_size,  # the child only sets its limits
    )
    assert full.returncode != 0
    assert "cannot be used: the disk" in full.stderr, full.stderr
    assert full.stderr.count("\n") <= 2, full.stderr  # one error, not one line per document
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    again = ctxasm("index", "docs.jsonl", "--store", STORE, "--tenant", "t1", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    with sqlite3.connect(tmp_path / "store.db") as db:
        assert db.execute("SELECT count(*) FROM documents").fetchone() == (400,)


# Ways to keep a command from writing a path: its mode (as root, which ignores modes, the
# command runs without the capabilities that let it), or a read-only mount of the folder in
# the command's own mount namespace.
_MODES = {"folder mode": 0o555, "file mode": 0o444}
_WITHOUT_OVERRIDE = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search,-fowner")
_MOUNTED_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'
# Run by the command: exit 0 saying so when the path cannot be written.
_PROBE = (
    "import sys\n"
    "try:\n"
    "    open(sys.argv[1], sys.argv[2]).close()\n"
    "except OSError as error:\n"
    "    print('cannot write:', error)\n"
    "else:\n"
    "    sys.exit(3)\n"
)


@pytest.fixture()
def unwritable() -> Iterator[Callable[[Path, str], list[str]]]:
    """Make a path unwritable ``how`` (see _MODES, or ``"read-only mount"`` of a folder) for
    the commands run within what this returns; skips where this machine cannot, after a
    probe run within it fails to write there. Modes are put back after the test."""
    changed: list[tuple[Path, int]] = []

    def make(path: Path, how: str) -> list[str]:
        if how == "read-only mount":
            within = ["unshare", "--mount", *(() if os.geteuid() == 0 else ("--map-root-user",))]
            within += ["sh", "-c", _MOUNTED_READ_ONLY, str(path)]
        else:
            within = []
            if os.geteuid() == 0:
                if shutil.which("setpriv") is None:
                    pytest.skip("root ignores file modes, and setpriv is not here to drop that")
                within = list(_WITHOUT_OVERRIDE)
            changed.append((path, path.stat().st_mode))
            path.chmod(_MODES[how])
        probe = [sys.executable, "-c", _PROBE]
        probe += [str(path / "probe"), "x"] if path.is_dir() else [str(path), "ab"]
        done = subprocess.run([*within, *probe], capture_output=True, text=True, timeout=60)
        if done.returncode != 0 or not done.stdout.startswith("cannot write:"):
            pytest.skip(f"cannot make {how} here: {done.stderr.strip() or 'it was written'}")
        return within

    yield make
    for path, mode in reversed(changed):
        path.chmod(mode)


def _untimed(report: str) -> str:
    """An ask's report on standard error up to its timings, which differ from run to run."""
    return report.partition("timings (ms)")[0]


def _written_in_wal(folder: Path) -> None:
    """Add a document to the store in ``folder`` and stop as a crash does: its -wal and -shm
    stay, the document only in the -wal."""
    script = (
        "import os, sys\n"
        "from ctxasm.store import Document, SQLiteStore, chunk_text\n"
        "store = SQLiteStore(sys.argv[1])\n"
        "doc = Document('nile', 'The Nile is a river that flows through Cairo, a capital.', "
        "tenant='t1', readers=('g1',))\n"
        "store.upsert(doc, chunk_text(doc.text, 64, 8))\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    subprocess.run(
        [sys.executable, "-c", script, str(folder / "store.db")], check=True, env=env, timeout=120
    )


@pytest.mark.parametrize("how", ["folder mode", "read-only mount", "file mode"])
def test_a_store_that_cannot_be_written_is_asked_and_a_write_stops_as_documented(
    indexed: Path, unwritable: Callable[[Path, str], list[str]], how: str
) -> None:
    # Review rv42-1: a store closed cleanly, its folder then made read-only, could not be
    # opened at all (ask, index and delete exit 2: "cannot open the store store.db: attempt to
    # write a readonly database"): in WAL mode SQLite must make store.db-shm even to read it.
    (indexed / "docs" / "nile.md").write_text("# Nile\n\nThe Nile flows north.\n")
    files = sorted(p.name for p in indexed.iterdir())
    asked = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, cwd=indexed)
    assert asked.returncode == 0, asked.stderr
    data = (indexed / "store.db").read_bytes()
    within = unwritable(indexed / "store.db" if how == "file mode" else indexed, how)
    again = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, cwd=indexed, within=within)
    assert (again.returncode, again.stdout, _untimed(again.stderr)) == (
        0,
        asked.stdout,
        _untimed(asked.stderr),
    )
    refused = (
        "ctxasm: error: the store store.db cannot be used: the file or its folder is read-only "
        "(attempt to write a readonly database); what was written before stays, and the same "
        "command can be run again\n"
    )
    for command in (
        ("index", "docs/nile.md", "--tenant", "t1"),
        ("delete", "docs/danube.md"),
    ):
        done = ctxasm(*command, "--store", STORE, cwd=indexed, within=within)
        assert (done.returncode, done.stdout, done.stderr) == (1, "", refused)
    if how != "file mode":  # nor can a new store be made there
        new = ctxasm(
            "index", "docs/nile.md", "--store", "sqlite:///new.db", cwd=indexed, within=within
        )
        assert (new.returncode, new.stdout, new.stderr) == (
            1,
            "",
            "ctxasm: error: the store new.db cannot be used: the file cannot be opened or made "
            "(its folder gone or read-only, or no permission) (unable to open database file)\n",
        )
    assert (indexed / "store.db").read_bytes() == data
    assert sorted(p.name for p in indexed.iterdir()) == files


@pytest.mark.parametrize("how", ["folder mode", "read-only mount"])
def test_a_store_left_in_wal_mode_in_a_read_only_folder_is_refused_saying_what_reads_it(
    indexed: Path, unwritable: Callable[[Path, str], list[str]], how: str
) -> None:
    # As a ctxasm before rv42-1 left every store it closed: SQLite can read it there neither
    # read-write nor read-only, and immutable=1 is never used (see ctxasm.store.sqlite_connections).
    with sqlite3.connect(indexed / "store.db") as db:
        db.execute("PRAGMA journal_mode = WAL")
    db.close()
    within = unwritable(indexed, how)
    done = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, cwd=indexed, within=within)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "ctxasm: error: the store store.db cannot be used: its folder cannot be written, and "
        "the store was left in write-ahead-log mode (by an older ctxasm, or another program), "
        "which SQLite reads only by making store.db-shm beside it; open the store once where "
        "its folder can be written (any ctxasm command, ask too), and it is left readable from "
        "a read-only folder\n",
    )


def test_a_store_a_crash_left_with_its_log_is_read_from_a_read_only_folder(
    indexed: Path, unwritable: Callable[[Path, str], list[str]]
) -> None:
    # Its -wal and -shm are there: SQLite reads them read-only (the -shm rebuilt in memory).
    _written_in_wal(indexed)
    assert (indexed / "store.db-wal").exists()
    within = unwritable(indexed, "folder mode")
    done = ctxasm("ask", "Cairo", "--store", STORE, *ASKER, cwd=indexed, within=within)
    assert (indexed / "store.db-wal").exists()
    indexed.chmod(0o755)
    writable = ctxasm("ask", "Cairo", "--store", STORE, *ASKER, cwd=indexed)
    assert (done.returncode, done.stdout, _untimed(done.stderr)) == (
        0,
        writable.stdout,
        _untimed(writable.stderr),
    )
    assert "The Nile is a river that flows through Cairo" in done.stdout


@pytest.mark.parametrize("how", ["same name", "symbolic link", "URL option"])
def test_ask_never_writes_its_page_over_the_store(indexed: Path, how: str) -> None:
    # ask Q --store sqlite:///store.db --html store.db replaced the whole store with the page
    original = (indexed / "store.db").read_bytes()
    target = "page.html" if how == "symbolic link" else "store.db"
    if how == "symbolic link":
        (indexed / target).symlink_to(indexed / "store.db")
    store = f"{STORE}?embedder=hashing" if how == "URL option" else STORE
    done = ctxasm("ask", QUESTION, "--store", store, *ASKER, "--html", target, cwd=indexed)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ctxasm: error: the output {target} is the input store.db: the page would replace the "
        "store; choose another output file [html]\n",
    )
    assert (indexed / "store.db").read_bytes() == original


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
def test_ask_never_writes_its_page_over_a_journal_not_there_yet(indexed: Path, suffix: str) -> None:
    # Review rv15: a store closed cleanly has no -wal or -shm; ask created them on opening the
    # store and wrote the page onto the live file (which SQLite then removed), exit 0.
    target = f"store.db{suffix}"
    assert not (indexed / target).exists()
    done = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, "--html", target, cwd=indexed)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ctxasm: error: the output {target} is the store's file {target}: the page would "
        "replace the store; choose another output file [html]\n",
    )
    assert not (indexed / target).exists()


def test_ask_never_writes_its_page_over_the_journal_beside_a_linked_store(indexed: Path) -> None:
    # Review rv16: SQLite keeps the -wal of a store named through a link beside the link's
    # target, which the names of the link's journals missed.
    real = indexed / "real"
    real.mkdir()
    (indexed / "store.db").rename(real / "store.db")
    (indexed / "link.db").symlink_to(real / "store.db")
    store = "sqlite:///link.db"
    done = ctxasm(
        "ask", QUESTION, "--store", store, *ASKER, "--html", "real/store.db-wal", cwd=indexed
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(
        f"is the store's file {os.path.realpath(real / 'store.db-wal')}: the page would replace "
        "the store; "
        "choose another output file [html]\n"
    )
    assert not (real / "store.db-wal").exists()


def test_ask_html_names_a_file(indexed: Path) -> None:
    # --html - wrote a file named "-"; standard output carries the prompt or the JSON
    before = sorted(indexed.iterdir())
    done = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, "--html", "-", cwd=indexed)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "ctxasm: error: --html - would write the page to standard output, which carries what "
        "ask prints; give the page a file name (--html report.html) [html]\n",
    )
    done = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, "--html", ".", cwd=indexed)
    assert (done.returncode, done.stderr) == (
        2,
        "ctxasm: error: cannot write the page to .: it is a folder; give a file name "
        "(--html report.html) [html]\n",
    )
    assert sorted(indexed.iterdir()) == before


def test_ask_html_dot_slash_dash_writes_a_file_named_dash(indexed: Path) -> None:
    # ./- was taken as standard output (Path("./-") is Path("-")), and refused
    done = ctxasm("ask", QUESTION, "--store", STORE, *ASKER, "--json", "--html", "./-", cwd=indexed)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["report"]["included"]  # the JSON alone on standard output
    assert (indexed / "-").read_text(encoding="utf-8").lower().startswith("<!doctype html>")


@pytest.mark.parametrize("given", ["--config", "$CTXASM_CONFIG"])
def test_ask_never_writes_its_page_over_the_config(indexed: Path, given: str) -> None:
    config = indexed / "ctxasm.toml"
    config.write_text('[defaults]\nmodel = "gpt-4o"\n', encoding="utf-8")
    option = ("--config", str(config)) if given == "--config" else ()
    env = {"CTXASM_CONFIG": str(config)} if given == "$CTXASM_CONFIG" else None
    done = ctxasm(
        "ask",
        QUESTION,
        "--store",
        STORE,
        *ASKER,
        *option,
        "--html",
        str(config),
        cwd=indexed,
        env=env,
    )
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"ctxasm: error: the output {config} is the input {config}: the page would replace the "
        "config; choose another output file [html]\n",
    )
    assert config.read_text(encoding="utf-8") == '[defaults]\nmodel = "gpt-4o"\n'
