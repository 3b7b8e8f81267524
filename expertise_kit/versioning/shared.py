"""The shared layer: one ref, ``refs/expertise/shared``, that every worktree and branch of a repository
writes its lessons to, so a parallel agent gets them before anything is merged.

Its commits hold a tree with only the domain files, at the paths they have in the work tree
(``.expertise/database.yaml``), so ``git show refs/expertise/shared:.expertise/database.yaml`` and
``git diff HEAD refs/expertise/shared -- .expertise`` work as usual. Each file is the union of what the
branches have learned, merged entry by entry with the merge driver's logic.

**Publishing.** Every revision, after its branch commit and still inside the write lock that every
worktree shares, applies its branch's change to the shared layer as a three-way merge: base = the file
as this worktree last published it, ours = the shared file, theirs = the file now. So a lesson added on a
branch is added, a sighting is counted once per session, and a lesson the branch deleted or reverted is
deleted (unless another branch changed it since: a change beats a deletion, as in a merge). What a
person changed by hand or a plain ``git commit`` made is published with the next revision the same way.
On a true conflict the newer write wins here: the branches keep their own versions for review.

A revision's publish writes loose objects straight into ``.git/objects`` (no git process: its cost has a
budget) and moves the ref under the ref's own lock file, a compare-and-swap retried from the top when the
ref moved; ``sync`` runs inside ``git_plumbing()``, where git's own ``hash-object -w`` and ``update-ref
NEW OLD`` do both.

**Lifecycle.** The tree also holds a ledger per domain file (``versioning.ledger``): tombstones of the
entries removed anywhere (they leave the layer whichever branch published them, and no merge brings them
back) and the branches behind each lesson (``versioning.lifecycle`` retires those of deleted branches).

**Reading.** ``union_plain`` gives what the hook and ``render`` read: the working tree's entries, plus
the shared entries it does not have. The working tree wins: an entry it holds is taken from it, and an
entry this worktree published and then deleted is not brought back.

**State for the hook.** ``<common dir>/expertise/shared/state.bin`` records the ref's commit and each
file's blob, so the pre-task hook tells which domains the shared layer changed with two small reads.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import marshal
import os
import subprocess
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit import clock
from expertise_kit.errors import UserError
from expertise_kit.project import GitLocation, Project
from expertise_kit.versioning.git import SAFE_CONFIG
from expertise_kit.versioning.ledger import Ledger, ledger_path, parse_ledger
from expertise_kit.versioning.lifecycle import (
    Drop,
    merge_drops,
    note_origins,
    removed_in_history,
    retirements,
)
from expertise_kit.versioning.memo import remember_plain, remembered_plain
from expertise_kit.versioning.objects import _loose, blob_id, objects_read_once

__all__ = [
    "SHARED_REF",
    "Published",
    "read_ref",
    "shared_files",
    "read_blob",
    "publish",
    "union_plain",
    "shared_text",
    "state_path",
    "write_state",
    "tree_path",
    "update_ref",
    "write_commit",
    "write_tree_of",
    "run",
    "shared_message",
    "branch_name",
    "changed_since_published",
    "rewrite_shared",
    "layer_missing",
    "descends",
    "remember_plain",
    "remembered_plain",
]

SHARED_REF = "refs/expertise/shared"
_ATTEMPTS = 8  # compare-and-swap retries; under our lock only git itself (a fetch) can move the ref
_FALLBACK_IDENTITY = ("expertise_kit", "expertise@localhost")


# -- git plumbing, mostly without git ----------------------------------------------------------------


def run(
    git: GitLocation, args: list[str], *, data: bytes | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[bytes]:
    """One git process for this repository, without GitPython (the shared layer's writes stay cheap), with
    the settings every command of ours runs with."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_DIR": str(git.git_dir)}
    return subprocess.run(
        ["git", *SAFE_CONFIG, *args], input=data, capture_output=True, env=env, cwd=git.toplevel,
        timeout=timeout, check=False,
    )  # fmt: skip


def _git(git: GitLocation, args: list[str], *, data: bytes | None = None, check: bool = True) -> bytes:
    done = run(git, args, data=data)
    if check and done.returncode != 0:
        from expertise_kit.versioning.git import GitError

        out, err = done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
        raise GitError(args, done.returncode, out, err)
    return done.stdout


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


_HEX = frozenset("0123456789abcdef")


def _is_hex_id(value: str) -> bool:
    return len(value) in (40, 64) and _HEX.issuperset(value)


def read_ref(git: GitLocation) -> str | None:
    """The commit the shared ref names, or None when there is none yet."""
    if (git.common_dir / "reftable").is_dir():
        out = _git(git, ["rev-parse", "--verify", "--quiet", SHARED_REF], check=False).decode().strip()
        return out if _is_hex_id(out) else None
    value = _read_text(git.common_dir / SHARED_REF)
    if _is_hex_id(value):
        return value
    for line in _read_text(git.common_dir / "packed-refs").splitlines():
        sha, _, name = line.partition(" ")
        if name == SHARED_REF and _is_hex_id(sha):
            return sha
    return None


_configs: dict[str, tuple[Any, str]] = {}  # config path -> (its stat signature, what _config made of it)


def _config(git: GitLocation) -> str:
    """The repository's config file, lowercased with no blanks: enough to spot the few settings below.
    Read again only when the file changed (a write asks several times)."""
    path = str(git.common_dir / "config")
    try:
        st = os.stat(path)
        stamp: Any = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = None
    known = _configs.get(path)
    if known is not None and stamp is not None and known[0] == stamp:
        return known[1]
    text = _read_text(Path(path)).lower().replace(" ", "").replace("\t", "")
    _configs[path] = (stamp, text)
    return text


def _algorithm(git: GitLocation) -> str:
    return "sha256" if "objectformat=sha256" in _config(git) else "sha1"


def _group_shared(git: GitLocation) -> bool:
    """``core.sharedRepository`` asks for group or world permissions: git's own processes then write the
    objects and move the ref, so their modes are what every member's git expects."""
    for line in _config(git).splitlines():
        if line.startswith("sharedrepository="):
            return line.split("=", 1)[1] not in ("false", "umask", "0", "no", "off", "")
    return False


def _object_path(git: GitLocation, sha: str) -> str:
    return os.path.join(git.common_dir, "objects", sha[:2], sha[2:])


_plumbing: contextvars.ContextVar[bool] = contextvars.ContextVar("expertise_git_plumbing", default=False)


@contextlib.contextmanager
def git_plumbing() -> Iterator[None]:
    """Within it, objects are written by ``git hash-object -w`` and the ref moved by ``git update-ref``:
    git's own plumbing, which follows every setting (object format, reftable, fsync, shared permissions,
    hooks on ref updates). ``sync`` runs in it; the hand writer below stays only for the revision's own
    publish, whose cost has a budget (docs/performance.md: the write with the shared-ref update <= 2x a bare
    commit), which four git processes more would break."""
    token = _plumbing.set(True)
    try:
        yield
    finally:
        _plumbing.reset(token)


def write_object(git: GitLocation, kind: bytes, body: bytes) -> str:
    """Store one object as a loose object, as git would, and return its id."""
    if _group_shared(git) or _plumbing.get():
        return _git(git, ["hash-object", "-w", "-t", kind.decode(), "--stdin"], data=body).decode().strip()
    data = b"%s %d\0" % (kind, len(body)) + body
    sha = hashlib.new(_algorithm(git), data).hexdigest()
    path = _object_path(git, sha)
    if os.path.exists(path):
        return sha
    directory = os.path.dirname(path)
    temp = os.path.join(directory, f"tmp_obj_{os.urandom(6).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(temp, flags, 0o444)  # read-only from the start, as git leaves its objects
    except FileNotFoundError:  # the first object of its fan-out directory
        os.makedirs(directory, exist_ok=True)
        handle = os.open(temp, flags, 0o444)
    try:
        with os.fdopen(handle, "wb") as out:  # writes it all, or raises: a short object would be taken as whole
            out.write(zlib.compress(data, 1))
        with contextlib.suppress(FileExistsError):
            os.link(temp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    return sha


MAX_OBJECT_BYTES = 8 << 20  # a domain file is ~40 KB at the cap; a fetched layer may hold anything


def read_object(git: GitLocation, sha: str) -> tuple[bytes, bytes]:
    """(kind, body) of an object: loose ones read here, packed ones asked of git. An object over
    ``MAX_OBJECT_BYTES`` (a hostile or broken layer fetched from a remote) is refused, unread."""
    if not _is_hex_id(sha):
        raise ValueError(f"{sha!r} is not an object id")
    try:
        inflate = zlib.decompressobj()
        with open(_object_path(git, sha), "rb") as handle:
            raw = inflate.decompress(handle.read(), MAX_OBJECT_BYTES + 64)
        header, _, body = raw.partition(b"\0")
        kind, _, size = header.partition(b" ")
        if not size.isdigit() or int(size) > MAX_OBJECT_BYTES:
            raise ValueError(f"object {sha} is over {MAX_OBJECT_BYTES} bytes")
        if len(body) == int(size):
            return kind, body
    except (OSError, zlib.error):
        pass
    kind = _git(git, ["cat-file", "-t", sha]).strip()
    size = _git(git, ["cat-file", "-s", sha]).strip()
    if not size.isdigit() or int(size) > MAX_OBJECT_BYTES:
        raise ValueError(f"object {sha} is over {MAX_OBJECT_BYTES} bytes")
    return kind, _git(git, ["cat-file", kind.decode(), sha])


def read_blob(git: GitLocation, sha: str) -> bytes:
    kind, body = read_object(git, sha)
    if kind != b"blob":
        raise ValueError(f"{sha} is a {kind.decode()}, not a blob")
    return body


def _tree_items(body: bytes, width: int) -> list[tuple[bytes, bytes, str]]:
    items = []
    position = 0
    while position < len(body):
        space = body.index(b" ", position)
        nul = body.index(b"\0", space)
        items.append((body[position:space], body[space + 1 : nul], body[nul + 1 : nul + 1 + width].hex()))
        position = nul + 1 + width
    return items


def _tree_body(items: list[tuple[bytes, bytes, str]]) -> bytes:
    def order(item: tuple[bytes, bytes, str]) -> bytes:
        return item[1] + (b"/" if item[0] == b"40000" else b"")

    return b"".join(mode + b" " + name + b"\0" + bytes.fromhex(sha) for mode, name, sha in sorted(items, key=order))


def shared_files(git: GitLocation, commit: str | None) -> dict[str, str]:
    """Path (``/``-separated, from the top of the work tree) -> blob id, for every file in ``commit``."""
    if commit is None:
        return {}
    kind, body = read_object(git, commit)
    if kind != b"commit" or not body.startswith(b"tree "):
        raise ValueError(f"{SHARED_REF} does not name a commit")
    width = len(commit) // 2
    found: dict[str, str] = {}
    pending = [("", body[5 : body.index(b"\n")].decode("ascii"))]
    while pending:
        prefix, tree = pending.pop()
        kind, tree_body = read_object(git, tree)
        if kind != b"tree":
            continue
        for mode, name, sha in _tree_items(tree_body, width):
            path = prefix + name.decode("utf-8", "surrogateescape")
            if mode == b"40000":
                pending.append((path + "/", sha))
            elif mode.startswith(b"100"):
                found[path] = sha
    return found


def write_tree_of(git: GitLocation, files: dict[str, str]) -> str:
    """Trees for ``files`` (path -> blob id), bottom up; the root tree's id."""
    children: dict[str, list[tuple[bytes, bytes, str]]] = {"": []}
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            children.setdefault("/".join(parts[:depth]), [])
    for path, sha in files.items():
        parent, _, name = path.rpartition("/")
        children[parent].append((b"100644", name.encode("utf-8", "surrogateescape"), sha))
    for directory in sorted((d for d in children if d), key=lambda d: d.count("/"), reverse=True):
        parent, _, name = directory.rpartition("/")
        sha = write_object(git, b"tree", _tree_body(children[directory]))
        children[parent].append((b"40000", name.encode("utf-8", "surrogateescape"), sha))
    return write_object(git, b"tree", _tree_body(children[""]))




def _identity(git: GitLocation) -> tuple[str, str]:
    name = os.environ.get("GIT_COMMITTER_NAME")
    email = os.environ.get("GIT_COMMITTER_EMAIL")
    if not (name and email):
        from expertise_kit.versioning.git import configured_identity

        try:  # most often already read by this revision's branch commit
            found = configured_identity(git.toplevel, again=False)
        except UserError:  # no git to ask, or a config it can't read: the fallback identity
            found = (None, None)
        name = name or found[0]
        email = email or found[1]
    if not (name and email):
        return _FALLBACK_IDENTITY
    # As git cleans them: no angle brackets or line breaks, or `git fsck` (and hosts that run it on push)
    # would refuse the commit.
    name = " ".join(name.replace("<", "").replace(">", "").split())
    email = "".join(email.replace("<", "").replace(">", "").split())
    if not (name and email):
        return _FALLBACK_IDENTITY
    return f"expertise_kit (on behalf of {name})", email


def write_commit(git: GitLocation, tree: str, parents: list[str], message: str) -> str:
    name, email = _identity(git)
    stamp = f"{int(clock.now().timestamp())} +0000"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
    lines += [f"author {name} <{email}> {stamp}", f"committer {name} <{email}> {stamp}", "", message]
    return write_object(git, b"commit", "\n".join(lines).encode("utf-8"))


def _update_ref_file(git: GitLocation, new: str, old: str | None) -> bool | None:
    """``update_ref`` as git does it for a ref kept in a file, without a git process: take the ref's own
    lock file (the one git takes, so git and we exclude each other), check the old value under it, write,
    rename. None when git must do it: refs in a reftable, or every ref update logged."""
    if _plumbing.get() or (git.common_dir / "reftable").is_dir() or "logallrefupdates=always" in _config(git):
        return None
    if _group_shared(git):
        return None  # git's modes for the ref and its log
    path = git.common_dir / SHARED_REF
    lock = path.with_name(path.name + ".lock")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return False  # git (or a killed writer) holds it: the caller tries again
    except OSError:
        return None
    renamed = False
    try:
        with os.fdopen(handle, "w", encoding="ascii") as out:
            if read_ref(git) != old:
                return False
            out.write(new + "\n")
        os.replace(lock, path)
        renamed = True
        return True
    finally:
        if not renamed:  # once renamed, the lock's name is free: a lock there now is someone else's
            with contextlib.suppress(OSError):
                os.unlink(lock)


def update_ref(git: GitLocation, new: str, old: str | None, reason: str = "expertise: shared layer") -> bool:
    """Move the shared ref from ``old`` (None: it must not exist) to ``new``; False when it had moved."""
    done = _update_ref_file(git, new, old)
    if done is not None:
        return done
    return run(git, ["update-ref", "-m", reason, SHARED_REF, new, old or "0" * len(new)]).returncode == 0


# -- where things are kept ----------------------------------------------------------------------------


def _write_quick(path: Path, data: bytes) -> None:
    """Replace ``path`` whole (a reader sees the old bytes or the new), without waiting for the disk: what
    is kept here (state, bases, remembered data) only saves work, and a copy lost in a crash costs a
    rebuild or a union publish, never a lesson. The store's own files keep `write_atomic`'s fsyncs."""
    directory = os.path.dirname(path)
    temp = os.path.join(directory, f".tmp-{os.urandom(6).hex()}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    try:
        handle = os.open(temp, flags, 0o600)
    except FileNotFoundError:  # its directory, made on the first write only
        os.makedirs(directory, exist_ok=True)
        handle = os.open(temp, flags, 0o600)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def state_path(git: GitLocation) -> Path:
    return git.common_dir / "expertise" / "shared" / "state.bin"


def _quoted(rel: str) -> str:
    return rel.replace("%", "%25").replace("/", "%2F")


def _branch_dir(git: GitLocation, name: str) -> Path:
    """Where this worktree keeps what its branch ``name`` last published. Per branch: after a checkout of
    another branch, the new branch's file is not a change of the old one's (publishing it as one would
    delete the old branch's lessons from the layer); a branch that never published has no base, and its
    first publish is a union. A name too long for a file name (or with characters some file systems
    refuse) is kept under its digest."""
    quoted = _quoted(name)
    if len(quoted.encode("utf-8", "surrogateescape")) > 120 or any(ch in quoted for ch in '<>:"|?*\\'):
        quoted = "h-" + hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:40]
    return git.git_dir / "expertise" / "shared-base" / quoted


def layer_missing(git: GitLocation) -> bool:
    """No shared layer to publish a change into: no ref, or one that names no commit (a tag, a blob). The
    next publish then starts one with every file of the worktree. A commit that isn't loose (packed by
    `git gc`) is taken to be one: asking git would cost every write three processes."""
    commit = read_ref(git)
    if commit is None:
        return True
    found = _loose(git, commit)
    return found is not None and found[0] != b"commit"


def _loose_parents(git: GitLocation, sha: str) -> list[str] | None:
    """A commit's parents, read from its loose object; None when it isn't loose."""
    found = _loose(git, sha)
    if found is None or found[0] != b"commit":
        return None
    head, _, _ = found[1].partition(b"\n\n")
    return [line[7:].decode("ascii", "replace") for line in head.split(b"\n") if line.startswith(b"parent ")]


def descends(git: GitLocation, head: str, ancestor: str) -> bool:
    """Whether ``ancestor`` is ``head`` or one of its ancestors: the recent history is read from loose
    objects (our own commits are), anything further asked of git once."""
    frontier, seen = [head], set[str]()
    while frontier and len(seen) < 64:
        commit = frontier.pop()
        if commit == ancestor:
            return True
        if commit in seen:
            continue
        seen.add(commit)
        parents = _loose_parents(git, commit)
        if parents is None:
            break
        frontier += parents
    else:
        if not frontier:
            return False
    return run(git, ["merge-base", "--is-ancestor", ancestor, head]).returncode == 0


_valid_bases: dict[tuple[str, str], bool] = {}  # (branch dir, HEAD) -> whether its base still holds


@dataclass
class _Base:
    """What this worktree's branch last published, read once for a publish (or a read of the union): the
    branch, where its bases are kept, the commit HEAD was at when it published with the tree of the domain
    files' directory there, HEAD now, and the blob of each file as the branch last published it.

    One small record per branch (``HEAD`` in its directory: the commit, the tree, then ``<blob> <path>``
    lines): the bases' texts are those blobs, which the branch's own commits hold. Before, each base was
    a copy of its text beside the record; such a copy is still read where the record names no blob."""

    git: GitLocation
    branch: str
    directory: Path
    recorded: str  # HEAD when the branch last published; "" when it never did (or before this was kept)
    recorded_tree: str
    head: str  # HEAD now; "" when it takes git to answer
    blobs: dict[str, str]  # tree path -> the blob as the branch last published it

    @classmethod
    def of(cls, git: GitLocation) -> _Base:
        from expertise_kit.versioning.busy import head_sha

        branch = branch_name(git)
        directory = _branch_dir(git, branch)
        try:  # not stripped: its first two lines may be empty (HEAD unreadable from the ref files)
            record = (directory / "HEAD").read_text(encoding="utf-8", errors="replace")
        except OSError:
            record = ""
        recorded, _, rest = record.partition("\n")
        tree, _, listed = rest.partition("\n")
        recorded = recorded.strip()
        blobs = {}
        for line in listed.splitlines():
            sha, _, rel = line.partition(" ")
            if rel and _is_hex_id(sha):
                blobs[rel] = sha
        return cls(git, branch, directory, recorded, tree.strip(), head_sha(git) or "", blobs)

    @property
    def holds(self) -> bool:
        """A branch's base speaks for it only while its HEAD descends from where it was when it published: a
        branch deleted and made again under the same name (`checkout -B`), reset or rebased starts over (its
        next publish is a union, which deletes nothing)."""
        if not self.recorded:
            return True  # nothing recorded: no base either, or one from before this was kept
        key = (str(self.directory), self.head)
        if key not in _valid_bases:
            _valid_bases[key] = bool(self.head) and (
                self.head == self.recorded or descends(self.git, self.head, self.recorded)
            )
        return _valid_bases[key]

    def blob(self, rel: str) -> str | None:
        """The blob of the file at ``rel`` as the branch last published it, where the record names one."""
        return self.blobs.get(rel) if self.holds else None

    def text(self, rel: str) -> str | None:
        """The file at ``rel`` as the branch last published it; None when it never did (or starts over)."""
        if not self.holds:
            return None
        sha = self.blobs.get(rel)
        try:
            if sha is not None:
                return read_blob(self.git, sha).decode("utf-8")
            return (self.directory / _quoted(rel)).read_text(encoding="utf-8")  # kept the older way
        except (OSError, ValueError, UnicodeDecodeError, subprocess.SubprocessError, UserError):
            return None  # gone (the branch was reset and git pruned it): the next publish is a union

    def keep(self, texts: dict[str, str], prefix: str) -> None:
        """Record ``texts`` (rel -> text) as published, and HEAD as where the branch last published with the
        tree of its domain files' directory there (``prefix``), so the next publish tells with a few reads
        that nothing else changed them. One file is written."""
        from expertise_kit.versioning.lifecycle import directory_tree

        blobs = dict(self.blobs)
        for rel, text in texts.items():
            with contextlib.suppress(OSError, ValueError, subprocess.SubprocessError):
                blobs[rel] = write_object(self.git, b"blob", text.encode("utf-8"))  # most often there already
        _valid_bases.clear()
        # HEAD unreadable from the ref files (unborn, packed): the commit recorded before stays
        head, tree = self.recorded, self.recorded_tree
        if self.head:
            head, tree = self.head, directory_tree(self.git, self.head, prefix) or ""
        listed = "".join(f"{sha} {rel}\n" for rel, sha in sorted(blobs.items()))
        _write_quick(self.directory / "HEAD", f"{head}\n{tree}\n{listed}".encode())
        for rel in texts:
            with contextlib.suppress(OSError):
                (self.directory / _quoted(rel)).unlink(missing_ok=True)  # a copy kept the older way


def write_state(git: GitLocation, commit: str | None, files: dict[str, str]) -> None:
    """What the hook reads to tell which domains the shared layer changed: the ref's commit, each blob."""
    _write_quick(state_path(git), marshal.dumps({"commit": commit or "", "files": dict(files)}))


def _state(git: GitLocation) -> dict[str, Any] | None:
    try:
        data = marshal.loads(state_path(git).read_bytes())
    except (OSError, ValueError, EOFError, TypeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def current_files(git: GitLocation) -> tuple[str | None, dict[str, str]]:
    """(the shared ref's commit, its files), from the state file when it is current, else from git."""
    commit = read_ref(git)
    state = _state(git)
    if state is not None and state.get("commit") == (commit or ""):
        return commit, dict(state["files"])
    files = shared_files(git, commit)
    with contextlib.suppress(OSError):
        write_state(git, commit, files)
    return commit, files


def tree_path(project: Project, path: Path) -> str:
    """A file's path in the shared tree: from the top of the work tree, ``/``-separated."""
    return _tree_paths(project, [path])[path]


def _tree_paths(project: Project, paths: Iterable[Path]) -> dict[Path, str]:
    """``tree_path`` of each of ``paths``, the top of the work tree resolved once (a resolve is a few stats)."""
    assert project.git is not None
    top = project.git.toplevel.resolve()
    return {path: path.resolve().relative_to(top).as_posix() for path in paths}


def shared_text(project: Project, path: Path) -> tuple[str, str] | None:
    """(blob id, text) of ``path`` in the shared layer, or None when it has none."""
    git = project.git
    if git is None:
        return None
    from expertise_kit.document.yamlio import MAX_FILE_BYTES

    try:
        _, files = current_files(git)
        sha = files.get(tree_path(project, path))
        if not sha:
            return None
        data = read_blob(git, sha)
        # Held to what a domain file may be, as the working tree's are: a bigger one (a hostile or broken
        # layer fetched from a remote) is left out of what agents read, and costs no parse.
        return (sha, data.decode("utf-8")) if len(data) <= MAX_FILE_BYTES else None
    except (OSError, ValueError, UnicodeDecodeError, subprocess.SubprocessError, UserError):
        return None


# -- publishing ---------------------------------------------------------------------------------------


def branch_name(git: GitLocation) -> str:
    """The branch this worktree is on (``HEAD`` when detached)."""
    head = _read_text(git.git_dir / "HEAD")
    return head[len("ref: refs/heads/") :] if head.startswith("ref: refs/heads/") else "HEAD"


def shared_message(project: Project, revision: Any, sha: str | None) -> str:
    """The branch revision's message, its subject marked with the branch, plus where it came from."""
    from expertise_kit.versioning.commit import TRAILER_PREFIX, _message, trailer_value

    assert project.git is not None
    branch = branch_name(project.git)
    message = _message(revision, []).rstrip("\n")
    subject, newline, rest = message.partition("\n")
    lines = [f"{subject} [{' '.join(branch.split())[:100]}]{newline}{rest}"]
    lines.append(f"{TRAILER_PREFIX}Branch: {trailer_value(branch)}")
    if sha:
        lines.append(f"{TRAILER_PREFIX}Commit: {sha}")
    return "\n".join(lines) + "\n"


@dataclass
class Published:
    commit: str | None = None  # the shared ref's new commit; None when nothing changed there
    attempts: int = 0
    merged: list[str] = field(default_factory=list)  # paths merged entry by entry (the shared file differed)
    quick: list[str] = field(default_factory=list)  # ... of which by the quick path (``versioning.quickmerge``)
    skipped: list[str] = field(default_factory=list)  # "path: why", for files that could not be published


def _combine(
    git: GitLocation,
    base: str | None,
    shared: str | None,
    new: str,
    *,
    path: Path,
    domain: str,
    line_cap: int,
    plain: dict[str, Any] | None,
) -> tuple[str, str, dict[str, Any] | None]:
    """The shared file after applying this branch's change (base -> new) to it: (text, how, its data if
    known); how is "" (no merge needed), "quick" or "full"."""
    if shared is None or shared in (base, new):
        return new, "", plain
    if base == new:
        return shared, "", None
    if plain is not None:
        from expertise_kit.versioning.quickmerge import quick_merge, valid_plain

        # The data of the shared file and the base: remembered by their writer, or read in plain Python.
        shared_plain = remembered_plain(git, shared, domain) or valid_plain(shared, domain)
        base_plain = None if base is None else remembered_plain(git, base, domain) or valid_plain(base, domain)
        if shared_plain is not None and (base is None or base_plain is not None):
            quick = quick_merge(base_plain, shared, shared_plain, plain, line_cap=line_cap)
            if quick is not None:
                return quick[0], "quick", quick[1]
    from expertise_kit.versioning.merge import merge_domain_texts

    try:
        merged = merge_domain_texts(
            base or "", shared, new, path=path, domain=domain, line_cap=line_cap, prefer="theirs"
        )
    except UserError:
        return new, "", plain  # the shared file is not a valid domain file: this branch's replaces it
    return merged.text, "full", merged.plain


@objects_read_once()
def publish(
    project: Project,
    files: dict[Path, tuple[str, str]],
    *,
    message: str,
    line_cap: int,
    plains: dict[Path, dict[str, Any]] | None = None,
    dropped: dict[Path, dict[str, Drop]] | None = None,
    learned: dict[Path, list[str]] | None = None,
    retire_days: int | None = None,
) -> Published:
    """Apply this worktree's changes to ``files`` (path -> (domain, text now)) to the shared layer.
    ``plains``: the data of those texts where the caller has it (the quick merge needs it). ``dropped``:
    entries this revision removed on purpose (revert, validate, a hand edit), taken out of the layer
    whichever branch published them, with a tombstone; ``learned``: entries it added, whose origin is
    this branch. ``retire_days``: retire the lessons of branches gone that long (None: not now).

    Call inside the write lock, after the branch commit. Never raises for git's or the files' sake: a
    write must not fail because the shared layer could not take it (the next revision publishes the
    same change again, since the base is only moved on success).
    """
    git = project.git
    outcome = Published()
    if git is None or (not files and retire_days is None):
        return outcome
    from expertise_kit.versioning.busy import _IN_PROGRESS

    busy = next((reason for name, reason in _IN_PROGRESS if (git.git_dir / name).exists()), None)
    base = _Base.of(git)
    if busy is None and base.branch == "HEAD":
        busy = "HEAD is detached"
    if busy is not None:
        # Mid-rebase, mid-merge, detached: the files are between branches. The branch publishes its
        # change with its next revision once git is done (its base has not moved).
        outcome.skipped = [f"{path}: not published while {busy}" for path in files]
        return outcome
    rels = _tree_paths(project, [project.expertise_dir, *files, *(dropped or {}), *(learned or {})])
    prefix = rels[project.expertise_dir]
    wanted = {rels[path]: (path, domain, text) for path, (domain, text) in files.items()}
    bases = {rel: base.text(rel) for rel in wanted}
    plains = plains or {}
    branch = base.branch
    drops = merge_drops(
        {rels[path]: ids for path, ids in (dropped or {}).items() if ids}, _removed_since_published(base, prefix)
    )
    origins = {rels[path]: ids for path, ids in (learned or {}).items() if ids}
    if origins:
        note_origins(git, origins, branch)
    for attempt in range(1, _ATTEMPTS + 1):
        outcome.attempts = attempt
        old = read_ref(git)
        parent = old
        try:
            old_files = shared_files(git, old)
        except (ValueError, OSError, UserError):
            # The ref names no commit (a tag, a blob, a missing object): the layer starts again as a
            # new root, never with that object as a parent (git gc would fail on such a commit).
            old_files, parent = {}, None
        new_files = dict(old_files)
        merged: list[str] = []
        quick: list[str] = []
        all_drops = merge_drops(drops, retirements(git, old_files, retire_days) if retire_days is not None else {})
        removals: list[str] = []
        for rel in dict.fromkeys([*wanted, *all_drops]):
            sha = old_files.get(rel)
            shared = None
            if sha is not None:
                with contextlib.suppress(ValueError, OSError, UnicodeDecodeError):
                    shared = read_blob(git, sha).decode("utf-8")
            if rel in wanted:
                path, domain, text = wanted[rel]
                result, how, result_plain = _combine(
                    git, bases[rel], shared, text, path=path, domain=domain, line_cap=line_cap, plain=plains.get(path)
                )
            elif shared is not None:
                path, domain = git.toplevel / rel, rel.rsplit("/", 1)[-1].removesuffix(".yaml")
                result, how, result_plain = shared, "", None
            else:
                continue
            if how:
                merged.append(rel)
            if how == "quick":
                quick.append(rel)
            union = bases.get(rel, "") is None
            changes = _Lifecycle(git, branch, origins.get(rel, []), all_drops.get(rel, {}), union=union)
            result, result_plain = changes.apply(
                old_files, new_files, rel, result, result_plain, path, domain, line_cap
            )
            removals += changes.removals
            if changes.removals and not how:
                how = "dropped"
            if result_plain is not None and how:
                remember_plain(git, result, domain, result_plain)  # the shared file the next writer merges into
            new_files[rel] = write_object(git, b"blob", result.encode("utf-8"))
        if new_files == old_files and parent is not None:
            break
        tree = write_tree_of(git, new_files)
        commit = write_commit(git, tree, [parent] if parent else [], _with_removals(message, removals))
        if update_ref(git, commit, old):
            outcome.commit, outcome.merged, outcome.quick = commit, merged, quick
            with contextlib.suppress(OSError):
                write_state(git, commit, new_files)
            break
    else:
        outcome.skipped = [f"{rel}: {SHARED_REF} kept moving" for rel in wanted]
        return outcome
    with contextlib.suppress(OSError):
        base.keep({rel: text for rel, (_, _, text) in wanted.items()}, prefix)
    return outcome


REMOVED_TRAILER = "Expertise-Shared-Removed"


def _with_removals(message: str, removals: list[str]) -> str:
    """The shared commit's message with a trailer per entry it took out: ``<id> <cause> [branch]: text``."""
    if not removals:
        return message
    return message.rstrip("\n") + "\n" + "".join(f"{REMOVED_TRAILER}: {line}\n" for line in removals)


@dataclass
class _Lifecycle:
    """One file's part of a publish beyond the merge: the tombstones of what it learned again lifted, the
    entries to take out (``dropped``, with a tombstone each), and for a union publish (a branch's first)
    no tombstoned entry brought back."""

    git: GitLocation
    branch: str
    learned: list[str]
    dropped: dict[str, Drop]
    union: bool
    removals: list[str] = field(default_factory=list)  # trailer values: ``<id> <cause> [branch]: text``

    def apply(
        self, old_files: dict[str, str], new_files: dict[str, str], rel: str, text: str,
        plain: dict[str, Any] | None, path: Path, domain: str, line_cap: int,
    ) -> tuple[str, dict[str, Any] | None]:  # fmt: skip
        """``text`` (the file as published) with the drops made, and its data; the ledger written to ``new_files``."""
        ledger = _ledger_at(self.git, old_files, rel)
        before = ledger.to_bytes()
        ledger.expire(clock.now())
        for entry in self.learned:  # learned again: its tombstone is lifted (its origin is in the local log)
            ledger.removed.pop(entry, None)
        gone = dict(self.dropped)
        if self.union:  # a branch's first publish never brings a removed lesson back
            gone.update({
                entry: Drop(record.get("cause", "removed"), record.get("text", ""))
                for entry, record in ledger.removed.items() if entry not in self.learned
            })  # fmt: skip
        if gone:
            text, plain, said = drop_entries(self.git, text, path, domain, set(gone), line_cap, plain)
            for entry, what in said.items():
                if entry in ledger.removed:
                    continue
                what = gone[entry].text or what
                ledger.tombstone(entry, gone[entry].cause, self.branch, clock.now().isoformat(), what)
                self.removals.append(f"{entry} {gone[entry].cause} [{self.branch}]: {' '.join(what.split())[:120]}")
        if ledger.to_bytes() != before:
            new_files[ledger_path(rel)] = write_object(self.git, b"blob", ledger.to_bytes())
        return text, plain


def fold_origins(git: GitLocation) -> str | None:
    """Put the origins this clone's revisions logged (``lifecycle.note_origins``) into the layer's ledgers,
    as a commit on the shared ref, so other clones learn which branches stand behind each lesson. Call
    inside the write lock (``sync`` does, before it takes the remote's layer in). The new commit, or None."""
    from expertise_kit.versioning.lifecycle import clear_local_origins, local_origins

    pending = local_origins(git)
    old = read_ref(git)
    if not pending or old is None:
        return None
    try:
        files = shared_files(git, old)
    except (ValueError, OSError):
        return None
    new_files = dict(files)
    for rel, entries in pending.items():
        if rel not in files:
            continue
        ledger = _ledger_at(git, files, rel)
        for entry, origins in entries.items():
            if entry not in ledger.removed:
                known = ledger.origins.setdefault(entry, [])
                known += [origin for origin in sorted(origins) if origin not in known]
        new_files[ledger_path(rel)] = write_object(git, b"blob", ledger.to_bytes())
    if new_files == files:
        clear_local_origins(git, pending)
        return None
    message = "expertise(shared): record which branches learned what\n"
    commit = write_commit(git, write_tree_of(git, new_files), [old], message)
    if not update_ref(git, commit, old, "expertise sync: origins"):
        return None
    with contextlib.suppress(OSError):
        write_state(git, commit, new_files)
    clear_local_origins(git, pending)
    return commit


def _ledger_at(git: GitLocation, files: dict[str, str], rel: str) -> Ledger:
    sha = files.get(ledger_path(rel))
    if sha is None:
        return Ledger()
    try:
        return parse_ledger(read_blob(git, sha))
    except (ValueError, OSError):
        return Ledger()  # not ours (a layer someone made by hand): started again


def drop_entries(
    git: GitLocation,
    text: str,
    path: Path,
    domain: str,
    ids: set[str],
    line_cap: int,
    plain: dict[str, Any] | None = None,
) -> tuple[str, dict[str, Any] | None, dict[str, str]]:
    """``text`` without the entries ``ids``: (text, its data, id -> what each removed one said). A text that
    holds none of them (or is no domain file) is returned as it is."""

    from expertise_kit.document.entries import item_id, item_text, parse_item
    from expertise_kit.vocab import section_names

    plain = plain if plain is not None else _parsed(git, text, path, domain)
    if plain is None:
        return text, None, {}
    found: dict[str, str] = {}
    where: list[tuple[str, int]] = []
    for name in section_names():
        for index, raw in enumerate(plain.get(name) or []):
            with contextlib.suppress(ValueError):
                item = parse_item(name, raw)
                entry = item_id(name, item)
                if entry in ids:
                    found[entry] = item_text(item)
                    where.append((name, index))
    if not where:
        return text, plain, {}
    from expertise_kit.document.cap import fit_to_cap
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.document.splice import Remove, expected_plain

    try:
        doc = parse_domain_text(text, path, domain)
    except UserError:
        return text, plain, {}
    edits: list[Any] = [Remove(name, index) for name, index in where]
    capped = fit_to_cap(doc.loaded, doc.model, edits, line_cap)
    return capped.text, expected_plain(doc.loaded, capped.edits), found


def _removed_since_published(base: _Base, prefix: str) -> dict[str, dict[str, Drop]]:
    """Entries this branch held since it last published and no longer holds, when its domain files were
    changed by other means than our own revisions (a merge, a plain commit, a pull). The common case (only
    this revision's commit, or code commits, since) costs a few reads of loose objects. ``prefix``: the
    domain files' directory in the tree."""
    from expertise_kit.versioning.lifecycle import directory_tree

    git, recorded, head = base.git, base.recorded, base.head
    if not recorded or not head or head == recorded or not base.holds:
        return {}
    parents = _loose_parents(git, head)
    if parents is not None and parents[:1] == [recorded]:
        return {}  # only this revision's commit since: its removals are named by the revision itself
    if parents and base.recorded_tree and directory_tree(git, parents[0], prefix) == base.recorded_tree:
        return {}  # commits in between, none of them to the domain files
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return removed_in_history(git, prefix, recorded, head)
    return {}


def changed_since_published(
    project: Project, domains: dict[str, Path], *, everything: bool = False
) -> dict[Path, tuple[str, str]]:
    """Domain files (name -> path) this worktree published before and that changed since by other means
    than a revision (a hand edit, a plain ``git commit``, a checkout): path -> (domain, text). A file that
    is not a valid domain file now is left out; it is published once it is one again. ``everything``:
    every file, published or not (the shared layer is new, or was deleted to start over)."""
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.document.yamlio import read_text_file

    git = project.git
    found: dict[Path, tuple[str, str]] = {}
    if git is None:
        return found
    published = _Base.of(git)
    rels = _tree_paths(project, domains.values())
    for domain, path in domains.items():
        blob = published.blob(rels[path])
        base = published.text(rels[path]) if blob is None else None  # a base kept the older way: its text
        if blob is None and base is None and not everything:
            continue
        try:
            text = read_text_file(path)  # a regular file of at most 1 MiB of UTF-8: never a FIFO or a device
        except UserError:
            continue
        if not everything and (text == base or (blob is not None and blob_id(text.encode("utf-8"), blob) == blob)):
            continue
        try:
            parse_domain_text(text, path, domain)
        except UserError:
            continue
        found[path] = (domain, text)
    return found


def rewrite_shared(
    project: Project, paths: dict[Path, str], rewrite: Callable[[str, Path, str], str | None], message: str
) -> str | None:
    """Change files of the shared layer itself, for what is not any branch's (feedback on a lesson this
    worktree read from the shared layer only). ``rewrite(domain, path, text)`` gives a file's new text, or
    None to leave it; it runs again on the newer files if the ref moved meanwhile. Call inside the write
    lock. The new commit, or None when nothing changed or the ref could not be moved."""
    git = project.git
    if git is None:
        return None
    for _ in range(_ATTEMPTS):
        old = read_ref(git)
        try:
            old_files = shared_files(git, old)
        except (ValueError, OSError, UserError):
            return None
        new_files = dict(old_files)
        for path, domain in paths.items():
            rel = tree_path(project, path)
            sha = old_files.get(rel)
            if sha is None:
                continue
            try:
                text = read_blob(git, sha).decode("utf-8")
            except (ValueError, OSError, UnicodeDecodeError):
                continue
            result = rewrite(domain, path, text)
            if result is not None and result != text:
                new_files[rel] = write_object(git, b"blob", result.encode("utf-8"))
        if new_files == old_files or old is None:
            return None
        commit = write_commit(git, write_tree_of(git, new_files), [old], message)
        if update_ref(git, commit, old):
            with contextlib.suppress(OSError):
                write_state(git, commit, new_files)
            return commit
    return None


# -- reading the union --------------------------------------------------------------------------------


def _parsed(git: GitLocation, text: str, path: Path, domain: str) -> dict[str, Any] | None:
    """The plain data of a domain file's text: remembered, read in plain Python where that is sure, or
    parsed (and then remembered)."""
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.versioning.quickmerge import valid_plain

    plain = remembered_plain(git, text, domain) or valid_plain(text, domain)
    if plain is not None:
        return plain
    try:
        plain = parse_domain_text(text, path, domain).loaded.plain
    except UserError:
        return None
    remember_plain(git, text, domain, plain)
    return plain


def _ids(plain: dict[str, Any]) -> dict[str, set[str]]:

    from expertise_kit.document.entries import item_id, parse_item
    from expertise_kit.vocab import section_names

    found: dict[str, set[str]] = {}
    for name in section_names():
        for raw in plain.get(name) or []:
            with contextlib.suppress(ValueError):
                found.setdefault(name, set()).add(item_id(name, parse_item(name, raw)))
    return found


def union_plain(
    project: Project, domain: str, path: Path, plain: dict[str, Any]
) -> tuple[dict[str, Any], str, list[str]]:
    """The working tree's ``plain`` of ``domain`` plus the shared layer's entries it lacks, the blob of
    the shared file that went into it ("" when none did), and the ids of the entries it added. An entry
    this worktree published and has since deleted stays deleted."""
    shared = shared_text(project, path)
    if shared is None:
        return plain, "", []
    git = project.git
    assert git is not None
    sha, text = shared
    shared_plain = _parsed(git, text, path, domain)
    if shared_plain is None:
        return plain, sha, []

    from expertise_kit.document.entries import item_id, parse_item
    from expertise_kit.vocab import section_names

    mine = _ids(plain)
    base = _Base.of(git).text(tree_path(project, path))
    base_plain = _parsed(git, base, path, domain) if base else None
    published = _ids(base_plain) if base_plain is not None else {}
    union = dict(plain)
    added: list[str] = []
    for name in section_names():
        have = set().union(*mine.values()) if mine else set()
        gone = set().union(*published.values()) - have if published else set()
        extra = []
        for raw in shared_plain.get(name) or []:
            try:
                entry = item_id(name, parse_item(name, raw))
            except ValueError:
                continue
            if entry in have or entry in gone:
                continue
            have.add(entry)
            mine.setdefault(name, set()).add(entry)
            extra.append(raw)
            added.append(entry)
        if extra:
            union[name] = [*(plain.get(name) or []), *extra]
    return union, sha, added
