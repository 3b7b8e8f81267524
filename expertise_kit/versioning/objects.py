"""Reading what a commit holds, and where git's refs point, straight from ``.git`` without spawning git.

After every commit we check that the blob committed for each of our paths is the bytes we wrote: a
``git stash`` (or an IDE's auto-stash, or ``pull --autostash``) run between our write and our commit
leaves git nothing to commit, and the revision would be lost while we reported it done. The commit we
just made, its trees and blobs are loose objects, so reading them costs a few zlib calls; anything we
can't read here (packed objects, alternates) is answered by ``git rev-parse`` instead.
"""

from __future__ import annotations

import contextlib
import contextvars

from expertise_kit.versioning.busy import blob_id, head_sha

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

    from expertise_kit.project import GitLocation

__all__ = ["blob_id", "committed_blob", "git_motion", "objects_read_once", "UNKNOWN"]

UNKNOWN = "?"  # the object store could not answer from loose objects
_read_once: contextvars.ContextVar[dict[str, tuple[bytes, bytes]] | None] = contextvars.ContextVar(
    "expertise_loose_objects", default=None
)


@contextlib.contextmanager
def objects_read_once() -> Iterator[None]:
    """Within it, each loose object is read once: an object never changes under its id, and a publish reads
    HEAD's commit and trees for the base's check, the removals since and the base's record."""
    token = _read_once.set({})
    try:
        yield
    finally:
        _read_once.reset(token)


def _loose(git: GitLocation, sha: str) -> tuple[bytes, bytes] | None:
    read = _read_once.get()
    if read is not None and sha in read:
        return read[sha]
    import zlib  # here: the merge driver imports this module for blob_id only

    path = git.common_dir / "objects" / sha[:2] / sha[2:]
    try:
        raw = zlib.decompress(path.read_bytes())
    except (OSError, zlib.error):
        return None
    header, _, body = raw.partition(b"\0")
    kind = header.split(b" ", 1)[0]
    if read is not None:
        read[sha] = (kind, body)
    return kind, body


def _tree_entry(body: bytes, name: bytes, width: int) -> str | None:
    position = 0
    while position < len(body):
        space = body.index(b" ", position)
        nul = body.index(b"\0", space)
        if body[space + 1 : nul] == name:
            return body[nul + 1 : nul + 1 + width].hex()
        position = nul + 1 + width
    return None


def committed_blob(git: GitLocation, commit: str, path: str) -> str | None:
    """The blob id of ``path`` (relative to the work tree, ``/``-separated) in ``commit``.

    None when the commit has no such path; ``UNKNOWN`` when the objects are not loose.
    """
    width = len(commit) // 2
    found = _loose(git, commit)
    if found is None or found[0] != b"commit":
        return UNKNOWN
    first = found[1].split(b"\n", 1)[0]
    if not first.startswith(b"tree "):
        return UNKNOWN
    sha = first[5:].decode("ascii")
    for part in path.split("/"):
        tree = _loose(git, sha)
        if tree is None or tree[0] != b"tree":
            return UNKNOWN
        entry = _tree_entry(tree[1], part.encode("utf-8"), width)
        if entry is None:
            return None
        sha = entry
    return sha


def _read(path: object) -> str:
    try:
        with open(str(path), encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def git_motion(git: GitLocation) -> str:
    """A fingerprint of where git's working state points: HEAD (and its commit), ORIG_HEAD and the stash.

    If it changed between two moments, git itself rewrote files in between (a checkout, a rebase or its
    abort, a stash); if not, a change to a file was made by a person.
    """
    stash = _read(git.common_dir / "refs" / "stash")
    if not stash:
        packed = _read(git.common_dir / "packed-refs")
        stash = next((line.split(" ", 1)[0] for line in packed.splitlines() if line.endswith(" refs/stash")), "")
    parts = [_read(git.git_dir / "HEAD"), head_sha(git) or "", _read(git.git_dir / "ORIG_HEAD"), stash]
    return "|".join(parts)
