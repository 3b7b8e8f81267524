"""The entry-by-entry three-way merge of a domain file, without git: what it keeps, counts and flags."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expertise_kit.document.domainfile import parse_domain_text
from expertise_kit.document.sightings import merge_sightings
from expertise_kit.document.splice import Append, Edit, Remove, Replace, apply_edits
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.store.scaffold import domain_template
from expertise_kit.versioning.merge import CONFLICT_KEY, conflicts_in, merge_domain_texts
from expertise_kit.versioning.textmerge import merge_lines

PATH = Path(".expertise/database.yaml")


def learned(text: str, *sessions: str, day: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "text": text,
        "source": "learned",
        "sessions": list(sessions),
        "first_seen": f"2026-11-{day:02d}T10:00:00Z",
        "last_seen": f"2026-11-{day:02d}T10:00:00Z",
        **({"recurrence": len(sessions)} if len(sessions) > 1 else {}),
        **extra,
    }


def edited(text: str, edits: list[Edit]) -> str:
    return apply_edits(parse_yaml_text(text, PATH), edits)


def merge(base: str, ours: str, theirs: str, cap: int = 1000) -> Any:
    return merge_domain_texts(base, ours, theirs, path=PATH, domain="database", line_cap=cap)


def plain(text: str) -> dict[str, Any]:
    return parse_domain_text(text, PATH, "database").loaded.plain


BASE = edited(
    domain_template("database"),
    [Append("patterns", "Use migrations"), Append("patterns", learned("Pool connections", "s1"))],
)


def test_entries_added_on_both_sides_are_all_kept_ours_first() -> None:
    ours = edited(BASE, [Append("patterns", "Index foreign keys"), Append("best_practices", "Back up first")])
    theirs = edited(BASE, [Append("patterns", learned("Batch inserts", "s2"))])
    result = merge(BASE, ours, theirs)
    assert not result.conflicts
    texts = [p if isinstance(p, str) else p["text"] for p in plain(result.text)["patterns"]]
    assert texts == ["Use migrations", "Pool connections", "Index foreign keys", "Batch inserts"]
    assert plain(result.text)["best_practices"] == ["Back up first"]
    assert result.text.startswith(ours.split("patterns:")[0])  # our header, comments and all, byte for byte


def test_a_deletion_wins_only_over_an_unchanged_entry() -> None:
    ours = edited(BASE, [Remove("patterns", 0)])  # deleted by hand
    theirs = edited(BASE, [Append("patterns", "Index foreign keys")])
    assert [p for p in plain(merge(BASE, ours, theirs).text)["patterns"] if isinstance(p, str)] == [
        "Index foreign keys"
    ]
    seen_again = edited(BASE, [Replace("patterns", 1, learned("Pool connections", "s1", "s2"))])
    pruned = edited(BASE, [Remove("patterns", 1)])
    for a, b in ((seen_again, pruned), (pruned, seen_again)):
        kept = [p for p in plain(merge(BASE, a, b).text)["patterns"] if isinstance(p, dict)]
        assert kept == [learned("Pool connections", "s1", "s2")]  # a change beats a deletion


def test_sightings_merge_as_a_union_counted_once_per_session() -> None:
    ours = edited(BASE, [Replace("patterns", 1, learned("Pool connections", "s1", "s2", day=3))])
    theirs = edited(BASE, [Replace("patterns", 1, learned("Pool connections", "s1", "s2", "s3", day=5))])
    result = merge(BASE, ours, theirs)
    entry = plain(result.text)["patterns"][1]
    assert entry["sessions"] == ["s1", "s2", "s3"]
    assert entry["recurrence"] == 3  # s2 was learned in both clones: counted once
    assert str(entry["last_seen"]).startswith("2026-11-05")
    assert not result.conflicts


def test_merge_sightings_counts() -> None:
    base = learned("x", "a", "b") | {"helpful": 2}
    ours = learned("x", "a", "b", "c") | {"helpful": 3, "recurrence": 3}
    theirs = learned("x", "a", "b", "d", "c") | {"helpful": 5, "recurrence": 4}
    merged = merge_sightings(base, ours, theirs)
    assert merged["sessions"] == ["a", "b", "c", "d"]
    assert merged["recurrence"] == 4
    assert merged["helpful"] == 6  # +1 ours, +3 theirs
    both_new = merge_sightings(None, learned("x", "s9", day=2), learned("x", "s9", day=4))
    assert both_new.get("recurrence", 1) == 1 and both_new["sessions"] == ["s9"]
    assert str(both_new["first_seen"]).startswith("2026-11-02") and str(both_new["last_seen"]).startswith("2026-11-04")


def test_the_same_learning_in_two_clones_merges_without_a_conflict() -> None:
    ours = edited(BASE, [Append("learned_from_failures", _failure("s5", "run migrations first"))])
    theirs = edited(BASE, [Append("learned_from_failures", _failure("s6", "apply migrations"))])
    result = merge(BASE, ours, theirs)
    assert not result.conflicts
    (entry,) = plain(result.text)["learned_from_failures"]
    assert entry["sessions"] == ["s5", "s6"] and entry["recurrence"] == 2
    assert entry["solution"] == "run migrations first"  # the first known fix stays, as in one store


def _failure(session: str, solution: str) -> dict[str, Any]:
    return {
        "issue": "migrate",
        "error": "relation users does not exist",
        "solution": solution,
        "source": "learned",
        "sessions": [session],
        "last_seen": "2026-11-04T00:00:00Z",
    }


def test_comments_on_both_sides_survive_when_the_line_merge_agrees() -> None:
    base = BASE.replace("patterns:\n", "patterns:\n  # keep these short\n")
    ours = base.replace("domain: database\n", "# owned by the data team\ndomain: database\n")
    theirs = edited(base, [Append("best_practices", "Back up first")]).replace(
        "last_validated", "# validated by CI\nlast_validated"
    )
    result = merge(base, ours, theirs)
    assert result.kept_line_merge
    for comment in ("# keep these short", "# owned by the data team", "# validated by CI"):
        assert comment in result.text


def test_both_sides_editing_one_entry_by_hand_is_a_readable_conflict() -> None:
    base = edited(BASE, [Append("learned_from_failures", {"error": "deadlock", "solution": "retry"})])
    ours = edited(base, [Replace("learned_from_failures", 0, {"error": "deadlock", "solution": "id order"})])
    theirs = edited(base, [Replace("learned_from_failures", 0, {"error": "deadlock", "solution": "SKIP LOCKED"})])
    result = merge(base, ours, theirs)
    assert len(result.conflicts) == 1
    doc = parse_domain_text(result.text, PATH, "database")  # still a valid domain file
    (entry,) = doc.loaded.plain["learned_from_failures"]
    assert entry["solution"] == "id order"
    assert entry[CONFLICT_KEY]["ours"]["solution"] == "id order"
    assert entry[CONFLICT_KEY]["theirs"]["solution"] == "SKIP LOCKED"
    assert [c[1] for c in conflicts_in(doc)] == ["learned_from_failures"]
    assert "<<<<<<<" not in result.text


def test_rewording_one_entry_differently_on_both_sides_is_a_conflict() -> None:
    ours = BASE.replace("- Use migrations\n", "- Use migrations for every schema change\n")
    theirs = BASE.replace("- Use migrations\n", "- Use reviewed migrations\n")
    result = merge(BASE, ours, theirs)
    assert len(result.conflicts) == 1
    assert plain(result.text)["patterns"][0][CONFLICT_KEY] == {
        "ours": "Use migrations for every schema change",
        "theirs": "Use reviewed migrations",
    }
    only_theirs = merge(BASE, BASE, theirs)  # one side's rewording is taken in place
    assert plain(only_theirs.text)["patterns"][0] == "Use reviewed migrations"


def test_a_top_level_value_changed_differently_keeps_ours_and_records_both() -> None:
    ours = BASE.replace('overview: "', 'overview: "Ours. ')
    theirs = BASE.replace('overview: "', 'overview: "Theirs. ')
    result = merge(BASE, ours, theirs)
    data = plain(result.text)
    assert data["overview"].startswith("Ours. ")
    assert data[CONFLICT_KEY]["overview"]["theirs"].startswith("Theirs. ")
    assert [c[0] for c in conflicts_in(parse_domain_text(result.text, PATH, "database"))] == ["overview"]
    later = merge(BASE, BASE.replace("last_validated: null", "last_validated: 2026-11-02T00:00:00Z"),
                  BASE.replace("last_validated: null", "last_validated: 2026-11-09T00:00:00Z"))
    assert not later.conflicts and "2026-11-09" in later.text


def test_the_cap_holds_on_the_merged_file() -> None:
    ours = edited(BASE, [Append("patterns", learned(f"ours {n}", f"a{n}")) for n in range(15)])
    theirs = edited(BASE, [Append("patterns", learned(f"theirs {n}", f"b{n}")) for n in range(15)])
    cap = max(len(ours.splitlines()), len(theirs.splitlines())) + 5
    result = merge(BASE, ours, theirs, cap=cap)
    assert len(result.text.splitlines()) <= cap
    assert result.pruned and all(p.learned for p in result.pruned)
    assert "Use migrations" in result.text


def test_a_file_added_on_both_sides_merges_against_an_empty_base() -> None:
    ours = edited(domain_template("database"), [Append("patterns", learned("A", "s1"))])
    theirs = edited(domain_template("database"), [Append("patterns", learned("B", "s2"))])
    result = merge("", ours, theirs)
    assert [p["text"] for p in plain(result.text)["patterns"]] == ["A", "B"]


def test_line_merge_marks_conflicts_like_git() -> None:
    merged = merge_lines(["a\n", "b\n", "c\n"], ["a\n", "B1\n", "c\n"], ["a\n", "B2\n", "c\n"], labels=("o", "b", "t"))
    assert merged.conflicts == 1
    assert merged.text == "a\n<<<<<<< o\nB1\n=======\nB2\n>>>>>>> t\nc\n"
    clean = merge_lines(["a\n", "b\n", "c\n", "d\n"], ["A\n", "b\n", "c\n", "d\n"], ["a\n", "b\n", "c\n", "D\n"])
    assert clean.conflicts == 0 and clean.text == "A\nb\nc\nD\n"


ENTRY_TEXTS = [f"lesson {n}" for n in range(8)]


@settings(max_examples=40, deadline=None)
@given(
    base=st.sets(st.sampled_from(ENTRY_TEXTS)),
    ours=st.sets(st.sampled_from(ENTRY_TEXTS)),
    theirs=st.sets(st.sampled_from(ENTRY_TEXTS)),
)
def test_adds_and_deletes_merge_as_sets(base: set[str], ours: set[str], theirs: set[str]) -> None:
    def text(entries: set[str]) -> str:
        return edited(domain_template("database"), [Append("patterns", t) for t in sorted(entries)])

    result = merge(text(base), text(ours), text(theirs))
    expected = (ours & theirs) | (ours - base) | (theirs - base)
    assert not result.conflicts
    assert set(plain(result.text)["patterns"] or []) == expected


@pytest.mark.parametrize("swap", [False, True])
def test_merging_is_symmetric_in_what_it_keeps(swap: bool) -> None:
    ours = edited(BASE, [Replace("patterns", 1, learned("Pool connections", "s1", "s4")), Append("patterns", "X")])
    theirs = edited(BASE, [Remove("patterns", 0), Append("best_practices", "Y")])
    a, b = (theirs, ours) if swap else (ours, theirs)
    data = plain(merge(BASE, a, b).text)
    assert sorted(map(str, data["patterns"])) == sorted(map(str, [learned("Pool connections", "s1", "s4"), "X"]))
    assert data["best_practices"] == ["Y"]
