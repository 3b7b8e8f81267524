"""The render cache: everything the pre-task hook needs, in files the write path keeps fresh.

Stdlib only, on purpose: the hook runs on every agent turn and must not import the YAML, git or
validation machinery. ``index.bin`` holds the config, the stat signatures (mtime, size, inode) of
config.yaml and each domain file, and each domain's overview; ``domains/<name>.bin`` holds its entries
and the signature of the file they came from, so the hook reads only the domains a task needs and can
trust each one on its own. A hand edit changes a signature, and that domain is rebuilt once. The files
are ``marshal`` data: built in, three times quicker to load than JSON, and it spares the hook the
``json`` import.

The hook prints what the cache says verbatim, so the cache must be one only we can have written. It
lives in the git dir (``<git dir>/expertise/cache/``), which a clone, a pull or a checkout never
fills; only outside git does it fall back to ``.expertise/.cache/``. And nothing is taken from it for a
file whose recorded signature is None: a cache that speaks for files that aren't there speaks for
nothing. Every file is opened only once it is known to be a regular file, so a FIFO or a device in
its place can never block the hook.
"""

from __future__ import annotations

import marshal
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path
    from typing import Any

__all__ = [
    "CACHE_VERSION",
    "cache_dir",
    "cache_path",
    "domain_cache_path",
    "domain_search_path",
    "domain_top_path",
    "uncontended_domains",
    "unsearched_domains",
    "signature",
    "read_regular",
    "read_index",
    "read_fresh_cache",
    "load_entries",
    "stale_domains",
    "signatures_for",
    "shared_stale",
    "packed_shared_ref",
]

CACHE_VERSION = 20
_MAX_GITFILE = 4096
_dirs: dict[str, str] = {}  # expertise dir -> its cache dir, for this process


def read_regular(path: str, limit: int = -1) -> bytes | None:
    """The bytes of ``path`` if it is a regular file (symlinks followed), else None.

    Opened non-blocking and checked with ``fstat`` before any read: opening a FIFO for reading blocks
    until a writer comes, forever if none does, and a device can be anything.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except (OSError, ValueError):
        return None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return None
        with open(descriptor, "rb", closefd=False) as handle:
            return handle.read(limit)  # one read: marshal.load(file) reads in tiny pieces, 20x slower
    except OSError:
        return None
    finally:
        os.close(descriptor)


_locations: dict[str, tuple[str, str] | None] = {}  # root -> _git_location's answer, for this process


def _git_location(root: str) -> tuple[str, str] | None:
    """(work tree top, this worktree's git dir) for ``root``, read the way ``project.find_git`` reads it:
    the nearest ``.git`` at or above, a directory or a ``gitdir: <path>`` file. No git process, no pathlib.
    Found once per process: the cache's place and the shared layer's both start from it."""
    if root not in _locations:
        _locations[root] = _find_git_location(root)
    return _locations[root]


def _find_git_location(root: str) -> tuple[str, str] | None:
    directory = root
    while True:
        dot_git = os.path.join(directory, ".git")
        try:
            mode = os.stat(dot_git).st_mode
        except OSError:
            mode = 0
        if stat.S_ISDIR(mode):
            return directory, dot_git
        if stat.S_ISREG(mode):
            content = (read_regular(dot_git, _MAX_GITFILE) or b"").decode("utf-8", "replace").strip()
            if not content.startswith("gitdir:"):
                return None
            target = os.path.join(directory, content[len("gitdir:") :].strip())
            return (directory, os.path.realpath(target)) if os.path.isdir(target) else None
        if mode:
            return None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def cache_dir(expertise_dir: str | Path) -> str:
    """Where the cache of ``expertise_dir`` lives: in its work tree's own git dir (each worktree has its
    own checkout, so its own cache), or ``.expertise/.cache/`` outside git."""
    key = os.fspath(expertise_dir)
    known = _dirs.get(key)
    if known is None:
        root = os.path.dirname(key)
        location = _git_location(root)
        if location is None:
            known = os.path.join(key, ".cache")
        else:
            toplevel, git_dir = location
            nested = root[len(toplevel) :].strip(os.sep)  # an .expertise/ below the top of the work tree
            name = "cache-" + nested.replace("%", "%25").replace(os.sep, "%2F") if nested else "cache"
            known = os.path.join(git_dir, "expertise", name)
        _dirs[key] = known
    return known


def _shared_ref(common: str, packed: Any = None) -> str | None:
    """The commit ``refs/expertise/shared`` names ("" when there is none), read from the ref files; None
    when refs are kept where we can't read them (reftable). ``packed``: [packed-refs' signature, the value
    found there] as the index recorded it, so a big packed-refs is read again only when it changed."""
    if os.path.isdir(os.path.join(common, "reftable")):
        return None
    raw = read_regular(os.path.join(common, "refs", "expertise", "shared"), 128)
    if raw:
        return raw.decode("ascii", "replace").strip()
    path = os.path.join(common, "packed-refs")
    if isinstance(packed, list) and len(packed) == 2 and packed[0] == signature(path):
        return str(packed[1])
    return packed_shared_ref(path)


def packed_shared_ref(path: str) -> str:
    """The shared ref's commit as ``packed-refs`` at ``path`` records it, or ""."""
    for line in (read_regular(path) or b"").splitlines():
        if line.endswith(b" refs/expertise/shared"):
            return line.split(b" ", 1)[0].decode("ascii", "replace")
    return ""


def _common_dir(expertise_dir: str | Path) -> str | None:
    location = _git_location(os.path.dirname(os.fspath(expertise_dir)))
    if location is None:
        return None
    git_dir = location[1]
    pointer = read_regular(os.path.join(git_dir, "commondir"), _MAX_GITFILE)
    if pointer is None:
        return git_dir
    return os.path.realpath(os.path.join(git_dir, pointer.decode("utf-8", "replace").strip()))


def shared_stale(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> list[str]:
    """The domains of ``domains`` whose part of the shared layer (``refs/expertise/shared``) changed since
    the cache was built: one ref file read when nothing did, and the shared state file when it did."""
    prefix = data.get("shared_prefix")
    if not isinstance(prefix, str):
        return []  # outside git, or the shared layer is off
    common = _common_dir(expertise_dir)
    if common is None:
        return []
    current = _shared_ref(common, data.get("shared_packed"))
    state = None
    if current is None:  # refs in a reftable: what our writers last recorded stands in for the ref
        state = _load(os.path.join(common, "expertise", "shared", "state.bin"))
        current = state.get("commit") if isinstance(state, dict) else None
    if current is None or current == data.get("shared_commit"):
        return []
    if state is None:
        state = _load(os.path.join(common, "expertise", "shared", "state.bin"))
    if not isinstance(state, dict) or state.get("commit") != current or not isinstance(state.get("files"), dict):
        return list(domains)  # moved by git itself (a fetch): every domain is rebuilt against it
    files, recorded = state["files"], data.get("shared") or {}
    return [
        name
        for name in domains
        if files.get(f"{prefix}{name}.yaml", "") != recorded.get(name, "")
        and data["files"].get(f"{name}.yaml") is not None  # a missing file renders nothing either way
        and not (data["domains"].get(name) or {}).get("error")  # a broken one waits for its own fix
    ]


def cache_path(expertise_dir: str | Path) -> str:
    return os.path.join(cache_dir(expertise_dir), "index.bin")


def domain_cache_path(expertise_dir: str | Path, domain: str) -> str:
    return os.path.join(cache_dir(expertise_dir), "domains", f"{domain}.bin")


def domain_top_path(expertise_dir: str | Path, domain: str) -> str:
    """The entries that could make a domain's essentials, alone: all that session start reads of it."""
    return os.path.join(cache_dir(expertise_dir), "domains", f"{domain}.top")


def domain_search_path(expertise_dir: str | Path, domain: str) -> str:
    """What ranking reads of a domain (postings, word counts, paths): a fifth of its entries' size, so every
    domain can be searched on every prompt and only the winners' entries are read."""
    return os.path.join(cache_dir(expertise_dir), "domains", f"{domain}.idx")


def signature(path: str | Path) -> list[int] | None:
    """(mtime, size, inode) of a regular file; None when it is missing or is anything else."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def signatures_for(expertise_dir: str | Path, domains: list[str]) -> dict[str, list[int] | None]:
    names = ["config.yaml", *(f"{name}.yaml" for name in domains)]
    return {name: signature(os.path.join(expertise_dir, name)) for name in names}


def _load(path: str) -> Any:
    raw = read_regular(path)
    if raw is None:
        return None
    try:
        return marshal.loads(raw)
    except (ValueError, EOFError, TypeError):
        return None


def read_index(expertise_dir: str | Path) -> dict[str, Any] | None:
    """The index as written, or None when there is none of this version."""
    data = _load(cache_path(expertise_dir))
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    if not isinstance(data.get("files"), dict) or not isinstance(data.get("domains"), dict):
        return None
    if not isinstance(data.get("config"), dict):
        return None
    return data


def read_fresh_cache(expertise_dir: str | Path, domains: list[str] | None = None) -> dict[str, Any] | None:
    """The cache, with entries for ``domains`` (all when None), if every file it was built from is
    unchanged; None when it must be rebuilt."""
    data = read_index(expertise_dir)
    if data is None:
        return None
    known = list(data["config"].get("domains") or {})
    if signatures_for(expertise_dir, known) != data["files"] or shared_stale(expertise_dir, data, known):
        return None
    return data if load_entries(expertise_dir, data, known if domains is None else domains) else None


def _unread(
    expertise_dir: str | Path, data: dict[str, Any], domains: list[str], part: str = "entries"
) -> Iterator[tuple[str, Any, list[int]]]:
    """(name, index summary, file signature) of each configured domain of ``domains`` whose ``part``
    ("entries" or "postings") was not read yet in this process and whose file is there; a domain whose file
    is missing (or not a regular file) is set to render nothing, and is neither stale nor changed."""
    for name in domains:
        summary = data["domains"].get(name)
        if isinstance(summary, dict) and part in summary:
            continue  # built or read in this process
        if name not in (data["config"].get("domains") or {}):
            continue  # not a configured domain: nothing to render
        current = signature(os.path.join(expertise_dir, f"{name}.yaml"))
        if current is None:
            data["domains"][name] = _EMPTY()
            continue
        yield name, summary, current


def _read_part(
    expertise_dir: str | Path,
    data: dict[str, Any],
    domains: list[str],
    part: str,
    path_of: Callable[[str | Path, str], str],
    fill: Callable[[dict[str, Any], dict[str, Any]], None],
) -> list[str]:
    """Read one cache file (``path_of``) of each of ``domains`` whose ``part`` was not read yet and whose
    cache matches its domain file now, and ``fill`` the domain's summary from it; the rest, returned,
    must be rebuilt."""
    recorded = data["files"]
    last_good = data.get("last_good") or ()
    stale = []
    for name, summary, current in _unread(expertise_dir, data, domains, part):
        # A domain the hook serves from its last good state (its file changed, the rebuild runs detached)
        # is read as the index recorded it: the cache of the file that validated, not of the file now.
        wanted = recorded.get(f"{name}.yaml") if name in last_good else current
        usable = wanted is not None and recorded.get(f"{name}.yaml") == wanted
        detail = _load(path_of(expertise_dir, name)) if usable else None
        if not isinstance(summary, dict) or not isinstance(detail, dict) or detail.get("signature") != wanted:
            stale.append(name)
            continue
        fill(summary, detail)
    return stale


def _rows(detail: dict[str, Any]) -> Any:
    keys, blob, ends = detail.get("keys"), detail.get("blob"), detail.get("ends")
    if not isinstance(keys, tuple) or not isinstance(blob, bytes) or not isinstance(ends, bytes) or len(ends) % 4:
        return []
    return Rows(keys, _Slices(blob, memoryview(ends).cast("I")))


class _Slices:
    """The rows of a cache file, kept as one blob: row ``i`` is sliced out only when it is asked for."""

    __slots__ = ("blob", "ends")

    def __init__(self, blob: bytes, ends: Any) -> None:
        self.blob = memoryview(blob)
        self.ends = ends

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index: int) -> Any:
        start = self.ends[index - 1] if index else 0
        return self.blob[start : self.ends[index]]


def _fill_entries(summary: dict[str, Any], detail: dict[str, Any]) -> None:
    summary["entries"] = _rows(detail)


def _fill_contenders(summary: dict[str, Any], detail: dict[str, Any]) -> None:
    summary["contenders"] = _rows(detail)


def _fill_search(summary: dict[str, Any], detail: dict[str, Any]) -> None:
    postings, lengths, weights = detail.get("postings"), detail.get("lengths"), detail.get("weights")
    summary["postings"] = Packed(postings) if isinstance(postings, dict) else {}
    summary["lengths"] = _ints(lengths) if isinstance(lengths, bytes) else []
    summary["paths"] = detail.get("paths") or []
    summary["best"] = detail.get("best") if isinstance(detail.get("best"), list) else None
    summary["weights"] = _floats(weights) if isinstance(weights, bytes) else None


def stale_domains(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> list[str]:
    """Read the entries, and what ranking needs, of each of ``domains`` whose cache matches its file now;
    the rest, returned, must be rebuilt."""
    unsearchable = unsearched_domains(expertise_dir, data, domains)
    rest = [d for d in domains if d not in unsearchable]
    return [*unsearchable, *_read_part(expertise_dir, data, rest, "entries", domain_cache_path, _fill_entries)]


def uncontended_domains(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> list[str]:
    """Read the entries that could make the essentials (a few a domain) of each of ``domains`` whose cache
    matches its file now; the rest, returned, must be rebuilt. A domain built in this process has every
    entry at hand already."""
    built = [d for d in domains if "entries" in (data["domains"].get(d) or {})]
    rest = [d for d in domains if d not in built]
    return _read_part(expertise_dir, data, rest, "contenders", domain_top_path, _fill_contenders)


def unsearched_domains(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> list[str]:
    """Read what ranking needs (postings, word counts, paths, evidence weights) of each of ``domains``
    whose cache matches its file now, without its entries; the rest, returned, must be rebuilt."""
    return _read_part(expertise_dir, data, domains, "postings", domain_search_path, _fill_search)


class Rows:
    """A domain's entries as the cache file holds them: each entry's values marshalled on their own, the
    keys once. Loading the file copies one blob per entry; an entry is decoded, into a dict, only when it
    is looked at, so a prompt pays for the few entries it ranks, not for every entry of every domain."""

    __slots__ = ("keys", "rows", "made")

    def __init__(self, keys: tuple[str, ...], rows: Any) -> None:
        self.keys = keys
        self.rows = rows
        self.made: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        made = self.made.get(index)
        if made is None:
            made = self.made[index] = dict(zip(self.keys, marshal.loads(self.rows[index]), strict=False))
        return made

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self[index] for index in range(len(self.rows)))


def _ints(blob: bytes) -> Any:
    """Machine ints packed by the write path (``array("I")``), as a read-only sequence of ints."""
    return memoryview(blob).cast("I") if len(blob) % 4 == 0 else ()


def _floats(blob: bytes) -> Any:
    """Machine floats packed by the write path (``array("f")``), as a read-only sequence."""
    return memoryview(blob).cast("f") if len(blob) % 4 == 0 else None


class Packed(dict):  # type: ignore[type-arg]
    """A domain's postings as the cache file holds them (word -> packed entry positions), read as lists
    only for the words a prompt asks about."""

    def get(self, word: Any, default: Any = None) -> Any:
        blob = dict.get(self, word)
        return default if blob is None else _ints(blob)


def _EMPTY() -> dict[str, Any]:  # noqa: N802 - a constructor, read as a value
    return {"overview": "", "entries": [], "postings": {}, "lengths": [], "paths": []}


def changed_domains(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> list[str]:
    """The domains of ``domains`` whose file changed since the index was written (they must be rebuilt),
    found by stat alone: the index vouches for the rest, whose files are read only when needed."""
    recorded = data["files"]
    return [
        name
        for name, summary, current in _unread(expertise_dir, data, domains)
        if recorded.get(f"{name}.yaml") != current or not isinstance(summary, dict)
    ]


def load_entries(expertise_dir: str | Path, data: dict[str, Any], domains: list[str]) -> bool:
    """Read the entries of ``domains`` into ``data``; False if any of them must be rebuilt."""
    return not stale_domains(expertise_dir, data, domains)
