"""Reading a transcript as JSON lines, in constant memory, whatever it holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from expertise_kit.errors import UserError

__all__ = ["MAX_LINE_BYTES", "json_lines", "LineReport", "looks_binary"]

# A single record bigger than this is skipped rather than held in memory (a pasted binary, a runaway log).
MAX_LINE_BYTES = 32 << 20
_CHUNK = 1 << 20


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


def looks_binary(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            head = handle.read(8192)
    except OSError:
        return False
    return b"\x00" in head


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


def json_lines(path: Path, report: LineReport) -> Iterator[dict[str, Any]]:
    """Each JSON object in the file. Bad lines are counted and described, never raised."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed in finally, the generator may stop early
    except FileNotFoundError:
        raise UserError("transcript not found", path=path, hint="check the path") from None
    except IsADirectoryError:
        raise UserError("is a directory, not a transcript", path=path, hint="pass the .jsonl file") from None
    except PermissionError:
        raise UserError("permission denied reading the transcript", path=path) from None
    try:
        for number, (line, complete) in enumerate(_raw_lines(handle), start=1):
            report.lines = number
            if line is None:
                report.skip(number, f"a line over {MAX_LINE_BYTES >> 20} MiB")
                continue
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
    finally:
        handle.close()
