"""What reflection (docs/reflect.md) costs, and what it puts in front of the agent.

1. The end-of-turn hook, side by side with `python -I -c pass`, both through `sh -c` as agents run hooks:
   with `reflect: off` (the hook installed, reflection off: every turn pays this), once the session was
   asked (every later turn of that session), and the first look at a real transcript (the dry run of the
   learner that finds the candidates; every turn pays it until the session is asked or ends).
2. On the real Claude Code and Codex series of ../shared (the held-out ones apart): each session replayed
   in order, as it happens in use (the hook looks, then the learner learns the session): how many sessions
   would be asked, the characters sent, and how many of the lessons the blind readers listed
   (bench/lessons/) were among the candidates the agent is shown, against how many the parser stored.

    python bench/bench_reflect.py [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import IDENTITY, bench_env, expertise_argv, p50, row, temp_repo  # noqa: E402
from bench_lessons import LESSONS, TRANSCRIPTS, entry_text, expresses, transcripts_of  # noqa: E402

from expertise_kit import Expertise  # noqa: E402
from expertise_kit.agents.installer import hook_command  # noqa: E402
from expertise_kit.learning.reflect import _FAILURE_KINDS as FAILURE_KINDS  # noqa: E402
from expertise_kit.learning.reflect import _candidates, compose  # noqa: E402


def _stop_payload(root: Path, transcript: Path, session: str) -> str:
    return json.dumps({
        "session_id": session, "transcript_path": str(transcript), "cwd": str(root),
        "hook_event_name": "Stop", "stop_hook_active": False,
    })  # fmt: skip


def _times(argv: list[str], stdin: str, runs: int, env: dict[str, str], root: Path) -> float:
    samples = []
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, cwd=root, check=True)
        samples.append(time.perf_counter() - began)
    return p50(samples)


def timing(runs: int) -> None:
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init", "--agent", "claude-code", "--reflect"],
                   check=True, env=env, capture_output=True)  # fmt: skip
    sized = sorted(TRANSCRIPTS.glob("claude/**/*.jsonl"), key=lambda p: p.stat().st_size)
    argv = ["sh", "-c", hook_command("reflect", "claude-code")]
    base = _times(["sh", "-c", f"{shlex.quote(sys.executable)} -I -c pass"], "", runs, env, root)
    print(f"{'python -I -c pass (through sh -c)':<44} {base * 1000:9.1f} ms   1.00x")
    if not sized:
        print("real transcripts not found (../shared): only the start-up is measured")
        return
    # The largest real sessions that would be asked and that would not: a look's cost grows with the transcript.
    asks = {p: any(c["kind"] in FAILURE_KINDS for c in _candidates(str(root / ".expertise"), str(p))) for p in sized}
    transcript = next(p for p in reversed(sized) if asks[p])
    quiet = next((p for p in reversed(sized) if not asks[p]), None)
    print(f"transcript: {transcript.relative_to(TRANSCRIPTS)} ({transcript.stat().st_size // 1024} KiB)")
    asked = _stop_payload(root, transcript, "bench-asked")
    done = subprocess.run(argv, input=asked, capture_output=True, text=True, env=env, cwd=root, check=True)
    assert '"decision": "block"' in done.stdout, f"the session was not asked: {done.stderr}"
    print(row("reflect hook, session already asked", _times(argv, asked, runs, env, root), base))
    first = [
        _times(argv, _stop_payload(root, transcript, f"bench-first-{n}"), 1, env, root)
        for n in range(max(3, runs // 4))
    ]  # fmt: skip
    print(row("reflect hook, a look that asks (dry-run learn)", statistics.median(first), base))
    if quiet is not None:
        print(f"transcript with nothing to ask: {quiet.relative_to(TRANSCRIPTS)} ({quiet.stat().st_size // 1024} KiB)")
        looks = [
            _times(argv, _stop_payload(root, quiet, f"bench-quiet-{n}"), 1, env, root) for n in range(max(3, runs // 4))
        ]  # fmt: skip
        print(row("reflect hook, a look with nothing to ask", statistics.median(looks), base))
    config = root / ".expertise" / "config.yaml"
    config.write_text(config.read_text().replace("reflect: failures", "reflect: off"))
    pre = json.dumps({"session_id": "bench-pre", "cwd": str(root), "hook_event_name": "SessionStart"})
    subprocess.run(["sh", "-c", hook_command("pre", "claude-code")], input=pre, text=True, env=env, cwd=root,
                   capture_output=True, check=True)  # the next prompt's hook refreshes the cache's config  # fmt: skip
    off = _stop_payload(root, transcript, "bench-off")
    print(row("reflect hook, `reflect: off`", _times(argv, off, runs, env, root), base))


def _stand_in(name: str) -> list[str]:
    """The lessons recorded in ``bench/lessons/<series>.reflect.json``: what a model standing in for the agent
    wrote when asked, having read only the session's own transcript and the reason (never the lesson list)."""
    path = LESSONS / f"{name}.reflect.json"
    if not path.is_file():
        return []
    sessions = json.loads(path.read_text())["sessions"]
    fields = ("text", "error", "solution")
    return [" ".join(str(lesson.get(k) or "") for k in fields) for lessons in sessions.values() for lesson in lessons]


def series(group: str) -> None:
    found = sorted(LESSONS.glob("*.json"))
    specs = [json.loads(p.read_text()) for p in found if not p.name.endswith((".verdicts.json", ".reflect.json"))]
    totals: dict[bool, dict[str, Any]] = {}
    for spec in specs:
        if not spec["series"].startswith(("claude-", "codex-")):
            continue  # Aider has no end-of-turn hook to send it back
        held = bool(spec.get("held_out"))
        if group != "all" and held != (group == "held-out"):
            continue
        paths = transcripts_of(spec)
        if not paths:
            continue
        env = bench_env()
        os.environ.update(IDENTITY)  # the learner commits in this process
        root = temp_repo(env)
        subprocess.run([*expertise_argv(), "-C", str(root), "init", "--agent", "claude-code", "--reflect"],
                       check=True, env=env, capture_output=True)  # fmt: skip
        kit = Expertise(root)
        expertise_dir = str(root / ".expertise")
        shown: list[str] = []
        asked, chars = 0, []
        for path in paths:
            found = _candidates(expertise_dir, str(path))
            if any(c["kind"] in FAILURE_KINDS for c in found):
                asked += 1
                chars.append(len(compose(found, "s" * 36, list(kit.store().config.domain_names))))
                shown += [c["text"] for c in found]
            kit.learn([path])
        stored = [entry_text(e) for d in kit.list() for e in kit.show(d["domain"])["entries"]]
        lessons = spec.get("lessons") or []
        in_front = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in shown))
        parsed = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in stored))
        written = _stand_in(spec["series"])  # what a model standing in for the agent wrote when asked, if recorded
        together = sum(1 for lesson in lessons if any(expresses(t, lesson) for t in [*stored, *written]))
        label = "held out" if held else "tuned"
        mean = statistics.mean(chars) if chars else 0
        print(
            f"{spec['series']:<24} {label:<9} sessions {len(paths):>3}, asked {asked:>3}, chars {mean:6.0f} mean "
            f"{max(chars, default=0):5d} max; lessons {len(lessons):>3}: among the candidates {in_front:>3}, "
            f"stored by the parser {parsed:>3}"
            + (f", with the stand-in agent's {len(written)} lessons {together:>3}" if written else "")
        )
        total = totals.setdefault(
            held, {"sessions": 0, "asked": 0, "chars": [], "lessons": 0, "front": 0, "parsed": 0, "with": 0, "of": 0}
        )
        if written:
            total["with"] += together
            total["of"] += len(lessons)
        total["sessions"] += len(paths)
        total["asked"] += asked
        total["chars"] += chars
        total["lessons"] += len(lessons)
        total["front"] += in_front
        total["parsed"] += parsed
    for held, t in sorted(totals.items()):
        label = "held out" if held else "tuned"
        mean = statistics.mean(t["chars"]) if t["chars"] else 0
        print(
            f"{label}: asked in {t['asked']} of {t['sessions']} sessions, {mean:.0f} characters each; of "
            f"{t['lessons']} lessons, {t['front']} among the candidates shown, {t['parsed']} stored by the parser"
            + (f"; series with a stand-in agent's lessons: {t['with']} of {t['of']} with them" if t["of"] else "")
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--only", choices=("timing", "series"), default=None)
    parser.add_argument("--group", choices=("all", "tuned", "held-out"), default="all")
    args = parser.parse_args(argv)
    if args.only != "series":
        timing(args.runs)
    if args.only != "timing":
        if not TRANSCRIPTS.is_dir():
            print(f"real transcripts not found at {TRANSCRIPTS} (../shared)", file=sys.stderr)
            return 0
        series(args.group)
    return 0


if __name__ == "__main__":
    sys.exit(main())
