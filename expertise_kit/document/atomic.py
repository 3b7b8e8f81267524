"""Atomic file replacement and the one write lock.

A write is: temp file in the same directory, fsync, ``os.replace``, fsync the directory. A reader, or a
kill at any instant, sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator

from expertise_kit.errors import LockTimeout, UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "write_atomic",
    "ensure_writable",
    "write_lock",
    "brief_lock",
    "remove_stale_temps",
    "LOCK_TIMEOUT_SECONDS",
    "TEMP_SUFFIX",
]

LOCK_TIMEOUT_SECONDS = 60.0
TEMP_SUFFIX = ".tmp"


def ensure_writable(directory: Path) -> None:
    """Refuse early, and clearly, to write into a directory marked read-only.

    As root ``os.access`` always says yes, so the mode bits are consulted too: a directory someone made
    read-only is read-only to us, whoever runs us.
    """
    try:
        mode = directory.stat().st_mode
    except FileNotFoundError:
        raise UserError("directory not found", path=directory, hint="run `expertise init`") from None
    if not os.access(directory, os.W_OK) or not mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        raise UserError("directory is read-only", path=directory, hint=f"make it writable (chmod u+w {directory})")


def _fsync_directory(directory: str | Path) -> None:
    with contextlib.suppress(OSError):  # not every platform or file system can
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _temp_file(directory: str | Path, name: str) -> tuple[int, str]:
    """``tempfile.mkstemp``'s exclusive create of ``.<name>.<random>.tmp``, without importing tempfile (~7 ms
    of the merge driver's start-up)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        candidate = os.path.join(directory, f".{name}.{os.urandom(6).hex()}{TEMP_SUFFIX}")
        try:
            return os.open(candidate, flags, 0o600), candidate
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(directory))


def write_atomic(path: str | Path, data: bytes, *, durable: bool = True) -> None:
    """``durable=False``: replaced whole, without waiting for the disk (a temp file git reads back at once)."""
    directory = os.path.dirname(path) or "."
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        mode = _new_file_mode()
    try:
        fd, temp = _temp_file(directory, os.path.basename(path))
    except OSError as exc:
        raise _write_error(exc, directory) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise _write_error(exc, path) from None
        raise
    if durable:
        _fsync_directory(directory)


def _write_error(exc: OSError, where: str | Path) -> UserError:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return UserError("cannot write here: permission denied or read-only", path=where, hint="make it writable")
    if exc.errno == errno.ENOSPC:
        return UserError("no space left on device", path=where, hint="free some space and retry")
    return UserError(f"cannot write: {exc.strerror or exc}", path=where)


def remove_stale_temps(directory: Path) -> None:
    """Temp files left by a killed writer. Only call while holding the write lock: then none is live."""
    with contextlib.suppress(OSError):
        for leftover in directory.glob(f".*{TEMP_SUFFIX}"):
            with contextlib.suppress(OSError):
                leftover.unlink()


@contextlib.contextmanager
def brief_lock(lock_path: str | Path, wait: float) -> Iterator[None]:
    """The write lock if it comes within ``wait`` seconds, else nothing: ``Store.locked(wait=...)`` for
    the merge driver's quick path, with ``fcntl.flock`` as ``filelock`` takes it (importing filelock costs
    more than the quick path's merge)."""
    try:
        import fcntl
    except ImportError:  # not Unix: the lock as every writer takes it
        with contextlib.ExitStack() as held:
            with contextlib.suppress(UserError):
                held.enter_context(write_lock(lock_path, timeout=wait))
            yield
        return
    import time

    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
    except OSError:
        yield  # the lock file can't even be made: go on without it, as the transaction does
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() >= deadline:
                    break  # held too long: go on without it
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock if it was taken


@contextlib.contextmanager
def write_lock(lock_path: str | Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """An exclusive, cross-process lock; released by the OS if the holder dies."""
    # Imported here, not at the top: the hook's cache rebuild writes atomically but never locks.
    from filelock import FileLock, Timeout

    lock = FileLock(str(lock_path), timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise LockTimeout(
            f"another expertise process held the lock for {timeout:.0f}s",
            path=lock_path,
            hint="wait for it to finish, then retry",
        ) from None
    except OSError as exc:
        raise _write_error(exc, lock_path) from None
    try:
        yield
    finally:
        lock.release()
