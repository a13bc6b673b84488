"""Shared test set-up.

Tests run offline: tiktoken's rank files come from ``../shared/tiktoken-cache`` (next to the
repository), unless ``TIKTOKEN_CACHE_DIR`` already points somewhere else.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"

os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken-cache"))
