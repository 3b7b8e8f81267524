"""What this agent session was already given, so a later prompt gets only what is new.

One small text file per session (entry ids, one a line) beside the render cache, in the git dir where
nothing is committed. Bounded (the newest ``MAX_IDS`` ids), expiring (a file untouched for
``EXPIRE_SECONDS`` counts as empty, and old files are removed when a new session starts), and never in
the way: a missing, unreadable or corrupt file means "nothing given yet", and a failed write is skipped.
The post-session learner reads the same file to credit what was injected.
"""

from __future__ import annotations

import os
import time

from expertise_kit.fast.cache import cache_dir, read_regular

__all__ = ["injected", "remember", "prompt_budget", "log_path", "prune_old", "MAX_IDS", "EXPIRE_SECONDS"]

MAX_IDS = 400
MAX_BYTES = 16 << 10
EXPIRE_SECONDS = 2 * 86400
MAX_LOG_BYTES = 256 << 10
MAX_PRUNED = 50  # old files removed per new session, so a huge directory never slows one prompt down
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def _directory(expertise_dir: str) -> str:
    return os.path.join(cache_dir(expertise_dir), "sessions")


def injected(expertise_dir: str, key: str | None, now: float | None = None) -> list[str]:
    """The ids given to this session so far, oldest first; empty when unknown, expired or unreadable."""
    if key is None:
        return []
    path = os.path.join(_directory(expertise_dir), key)
    try:
        if (now or time.time()) - os.stat(path).st_mtime > EXPIRE_SECONDS:
            return []
    except (OSError, ValueError):
        return []
    data = read_regular(path, MAX_BYTES)
    if not data:
        return []
    lines = data.decode("ascii", "replace").split("\n")
    _SPENT[key] = _spent_line(lines[0]) if lines else (0, 0, 0)
    ids = [line for line in lines if line and set(line) <= _SAFE]
    return ids[-MAX_IDS:]


# Per session (as ``injected`` last read it): the characters its first answered prompt got, all its
# prompts together, and the essentials at its start. The file's first line holds them,
# `=<first>,<total>,<start>`, which no id can look like (a file without the third number has none).
_SPENT: dict[str, tuple[int, int, int]] = {}
START_AND_FIRST_CHARS = 3000  # session start and the first prompt together (PRODUCT.md's budget)


def _spent_line(line: str) -> tuple[int, int, int]:
    numbers = line[1:].split(",") if line.startswith("=") else []
    if len(numbers) not in (2, 3) or not all(n.isdigit() for n in numbers):
        return (0, 0, 0)
    first, total, start = (int(n) for n in [*numbers, "0"][:3])
    return (first, total, start)


def prompt_budget(key: str | None, limit: int) -> int:
    """How many characters a prompt of this session may get: the first one that gets anything what the
    essentials at session start left of ``START_AND_FIRST_CHARS`` (``limit`` at most); all its prompts
    together within twice what that first one got, so a long session's injections do not grow with every
    prompt. Call after ``injected``."""
    first, total, start = _SPENT.get(key or "", (0, 0, 0))
    if not first:
        return max(0, min(limit, START_AND_FIRST_CHARS - start))
    return max(0, min(limit, 2 * first - total))


def remember(
    expertise_dir: str,
    key: str | None,
    given: list[str],
    ids: list[str],
    now: float | None = None,
    chars: int = 0,
    prompt: bool = False,
) -> None:
    """Add ``ids`` to what this session was given (``given``: what ``injected`` returned), count ``chars``
    against the session's prompt budget when a ``prompt`` got them, and log them for `expertise stats`."""
    if key is None or not ids:
        return
    first, total, start = _SPENT.get(key, (0, 0, 0)) if given else (0, 0, 0)
    if prompt:
        first, total = first or chars, total + chars
    elif not first:
        start += chars  # the essentials, before any prompt got anything
    directory = _directory(expertise_dir)
    path = os.path.join(directory, key)
    merged = list(dict.fromkeys([*given, *ids]))[-MAX_IDS:]
    try:
        os.makedirs(directory, exist_ok=True)
        if not given:
            prune_old(directory, now or time.time())
        temp = f"{path}.{os.getpid()}.tmp"
        with open(temp, "w", encoding="ascii") as handle:
            handle.write(f"={first},{total},{start}\n" + "\n".join(merged) + "\n")
        os.replace(temp, path)
    except OSError:
        pass  # the hook's answer matters more than remembering it
    _log(expertise_dir, key, chars, len(ids), now or time.time())


def log_path(expertise_dir: str) -> str:
    return os.path.join(cache_dir(expertise_dir), "injected.log")


def _log(expertise_dir: str, key: str, chars: int, count: int, now: float) -> None:
    """One line per injection, `<epoch> <session> <chars> <entries>`, appended; past ``MAX_LOG_BYTES`` the
    log moves to `injected.log.1` (replacing the one before), so it never grows without bound."""
    path = log_path(expertise_dir)
    try:
        with open(path, "a", encoding="ascii") as handle:
            handle.write(f"{int(now)} {key} {int(chars)} {int(count)}\n")
            full = handle.tell() > MAX_LOG_BYTES
        if full:
            os.replace(path, path + ".1")
    except OSError:
        pass  # statistics are not worth a failed prompt


def prune_old(directory: str, now: float, age: float = EXPIRE_SECONDS) -> None:
    """Remove at most ``MAX_PRUNED`` files of ``directory`` not touched for ``age`` seconds."""
    removed = 0
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if removed >= MAX_PRUNED:
            return
        path = os.path.join(directory, name)
        try:
            if now - os.stat(path).st_mtime > age:
                os.unlink(path)
                removed += 1
        except OSError:
            continue
