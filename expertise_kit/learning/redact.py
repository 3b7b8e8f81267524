"""Scrubbing credentials out of learned text before it is written, because git history is forever.

Each match becomes ``[REDACTED:<kind>]``. The patterns are anchored on the shapes providers give their
keys (fixed prefixes and lengths), so content that only looks random (sha256 digests, ``toolu_`` ids,
UUIDs, git hashes) is left alone; the false-positive count on real transcripts is measured in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["redact", "redact_counting", "SECRET_KINDS"]


def _whole(kind: str) -> Callable[[re.Match[str]], str]:
    return lambda _match: f"[REDACTED:{kind}]"


def _keep_group(group: int, kind: str) -> Callable[[re.Match[str]], str]:
    """Keep the text before group ``group`` (a name, a header), redact the group itself."""

    def replace(match: re.Match[str]) -> str:
        start = match.start(group) - match.start(0)
        end = match.end(group) - match.start(0)
        whole = match.group(0)
        return whole[:start] + f"[REDACTED:{kind}]" + whole[end:]

    return replace


_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:secret|passw(?:or)?d|passwd|pwd|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|client[_-]?secret|credentials?|auth[_-]?key|session[_-]?key|signing[_-]?key|encryption[_-]?key)[A-Za-z0-9_.-]*"
)
# A value we won't call a secret: a number, a boolean, an empty or placeholder value, a variable reference.
_HARMLESS_VALUE = re.compile(
    r"""^(?:["']?)(?:\d+|true|false|null|none|nil|undefined|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|<[^>]*>|\*+|x+|\.\.\.|"""
    r"""os\.environ.*|process\.env.*|\[REDACTED:[a-z-]+\])(?:["']?)[,;]?$""",
    re.I,
)


def _assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    if len(value.strip("\"'")) < 6 or _HARMLESS_VALUE.match(value) or "(" in value:
        return match.group(0)
    quote = value[0] if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1 else ""
    return f"{match.group('lead')}{quote}[REDACTED:assignment]{quote}"


RULES: tuple[tuple[str, re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (
        "private-key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
        _whole("private-key"),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _whole("jwt")),
    ("anthropic", re.compile(r"\bsk-ant-(?:api|admin)?\d{0,3}-?[A-Za-z0-9_-]{20,}"), _whole("anthropic")),
    ("openai", re.compile(r"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}"), _whole("openai")),
    ("openai", re.compile(r"\bsk-[A-Za-z0-9]{20,}(?:T3BlbkFJ[A-Za-z0-9]{20,})?\b"), _whole("openai")),
    ("github", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,}"), _whole("github")),
    ("github", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"), _whole("github")),
    ("aws", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b"), _whole("aws")),
    ("slack", re.compile(r"\bxox[abposrce]-[A-Za-z0-9-]{10,}"), _whole("slack")),
    ("slack", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), _whole("slack")),
    ("stripe", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), _whole("stripe")),
    ("stripe", re.compile(r"\bwhsec_[A-Za-z0-9]{24,}"), _whole("stripe")),
    ("google", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), _whole("google")),
    (
        "url-password",
        re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s/:@\"'<>]+:([^\s@/\"'<>]+)@", re.I),
        _keep_group(1, "url-password"),
    ),
    (
        "bearer",
        re.compile(
            r"\b(?:authorization\s*[:=]\s*[\"']?\s*)?(?:bearer|token|basic)\s+((?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{16,})",
            re.I,
        ),
        _keep_group(1, "bearer"),
    ),
    (
        "assignment",
        re.compile(
            r"(?P<lead>(?<![A-Za-z0-9_])[\"']?" + _SECRET_NAME + r"[\"']?\s*(?::=|=|:)\s*)"
            r"(?P<value>\[REDACTED:[a-z-]+\]|\"[^\"\n]*\"|'[^'\n]*'|[^\s,;\"'}\]]+)",
            re.I,
        ),
        _assignment,
    ),
)

SECRET_KINDS = tuple(dict.fromkeys(kind for kind, _, _ in RULES))


def redact_counting(text: str) -> tuple[str, dict[str, int]]:
    """The scrubbed text and how many of each kind were replaced."""
    counts: dict[str, int] = {}
    for kind, pattern, replace in RULES:
        if kind == "private-key" and "PRIVATE KEY" not in text:
            continue

        def counted(match: re.Match[str], kind: str = kind, replace: Callable[[re.Match[str]], str] = replace) -> str:
            new = replace(match)
            if new != match.group(0):
                counts[kind] = counts.get(kind, 0) + 1
            return new

        text = pattern.sub(counted, text)
    return text, counts


def redact(text: str) -> str:
    return redact_counting(text)[0]
