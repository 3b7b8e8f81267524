"""The shared layer's quick merge gives what the full merge gives, or nothing (and the full merge runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.document.domainfile import parse_domain_text
from expertise_kit.versioning.merge import merge_domain_texts
from expertise_kit.versioning.quickmerge import quick_merge

WORDS = st.sampled_from(["index", "migration", "schema", "query", "lock", "vacuum", "join", "view", "yes", "on"])
TEXT = st.lists(WORDS, min_size=1, max_size=4).map(" ".join)


def text_of(patterns: list[str], failures: list[tuple[str, str, list[str]]], *, flow_empty: bool = True) -> str:
    lines = ["# a comment the merge keeps", "domain: database", "overview: Schema and queries."]
    if patterns:
        lines += ["patterns:", *(f"  - {p}" for p in patterns)]
    else:
        lines.append("patterns: []" if flow_empty else "patterns:")
    if failures:
        lines.append("learned_from_failures:")
        for issue, solution, sessions in failures:
            lines += [f"  - issue: {issue}", f"    solution: {solution}", "    source: learned",
                      f"    sessions: [{', '.join(sessions)}]"]  # fmt: skip
    else:
        lines.append("learned_from_failures: []")
    return "\n".join(lines) + "\n"


TAKEN: list[tuple[bool, bool]] = []  # (quick path taken, the texts hold a word YAML 1.1 reads otherwise)


def plain(text: str) -> dict[str, Any]:
    return parse_domain_text(text, Path("database.yaml"), "database").loaded.plain


SESSIONS = st.lists(st.sampled_from(["s1", "s2", "s3", "s4"]), min_size=1, max_size=2, unique=True)
FAILURE = st.tuples(TEXT, TEXT, SESSIONS)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base_patterns=st.lists(TEXT, max_size=4, unique=True),
    base_failures=st.lists(FAILURE, max_size=2, unique_by=lambda f: f[0]),
    theirs_extra=st.lists(TEXT, max_size=3, unique=True),
    ours_extra=st.lists(TEXT, max_size=3, unique=True),
    ours_failures=st.lists(FAILURE, max_size=2, unique_by=lambda f: f[0]),
    drop=st.integers(min_value=0, max_value=5),
)
def test_the_quick_merge_agrees_with_the_full_merge(
    base_patterns: list[str],
    base_failures: list[Any],
    theirs_extra: list[str],
    ours_extra: list[str],
    ours_failures: list[Any],
    drop: int,
) -> None:
    base = text_of(base_patterns, base_failures)
    shared = text_of(base_patterns + [p for p in theirs_extra if p not in base_patterns], base_failures)
    mine = [p for n, p in enumerate(base_patterns) if n != drop] + [p for p in ours_extra if p not in base_patterns]
    new = text_of(mine, base_failures + [f for f in ours_failures if f[0] not in {b[0] for b in base_failures}])
    try:
        full = merge_domain_texts(base, shared, new, path=Path("database.yaml"), domain="database", line_cap=1000,
                                  prefer="theirs")  # fmt: skip
    except Exception:  # noqa: BLE001 - a generated text the full merge refuses is not one the quick one may take
        full = None
    quick = quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=1000)
    # A word YAML 1.1 reads as a boolean ("yes", "on") makes libyaml disagree with ruamel: declined.
    ambiguous = any(w in f" {t} ".replace("\n", " ") for t in (base, shared, new) for w in (" yes ", " on "))
    TAKEN.append((quick is not None, ambiguous))
    if quick is None:
        return  # the full merge does it: allowed, never wrong
    assert full is not None
    text, data = quick
    assert plain(text) == data == full.plain
    assert text.startswith("# a comment the merge keeps\n")


def test_the_quick_merge_took_most_generated_cases() -> None:
    """It is a quick path only if it is the usual one: the generated files are all in our house style."""
    plain_cases = [taken for taken, ambiguous in TAKEN if not ambiguous]
    if len(plain_cases) < 5:
        pytest.skip("run with the property test above")
    assert all(plain_cases), f"{sum(plain_cases)} of {len(plain_cases)}"


def test_two_worktrees_adding_to_the_same_section_keep_both() -> None:
    base = text_of(["one"], [])
    shared = text_of(["one", "from the other worktree"], [])
    new = text_of(["one", "from this worktree"], [])
    quick = quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=1000)
    assert quick is not None
    assert quick[1]["patterns"] == ["one", "from the other worktree", "from this worktree"]
    assert quick[0] == text_of(["one", "from the other worktree", "from this worktree"], [])  # in house style


def test_a_sighting_in_both_counts_each_session_once() -> None:
    base = text_of([], [])
    shared = text_of([], [("pytest fails", "pin the version", ["s1"])])
    new = text_of([], [("pytest fails", "pin the version", ["s1", "s2"])])
    quick = quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=1000)
    assert quick is not None
    (entry,) = quick[1]["learned_from_failures"]
    assert sorted(entry["sessions"]) == ["s1", "s2"]


@pytest.mark.parametrize(
    ("shared", "declined"),
    [
        ("domain: database\npatterns: [a, b]\n", True),  # a flow list with items
        ("domain: database\r\npatterns:\r\n  - a\r\n", True),  # CRLF
        ("domain: database\n? complex\n: key\npatterns:\n  - a\n", True),  # not a simple key
        ("domain: database\npatterns:\n- a\n  - b\n", False),  # one item over two lines ("a - b")
        ("domain: database\npatterns:\n  # a comment\n  - a  # and another\n\n", False),  # comments, blanks
        ("domain: database\npatterns:\n  - |\n    a\n    - b\n", False),  # a literal block
    ],
)
def test_odd_layouts_are_merged_right_or_left_to_the_full_merge(shared: str, declined: bool) -> None:
    base = "domain: database\npatterns:\n  - a\n"
    new = "domain: database\npatterns:\n  - a\n  - c\n"
    try:
        shared_plain = plain(shared)
    except Exception:  # noqa: BLE001 - not even a valid file: nothing to say about it
        return
    quick = quick_merge(plain(base), shared, shared_plain, plain(new), line_cap=1000)
    if declined:
        assert quick is None
        return
    full = merge_domain_texts(base, shared, new, path=Path("d.yaml"), domain="database", line_cap=1000, prefer="theirs")
    assert quick is None or (plain(quick[0]) == quick[1] == full.plain)


def test_the_line_cap_sends_it_to_the_full_merge_which_prunes() -> None:
    base = text_of([f"entry {n}" for n in range(40)], [])
    shared = text_of([f"entry {n}" for n in range(40)] + ["theirs"], [])
    new = text_of([f"entry {n}" for n in range(40)] + ["ours"], [])
    assert quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=1000) is not None
    assert quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=44) is None


def test_an_entry_another_worktree_filed_in_another_section_is_not_doubled() -> None:
    base = "domain: database\npatterns:\n  - x\nbest_practices: []\n"
    shared = "domain: database\npatterns:\n  - x\n  - Use indexes\nbest_practices: []\n"
    new = "domain: database\npatterns:\n  - x\nbest_practices:\n  - Use indexes\n"
    quick = quick_merge(plain(base), shared, plain(shared), plain(new), line_cap=1000)
    full = merge_domain_texts(base, shared, new, path=Path("d.yaml"), domain="database", line_cap=1000, prefer="theirs")
    assert quick is None or quick[1] == full.plain
    assert full.plain is not None and str(full.plain).count("Use indexes") == 1
