"""The line cap: learned entries go first (least valuable, oldest), hand-written ones last."""

from __future__ import annotations

from pathlib import Path

from conftest import Cli

from expertise_kit.project import find_project
from expertise_kit.store import Store


def _learned(text: str, day: int, recurrence: int = 1) -> dict[str, object]:
    return {
        "text": text,
        "source": "learned",
        "sessions": [f"s{day}"],
        "first_seen": f"2026-10-{day:02d}T00:00:00Z",
        "last_seen": f"2026-10-{day:02d}T00:00:00Z",
        "recurrence": recurrence,
    }


def _set_cap(project: Path, cap: int) -> None:
    (project / ".expertise" / "config.yaml").write_text(f"line_cap: {cap}\n")


def _texts(store: Store, section: str) -> list[str]:
    doc = store.load("database")
    return [item if isinstance(item, str) else item.text for item in doc.model.items(section)]  # type: ignore[union-attr]


def test_under_the_cap_nothing_is_pruned(project: Path) -> None:
    store = Store(find_project(project))
    result = store.add_items("database", [("patterns", "one")])
    assert result.pruned == [] and result.over_by == 0


def test_oldest_least_valuable_learned_entries_go_first(project: Path) -> None:
    _set_cap(project, 60)
    store = Store(find_project(project))
    # 12 learned effective patterns (6 lines each) push a 12-line file well over 60 lines.
    items = [("effective_patterns", _learned(f"pattern from day {day}", day)) for day in range(1, 13)]
    items[3] = ("effective_patterns", _learned("valuable, day 4", 4, recurrence=5))
    items.append(("patterns", "hand-written rule"))
    result = store.add_items("database", items)
    kept = _texts(store, "effective_patterns")
    assert result.lines <= 60
    assert result.over_by == 0
    pruned = [p.text for p in result.pruned]
    assert pruned and all(p.learned for p in result.pruned)
    # The oldest low-value ones went; the newest and the valuable one stayed.
    assert "pattern from day 1" in pruned
    assert "pattern from day 12" in kept
    assert "valuable, day 4" in kept
    assert _texts(store, "patterns") == ["hand-written rule"]
    days = [int(text.rsplit(" ", 1)[1]) for text in kept if text.startswith("pattern from day")]
    assert days == sorted(days) and days[-1] == 12 and min(days) > 1


WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
]


def test_failures_are_trimmed_before_other_sections(project: Path) -> None:
    _set_cap(project, 120)
    store = Store(find_project(project))
    failures = []
    for day, word in enumerate(WORDS, start=1):
        failure = _learned("", day)
        del failure["text"]
        failures.append(("learned_from_failures", {**failure, "issue": f"issue {day}", "error": f"{word} failed"}))
    techniques = [("successful_techniques", _learned(f"technique {day}", day)) for day in range(1, 4)]
    result = store.add_items("database", [*failures, *techniques])
    assert result.lines <= 120
    assert result.pruned
    assert {p.section for p in result.pruned} == {"learned_from_failures"}
    remaining = [f.issue for f in store.load("database").model.items("learned_from_failures")]
    assert len(remaining) >= 10  # the section's floor holds when the cap allows it
    assert "issue 1" not in remaining and remaining[-1] == "issue 14"
    assert _texts(store, "successful_techniques") == ["technique 1", "technique 2", "technique 3"]


def test_hand_written_entries_go_last_and_a_warning_is_printed(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    overview = "".join(f"  line {n} of a long overview\n" for n in range(60))
    path.write_text(f"domain: database\noverview: |\n{overview}patterns:\n  - first rule\n  - second rule\n")
    _set_cap(project, 50)
    result = run("add", "database", "patterns", "third rule")
    assert result.exit_code == 0, result.output
    assert "warning: pruned hand-written patterns entry to stay under the cap: first rule" in result.stderr
    assert "warning: .expertise/database.yaml is still" in result.stderr
    assert "lines over the 50-line cap" in result.stderr
    # The overview is not an entry: it is never pruned.
    assert path.read_text().count("of a long overview") == 60
