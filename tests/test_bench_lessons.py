"""bench/bench_lessons.py's scoring, and the blind readers' lesson files it reads."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from bench_lessons import LESSONS, bullets, expresses, fix_key, recordings, series_files  # noqa: E402

FILES = series_files()


def test_a_lesson_is_expressed_only_when_every_pattern_of_a_group_matches() -> None:
    lesson = {"match": [["PYTHONPATH", "pytest"], ["conftest\\.py", "sys\\.path"]]}
    assert expresses("`pytest -q` failed; fix: then `PYTHONPATH=. pytest -q` worked", lesson)
    assert expresses("Put sys.path.insert in CONFTEST.PY", lesson)  # case does not matter
    assert not expresses("Run `pytest -q` after editing", lesson)  # the program alone is not the lesson
    assert not expresses("anything", {"match": []})


def test_injected_text_is_read_a_bullet_at_a_time() -> None:
    text = "## Project expertise\n### Corrections\n- first lesson\n  wrapped on\n- second\nnot a bullet\n"
    assert bullets(text) == ["- first lesson wrapped on", "- second"]


def test_a_verdict_is_filed_under_the_fixs_error_and_solution() -> None:
    assert fix_key({"issue": "`x`", "error": "E: boom", "solution": "ran `y`"}) == "E: boom => ran `y`"


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_every_lesson_file_is_well_formed(path: Path) -> None:
    spec = json.loads(path.read_text(encoding="utf-8"))
    assert spec["series"] == path.stem and isinstance(spec["held_out"], bool) and spec["transcripts"]
    ids = [lesson["id"] for lesson in spec["lessons"]]
    assert len(ids) == len(set(ids))
    for lesson in spec["lessons"]:
        assert lesson["lesson"].strip() and lesson["match"]
        for group in lesson["match"]:
            for pattern in group:
                re.compile(pattern)
        assert expresses(lesson["lesson"], lesson), lesson["id"]  # the reader's patterns fit their own words
    assert len(spec["prompts"]) == 5
    for prompt in spec["prompts"]:
        assert set(prompt["helped_by"]) <= set(ids)


def test_the_lesson_files_hold_series_tuned_on_and_held_out() -> None:
    held = [json.loads(p.read_text(encoding="utf-8"))["held_out"] for p in FILES]
    assert held.count(True) >= 4 and held.count(False) >= 4


REFLECTED = recordings()


def test_every_file_beside_the_lesson_files_is_a_series_its_verdicts_or_a_recording() -> None:
    kinds = {p.name.split(".", 1)[1] for p in LESSONS.glob("*.json")}
    assert all(re.fullmatch(r"json|verdicts\.json|reflect(?:-\d+)?\.json", kind) for kind in kinds), kinds
    assert {p.name.split(".", 1)[1] for p in REFLECTED} >= {"reflect.json", "reflect-2.json"}
    assert all(p.stem.count(".") == 0 for p in FILES)


def test_recordings_are_counted_from_one() -> None:
    from bench_lessons import main

    with pytest.raises(SystemExit) as refused:
        main(["--reflect", "--repeat", "0"])
    assert refused.value.code == 2


@pytest.mark.parametrize("path", REFLECTED, ids=[p.name.removesuffix(".json") for p in REFLECTED])
def test_every_stand_in_file_is_well_formed(path: Path) -> None:
    from expertise_kit.vocab import DEFAULT_DOMAINS, SECTIONS

    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["series"] == path.name.split(".")[0] and data["note"]
    spec = json.loads((LESSONS / f"{data['series']}.json").read_text(encoding="utf-8"))
    assert not spec["series"].startswith("aider-")  # Aider has no end-of-turn hook to ask it
    for session, lessons in data["sessions"].items():
        assert session.isdigit()
        for lesson in lessons:
            assert lesson["domain"] in DEFAULT_DOMAINS and lesson["section"] in {s.name for s in SECTIONS}
            assert lesson["text"] and lesson["ask"] >= 0


def test_the_stand_in_writes_under_the_sessions_own_id(tmp_path: Path) -> None:
    from bench_lessons import session_key
    from builders import shop_session

    transcript = shop_session("5e55104e-1d2c-4b1a-9f00-00000000abcd").write(tmp_path / "other-name.jsonl")
    assert session_key(transcript) == "5e55104e-1d2c-4b1a-9f00-00000000abcd"


def test_the_stand_ins_lessons_are_stamped_with_their_sessions_end(tmp_path: Path) -> None:
    from bench_lessons import add_at, session_end
    from bench_quality import Replay
    from builders import shop_session

    transcript = shop_session().write(tmp_path / "s.jsonl")
    when = session_end(transcript)
    assert when.startswith("20")
    replay = Replay("claude-code")
    try:
        add_at(replay, when, "general", "patterns", "Prices are rounded in shop/pricing.py", "--session=s-1")
        [entry] = json.loads(replay._cli("show", "general", "--json"))["entries"]
    finally:
        replay.close()
    assert entry["last_seen"] == entry["first_seen"] == when[:19] + "Z"  # not the bench's own clock
