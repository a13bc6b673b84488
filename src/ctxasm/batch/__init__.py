"""Batch assembly: one request per JSON line in, one result (or error record) per line out."""

from ctxasm.batch.jsonl import BatchStats, assemble_lines

__all__ = ["BatchStats", "assemble_lines"]
