"""Stable entry ids, derived from normalised content.

An id never lives in the file: it is recomputed from what the entry says, so a hand edit can't leave a
stale id behind, and the same learning arriving twice maps to the same id and is merged, not duplicated.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:  # the built-in SHA-256: importing hashlib loads OpenSSL, milliseconds of the merge driver's start-up
        from _sha256 import sha256
    except ImportError:  # a Python without it (3.12 calls it _sha2)
        from hashlib import sha256

__all__ = ["normalise_text", "normalise_path", "error_signature", "entry_id", "ID_LENGTH"]

ID_LENGTH = 8

_SPACE = re.compile(r"\s+")

# Order matters: paths first (they may contain ids and digits), then the more specific shapes, so a
# timestamp is not eaten as plain numbers.
@lru_cache(maxsize=1)
def _signature_rules() -> tuple[tuple[re.Pattern[str], str], ...]:
    """Compiled on first use: only failures have a signature, and compiling these costs milliseconds."""
    return (
        # Branch names first, slashes and all: `git push` on a new branch is one lesson whatever it is called.
        (re.compile(r"\b((?:current |on |a |the )?branch(?: named)?|upstream|refs/heads/)\s*:?\s*"
                    r"['\"`]?[\w][\w./-]*['\"`]?", re.I), r"\1 <branch>"),  # fmt: skip
        (re.compile(r"\b(git (?:push|pull|checkout|switch|rebase|merge)(?: -\S+)*(?: origin)?) [\w][\w./-]*", re.I),
         r"\1 <branch>"),  # fmt: skip
        # Absolute, home-relative, Windows and dotted-relative paths, and bare relative ones with a slash. A bare
        # one is tried only where a run of its characters starts (any leading `.@+-` kept as they are), not
        # again at each word boundary inside it: the same matches, in linear time on a long run with no slash.
        (re.compile(r"(?:[A-Za-z]:)?(?:~|<home>|\.{1,2})?(?:[/\\][\w.@+~-]+)+[/\\]?|"
                    r"(?<![\w.@+-])(?P<lead>[.@+-]*)\b[\w.@+-]+(?:/[\w.@+-]+)+/?"), r"\g<lead><path>"),  # fmt: skip
        (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?"), "<time>"),
        (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
        (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I), "<uuid>"),
        (re.compile(r"\b0x[0-9a-f]+\b", re.I), "<hex>"),
        # A run of 7+ hex digits mixing digits and letters: git hashes, object ids, digests. All digits is a
        # number, all letters a word.
        (re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,}\b", re.I), "<hex>"),
        (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b", re.I),
         "<duration>"),  # fmt: skip
        (re.compile(r"\d+(?:\.\d+)*"), "<n>"),
    )


@lru_cache(maxsize=16384)  # pure: a merge reads the same entries in three versions of a file
def normalise_text(text: str) -> str:
    """Unicode-fold, lowercase, collapse whitespace and drop trailing punctuation.

    Text that is nothing but punctuation keeps it: otherwise "!!!" and "..." would both become "" and
    share one id, and adding the second would be refused as a duplicate of the first.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _SPACE.sub(" ", folded).strip()
    # Every blank left is a space now, so the trailing run is spaces and .!;:, (a `[\s.!;:,]+$` search
    # would try it from every blank in the text).
    return folded.rstrip(" .!;:,") or folded


def normalise_path(path: str) -> str:
    """``./src//db.py`` and ``src/db.py`` are one file; case is kept, since file systems differ on it."""
    cleaned = path.strip().replace("\\", "/")
    trailing = "/" if cleaned.endswith("/") and cleaned != "/" else ""
    cleaned = posixpath.normpath(cleaned) if cleaned else cleaned
    return "" if cleaned == "." else cleaned + trailing


@lru_cache(maxsize=16384)
def error_signature(error: str) -> str:
    """The shape of an error with its particulars removed, so a recurrence matches the first sighting.

    ``FileNotFoundError: /tmp/a1/x.py line 12`` and ``FileNotFoundError: /home/b/y.py line 40`` share a
    signature.
    """
    text = unicodedata.normalize("NFKC", error)
    for pattern, placeholder in _signature_rules():
        text = pattern.sub(placeholder, text)
    return normalise_text(text)


def entry_id(kind: str, identity: str) -> str:
    """``kind`` keeps a path and a sentence with the same letters apart."""
    digest = sha256(f"{kind}\0{identity}".encode()).hexdigest()
    return digest[:ID_LENGTH]
