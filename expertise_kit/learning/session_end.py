"""The post-session hook's work: wait for the agent to finish writing its transcript, then learn from it.

Kept out of ``expertise_kit.hook`` so the pre-task hook, which runs on every prompt, doesn't load it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from expertise_kit.hook import Quiet, find_expertise

__all__ = ["post_session"]


def _wait_for_flush(path: str, settle: float = 1.0, limit: float = 6.0, step: float = 0.1) -> None:
    """Agents write the last records a moment after the hook fires: wait until the file's size has held
    still for ``settle`` seconds (at most ``limit`` seconds in all). A file not written for that long
    already is done: learning it again later, or from an old session, waits for nothing."""
    try:
        if time.time() - os.path.getmtime(path) >= settle:
            return
    except OSError:
        pass
    deadline = time.monotonic() + limit
    last, still_since = -2, time.monotonic()
    while time.monotonic() < deadline:
        size = os.path.getsize(path) if os.path.exists(path) else -1
        if size != last:
            last, still_since = size, time.monotonic()
        elif size >= 0 and time.monotonic() - still_since >= settle:
            return
        time.sleep(step)


def post_session(agent: str, payload: dict[str, Any]) -> str | None:
    transcript = payload.get("transcript_path")
    if not transcript:
        raise Quiet("no transcript_path in the hook input; nothing to learn")
    cwd = str(payload.get("cwd") or os.getcwd())
    if find_expertise(cwd) is None:
        return None
    path = os.path.expanduser(str(transcript))
    _wait_for_flush(path)
    from expertise_kit.learning.learn import learn_from
    from expertise_kit.project import find_project
    from expertise_kit.store import Store

    store = Store(find_project(Path(cwd)))
    report = learn_from(store, [Path(path)])
    added = sum(len(m.added) for m in report.domains.values())
    seen = sum(len(m.updated) for m in report.domains.values())
    note = f"learned {added} new, {seen} seen again from {os.path.basename(path)}"
    credit = _credit(store, payload, report)
    return f"{note}; {credit}" if credit else note


def _credit(store: Any, payload: dict[str, Any], report: Any) -> str | None:
    """Feedback on what the pre-task hook injected into this session, judged against what it did."""
    from expertise_kit.fast.session import injected
    from expertise_kit.hook import session_key
    from expertise_kit.store.credit import credit_session

    key = session_key(payload)
    ids = injected(str(store.project.expertise_dir), key) if key else []
    if not key or not ids or len(report.extractions) != 1:
        return None
    credit = credit_session(store, key, ids, report.extractions[0])
    if not credit.total:
        return None
    counts = (len(credit.helpful), len(credit.harmful), len(credit.ended_well))
    return "feedback: {} helpful, {} harmful, {} ended well".format(*counts)


