"""The chunking worker of :mod:`ctxasm.store.chunk_pool`: ``python -m ctxasm.store.chunk_worker
PATH``, where ``PATH`` is the file of the ``chunk_pool`` module that started it (a worker that
finds another ctxasm than its parent's ends at once, and its parent chunks in process).

It reads pickled ``(texts, (chunk_tokens, overlap, encoding))`` groups from its standard input,
one at a time, and writes the pickled outcomes of :func:`~ctxasm.store.chunk_pool.chunk_group`
for each to its standard output, in order. It ends at the end of its input: when the indexing
process closes it, or is gone. Its input comes only from the process that started it.
"""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

from ctxasm.store import chunk_pool
from ctxasm.store.chunk_pool import chunk_group


def main() -> None:
    # Started by another ctxasm than this one (another interpreter's): not the same chunks.
    if sys.argv[1:] != [str(Path(chunk_pool.__file__).resolve())]:
        sys.exit(2)
    source = sys.stdin.buffer
    # The answers get a descriptor of their own; anything printed goes to standard error.
    sink = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    while True:
        try:
            texts, job = pickle.load(source)
        except EOFError:
            return
        pickle.dump(chunk_group(texts, *job), sink, protocol=pickle.HIGHEST_PROTOCOL)
        sink.flush()


if __name__ == "__main__":
    main()
