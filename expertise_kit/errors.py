"""The one error hierarchy. ``cli.main`` is the only place that turns these into exit codes."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ExpertiseError", "UserError", "LockTimeout", "NotInitialised", "FileMissing"]


class ExpertiseError(Exception):
    """Base for every error expertise_kit raises on purpose."""


class UserError(ExpertiseError):
    """Something the user can fix: bad input, a bad file, a busy resource.

    Rendered as one line: ``path:line: message; hint``.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else str(path)
        self.line = line
        self.hint = hint
        super().__init__(self.one_line())

    def one_line(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        text = f"{where}{self.message}"
        if self.hint:
            text += f"; {self.hint}"
        # One line, always: a multi-line parser message would break `2>&1 | head -1` habits.
        return " ".join(text.split())


class LockTimeout(UserError):
    """Another expertise process held the write lock for too long."""


class NotInitialised(UserError):
    """No ``.expertise/`` here or above: the project has not run ``expertise init``."""


class FileMissing(UserError):
    """A file we expected is not there."""
