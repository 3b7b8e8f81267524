"""The agent hook entry points: ``expertise-hook pre|post|reflect --agent NAME`` (the console script for
``main``).

``pre`` runs on every prompt, so it imports only the standard library and this package's light modules
(classify, render, cache): no git, YAML, pydantic or click. ``post`` learns from the session transcript.
``reflect`` (opt-in, docs/reflect.md) may send the agent back once at a turn's end to write its lessons.
None ever breaks the agent: on any problem they print nothing on stdout, one line on stderr, exit 0.
"""

from __future__ import annotations

import os
import sys
import time

from expertise_kit.fast.hookinput import Quiet, find_expertise, project_dir, session_key
from expertise_kit.vocab import agent as _agent
from expertise_kit.vocab import agent_names

TYPE_CHECKING = False  # typing and dataclasses cost milliseconds on every prompt
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["main", "Quiet", "find_expertise", "session_key"]

MAX_STDIN = 4 << 20
# The most YAML the hook parses before answering: about half a second of ruamel and pydantic on a busy
# laptop, which covers three domain files at the default 1000-line cap (~40 KiB each). A rebuild that
# needs more runs in a detached process, and those domains sit this prompt out.
SYNC_REBUILD_BYTES = 128 << 10
REBUILD_MARK_SECONDS = 300  # a background rebuild's marker older than this was left by a dead process
_CODE_SUFFIXES = (".py", ".ts", ".tsx", ".js", ".jsx", ".go", ".rs", ".sql", ".java", ".rb", ".vue", ".css", ".yaml",
                  ".yml", ".tf", ".toml")  # fmt: skip


def _mentioned_files(prompt: str, limit: int = 32, longest: int = 1000) -> list[str]:
    """The first ``limit`` file paths a prompt mentions (`src/db/models.py`, `schema.sql`), without
    importing ``re``."""
    found: dict[str, None] = {}
    for word in prompt.split():
        if len(word) > longest:
            continue
        word = word.strip("`'\"()[]{}<>,;:!?")
        last = word.rsplit("/", 1)[-1]
        if "." in last.strip(".") and ("/" in word or last.endswith(_CODE_SUFFIXES)) and "://" not in word:
            found[word] = None
            if len(found) >= limit:
                break
    return list(found)


def _without_hook_context(prompt: str) -> str:
    """The prompt without the ``<hook_context>...</hook_context>`` blocks Gemini CLI wraps earlier hooks'
    context in (our own session-start context among them): that is not what the user asked."""
    open_tag, close_tag = "<hook_context>", "</hook_context>"
    while open_tag in prompt:
        start = prompt.index(open_tag)
        end = prompt.find(close_tag, start)
        if end < 0:
            break
        prompt = prompt[:start] + prompt[end + len(close_tag) :]
    return prompt.strip()


def _refresh(expertise_dir: str, names: list[str]) -> dict[str, Any]:
    """Parse config.yaml and the domain files ``names`` into the cache, with the heavy machinery."""
    from pathlib import Path

    from expertise_kit.config import load_config
    from expertise_kit.project import find_project
    from expertise_kit.store.cachebuild import refresh_domains

    project = find_project(Path(expertise_dir).parent)
    return refresh_domains(project, load_config(project.expertise_dir), names)


def _start_background_rebuild(expertise_dir: str, names: list[str]) -> None:
    """Rebuild ``names`` in a detached process, one at a time per cache: the agent is not kept waiting,
    and the next prompt finds the cache fresh. The child holds none of our pipes, so an agent reading
    ours to their end never waits for it either."""
    from expertise_kit.fast.cache import cache_dir

    marker = os.path.join(cache_dir(expertise_dir), "rebuilding")
    os.makedirs(os.path.dirname(marker), exist_ok=True)
    try:
        if time.time() - os.stat(marker).st_mtime < REBUILD_MARK_SECONDS:
            return  # one is under way
        os.unlink(marker)
    except FileNotFoundError:
        pass
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return  # another prompt's hook got there first
    code = f"import expertise_kit.hook as h; h.rebuild_detached({expertise_dir!r}, {names!r})"
    try:
        _spawn_detached([sys.executable, "-I", "-c", code], os.path.dirname(expertise_dir))
    except BaseException:
        os.unlink(marker)
        raise


def _spawn_detached(argv: list[str], cwd: str) -> None:
    """Start ``argv`` in its own session with stdin, stdout and stderr on the null device. ``posix_spawn``
    where there is one: the first prompt after a pull pays for this, and ``import subprocess`` alone is
    half of Python's start-up (the rebuild gets absolute paths, so it needs no working directory)."""
    spawn = getattr(os, "posix_spawn", None)
    if spawn is not None and getattr(os, "POSIX_SPAWN_OPEN", None) is not None:
        null = os.devnull
        actions = [(os.POSIX_SPAWN_OPEN, fd, null, os.O_RDWR, 0) for fd in (0, 1, 2)]
        spawn(argv[0], argv, dict(os.environ), file_actions=actions, setsid=True)
        return
    import subprocess

    subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
        start_new_session=True, cwd=cwd,
    )  # fmt: skip


def rebuild_detached(expertise_dir: str, names: list[str]) -> None:
    """The background half of a rebuild the hook would not wait for. Never prints; always clears its marker."""
    import contextlib

    from expertise_kit.fast.cache import cache_dir, signature

    try:
        # The hook that started us is still finishing its answer: on two cores, parsing at once took it
        # from 1.7x to 2.0x Python's start-up (bench_hook's first prompt after a pull). The next prompt
        # is seconds away.
        time.sleep(0.3)
        if hasattr(os, "nice"):
            os.nice(10)  # the agent's own work comes first
        _refresh(expertise_dir, [n for n in names if signature(os.path.join(expertise_dir, f"{n}.yaml"))])
    except BaseException:  # noqa: BLE001, S110 - nobody is listening; the next prompt tries again
        pass
    finally:
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(cache_dir(expertise_dir), "rebuilding"))


def _size(signature: list[int] | None) -> int:
    return signature[1] if signature else 0


def _choose_domains(cache: dict[str, Any], prompt: str, files: list[str]) -> list[str]:
    from expertise_kit.fast.classify import classify, rules_from

    rules = rules_from((cache.get("config") or {}).get("domains") or {})
    if not prompt.strip() and not files:
        return ["general"]
    result = classify(prompt, files, rules)
    return [result.domain, *result.secondary[:2]]


def _say(payload: str) -> None:
    """Our one line of JSON on stdout, for the agent."""
    global _SPOKE
    _SPOKE = True
    sys.stdout.write(payload + "\n")


def _emit(agent: str, event: str, text: str) -> None:
    if not text:
        return
    from expertise_kit.fast.fastjson import quote

    if _agent(agent).output == "additional_context":
        _say('{"additional_context": ' + quote(text) + "}")
    else:
        context = quote(text)
        _say('{"hookSpecificOutput": {"hookEventName": ' + quote(event) + ', "additionalContext": ' + context + "}}")


def _send_back(reason: str) -> None:
    """Keep the agent going with ``reason`` as its next instruction: the end-of-turn answer Claude Code's
    and Codex's ``Stop`` and Gemini CLI's ``AfterAgent`` read."""
    from expertise_kit.fast.fastjson import quote

    _say('{"decision": "block", "reason": ' + quote(reason) + "}")


def pre_task(agent: str, payload: dict[str, Any]) -> str | None:
    """Print the expertise for this prompt; return a note for stderr, if there is one."""
    from expertise_kit.fast.cache import changed_domains, read_index, shared_stale, signature
    from expertise_kit.fast.render import MAX_TASK_CHARS, MAX_TASK_FILES

    expertise_dir = find_expertise(project_dir(agent, payload))
    if expertise_dir is None:
        return None  # not an expertise project: stay silent
    raw_prompt = payload.get("prompt") or ""
    if not isinstance(raw_prompt, str):
        raise Quiet("the hook input's prompt is not text; nothing was injected")
    prompt = _without_hook_context(raw_prompt) if "<hook_context>" in raw_prompt else raw_prompt
    task = prompt[:MAX_TASK_CHARS]  # bounded work, however long the prompt
    files = _mentioned_files(task, MAX_TASK_FILES)
    config_path = os.path.join(expertise_dir, "config.yaml")
    config_signature = signature(config_path)
    if config_signature is None and os.path.lexists(config_path):
        raise Quiet(f"{config_path} is not a regular file; no expertise was injected")
    cache = read_index(expertise_dir)
    spent = _size(config_signature)  # YAML parsed here before the agent gets its answer: any rebuild reads config
    if cache is None or cache["files"].get("config.yaml") != config_signature:
        if spent > SYNC_REBUILD_BYTES:
            _start_background_rebuild(expertise_dir, [])
            raise Quiet("config.yaml is large; the cache is being rebuilt in the background")
        cache = _refresh(expertise_dir, [])
    routing = _choose_domains(cache, task, files) if task or files else []
    # Every domain is searched: knowledge about a file may be filed under another domain.
    domains = list((cache.get("config") or {}).get("domains") or {})
    stale = changed_domains(expertise_dir, cache, domains)
    shared = [d for d in shared_stale(expertise_dir, cache, domains) if d not in stale]
    # A domain file changed outside expertise (a pull, a checkout, a hand edit), or its part of the shared
    # layer did: it is rebuilt in a detached process, never here, where parsing YAML would cost the prompt
    # 10x Python's start-up. This prompt reads the domain's last good cache, built from a file that
    # validated then; the new file, which may be broken or hostile, reaches no agent before the rebuild
    # has checked it. A domain with no last good state (new to the config) sits this prompt out.
    # With no cache of a domain at all (a fresh clone, a cache deleted), there is no last good state: a
    # small one is built here, as before, and a big one sits this prompt out.
    changed = [*stale, *shared]
    last_good = [name for name in changed if _has_last_good(cache, name)]
    now, later = [], []
    for name in changed:
        if name in last_good:
            continue
        size = _size(signature(os.path.join(expertise_dir, f"{name}.yaml")))
        size *= 2 if name in shared else 1  # the shared layer's file is parsed too (as big, give or take)
        if spent + size <= SYNC_REBUILD_BYTES:
            now.append(name)
            spent += size
        else:
            later.append(name)
    if now:
        cache = _refresh(expertise_dir, now)
    cache["last_good"] = last_good
    stale = [d for d in changed_domains(expertise_dir, cache, domains) if d not in last_good]  # a racing edit: out
    note = None
    if last_good or later:
        _start_background_rebuild(expertise_dir, [*last_good, *later])
    if [name for name in later if name not in shared]:
        note = f"{later[0]}.yaml is large; its cache is being rebuilt in the background, so it was left out this time"
    for name in domains:
        path = os.path.join(expertise_dir, f"{name}.yaml")
        if note is None and signature(path) is None and os.path.lexists(path):
            note = f"{path} is not a regular file; skipped"
    domains = [d for d in domains if d not in stale and d not in later]
    broken = [d for d in domains if (cache["domains"].get(d) or {}).get("error")]
    if broken and note is None:
        note = f"{cache['domains'][broken[0]]['error']} (fix the file; its expertise was left out)"
    domains = [d for d in domains if d not in broken]
    if not prompt:
        _resume_learning(expertise_dir)
    if domains:
        text = _select(expertise_dir, cache, domains, routing, task, files, payload)
        spec = _agent(agent)
        event = str(payload.get("hook_event_name") or (spec.prompt_event if prompt else None) or spec.start_event)
        _emit(agent, event, text)
    return note


def _has_last_good(cache: dict[str, Any], name: str) -> bool:
    """Whether the cache holds a state of ``name`` built from a file that validated."""
    summary = cache["domains"].get(name)
    return isinstance(summary, dict) and not summary.get("error") and cache["files"].get(f"{name}.yaml") is not None


def _resume_learning(expertise_dir: str) -> None:
    """At a session's start: a session queued for learning a while ago whose learner is gone (killed, the
    machine rebooted) gets a new one. One directory listing when nothing is queued."""
    from expertise_kit.fast.cache import cache_dir

    try:
        jobs = [
            e for e in os.scandir(os.path.join(cache_dir(expertise_dir), "learn-queue")) if e.name.endswith(".json")
        ]
    except OSError:
        return
    from expertise_kit.learning.background import STALE_SECONDS, learner_running, start_learner

    if any(time.time() - e.stat().st_mtime > STALE_SECONDS for e in jobs) and not learner_running(expertise_dir):
        start_learner(expertise_dir)


def _file_signature(expertise_dir: str, name: str) -> list[int] | None:
    from expertise_kit.fast.cache import signature

    return signature(os.path.join(expertise_dir, f"{name}.yaml"))


def _select(
    expertise_dir: str,
    cache: dict[str, Any],
    domains: list[str],
    routing: list[str],
    task: str,
    files: list[str],
    payload: dict[str, Any],
) -> str:
    """Session start: the essentials. A prompt: what is relevant to it, or the essentials if nothing is and
    the session has had nothing yet. Either way, only entries this session was not given before."""
    from expertise_kit.fast.cache import stale_domains, uncontended_domains, unsearched_domains
    from expertise_kit.fast.render import RenderResult
    from expertise_kit.fast.retrieve import MIN_PROMPT_CHARS, PROMPT_CHARS, essentials, for_prompt

    def load(names: list[str], read: Callable[..., list[str]] = stale_domains) -> list[str]:
        """Read these domains' entries (or, with ``unsearched_domains``, only what ranking needs); a domain
        whose cache file is unreadable is rebuilt now if its YAML is small enough, and otherwise left out
        (returned)."""
        missing = read(expertise_dir, cache, names)
        small = [n for n in missing if _size(_file_signature(expertise_dir, n)) <= SYNC_REBUILD_BYTES]
        if small:
            rebuilt = _refresh(expertise_dir, small)
            for name in small:
                if "entries" in (rebuilt["domains"].get(name) or {}):
                    # In place: the caller holds this domain's summary already.
                    cache["domains"].setdefault(name, {}).update(rebuilt["domains"][name])
        return [n for n in missing if "entries" not in (cache["domains"].get(n) or {})]

    key = session_key(payload)
    if key is not None:  # the session's state, read and written only when the agent names its session
        from expertise_kit.fast.session import injected, prompt_budget, remember
    given = injected(expertise_dir, key) if key is not None else []
    exclude = set(given)
    now = time.time()
    result = None
    if task.strip() or files:
        # Every domain is searched, through its small ranking file; only the winners' entries are read. The
        # classifier's routing breaks ties: it no longer hides an entry filed under another domain.
        load(domains, unsearched_domains)  # an unreadable cache file is rebuilt now when small, else left out
        searched = [d for d in domains if "postings" in (cache["domains"].get(d) or {})]
        budget = prompt_budget(key, PROMPT_CHARS) if key is not None else PROMPT_CHARS
        result = (
            for_prompt(
                cache, searched, task=task, files=files, routing=routing, exclude=exclude, now=now, load=load,
                contend=lambda names: load(names, uncontended_domains), max_chars=budget,
            )
            if budget >= MIN_PROMPT_CHARS
            else RenderResult("", searched)
        )  # fmt: skip
    asked = result is not None
    if result is None or (not result.text and not given):
        # Each domain's few contenders for the essentials are all that is read.
        readable = [d for d in domains if d not in set(load(domains, uncontended_domains))]
        result = essentials(cache, readable, exclude=exclude, now=now)
    if key is not None:
        remember(expertise_dir, key, given, result.included, now, len(result.text), asked and bool(result.text))
    return result.text


_SPOKE = False  # whether this run printed anything on stdout


def _read_stdin() -> str:
    stream = sys.stdin
    if stream is None or stream.isatty():
        return ""
    # Bytes, so the limit is 4 MiB however the text is encoded; one more byte says it was longer.
    binary = getattr(stream, "buffer", None)
    raw = binary.read(MAX_STDIN + 1) if binary is not None else stream.read(MAX_STDIN + 1).encode("utf-8", "replace")
    if len(raw) > MAX_STDIN:
        raise Quiet("hook input is over 4 MiB; ignored")
    return str(raw.decode("utf-8", "replace"))


def _to_devnull(stream: Any) -> None:
    """Point a standard stream's descriptor at /dev/null, so what is still buffered, and the interpreter's
    own flush at exit, go nowhere instead of failing: a failed flush at exit is exit 120 and a multi-line
    "Exception ignored" on stderr."""
    try:
        descriptor = stream.fileno()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, descriptor)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def _settle(stream: Any, line: str = "") -> None:
    """Write ``line`` and flush, inside our guard; a stream that can't take it (a closed pipe, a full
    disk) is sent to /dev/null."""
    if stream is None:
        return
    try:
        if line:
            stream.write(line)
        stream.flush()
    except BaseException:  # noqa: BLE001 - whoever reads us is gone or full: nothing more to say
        _to_devnull(stream)


def main(argv: list[str] | None = None) -> int:
    global _SPOKE
    _SPOKE = False
    args = list(sys.argv[1:] if argv is None else argv)
    note = None
    quiet = ""
    try:
        mode = args[0] if args else ""
        agent = args[args.index("--agent") + 1] if "--agent" in args else "claude-code"
        if mode not in ("pre", "post", "reflect") or agent not in agent_names():
            raise Quiet(f"usage: expertise-hook pre|post|reflect --agent {'|'.join(agent_names())}")
        quiet = _agent(agent).quiet_stdout
        raw = _read_stdin()
        from expertise_kit.fast.fastjson import loads

        try:
            payload = loads(raw) if raw.strip() else {}
        except ValueError:
            raise Quiet("hook input is not JSON; ignored") from None
        if not isinstance(payload, dict):
            raise Quiet("hook input is not a JSON object")
        if mode == "pre":
            note = pre_task(agent, payload)
        elif mode == "reflect":  # opt-in, at a turn's end; most stop at the light first look
            from expertise_kit.fast.reflectgate import first_look

            look = first_look(agent, payload)
            if look is not None:
                from expertise_kit.learning.reflect import reflect_stop

                note = reflect_stop(agent, look, _send_back)
        else:  # in a module of its own: the pre-task hook, run on every prompt, doesn't load it
            from expertise_kit.learning.session_end import post_session

            note = post_session(agent, payload)
        sys.stdout.flush()  # here, not at exit: a full disk or a closed pipe is ours to handle
    except BaseException as exc:  # noqa: BLE001 - the agent must never see us fail
        _settle(sys.stdout)
        if isinstance(exc, KeyboardInterrupt):
            return 0
        note = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
    if quiet and not _SPOKE:
        _settle(sys.stdout, quiet + "\n")  # an empty stdout would have the agent show our stderr to the user
    if note:
        _settle(sys.stderr, f"expertise hook: {note[:300]}\n")
    return 0


def exit_now(code: int) -> None:
    """Leave at once once our output is out: tearing down the interpreter (freeing every cache object the
    prompt loaded, one by one) costs a hook more than a millisecond with large stores, and nothing of ours
    is left to run then: every file was written and closed, and a background learner or rebuild runs in a
    process of its own."""
    for stream in (sys.stdout, sys.stderr):
        _settle(stream)
    os._exit(code)


if __name__ == "__main__":
    exit_now(main())
