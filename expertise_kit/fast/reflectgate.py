"""The reflect hook's first checks (docs/reflect.md), with built-ins only: at most turns' ends the hook stops
here, as light as the pre-task hook. Only a session that may have something to ask about goes on to
``learning.reflect``, which reads the transcript.
"""

from __future__ import annotations

import os
import stat

from expertise_kit.fast.hookinput import Quiet, find_expertise, project_dir, session_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "Look", "first_look", "cached_mode", "switched_off", "ENV_SWITCH", "MAX_TRANSCRIPT_BYTES", "MARKER_BYTES",
    "marker_path", "read_marker", "write_marker", "MAX_ASKS", "REGROWTH", "LONG_SINCE",
]  # fmt: skip

ENV_SWITCH = "EXPERTISE_REFLECT"  # "off" (or 0, no, false) in the agent's environment: no reflection this session
MAX_TRANSCRIPT_BYTES = 32 << 20  # a longer transcript is not read at a turn's end (the learner still reads it)
MARKER_BYTES = 64 << 10  # a marker holds a few ids: a bigger file is not one of ours
MAX_ASKS = 4  # a session is sent back at most this often (docs/reflect.md)
REGROWTH = 1.5  # once asked, a session is looked at again when its transcript has grown by half
LONG_SINCE = 2.0  # ... and asked again, new candidates or not, once it has doubled since it was last asked
_OFF = ("off", "0", "no", "false")
_SUBAGENT_FIELDS = ("agent_id", "parent_session_id", "subagent_type")


class Look:
    """A turn's end worth a look: where, which session, its marker, the transcript and its size."""

    __slots__ = ("expertise_dir", "key", "marker", "state", "transcript", "size", "mode")

    def __init__(self, expertise_dir: str, key: str, marker: str, state: dict[str, Any], transcript: str,
                 size: int, mode: str | None) -> None:  # fmt: skip
        self.expertise_dir, self.key, self.marker, self.state = expertise_dir, key, marker, state
        self.transcript, self.size, self.mode = transcript, size, mode


def marker_path(expertise_dir: str, key: str) -> str:
    from expertise_kit.fast.cache import cache_dir

    return os.path.join(cache_dir(expertise_dir), "reflect", f"{key}.json")


def read_marker(path: str) -> dict[str, Any]:
    """A session's marker; empty when missing, unreadable, too big or not ours."""
    from expertise_kit.fast.fastjson import loads

    try:
        with open(path, "rb") as handle:
            raw = handle.read(MARKER_BYTES + 1)
        data = loads(raw.decode("utf-8")) if len(raw) <= MARKER_BYTES else None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_mode(expertise_dir: str) -> str | None:
    """``reflect:`` from the render cache when it was built from this config.yaml; None: read the file."""
    from expertise_kit.fast.cache import read_index, signature

    cache = read_index(expertise_dir)
    if cache is None or cache["files"].get("config.yaml") != signature(os.path.join(expertise_dir, "config.yaml")):
        return None
    mode = (cache.get("config") or {}).get("reflect")
    return mode if isinstance(mode, str) else None


def switched_off(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether ``ENV_SWITCH`` in this environment turns reflection off for the session."""
    return env.get(ENV_SWITCH, "").strip().lower() in _OFF


def write_marker(path: str, data: dict[str, Any]) -> None:
    """A session's marker, written whole or not at all."""
    import json  # only when a marker changes: it holds a time, which fastjson does not write

    os.makedirs(os.path.dirname(path), exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    os.replace(temp, path)


def _answered(expertise_dir: str, payload: dict[str, Any]) -> None:
    """The end of the turn our reason brought about: what the agent wrote in it (our reason, its `add`
    calls) is no growth of the session, so the marker takes the transcript's size now."""
    key, transcript = session_key(payload), payload.get("transcript_path")
    if key is None or not isinstance(transcript, str) or not transcript:
        return
    marker = marker_path(expertise_dir, key)
    state = read_marker(marker)
    if not state.get("asked"):
        return
    try:
        size = os.stat(os.path.abspath(os.path.expanduser(transcript))).st_size
        write_marker(marker, {**state, "size": size, "asked_size": size})
    except (OSError, TypeError, ValueError):
        pass  # the next look only comes a little sooner


def first_look(agent: str, payload: dict[str, Any]) -> Look | None:
    """None when this turn's end has nothing for reflection: switched off, our own reason's turn, a subagent,
    a session asked ``MAX_ASKS`` times, a transcript that did not grow (once asked: by half since the last
    look). Raises ``Quiet`` for an input it can't use."""
    if switched_off(os.environ):
        return None
    if any(payload.get(f) for f in _SUBAGENT_FIELDS):
        return None  # a subagent's end
    ours = payload.get("stop_hook_active") is True  # our own reason brought the agent here
    expertise_dir = find_expertise(project_dir(agent, payload))
    if expertise_dir is None:
        return None
    if ours:
        _answered(expertise_dir, payload)
        return None
    mode = cached_mode(expertise_dir)
    if mode == "off":
        return None
    key = session_key(payload)
    if key is None:
        raise Quiet("no usable session id in the hook input; no reflection")
    marker = marker_path(expertise_dir, key)
    state = read_marker(marker)
    asks = state.get("asks", 1) if state.get("asked") else 0
    if not isinstance(asks, int) or not 0 <= asks < MAX_ASKS:
        return None  # asked as often as a session is (or a marker we can't read that way)
    transcript = payload.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise Quiet("no transcript_path in the hook input; no reflection")
    path = os.path.abspath(os.path.expanduser(transcript))
    try:
        found = os.stat(path)
    except OSError:
        raise Quiet(f"{path}: no such transcript; no reflection") from None
    if not stat.S_ISREG(found.st_mode):  # a FIFO would block the read until the agent's hook timeout
        raise Quiet(f"{path} is not a regular file; no reflection")
    size = found.st_size
    if size > MAX_TRANSCRIPT_BYTES:
        raise Quiet(f"{path} is over {MAX_TRANSCRIPT_BYTES >> 20} MiB; no reflection")
    looked = state.get("size")
    if looked == size or (asks and isinstance(looked, int) and size < looked * REGROWTH):
        return None  # nothing new since this session's last look, or too little since it was
    return Look(expertise_dir, key, marker, state, path, size, mode)
