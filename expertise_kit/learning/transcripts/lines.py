"""Reading a transcript as JSON lines, in constant memory, whatever it holds."""

from __future__ import annotations

import codecs
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import orjson

from expertise_kit.errors import UserError

__all__ = [
    "MAX_LINE_BYTES",
    "ODD_CONTENT",
    "MAX_SPOOL_BYTES",
    "json_lines",
    "text_lines",
    "LineReport",
    "looks_binary",
    "spooled",
    "read_once",
]

# A single record bigger than this is skipped rather than held in memory (a pasted binary, a runaway log).
MAX_LINE_BYTES = 32 << 20
# A transcript that can be read only once (a pipe) is copied to a temporary file first; past this it is
# refused rather than left to fill the disk (`expertise learn /dev/zero`).
MAX_SPOOL_BYTES = 1 << 30
_CHUNK = 1 << 20
_BINARY_PROBE = 8192


# Why a record whose message content is a number, `true` or the like (no agent writes one) is skipped.
ODD_CONTENT = "a message whose content is neither text nor a list"


class LineReport:
    """What the reader had to skip, for the user to hear about."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lines = 0
        self.skipped = 0
        self.messages: list[str] = []

    def skip(self, line_number: int, why: str) -> None:
        self.skipped += 1
        if len(self.messages) < 20:  # a file of garbage should say so, not print a million lines
            self.messages.append(f"{self.path}:{line_number}: {why}, skipped")


def binary_file(label: Path) -> UserError:
    """What is said of a file with a NUL byte in its first 8 KiB: no agent writes one."""
    hint = "pass the agent's session file (.jsonl, .json, or aider's .aider.chat.history.md)"
    return UserError("is a binary file, not a transcript", path=label, hint=hint)


def looks_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(_BINARY_PROBE)
    except OSError:
        return False
    return b"\x00" in head


def read_once(path: Path) -> bool:
    """Whether reading ``path`` consumes it, so it must be read exactly once.

    Format detection and the reader each open the file; a FIFO, a process substitution
    (``<(cat t.jsonl)``, which is ``/dev/fd/N``) or ``/dev/stdin`` on a pipe would hand the second
    reader only what the first left. Paths under /dev and /proc count even when they name a regular
    file: on some systems reopening ``/dev/fd/N`` shares the first open's offset.
    """
    if path.parts[:2] in (("/", "dev"), ("/", "proc")):
        return True
    return not path.is_file()


@contextmanager
def spooled(source: IO[bytes], label: Path) -> Iterator[Path]:
    """``source`` copied, once, to a private temporary file that is removed afterwards."""
    directory = Path(tempfile.mkdtemp(prefix="expertise-transcript-"))
    copy = directory / "transcript.jsonl"
    try:
        try:
            _copy_bounded(source, copy, label)
        except OSError as exc:
            raise UserError(f"can't copy it to a temporary file: {exc.strerror or exc}", path=label) from None
        yield copy
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _copy_bounded(source: IO[bytes], copy: Path, label: Path) -> None:
    total = 0
    with open(copy, "wb") as out:
        while chunk := source.read(_CHUNK):
            if total < _BINARY_PROBE and b"\x00" in chunk[: _BINARY_PROBE - total]:
                # Said before the copy, not after: `/dev/zero` would otherwise fill the disk first.
                raise binary_file(label)
            total += len(chunk)
            if total > MAX_SPOOL_BYTES:
                raise UserError(
                    f"more than {_size(MAX_SPOOL_BYTES)} read from a pipe, the most taken that way",
                    path=label,
                    hint="save the transcript to a file and pass its path",
                )
            out.write(chunk)


def _size(count: int) -> str:
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count} bytes"


def _raw_lines(handle: Any) -> Iterator[tuple[bytes | None, bool]]:
    """(line, complete) pairs; an over-long line comes back as (None, ...) after being read past."""
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while True:  # drain the rest of the monster line without keeping it
                rest = handle.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None, True
            continue
        yield line, line.endswith(b"\n")


def _open(path: Path) -> Any:
    try:
        return open(path, "rb")  # noqa: SIM115 - the caller closes it; its generator may stop early
    except FileNotFoundError:
        raise UserError("transcript not found", path=path, hint="check the path") from None
    except IsADirectoryError:
        raise UserError("is a directory, not a transcript", path=path, hint="pass the .jsonl file") from None
    except PermissionError:
        raise UserError("permission denied reading the transcript", path=path) from None


def _numbered(path: Path, report: LineReport) -> Iterator[tuple[int, bytes, bool]]:
    """(line number, raw line, complete) for each line, counted in ``report``; over-long lines are skipped
    and said. The file is closed however the caller stops."""
    handle = _open(path)
    try:
        for number, (line, complete) in enumerate(_raw_lines(handle), start=1):
            report.lines = number
            if line is None:
                report.skip(number, f"a line over {MAX_LINE_BYTES >> 20} MiB")
                continue
            yield number, line.removeprefix(codecs.BOM_UTF8) if number == 1 else line, complete  # an editor's BOM
    finally:
        handle.close()


def text_lines(path: Path, report: LineReport) -> Iterator[str]:
    """Each line of a text transcript, without its line ending; bytes that are not UTF-8 are replaced."""
    for _, line, _ in _numbered(path, report):
        yield line.decode("utf-8", "replace").rstrip("\r\n")


def json_lines(path: Path, report: LineReport) -> Iterator[dict[str, Any]]:
    """Each JSON object in the file. Bad lines are counted and described, never raised."""
    for number, line, complete in _numbered(path, report):
        if not line.strip():
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            report.skip(number, "a truncated last line" if not complete else "a line that is not JSON")
            continue
        if not isinstance(record, dict):
            report.skip(number, "a JSON value that is not an object")
            continue
        yield record
