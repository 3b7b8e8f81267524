"""Text made portable before it is kept: the project's directory cut from paths, home directories made ``~``,
and the identity git makes up from this machine named ``<user>@<host>``. What one developer's session
wrote then reads the same on a teammate's machine, and names no one. Standard library only: the learner,
an agent's own lesson (``api.add_entry``) and shared error lines (``errors.UserError.one_line``) use it.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["portable"]

# A home directory where an absolute path starts (not `src/pages/home/` nor `https://x.com/Users/`). A user
# name ends where a path, a list or a quote goes on: `/home/bob:/usr/bin`, `(/home/bob)`, `\"/home/bob\"`.
_NAME = r"""[^\\/\s"'`:;,()\[\]{}<>|&=]+"""
_WINDOWS_NAME = rf"(?:{_NAME}(?: {_NAME}){{1,3}}(?=\\)|{_NAME})"  # `C:\Users\John Doe\`: spaces, a `\` after
# Where an absolute path starts: not inside a word or a path, but after a short flag (`-I/home/bob/include`).
_STARTS = r"(?:(?<![\w.~@+-])|(?<=(?<![\w-])-[A-Za-z]))"
_HOME = re.compile(
    # Linux, macOS, Silverblue, WSL and Git Bash homes, `/home/./bob` too.
    rf"""(["']?){_STARTS}(?:/home|/Users|/var/home|(?:/mnt)?/[a-z]/Users)/+(?:\./+)*{_NAME}|"""
    rf"""(["']?){_STARTS}[A-Za-z]:(?:\\{{1,4}}|/)(?i:users)(?:\\{{1,4}}|/){_WINDOWS_NAME}|"""
    rf"""(["']?)\\{{2,4}}wsl(?:\.localhost|\$)\\{{1,2}}{_NAME}\\{{1,2}}home\\{{1,2}}{_NAME}|"""  # WSL from Windows
    # A shell's `~carol/` (carol's home), and URL-encoded `path=%2Fhome%2Fbob`. Each opens on its literal, which
    # the regex engine finds fast, and then looks back.
    r"""~(?<![^\s"'=:(\[]~)[A-Za-z_][\w.-]*(?=/)|"""
    r"""%2[Ff](?:(?<![\w.~@+-]%2[Ff])|(?<=%2[Ff]%2[Ff]))(?:home|Users)%2[Ff][^%/\s"'&?#]+|"""
    r"""%5[Cc](?<=[A-Za-z]:%5[Cc])(?i:users)%5[Cc][^%/\s"'&?#]+"""  # `C:%5CUsers%5Cbob`
)


# The identity git made up from this machine's login and host name, in its two messages about it ("empty ident
# name (for <bob@bob-laptop.(none)>)", "unable to auto-detect email address (got 'bob@DESKTOP-X1.localdomain')"):
# a user's name, and no teammate's address. Found by those words: what git makes up has any shape.
_MACHINE_ADDRESS = re.compile(
    r"(?<=empty ident name \(for <)[^<>\n]{1,200}(?=>)|(?<=email address \(got ')[^'\n]{1,200}(?=')"
)


def _home(found: re.Match[str]) -> str:
    """``~``, except at the start of a quoted string: no shell, JSON or config reader expands a quoted ``~``,
    so a value written there would be wrong; ``<home>`` says a home directory goes there."""
    quote = found[1] or found[2] or found[3] or ""
    return quote + "<home>" if quote else "~"


@lru_cache(maxsize=64)
def _base_pattern(base: str) -> re.Pattern[str]:
    """``base`` as a whole path where one starts: `/app/x` and `/app`, not `src/app/api` nor `/apple`."""
    return re.compile(rf"{_STARTS}{re.escape(base)}(?:/|(?![\w.@+-]))")


def _portable(text: str, bases: tuple[str, ...]) -> str:
    """Project paths made relative, home directories made ``~`` and this machine's made-up git identity
    ``<user>@<host>``: portable, and no user names leak."""
    for base in bases:
        if base and base != "/" and base in text:
            text = _base_pattern(base).sub(lambda found: "" if found[0].endswith("/") else ".", text)
    text = _HOME.sub(_home, text)
    return _MACHINE_ADDRESS.sub("<user>@<host>", text) if "ident name" in text or "email address" in text else text


def portable(text: str, root: str) -> str:
    """``text`` with paths under the project ``root`` made relative and home directories made ``~``: what
    the learner does to what it keeps, for a lesson the agent wrote itself."""
    return _portable(text, (root.rstrip("/"),))
