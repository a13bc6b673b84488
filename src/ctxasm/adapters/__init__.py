"""Thin translations between ctxasm and RAG frameworks (each an optional extra)."""
