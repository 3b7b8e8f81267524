"""Where an export may write, and reading what is there now, with the refusals every target shares.

An export writes inside the repository's work tree (the project root outside git), never into ``.git`` or
``.expertise/``. A file outside it, such as a user-level ``~/.claude/CLAUDE.md``, is read by the agent in
every project, so it would hand this project's lessons to all of them, and two projects exporting to it
would overwrite each other's section: refused. A symlink is followed to its target when that is inside
too (``CLAUDE.md -> AGENTS.md`` is common), so the link stays a link.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from expertise_kit.errors import UserError
from expertise_kit.project import Project

__all__ = ["resolve_target", "read_existing", "decode_markdown", "MAX_TARGET_BYTES"]

MAX_TARGET_BYTES = 4 * 1024 * 1024  # an instructions file past this is not one an agent loads whole


def _home(project: Project) -> Path:
    return Path(os.path.realpath(project.git.toplevel if project.git is not None else project.root))


def _forbidden(project: Project) -> list[tuple[Path, str]]:
    places = [(Path(os.path.realpath(project.expertise_dir)), ".expertise/, where the domain files live")]
    if project.git is not None:
        places += [(Path(os.path.realpath(project.git.git_dir)), "git's own directory")]
        places += [(Path(os.path.realpath(project.git.common_dir)), "git's own directory")]
    return places


def resolve_target(path: Path, project: Project, *, directory: bool) -> Path:
    """The real path to write for ``path`` (symlinks followed), after refusing a symlink loop, a place
    outside the work tree or inside ``.git``/``.expertise``, a directory where a file goes (or the reverse),
    and a parent that is not a directory."""
    shown = Path(os.path.abspath(path))  # `..` folded, for messages only: realpath follows links first
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UserError(
                "is a symlink loop", path=shown, hint="point the link at a real file, or delete it"
            ) from None
        if exc.errno == errno.ENOTDIR:
            raise UserError("a directory on this path is a file", path=shown, hint="choose another --out") from None
        if exc.errno != errno.ENOENT:
            raise UserError(f"can't be read: {exc.strerror}", path=shown) from None
    real = Path(os.path.realpath(path))
    home = _home(project)
    if not real.is_relative_to(home):
        where = f" (it leads to {real})" if real != shown else ""
        raise UserError(
            f"is outside the repository{where}",
            path=shown,
            hint=f"export writes only inside {home}: a file outside is read in other projects too",
        )
    for place, what in _forbidden(project):
        if real == place or real.is_relative_to(place):
            raise UserError(f"is inside {what}", path=shown, hint="export to a file of the work tree")
    if real.exists():
        is_directory = real.is_dir()
        if directory and not is_directory:
            raise UserError("is a file, not a directory", path=shown, hint="--out names a directory for cursor-rules")
        if not directory and is_directory:
            raise UserError("is a directory, not a file", path=shown, hint="move it aside, or export with --out FILE")
    parent = real if directory else real.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise UserError(f"{parent} is not a directory", path=shown, hint="choose another --out")
    return real


def read_existing(real: Path, shown: Path | str) -> bytes | None:
    """The bytes of the file at ``real`` now, or None when there is none; anything but a regular file of a
    sane size is refused."""
    try:
        info = os.stat(real)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise UserError(f"can't be read: {exc.strerror}", path=shown) from None
    if not stat.S_ISREG(info.st_mode):
        raise UserError("is not a regular file", path=shown, hint="move it aside, or export with --out")
    if info.st_size > MAX_TARGET_BYTES:
        raise UserError(
            f"is {info.st_size:,} bytes, over the {MAX_TARGET_BYTES:,}-byte limit for an instructions file",
            path=shown,
            hint="export with --out to another file",
        )
    try:
        # Non-blocking, and checked again once open: a FIFO swapped in since the stat must not hang us.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise UserError("is not a regular file", path=shown, hint="move it aside, or export with --out")
            return handle.read(MAX_TARGET_BYTES + 1)
    except OSError as exc:
        raise UserError(f"can't be read: {exc.strerror}", path=shown) from None


def decode_markdown(data: bytes, shown: Path | str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})",
            path=shown,
            line=line,
            hint="save it as UTF-8, or export with --out to another file; it was not changed",
        ) from None
