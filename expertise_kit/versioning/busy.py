"""Is it safe to commit right now? Read from ``.git`` on disk, without spawning git.

A commit made in the middle of a merge, rebase, cherry-pick, revert or bisect would land inside the
user's operation; one made on a detached HEAD would be lost at the next checkout; one made on an unborn
branch would become the project's first commit behind the user's back; and any commit deletes the message
git prepared for the user's next one (``SQUASH_MSG`` after ``git merge --squash``, ``MERGE_MSG`` after
``git cherry-pick -n``). In each case we defer.

Also here, as light as the rest: the commit HEAD names (``head_sha``) and the id git gives a blob
(``blob_id``), which the merge driver's prune record and the checks after a commit need.
"""

from __future__ import annotations

import os
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from hashlib import sha1, sha256
    from pathlib import Path

    from expertise_kit.locate import GitDirs
    from expertise_kit.project import GitLocation
else:
    try:  # the built-in hashes: importing hashlib loads OpenSSL, milliseconds of the merge driver's start-up
        from _sha1 import sha1
        from _sha256 import sha256  # Python 3.12 calls it _sha2
    except ImportError:
        from hashlib import sha1, sha256

__all__ = ["blob_id", "busy_reason", "index_lock_path", "wait_for_index_lock", "head_sha"]

_IN_PROGRESS: tuple[tuple[str, str], ...] = (
    ("MERGE_HEAD", "a merge is in progress"),
    ("rebase-merge", "a rebase is in progress"),
    ("rebase-apply", "a rebase or `git am` is in progress"),
    ("CHERRY_PICK_HEAD", "a cherry-pick is in progress"),
    ("REVERT_HEAD", "a revert is in progress"),
    ("BISECT_LOG", "a bisect is in progress"),
)
# Checked after the states above, which leave the same files behind and say more about what is going on.
_PREPARED_MESSAGES: tuple[tuple[str, str], ...] = (
    ("SQUASH_MSG", "`git merge --squash` left a message for your next commit"),
    ("MERGE_MSG", "git left a message for your next commit (after `git cherry-pick -n` or `git revert -n`)"),
)


def index_lock_path(git: GitLocation) -> Path:
    return git.git_dir / "index.lock"


def wait_for_index_lock(git: GitLocation, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for another git process to release the index; True if free."""
    lock = index_lock_path(git)
    deadline = time.monotonic() + timeout
    delay = 0.005
    while lock.exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
    return True


def _ref_exists(git: GitLocation, ref: str) -> bool | None:
    """None when refs are not stored as files (reftable) and we can't tell."""
    if (git.common_dir / "reftable").is_dir():
        return None
    if (git.common_dir / ref).is_file() or (git.git_dir / ref).is_file():
        return True
    packed = git.common_dir / "packed-refs"
    try:
        with open(packed, encoding="utf-8", errors="replace") as handle:
            return any(line.rstrip("\n").endswith(" " + ref) for line in handle)
    except FileNotFoundError:
        return False


def busy_reason(git: GitLocation, *, index_wait: float = 2.0) -> str | None:
    """Why we should not commit now, or None when we may."""
    for name, reason in _IN_PROGRESS:
        if (git.git_dir / name).exists():
            return reason
    for name, reason in _PREPARED_MESSAGES:
        message = git.git_dir / name
        if message.exists():
            return f"{reason} in {message}, which a commit now would delete; commit or delete it first"
    try:
        head = (git.git_dir / "HEAD").read_text(encoding="utf-8").strip()
    except OSError:
        return "HEAD can't be read"
    if not head.startswith("ref:"):
        return "HEAD is detached"
    ref = head[len("ref:") :].strip()
    if _ref_exists(git, ref) is False:
        return "the current branch has no commits yet"
    if not wait_for_index_lock(git, index_wait):
        return f"{index_lock_path(git)} is held by another git process (delete it if none is running)"
    return None


def head_sha(git: GitDirs) -> str | None:
    """The commit HEAD points at, read from the ref files; None when that takes git itself to answer."""
    try:
        with open(os.path.join(git.git_dir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    if not head.startswith("ref:"):
        return head or None
    ref = head[len("ref:") :].strip()
    for base in (git.git_dir, git.common_dir):
        try:
            with open(os.path.join(base, ref), encoding="utf-8") as handle:
                value = handle.read().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if len(value) in (40, 64):
            return value
    return None


def blob_id(data: bytes, like: str) -> str:
    """The id git gives a blob of ``data``, in the hash of the repository whose ids look like ``like``."""
    digest = sha256() if len(like) == 64 else sha1()
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()
