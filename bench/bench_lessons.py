"""Whether the store keeps the lessons a senior engineer would keep, and shows them when they help.

For each series in ``bench/lessons/*.json`` (one project's real sessions, with the ~10 key lessons and 5
next-session prompts a blind reader wrote down before anyone read the store):

1. a fresh temp git repo gets ``expertise init --agent claude-code``;
2. the series' transcripts are learned one at a time, in time order, with ``expertise learn``;
3. each next-session prompt is replayed through the installed hooks, as a new session would meet it
   (session start, then the prompt), and the text the agent would receive is kept;
4. the store is read back with ``expertise show --json``.

Per series it prints:
- ``captured``: key lessons some stored entry expresses (one entry matches every pattern of one of the
  lesson's pattern groups, case-insensitive);
- ``helped``: prompts whose injected text holds a bullet expressing a lesson the reader said helps it;
- ``paths``: the share of stored entries that are bare paths (``core_files``);
- ``fixes``: stored failures with a fix, and how many of them a blind review judged wrong, from
  ``bench/lessons/<series>.verdicts.json`` when one exists: each fix's text (``--fixes`` prints them) mapped
  to ``{"verdict": "right" | "wrong" | "unclear", "why": ...}``, judged against the transcripts;
- ``chars``: the mean characters injected at session start plus the first prompt.

The lesson files' ``held_out`` flag marks the series nobody looked at while tuning the learner.

Run: python bench/bench_lessons.py [--series NAME] [--only tuned|held-out] [--fixes] [--show] [--json]
                                   [--reflect [--repeat [N]]]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_quality import Replay  # noqa: E402

LESSONS = Path(__file__).resolve().parent / "lessons"
_SHARED = Path(__file__).resolve().parents[2] / "shared"
TRANSCRIPTS = _SHARED / "fixtures" / "transcripts"
_FIELDS = ("text", "issue", "error", "solution", "path")


@dataclass
class _Session:
    """What the hooks need of a session: an id and a transcript path."""

    id: str
    source: Path


@dataclass
class SeriesFigures:
    name: str
    held_out: bool
    lessons: int = 0
    captured: list[str] = field(default_factory=list)
    prompts: int = 0
    helped: int = 0
    entries: int = 0
    paths: int = 0
    fixes: list[dict[str, Any]] = field(default_factory=list)
    wrong: int = 0
    judged: int = 0
    chars: list[int] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    unhelped: list[str] = field(default_factory=list)


def expresses(text: str, lesson: dict[str, Any]) -> bool:
    """Whether ``text`` (one entry, or one injected bullet) matches every pattern of one of the lesson's groups."""
    return any(all(re.search(p, text, re.I) for p in group) for group in lesson.get("match") or [])


def entry_text(record: dict[str, Any]) -> str:
    return " ".join(str(record.get(k) or "") for k in _FIELDS).strip()


def fix_key(record: dict[str, Any]) -> str:
    """What a verdict on a stored fix is filed under: its error and its solution."""
    return f"{record.get('error') or ''} => {record.get('solution') or ''}"


def bullets(injected: str) -> list[str]:
    """The injected text, a bullet a piece (a wrapped bullet's lines kept together)."""
    found: list[str] = []
    for line in injected.splitlines():
        if line.startswith("- "):
            found.append(line)
        elif found and line.startswith(" "):
            found[-1] += " " + line.strip()
    return found


def _time_key(path: Path) -> str:
    """Codex rollouts sort by their name's timestamp; other files by their first timestamp, then name."""
    if path.name.startswith("rollout-"):
        return path.name
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            for line in handle:
                stamp = re.search(r'"timestamp"\s*:\s*"([^"]+)"', line)
                if stamp:
                    return stamp.group(1)
    except OSError:
        pass
    return path.name


def transcripts_of(spec: dict[str, Any]) -> list[Path]:
    files = {p for pattern in spec["transcripts"] for p in TRANSCRIPTS.glob(pattern) if p.is_file()}
    main = [p for p in files if not p.name.startswith("agent-")]  # subagent files are read with their session
    return sorted(main, key=_time_key)


def session_key(path: Path) -> str:
    """The session's id as its hook would name it, so the agent's lesson and the parsed one of the same
    session can be found to be one (docs/reflect.md)."""
    from expertise_kit.learning.transcripts import iter_sessions
    from expertise_kit.learning.transcripts.model import safe_session_id

    return next((safe_session_id(s.id) for s in iter_sessions([path], "auto", []) if s.id), path.stem)


def session_end(path: Path) -> str:
    """When the session's last record was written (ISO 8601), or "" when it names no time."""
    from expertise_kit.learning.transcripts import iter_sessions

    return max((s.ended or s.started for s in iter_sessions([path], "auto", [])), default="")


# `expertise add` with expertise_kit's one clock set to a given moment (the first argument).
_ADD_AT = (
    "import sys; from datetime import datetime; import expertise_kit.clock as clock; "
    "at = datetime.fromisoformat(sys.argv.pop(1).replace('Z', '+00:00')).replace(microsecond=0); "
    "clock.now = lambda: at; from expertise_kit.cli import main; main()"
)


def add_at(replay: Replay, when: str, *args: str) -> None:
    """The agent writes its lessons as its session ends: stamped with the bench's own clock instead, they
    would all be newer than anything parsed from the series, and which of them share a second (which
    the load on the machine decides) would order them at session start."""
    if not when:
        replay._cli("add", *args)
        return
    done = subprocess.run(
        [sys.executable, "-c", _ADD_AT, when, "add", *args], cwd=replay.root, env=replay.env,
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"expertise add {' '.join(args)}: {done.stderr.strip()}")


# Beside each series' lesson file: its blind verdicts and its stand-in recordings.
_RECORDING = re.compile(r"\.reflect(?:-\d+)?\.json$")


def series_files() -> list[Path]:
    """The lesson files: one a series."""
    return sorted(
        p for p in LESSONS.glob("*.json") if not (p.name.endswith(".verdicts.json") or _RECORDING.search(p.name))
    )


def recordings() -> list[Path]:
    """Every stand-in recording: ``<series>.reflect.json``, ``<series>.reflect-N.json``."""
    return sorted(p for p in LESSONS.glob("*.json") if _RECORDING.search(p.name))


def stand_in_lessons(name: str, recording: str = "reflect") -> dict[str, list[dict[str, Any]]]:
    """``bench/lessons/<series>.reflect.json`` (``reflect-2``, ``reflect-3``: later recordings of the asks): by
    session (its place in the series), the lessons a model standing in for the agent wrote when asked to
    reflect (docs/reflect.md); empty where none were recorded."""
    path = LESSONS / f"{name}.{recording}.json"
    return dict(json.loads(path.read_text(encoding="utf-8"))["sessions"]) if path.is_file() else {}


def run_series(
    spec: dict[str, Any], verdicts: dict[str, str], *, reflect: bool = False, recording: str = "reflect"
) -> SeriesFigures:
    figures = SeriesFigures(spec["series"], bool(spec.get("held_out")))
    replay = Replay("claude-code")
    written = stand_in_lessons(spec["series"], recording) if reflect else {}
    try:
        for n, path in enumerate(transcripts_of(spec)):
            replay._cli("learn", str(path))
            key, when = (session_key(path), session_end(path)) if written.get(str(n)) else ("", "")
            for lesson in written.get(str(n), []):  # as the agent would, asked in that session, as it ends
                extra = [f"--{k}={lesson[k]}" for k in ("error", "solution") if lesson.get(k)]
                add_at(replay, when, lesson["domain"], lesson["section"], lesson["text"], *extra, f"--session={key}")
        records = [record for _, record in replay.entries()]
        figures.entries = len(records)
        figures.paths = sum(1 for r in records if r.get("section") == "core_files")
        lessons = spec.get("lessons") or []
        figures.lessons = len(lessons)
        texts = [entry_text(r) for r in records]
        for lesson in lessons:
            if any(expresses(text, lesson) for text in texts):
                figures.captured.append(lesson["id"])
            else:
                figures.missed.append(f"{lesson['id']} {lesson['lesson'][:100]}")
        by_id = {lesson["id"]: lesson for lesson in lessons}
        for prompt in spec.get("prompts") or []:
            helpers = [by_id[i] for i in prompt.get("helped_by") or [] if i in by_id]
            if not helpers:
                continue  # a series that teaches nothing has no prompt a lesson could help
            figures.prompts += 1
            session = _Session(f"bench-{uuid.uuid4()}", Path("/nonexistent/transcript.jsonl"))
            start = replay.inject(session).text  # type: ignore[arg-type]
            first = replay.inject(session, prompt["prompt"]).text  # type: ignore[arg-type]
            injected = "\n".join(t for t in (start, first) if t)
            figures.chars.append(len(injected))
            if any(expresses(b, lesson) for b in bullets(injected) for lesson in helpers):
                figures.helped += 1
            else:
                stored = [h["id"] for h in helpers if h["id"] in figures.captured]
                where = f" (stored but not shown: {', '.join(stored)})" if stored else ""
                figures.unhelped.append(prompt["prompt"][:100] + where)
        for record in records:
            if record.get("section") == "learned_from_failures" and record.get("solution"):
                key = fix_key(record)
                figures.fixes.append(record)
                verdict = verdicts.get(key)
                if isinstance(verdict, dict):  # {"verdict": "right" | "wrong" | "unclear", "why": "..."}
                    figures.judged += 1
                    figures.wrong += verdict.get("verdict") == "wrong"
        return figures
    finally:
        replay.close()


def _ratio(hits: int, total: int) -> str:
    return f"{hits / total:.2f} ({hits}/{total})" if total else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--series", default="", help="only series whose name holds this")
    parser.add_argument("--fixes", action="store_true", help="print every stored fix, for a blind review")
    parser.add_argument("--show", action="store_true", help="print missed lessons and unhelped prompts")
    parser.add_argument("--only", choices=("tuned", "held-out"), help="only the series tuned on, or held out")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--reflect", action="store_true",
        help="also add, after each session, the lessons a stand-in agent wrote when asked (<series>.reflect.json)",
    )  # fmt: skip
    parser.add_argument(
        "--repeat", type=int, nargs="?", const=2, default=1, metavar="N",
        help="with --reflect: the Nth recording of the asks (<series>.reflect-N.json; 2 when N is left out), "
        "for the variance",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat counts recordings from 1")
    if not TRANSCRIPTS.is_dir():
        print(f"real transcripts not found at {TRANSCRIPTS} (../shared)", file=sys.stderr)
        return 1
    rows: list[SeriesFigures] = []
    for spec_path in series_files():
        spec = json.loads(spec_path.read_text(encoding="utf-8"))
        if args.series and args.series not in spec["series"]:
            continue
        if args.only and bool(spec.get("held_out")) != (args.only == "held-out"):
            continue
        verdict_path = spec_path.with_name(spec_path.stem + ".verdicts.json")
        verdicts = json.loads(verdict_path.read_text(encoding="utf-8")) if verdict_path.exists() else {}
        recording = f"reflect-{args.repeat}" if args.repeat > 1 else "reflect"
        if (
            args.reflect
            and not spec["series"].startswith("aider-")
            and not (LESSONS / f"{spec['series']}.{recording}.json").is_file()
        ):
            print(f"{spec['series']}: no {recording} recording, parser only", file=sys.stderr)
        figures = run_series(spec, verdicts, reflect=args.reflect, recording=recording)
        rows.append(figures)
        if args.fixes:
            for record in figures.fixes:
                shown = {k: record.get(k) for k in ("issue", "error", "solution")}
                print(json.dumps({"series": figures.name, "key": fix_key(record), **shown}, ensure_ascii=False))
    if args.json:
        print(json.dumps([f.__dict__ | {"fixes": len(f.fixes)} for f in rows], ensure_ascii=False, indent=1))
        return 0
    header = f"{'series':26} {'held':4} {'captured':13} {'helped':11} {'paths':13} {'fixes':6} {'wrong':9} chars"
    print(header)
    for group in (False, True):
        chosen = [f for f in rows if f.held_out is group]
        for f in chosen:
            mean = f"{sum(f.chars) / len(f.chars):.0f}" if f.chars else "-"
            wrong = f"{f.wrong}/{f.judged}" if f.judged else "-"
            print(
                f"{f.name:26} {'yes' if group else 'no':4} {_ratio(len(f.captured), f.lessons):13} "
                f"{_ratio(f.helped, f.prompts):11} {_ratio(f.paths, f.entries):13} {len(f.fixes):<6} {wrong:9} {mean}"
            )
            if args.show:
                for line in f.missed:
                    print(f"    missed  {line}")
                for line in f.unhelped:
                    print(f"    unhelped  {line}")
        if chosen:
            captured = sum(len(f.captured) for f in chosen)
            print(
                f"{'  all ' + ('held out' if group else 'tuned on'):31} "
                f"{_ratio(captured, sum(f.lessons for f in chosen)):13} "
                f"{_ratio(sum(f.helped for f in chosen), sum(f.prompts for f in chosen)):11} "
                f"{_ratio(sum(f.paths for f in chosen), sum(f.entries for f in chosen)):13} "
                f"{sum(len(f.fixes) for f in chosen):<6} {sum(f.wrong for f in chosen)}/{sum(f.judged for f in chosen)}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
