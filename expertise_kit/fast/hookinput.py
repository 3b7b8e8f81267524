"""What the hook and the post-session learner both read from an agent's hook input: the project directory,
the ``.expertise`` directory above it, the session id; and ``Quiet``, a reason to do nothing. Here, below
both, so ``learning/`` does not import ``hook`` (which imports ``learning/`` lazily): built-ins only, as
everything on the hook's path."""

from __future__ import annotations

import os

from expertise_kit.vocab import agent as _agent

TYPE_CHECKING = False  # typing costs milliseconds on every prompt
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Quiet", "find_expertise", "project_dir", "session_key"]


def project_dir(agent: str, payload: dict[str, Any]) -> str:
    """The directory the agent works in: the first of its project fields that names one (Cursor sends
    ``workspace_roots`` and no ``cwd``), else ours."""
    for field in _agent(agent).cwd_fields:
        value = payload.get(field)
        if isinstance(value, list):
            value = next((v for v in value if isinstance(v, str) and v), None)
        if isinstance(value, str) and value:
            return value
    return os.getcwd()


def find_expertise(start: str) -> str | None:
    directory = os.path.realpath(start)
    while True:
        candidate = os.path.join(directory, ".expertise")
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if os.path.exists(os.path.join(directory, ".git")) or parent == directory:
            return None
        directory = parent


def session_key(payload: dict[str, Any]) -> str | None:
    """The agent's session id from its hook input, if it is one we can use as a file name."""
    for field in ("session_id", "sessionId", "conversation_id"):
        value = payload.get(field)
        if (
            isinstance(value, str)
            and 0 < len(value) <= 128
            and value.strip(".")
            and all(ch.isascii() and (ch.isalnum() or ch in "-_.") for ch in value)
        ):
            return value
    return None


class Quiet(Exception):
    """A reason to do nothing, said on stderr."""
