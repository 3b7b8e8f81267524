"""The one error hierarchy. ``cli.main`` is the only place that turns these into exit codes."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "ExpertiseError",
    "UserError",
    "LockTimeout",
    "NotInitialised",
    "UnknownDomain",
    "FileMissing",
    "Failures",
    "CheckFailed",
    "bug_in",
]


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

    def one_line(self, root: str | Path | None = None) -> str:
        """The error as one line. With ``root``, for output that may be shared: paths under it relative to
        it, and home directories ``~``, as the learner writes them."""
        if root is not None:
            from expertise_kit.learning.portable import portable

            return portable(self.one_line(), str(root))
        where = ""
        if self.path is not None:
            where = self.path if self.line is None else f"{self.path}:{self.line}"
            where += ": "
        text = f"{where}{self.message}"
        if self.hint:
            text += f"; {self.hint}"
        # One line, always: a multi-line parser message would break `2>&1 | head -1` habits.
        return " ".join(text.split())


def bug_in(part: str, exc: Exception, path: str | Path, step: str, lost: str) -> UserError:
    """The one-line error for a bug in expertise_kit's ``part`` that ``step`` met on input nobody foresaw."""
    why = f"{type(exc).__name__}: {exc}"[:200]
    hint = f"a bug in expertise_kit's {part}, please report it"
    return UserError(f"{step} failed ({why}); {lost}", path=path, hint=hint)


class LockTimeout(UserError):
    """Another expertise process held the write lock for too long."""


class NotInitialised(UserError):
    """No ``.expertise/`` here or above: the project has not run ``expertise init``."""


class UnknownDomain(UserError):
    """A well-formed domain name the config does not list."""


class FileMissing(UserError):
    """A file we expected is not there."""


class Failures(UserError):
    """Problems found after a command did what it could with the rest (a listing with unreadable files,
    transcripts that could not be read): each is its own line, and the exit status is 1."""

    def __init__(self, errors: list[UserError]) -> None:
        self.errors = list(errors)
        first = errors[0] if errors else UserError("failed")
        super().__init__(first.message, path=first.path, line=first.line, hint=first.hint)

    def lines(self) -> list[str]:
        return [error.one_line() for error in self.errors]


class CheckFailed(UserError):
    """A ``--check`` run found work to do: not a fault of the tool, but CI must see exit status 1."""
