"""The post-session hook's work: queue the session for the detached learner and start it.

The hook returns in milliseconds, so no agent waits on learning (Claude Code allows a SessionEnd hook 60 s
at most, Codex's Stop runs after every turn). Kept out of ``expertise_kit.hook`` so the pre-task hook,
which runs on every prompt, doesn't load it.
"""

from __future__ import annotations

import os
from typing import Any

from expertise_kit.fast.hookinput import Quiet, find_expertise, project_dir
from expertise_kit.vocab import agent as agent_spec

__all__ = ["post_session", "credit"]


def post_session(agent: str, payload: dict[str, Any]) -> str | None:
    from expertise_kit.learning.background import enqueue, start_learner

    expertise_dir = find_expertise(project_dir(agent, payload))
    if expertise_dir is None:
        return None  # not an expertise project: stay silent
    transcript = payload.get("transcript_path")
    if not transcript and agent == "cursor":
        from expertise_kit.learning.transcripts.cursor import find_cursor_transcript

        conversation = payload.get("conversation_id") or payload.get("session_id")
        transcript = find_cursor_transcript(conversation) if isinstance(conversation, str) else None
    if not transcript or not isinstance(transcript, str):
        why = agent_spec(agent).learning or "no transcript_path in the hook input; nothing to learn"
        raise Quiet(why)
    path = os.path.abspath(os.path.expanduser(transcript))
    if not os.path.exists(path):
        raise Quiet(f"{path}: no such transcript; nothing to learn")
    if not os.path.isfile(path):
        raise Quiet(f"{path}: not a regular file; nothing to learn")
    enqueue(expertise_dir, agent, payload, path)
    start_learner(expertise_dir)
    return None


def credit(store: Any, job: dict[str, Any], report: Any) -> str | None:
    """Feedback on what the pre-task hook injected into this session, judged against what it did."""
    from expertise_kit.fast.hookinput import session_key
    from expertise_kit.fast.session import injected
    from expertise_kit.store.credit import credit_session

    key = session_key({"session_id": job.get("session_id")})
    ids = injected(str(store.project.expertise_dir), key) if key else []
    if not key or not ids or len(report.extractions) != 1:
        return None
    given = credit_session(store, key, ids, report.extractions[0])
    if not given.total:
        return None
    counts = (len(given.helpful), len(given.harmful), len(given.ended_well))
    return "feedback: {} helpful, {} harmful, {} ended well".format(*counts)
