"""Parsed domain-file data remembered by text, in the repository's common git dir: one writer's or reader's
parse saves the next one (the merge driver, the render cache, the shared layer's publish) reading the same
text again. A lost or unreadable memo only costs a parse.

Light on purpose: the merge driver's quick path imports it, so it loads no ``typing``, ``tempfile``,
``subprocess`` or OpenSSL.
"""

from __future__ import annotations

import contextlib
import os
import pickle

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:  # the built-in SHA-256: importing hashlib loads OpenSSL, milliseconds of the merge driver's start-up
        from _sha256 import sha256
    except ImportError:  # a Python without it (3.12 calls it _sha2)
        from hashlib import sha256
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from expertise_kit.project import GitLocation

__all__ = ["remembered_plain", "remember_plain", "MEMO_KEPT"]

MEMO_KEPT = 64  # remembered file data kept: the files in play (shared, each worktree's base) and a margin


def _memo_path(git: GitLocation, text: str, domain: str) -> Path:
    from expertise_kit import __version__  # another version may read a text into other data

    digest = sha256(f"{__version__}\0{domain}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()
    return git.common_dir / "expertise" / "shared" / "parsed" / digest


def remembered_plain(git: GitLocation, text: str, domain: str) -> dict[str, Any] | None:
    """The data of a domain file's text, if some writer or reader here remembered it (same text, same data)."""
    with contextlib.suppress(OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError):
        value = pickle.loads(_memo_path(git, text, domain).read_bytes())  # noqa: S301 - ours, in the git dir
        if isinstance(value, dict):
            return value
    return None


def remember_plain(git: GitLocation, text: str, domain: str, plain: dict[str, Any]) -> None:
    """Keep a text's data for the next merge or cache build; the oldest are let go beyond ``MEMO_KEPT``."""
    memo = _memo_path(git, text, domain)
    if memo.exists():
        with contextlib.suppress(OSError):
            os.utime(memo)
        return
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        # Replaced whole, without waiting for the disk: a reader sees the old bytes or the new.
        temp = memo.with_name(f".tmp-{os.getpid()}-{memo.name}")
        try:
            temp.write_bytes(pickle.dumps(plain))
            os.replace(temp, memo)
        finally:
            with contextlib.suppress(OSError):
                temp.unlink()
        if os.urandom(1)[0] < 26:  # now and then (one in ten): a listing costs more than the write
            kept = sorted(memo.parent.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
            for old in kept[MEMO_KEPT:]:
                old.unlink(missing_ok=True)
