"""Reading a file's text with the refusals every reader shares: not a regular file, over 1 MiB, a
byte-order mark, not UTF-8. Standard library only, so the merge driver's quick path can read git's three
files without the YAML machinery (``yamlio`` re-exports these)."""

from __future__ import annotations

import errno
import os
import stat

from expertise_kit.errors import FileMissing, UserError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["MAX_FILE_BYTES", "decode_text", "read_text_file"]

MAX_FILE_BYTES = 1 << 20  # 1 MiB: a capped 1000-line file is ~60 KiB; anything near this is not ours.
_BOMS = (
    (b"\xef\xbb\xbf", "UTF-8"),
    (b"\xff\xfe", "UTF-16/32 LE"),
    (b"\xfe\xff", "UTF-16 BE"),
    (b"\x00\x00\xfe\xff", "UTF-32 BE"),
)


_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _not_regular(mode: int, path: str | Path) -> UserError:
    if stat.S_ISDIR(mode):
        return UserError("is a directory, not a file", path=path, hint="move it aside")
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return UserError(
        f"is {kind}, not a regular file",
        path=path,
        hint="replace it with a regular YAML file; reading it could block forever",
    )


def _os_error(exc: OSError, path: str | Path) -> UserError:
    if exc.errno == errno.ENOENT:
        if os.path.islink(path):
            return FileMissing(
                f"is a symlink to {os.readlink(path)}, which does not exist",
                path=path,
                hint="fix or remove the link",
            )
        return FileMissing("file not found", path=path, hint="run `expertise init` to create it")
    if exc.errno == errno.ELOOP:
        return UserError("is a symlink loop", path=path, hint="replace the link with a regular file")
    if exc.errno in (errno.EACCES, errno.EPERM):
        return UserError("permission denied reading it", path=path, hint="check its permissions")
    if exc.errno == errno.EISDIR:
        return UserError("is a directory, not a file", path=path, hint="move it aside")
    return UserError(f"cannot read it ({exc.strerror or exc})", path=path, hint="check the path")


def _read_bytes(path: str | Path) -> bytes:
    # Look before opening: opening a FIFO for reading blocks until a writer appears, which may be never.
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(mode, path)
        # O_NONBLOCK in case a FIFO was swapped in since the stat; fstat below catches that too.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _os_error(exc, path) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(info.st_mode, path)
        if info.st_size > MAX_FILE_BYTES:
            raise UserError(
                f"file is {info.st_size:,} bytes, over the {MAX_FILE_BYTES:,}-byte limit",
                path=path,
                hint="an expertise file this big is not one we wrote; trim it or move it aside",
            )
        try:
            # Read one byte past the limit so a file growing under us is still caught.
            return handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise _os_error(exc, path) from None


def decode_text(raw: bytes, path: str | Path) -> str:
    """UTF-8 text of ``raw``, refusing a byte-order mark, invalid UTF-8 or more than ``MAX_FILE_BYTES``."""
    for bom, name in _BOMS:
        if raw.startswith(bom):
            raise UserError(
                f"file starts with a {name} byte-order mark",
                path=path,
                line=1,
                hint="save it as UTF-8 without a BOM",
            )
    if len(raw) > MAX_FILE_BYTES:
        raise UserError("file grew past the 1 MiB limit while being read", path=path, hint="try again")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise UserError(
            f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})",
            path=path,
            line=line,
            hint="save it as UTF-8",
        ) from None


def read_text_file(path: str | Path) -> str:
    """A file's text, with the same refusals as ``yamlio.load_yaml_file`` short of parsing it."""
    return decode_text(_read_bytes(path), path)
