"""The gate a learning passes before it is stored: nothing empty, trivial or pure noise."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["rejection_reason"]

_LETTERS = re.compile(r"[^\W\d_]", re.UNICODE)
_SAME_TOOL_TWICE = re.compile(r"\b(\w+)\s*(?:->|→)\s*\1\b")
_SAYS_NOTHING = {"error", "failed", "failure", "exception", "unknown", "none", "null", "undefined", "exit code"}


def _letters(text: str) -> int:
    return len(_LETTERS.findall(text))


def rejection_reason(kind: str, raw: dict[str, Any]) -> str | None:
    """Why ``raw`` should not be stored, or None when it may be."""
    if kind == "failure":
        error = str(raw.get("error") or "").strip()
        if _letters(error) < 4 or error.lower().strip(" .:!") in _SAYS_NOTHING:
            return f"the error says nothing useful ({error!r})"
        if _letters(str(raw.get("issue") or "")) < 2:
            return "no description of what failed"
        return None
    if kind == "file":
        path = str(raw.get("path") or "")
        return "empty path" if not path.strip(" ./") else None
    text = str(raw.get("text") or "").strip()
    if _letters(text) < 8:
        return "too short to teach anything"
    if text.lower().startswith("successful combo") or _SAME_TOOL_TWICE.search(text):
        return "noise: a tool followed by itself"
    return None
