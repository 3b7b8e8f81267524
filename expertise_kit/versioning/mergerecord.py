"""What a merge pruned at the line cap, kept until ``expertise history`` can show it on its commit.

The merge driver can't write the merge commit or its message: git makes it after the driver returns, in
a merge, a rebase (one commit per replayed commit), a cherry-pick or a pull. So the driver appends one
record to ``expertise-merge-pruned.jsonl`` in the repository's common git dir (so every worktree's
history sees it): the file merged, the entries pruned, the commit HEAD was on (the new commit's first
parent), the commit being merged in (``MERGE_HEAD``, ``REBASE_HEAD`` or ``CHERRY_PICK_HEAD``), the id of
the blob it wrote and the worktree it ran in.

``expertise history`` then shows a record on the commit whose first parent is that HEAD and which either
holds that very blob or has the merged commit as a parent. While the merge is still open (a conflict
elsewhere) it is a row of its own in that worktree; once HEAD has moved on, or no merge is under way, a
record that found no commit was abandoned (``git merge --abort``) and is left out. The file lives in
``.git``: it does not travel with a clone. A record is appended without reading the file; once the file
reaches ``_CUT_BYTES`` it is cut back to the last ``_KEEP`` records. Standard library only.
"""

from __future__ import annotations

import os

from expertise_kit import clock
from expertise_kit.fast import fastjson
from expertise_kit.lightdata import dataclass, field
from expertise_kit.versioning.busy import blob_id, head_sha

TYPE_CHECKING = False  # typing costs milliseconds of the merge driver's start-up
if TYPE_CHECKING:
    from typing import Any

    from expertise_kit.locate import GitDirs

__all__ = [
    "MergePrune",
    "PRUNED_FILE",
    "describe_pruned",
    "merge_in_progress",
    "merge_prunes",
    "record_merge_prune",
]

PRUNED_FILE = "expertise-merge-pruned.jsonl"
_KEEP = 200
_CUT_BYTES = 1 << 20  # the file is cut back to the last _KEEP records when it reaches this size
_SOURCES = ("MERGE_HEAD", "REBASE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD")


@dataclass
class MergePrune:
    path: str  # the domain file, relative to the repo's top (git's %P)
    domain: str
    cap: int
    head: str  # HEAD when the driver ran: the first parent of the commit that finishes the merge
    source: str  # the commit being merged in, or ""
    blob: str  # the id of the blob the driver wrote
    time: str
    pruned: list[dict[str, Any]] = field(default_factory=list)  # {id, section, text, learned}
    over_by: int = 0
    worktree: str = ""  # the git dir of the worktree the merge ran in (its open merge is its own)


def describe_pruned(entry: Any) -> dict[str, Any]:
    """A ``cap.PrunedEntry`` as the record and ``history --json`` carry it."""
    return {"id": entry.id, "section": entry.section, "text": entry.text, "learned": bool(entry.learned)}


def _read_ref_file(path: Any) -> str:
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _rev_parse_head(git: GitDirs) -> str:
    """HEAD by asking git, when the ref files don't say (a packed ref)."""
    import subprocess

    try:
        done = subprocess.run(  # noqa: S603
            ["git", "rev-parse", "-q", "--verify", "HEAD"],  # noqa: S607
            cwd=git.toplevel, capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def merge_in_progress(git: GitDirs) -> bool:
    """Whether a merge, rebase, cherry-pick or revert is open in this worktree."""
    names = (*_SOURCES, "rebase-merge", "rebase-apply")
    return any(os.path.exists(os.path.join(git.git_dir, name)) for name in names)


def record_merge_prune(
    git: GitDirs, *, path: str, domain: str, cap: int, pruned: list[Any], text: str, over_by: int = 0
) -> None:
    """Append what a merge of ``path`` pruned. Raises OSError when the git dir can't be written."""
    head = head_sha(git) or _rev_parse_head(git)
    source = next((s for s in (_read_ref_file(os.path.join(git.git_dir, name)) for name in _SOURCES) if s), "")
    like = head or source or "0" * 40
    record = MergePrune(
        path=path,
        domain=domain,
        cap=cap,
        head=head,
        source=source,
        blob=blob_id(text.encode("utf-8"), like),
        time=clock.iso(clock.now()),
        pruned=[describe_pruned(p) for p in pruned],
        over_by=over_by,
        worktree=os.fspath(git.git_dir),
    )
    target = os.path.join(git.common_dir, PRUNED_FILE)
    line = fastjson.dumps(record.__dict__) + "\n"  # as json.dumps writes it; importing json costs the driver 3 ms
    data = line.encode("utf-8")
    try:
        size = os.stat(target).st_size
    except FileNotFoundError:
        size = 0
    if size < _CUT_BYTES:  # appended, unread: the file is cut back only when it has grown
        with open(target, "a+b") as handle:
            if size:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    data = b"\n" + data  # a torn last line stays torn, on its own, and is skipped
            handle.write(data)
        return
    try:
        with open(target, "rb") as handle:
            kept = [old for old in handle.read().split(b"\n")[:-1] if old]
    except OSError:
        kept = []  # a record file that can't be read is started again rather than blocking the merge
    temp = f"{target}.{os.getpid()}.tmp"
    with open(temp, "wb") as handle:
        handle.write(b"".join(old + b"\n" for old in kept[-(_KEEP - 1) :]) + data)
    os.replace(temp, target)


def merge_prunes(git: GitDirs) -> list[MergePrune]:
    """Every record kept, oldest first; torn or foreign lines are skipped, each on its own (a line cut in
    the middle of a character hides no other)."""
    try:
        with open(os.path.join(git.common_dir, PRUNED_FILE), "rb") as handle:
            lines = handle.read().split(b"\n")
    except OSError:
        return []
    found = []
    for line in lines:
        try:
            data = fastjson.loads(line.decode("utf-8"))
            record = MergePrune(**data)
        except (ValueError, TypeError):
            continue
        if isinstance(record.pruned, list) and all(isinstance(p, dict) for p in record.pruned):
            found.append(record)
    return found
