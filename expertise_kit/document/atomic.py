"""Atomic file replacement and the one write lock.

A write is: temp file in the same directory, fsync, ``os.replace``, fsync the directory. A reader, or a
kill at any instant, sees the old file or the new one, never a mix.
"""

from __future__ import annotations

import errno
import os
import stat

from expertise_kit.errors import LockTimeout, UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "write_atomic",
    "FileChanged",
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
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every platform or file system can
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


class FileChanged(Exception):
    """The file was not ``expect`` when it was to be replaced: someone else wrote it meanwhile."""


def write_atomic(path: str | Path, data: bytes, *, durable: bool = True, expect: bytes | None = None) -> None:
    """``durable=False``: replaced whole, without waiting for the disk (a temp file git reads back at once).
    ``expect``: the bytes the file must still hold at the last moment before it is replaced, else
    ``FileChanged`` and nothing written (a person's save or git's checkout since it was read is kept)."""
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
        if expect is not None and _bytes_of(path) != expect:
            raise FileChanged(str(path))
        os.replace(temp, path)
    except BaseException as exc:
        try:  # noqa: SIM105 - no contextlib on the merge driver's quick path
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise _write_error(exc, path) from None
        raise
    if durable:
        _fsync_directory(directory)


def _bytes_of(path: str | Path) -> bytes | None:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _write_error(exc: OSError, where: str | Path) -> UserError:
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return UserError("cannot write here: permission denied or read-only", path=where, hint="make it writable")
    if exc.errno == errno.ENOSPC:
        return UserError("no space left on device", path=where, hint="free some space and retry")
    return UserError(f"cannot write: {exc.strerror or exc}", path=where)


def remove_stale_temps(directory: Path) -> None:
    """Temp files left by a killed writer. Only call while holding the write lock: then none is live."""
    try:
        leftovers = list(directory.glob(f".*{TEMP_SUFFIX}"))
    except OSError:
        return
    for leftover in leftovers:
        try:  # noqa: SIM105 - no contextlib on the merge driver's quick path
            leftover.unlink()
        except OSError:
            pass


class brief_lock:  # noqa: N801 - used as a function: `with brief_lock(path, wait):`
    """The write lock if it comes within ``wait`` seconds, else nothing: ``Store.locked(wait=...)`` for
    the merge driver's quick path, with ``fcntl.flock`` as ``filelock`` takes it (importing filelock costs
    more than the quick path's merge). A class, not a ``contextlib`` generator: the driver does without
    importing ``contextlib``."""

    def __init__(self, lock_path: str | Path, wait: float) -> None:
        self.lock_path, self.wait = lock_path, wait
        self.fd: int | None = None
        self.held: write_lock | None = None

    def __enter__(self) -> None:
        try:
            import fcntl
        except ImportError:  # not Unix: the lock as every writer takes it, if it comes in time
            held = write_lock(self.lock_path, timeout=self.wait)
            try:
                held.__enter__()
                self.held = held
            except UserError:
                pass
            return
        import time

        try:
            self.fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o644)
        except OSError:
            return  # the lock file can't even be made: go on without it, as the transaction does
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError:
                if time.monotonic() >= deadline:
                    return  # held too long: go on without it
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # releases the lock if it was taken
        if self.held is not None:
            self.held.__exit__(None, None, None)


class write_lock:  # noqa: N801 - used as a function: `with write_lock(path):`
    """An exclusive, cross-process lock; released by the OS if the holder dies."""

    def __init__(self, lock_path: str | Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        # Imported here, not at the top: the hook's cache rebuild writes atomically but never locks.
        from filelock import FileLock

        self.lock_path, self.timeout = lock_path, timeout
        self.lock = FileLock(str(lock_path), timeout=timeout)

    def __enter__(self) -> None:
        from filelock import Timeout

        try:
            self.lock.acquire()
        except Timeout:
            raise LockTimeout(
                f"another expertise process held the lock for {self.timeout:.0f}s",
                path=self.lock_path,
                hint="wait for it to finish, then retry",
            ) from None
        except OSError as exc:
            raise _write_error(exc, self.lock_path) from None

    def __exit__(self, *exc: object) -> None:
        self.lock.release()
