"""The agent hook entry points: ``python -I -m expertise_kit.hook pre|post --agent NAME``.

``pre`` runs on every prompt, so it imports only the standard library and this package's light modules
(classify, render, cache): no git, YAML, pydantic or click. ``post`` learns from the session transcript.
Both never break the agent: on any problem they print nothing on stdout, one line on stderr, exit 0.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing and dataclasses cost milliseconds on every prompt
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main", "AGENT_EVENTS"]

MAX_STDIN = 4 << 20
_CODE_SUFFIXES = (".py", ".ts", ".tsx", ".js", ".jsx", ".go", ".rs", ".sql", ".java", ".rb", ".vue", ".css", ".yaml",
                  ".yml", ".tf", ".toml")  # fmt: skip


def _mentioned_files(prompt: str) -> list[str]:
    """File paths a prompt mentions (`src/db/models.py`, `schema.sql`), without importing ``re``."""
    found: list[str] = []
    for word in prompt.split():
        word = word.strip("`'\"()[]{}<>,;:!?")
        last = word.rsplit("/", 1)[-1]
        if "." in last.strip(".") and ("/" in word or last.endswith(_CODE_SUFFIXES)) and "://" not in word:
            found.append(word)
    return list(dict.fromkeys(found))


# The event each agent fires before a task, by agent, and how it takes extra context.
AGENT_EVENTS: dict[str, dict[str, str]] = {
    "claude-code": {"prompt": "UserPromptSubmit", "start": "SessionStart"},
    "codex": {"prompt": "UserPromptSubmit", "start": "SessionStart"},
    "gemini": {"prompt": "BeforeAgent", "start": "SessionStart"},
    "cursor": {"prompt": "beforeSubmitPrompt", "start": "sessionStart"},
}


def _find_expertise(start: str) -> str | None:
    directory = os.path.realpath(start)
    while True:
        candidate = os.path.join(directory, ".expertise")
        if os.path.isdir(candidate):
            return candidate
        parent = os.path.dirname(directory)
        if os.path.exists(os.path.join(directory, ".git")) or parent == directory:
            return None
        directory = parent


def _load_cache(expertise_dir: str) -> dict[str, Any]:
    """The cache index (config, overviews), fresh; entries are loaded per domain by the caller."""
    from expertise_kit.fast.cache import read_fresh_cache

    cache = read_fresh_cache(expertise_dir, domains=[])
    if cache is None:
        cache = _rebuild(expertise_dir)
    return cache


def _rebuild(expertise_dir: str) -> dict[str, Any]:
    """A hand edit or a first run: rebuild once, with the heavy machinery (entries for every domain)."""
    from pathlib import Path

    from expertise_kit.project import find_project
    from expertise_kit.store import Store
    from expertise_kit.store.cachebuild import rebuild_cache

    store = Store(find_project(Path(expertise_dir).parent))
    return rebuild_cache(store.project, store.config)


def _choose_domains(cache: dict[str, Any], prompt: str, files: list[str]) -> list[str]:
    from expertise_kit.fast.classify import classify, rules_from

    rules = rules_from((cache.get("config") or {}).get("domains") or {})
    if not prompt.strip() and not files:
        return ["general"]
    result = classify(prompt, files, rules)
    return [result.domain, *result.secondary[:2]]


def _emit(agent: str, event: str, text: str) -> None:
    if not text:
        return
    from expertise_kit.fast.fastjson import quote

    if agent == "cursor":
        payload = '{"additional_context": ' + quote(text) + "}"
    else:
        payload = (
            '{"hookSpecificOutput": {"hookEventName": ' + quote(event) + ', "additionalContext": ' + quote(text) + "}}"
        )
    sys.stdout.write(payload + "\n")


def pre_task(agent: str, payload: dict[str, Any]) -> None:
    from expertise_kit.fast.render import render_section

    cwd = str(payload.get("cwd") or os.getcwd())
    expertise_dir = _find_expertise(cwd)
    if expertise_dir is None:
        return  # not an expertise project: stay silent
    prompt = str(payload.get("prompt") or payload.get("user_prompt") or "")
    files = _mentioned_files(prompt)
    cache = _load_cache(expertise_dir)
    domains = _choose_domains(cache, prompt, files)
    from expertise_kit.fast.cache import load_entries

    if not load_entries(expertise_dir, cache, domains):
        cache = _rebuild(expertise_dir)
    broken = [cache["domains"][d]["error"] for d in domains if (cache.get("domains", {}).get(d) or {}).get("error")]
    if broken:
        raise _Quiet(f"{broken[0]} (fix the file; no expertise was injected)")
    result = render_section(cache, domains, task=prompt, files=files)
    event = str(payload.get("hook_event_name") or AGENT_EVENTS[agent]["prompt" if prompt else "start"])
    _emit(agent, event, result.text)


def _wait_for_flush(path: str, settle: float = 1.0, limit: float = 6.0, step: float = 0.1) -> None:
    """Agents write the last records a moment after the hook fires: wait until the file's size has held
    still for ``settle`` seconds (at most ``limit`` seconds in all)."""
    deadline = time.monotonic() + limit
    last, still_since = -2, time.monotonic()
    while time.monotonic() < deadline:
        size = os.path.getsize(path) if os.path.exists(path) else -1
        if size != last:
            last, still_since = size, time.monotonic()
        elif size >= 0 and time.monotonic() - still_since >= settle:
            return
        time.sleep(step)


def post_session(agent: str, payload: dict[str, Any]) -> None:
    transcript = payload.get("transcript_path")
    if not transcript:
        raise _Quiet("no transcript_path in the hook input; nothing to learn")
    cwd = str(payload.get("cwd") or os.getcwd())
    if _find_expertise(cwd) is None:
        return
    path = os.path.expanduser(str(transcript))
    _wait_for_flush(path)
    from pathlib import Path

    from expertise_kit.learning.learn import learn_from
    from expertise_kit.project import find_project
    from expertise_kit.store import Store

    report = learn_from(Store(find_project(Path(cwd))), [Path(path)])
    added = sum(len(m.added) for m in report.domains.values())
    seen = sum(len(m.updated) for m in report.domains.values())
    sys.stderr.write(f"expertise: learned {added} new, {seen} seen again from {os.path.basename(path)}\n")


class _Quiet(Exception):
    """A reason to do nothing, said on stderr."""


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        mode = args[0] if args else ""
        agent = args[args.index("--agent") + 1] if "--agent" in args else "claude-code"
        if mode not in ("pre", "post") or agent not in AGENT_EVENTS:
            raise _Quiet(f"usage: python -m expertise_kit.hook pre|post --agent {'|'.join(AGENT_EVENTS)}")
        raw = sys.stdin.read(MAX_STDIN) if not sys.stdin.isatty() else ""
        from expertise_kit.fast.fastjson import loads

        payload = loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            raise _Quiet("hook input is not a JSON object")
        (pre_task if mode == "pre" else post_session)(agent, payload)
    except BaseException as exc:  # noqa: BLE001 - the agent must never see us fail
        if isinstance(exc, KeyboardInterrupt):
            return 0
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        sys.stderr.write(f"expertise hook: {message[:300]}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
