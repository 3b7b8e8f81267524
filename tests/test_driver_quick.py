"""The merge driver's quick path (libyaml, by lines) gives byte for byte what the full merge gives, or
declines so that the full merge runs; and libyaml's reading is taken only where ruamel reads the same."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from expertise_kit.document.splice import Append, Edit, Remove, Replace, SetKey, apply_edits
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.errors import UserError
from expertise_kit.store.scaffold import domain_template
from expertise_kit.versioning.merge import line_merge_text, merge_domain_texts
from expertise_kit.versioning.mergedriver import _git_line_merge
from expertise_kit.versioning.quickmerge import merge_for_driver, strict_plain

PATH = Path(".expertise/database.yaml")
SECTIONS = ("patterns", "best_practices", "effective_patterns", "successful_techniques")


def ruamel_plain(text: str) -> dict[str, Any] | None:
    try:
        return parse_yaml_text(text, PATH).plain
    except UserError:
        return None


# -- strict_plain: libyaml's reading, only where ruamel's agrees ---------------------------------------

SCALARS = st.one_of(
    st.sampled_from(
        [
            *("yes", "no", "on", "off", "y", "n", "true", "False", "TRUE", "null", "~", "Null", "1e3", "0o17"),
            *("012", "0x1f", "1:20", "1_000", ".inf", "-.inf", ".NaN", "+1", "-0", "0", "42", "3.14", "0."),
            *("2026-01-31", "2026-01-31T10:00:00Z", "<<", "=", "it's", "#x", "é€", "+.5", "a b", "index: x", "- x"),
            *("cd x && make", "&a value", "*a", "!important", "!!str 5", "a & b", "rm *.pyc", "x!"),
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.text(alphabet="abc xyz-_.:#&*!'\"", min_size=1, max_size=10),
)


def _scalar_forms(value: str) -> list[str]:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return [value, f"'{value}'".replace("\n", " "), f'"{escaped}"']


@st.composite
def yaml_docs(draw: st.DrawFn) -> str:
    lines = []
    for index in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from([f"k{index}"] * 8 + ["1e3", "yes", "<<", f"'k{index}'", "k0"]))
        shape = draw(st.sampled_from(["scalar", "list", "flow", "map", "block", "alias"]))
        value = draw(SCALARS)
        form = draw(st.sampled_from(_scalar_forms(value)))
        if shape == "scalar":
            lines.append(f"{key}: {form}")
        elif shape == "list":
            lines += [f"{key}:", f"  - {form}", "  - other"]
        elif shape == "flow":
            lines.append(f"{key}: [{form}, other]")
        elif shape == "map":
            lines += [f"{key}:", f"  inner: {form}"]
        elif shape == "alias":
            lines += [f"{key}: &anchor {form}", f"again{index}: *anchor"]
        else:
            lines += [f"{key}: |", f"  {value}"]
    return "\n".join(lines) + "\n"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(yaml_docs())
@example("k0: -_\n")  # ruamel's int pattern takes it, and its int reader failed with an IndexError: now text
def test_libyaml_is_read_only_where_ruamel_reads_the_same(text: str) -> None:
    quick = strict_plain(text)
    if quick is not None:
        assert quick == ruamel_plain(text), text


@pytest.mark.parametrize(
    "text",
    [
        "a: &x one\nb: *x\n",  # an alias
        "a: &x one\n",  # an anchor alone
        "a: !!str 12\n",  # a tag
        "a: 1\na: 2\n",  # a duplicate key
        "<<: {a: 1}\n",  # a merge key
        "a: 0755\n",  # YAML 1.1 octal
        "a: 1e3\n",  # YAML 1.2 float libyaml reads as text
        "a: 1:20\n",  # YAML 1.1 sexagesimal
        "a: 2026-01-31\n",  # a date
        "a: 3.5\n",  # a float
        "a: x\r\nb: y\r\n",  # CRLF
        "a: 'tab\there'\n",  # a tab
        "- a\n- b\n",  # not a mapping
        "a: [unclosed\n",  # invalid YAML
        "1: one\n",  # a key that is not a string
    ],
)
def test_what_the_quick_reading_declines(text: str) -> None:
    assert strict_plain(text) is None


def test_yaml_1_1_booleans_are_read_as_the_full_parse_reads_them() -> None:
    text = "a: yes\nb: off\nshared: on\nreflect: off\nc: No\nd: true\n"  # config.yaml's own `shared: on`
    assert strict_plain(text) == ruamel_plain(text) == {
        "a": "yes", "b": "off", "shared": "on", "reflect": "off", "c": "No", "d": True,
    }  # fmt: skip


def test_the_quick_reading_of_a_real_domain_file_is_ruamels() -> None:
    text = domain_template("database")
    text = apply_edits(parse_yaml_text(text, PATH), [Append("patterns", learned("Pool: 3 conns", ["s1"]))])
    assert strict_plain(text) == ruamel_plain(text)


# -- merge_for_driver against merge_domain_texts --------------------------------------------------------


def learned(text: str, sessions: list[str], day: int = 1, **extra: Any) -> dict[str, Any]:
    stamp = f"2026-11-{day:02d}T10:00:00Z"
    return {"text": text, "source": "learned", "sessions": sessions, "first_seen": stamp, "last_seen": stamp,
            **({"recurrence": len(sessions)} if len(sessions) > 1 else {}), **extra}  # fmt: skip


def _base(rng: random.Random, entries: int) -> str:
    edits: list[Edit] = []
    for n in range(entries):
        name = SECTIONS[n % 4]
        if rng.random() < 0.15:
            edits.append(Append(name, f"Hand-written rule {n}"))
        else:
            topic = rng.choice(["locks", "joins", "pools"])
            edits.append(Append(name, learned(f"Lesson {n} about {topic}", [f"s{n}"])))
    if rng.random() < 0.5:
        edits.append(Append("learned_from_failures", {"issue": "psql: connection refused", "solution": "start it",
                                                      "source": "learned", "sessions": ["f1"]}))  # fmt: skip
    return apply_edits(parse_yaml_text(domain_template("database"), PATH), edits)


def _side(rng: random.Random, base: str, tag: str, shared_new: list[dict[str, Any]]) -> str:
    loaded = parse_yaml_text(base, PATH)
    edits: list[Edit] = []
    touched: set[tuple[str, int]] = set()
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(SECTIONS)
        new = learned(f"{tag} lesson {rng.randint(0, 999)} on vacuum", [f"{tag}{rng.random()}"], 9)
        edits.append(Append(name, new))
    for item in shared_new:  # learned on both sides, from one session or from two
        edits.append(Append("patterns", item))
    for name in SECTIONS:
        for index, raw in enumerate(loaded.plain.get(name) or []):
            roll = rng.random()
            if (name, index) in touched or not isinstance(raw, dict):
                if roll < 0.05:
                    edits.append(Remove(name, index))
                continue
            if roll < 0.12:
                sessions = [*raw["sessions"], f"{tag}x{index}"]
                edits.append(Replace(name, index, {**raw, "sessions": sessions, "recurrence": len(sessions),
                                                   "last_seen": "2026-11-09T00:00:00Z"}))  # fmt: skip
            elif roll < 0.15:
                edits.append(Remove(name, index))
            elif roll < 0.17:
                edits.append(Replace(name, index, {**raw, "text": raw["text"] + f" ({tag} edit)"}))
            elif roll < 0.19:
                edits.append(Replace(name, index, {**raw, "helpful": rng.randint(1, 3)}))
            touched.add((name, index))
    if rng.random() < 0.04:
        edits.append(SetKey("overview", f"Edited by {tag}."))
    return apply_edits(loaded, edits) if edits else base


def _full(base: str, ours: str, theirs: str, cap: int) -> Any:
    try:
        return merge_domain_texts(base, ours, theirs, path=PATH, domain="database", line_cap=cap)
    except UserError:
        return None


def test_the_driver_quick_merge_gives_the_full_merges_bytes_or_declines() -> None:
    rng = random.Random(20261124)
    taken = clean = pruned_cases = 0
    for case in range(120):
        base = _base(rng, rng.randint(0, 24))
        both = [learned("Shared lesson on indexes", ["common"], 5)] if rng.random() < 0.3 else []
        ours = _side(rng, base, "ours", both)
        theirs = _side(rng, base, "theirs", both)
        if rng.random() < 0.1:
            base = ""  # the file was added on both branches
        cap = rng.choice([1000, 1000, 160, 120, 90])
        full = _full(base, ours, theirs, cap)
        quick = merge_for_driver((base, ours, theirs), domain="database", line_cap=cap)
        clean += full is not None and not full.conflicts
        if quick is None:
            continue
        taken += 1
        assert full is not None and not full.conflicts, case
        assert quick.text == full.text, case
        assert [p.id for p in quick.pruned] == [p.id for p in full.pruned], case
        assert (quick.lines, quick.over_by, quick.kept_line_merge) == (full.lines, full.over_by, full.kept_line_merge)
        assert quick.plain == full.plain
        pruned_cases += bool(quick.pruned)
    # Never wrong is not enough: a path that always declined would pass the loop above.
    assert taken >= 0.8 * clean, (taken, clean)
    assert pruned_cases >= 5, pruned_cases


def test_a_true_conflict_is_left_to_the_full_merge_which_marks_it() -> None:
    template = parse_yaml_text(domain_template("database"), PATH)
    base = apply_edits(template, [Append("learned_from_failures", {"error": "deadlock", "solution": "retry"})])
    ours = base.replace("solution: retry", "solution: id order")
    theirs = base.replace("solution: retry", "solution: SKIP LOCKED")
    assert merge_for_driver((base, ours, theirs), domain="database", line_cap=1000) is None
    assert _full(base, ours, theirs, 1000).conflicts


def test_a_side_that_is_not_a_valid_file_is_left_to_the_full_merge() -> None:
    base = domain_template("database")
    assert merge_for_driver((base, base.replace("domain: database", "domain: api"), base), domain="database",
                            line_cap=1000) is None  # fmt: skip
    assert merge_for_driver((base, base + "patterns: 3\n", base), domain="database", line_cap=1000) is None


# -- the driver's line merge by git ---------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_line_merge_is_clean_where_the_python_one_is_and_none_on_a_conflict(tmp_path: Path) -> None:
    base, ours, theirs = "a\nb\nc\nd\ne\n", "a\nB\nc\nd\ne\n", "a\nb\nc\nd\nE\n"
    paths = [tmp_path / name for name in ("O", "A", "B")]
    for path, text in zip(paths, (base, ours, theirs), strict=True):
        path.write_text(text)
    where = (paths[0], paths[1], paths[2])
    merge = _git_line_merge(where, [base, ours, theirs])  # started at once: theirs changed, not as ours did
    assert merge(base, ours, theirs) == line_merge_text(base, ours, theirs) == "a\nB\nc\nd\nE\n"
    paths[2].write_text("a\nX\nc\nd\ne\n")
    assert merge(base, ours, theirs) == "a\nB\nc\nd\nE\n"  # asked again (the full merge): git ran once
    assert _git_line_merge(where, [base, ours, "a\nX\nc\nd\ne\n"])(base, ours, "a\nX\nc\nd\ne\n") is None
    paths[2].write_text(base)
    assert _git_line_merge(where, [base, ours, base])(base, ours, base) == ours  # not wanted: started when asked
    assert paths[1].read_text() == ours  # git merge-file -p writes nothing


def test_the_driver_at_the_cap_writes_the_full_merges_bytes(tmp_path: Path) -> None:
    from expertise_kit.gitmerge import run_merge_driver
    from expertise_kit.project import project_for_init
    from expertise_kit.store.scaffold import initialise

    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    initialise(project_for_init(tmp_path))
    rng = random.Random(7)
    base = _base(rng, 228)
    ours, theirs = _side(rng, base, "ours", []), _side(rng, base, "theirs", [])
    full = _full(base, ours, theirs, 1000)
    assert full is not None and not full.conflicts and full.pruned  # a merge that must prune
    paths = [tmp_path / name for name in ("O", "A", "B")]
    for path, text in zip(paths, (base, ours, theirs), strict=True):
        path.write_text(text)
    outcome = run_merge_driver(*paths, str(PATH), start=tmp_path)
    assert outcome.clean
    assert paths[1].read_text() == full.text


def _hand_laid(items: list[tuple[str, str, str]], indent: int, blank: bool, comment: bool, last_newline: bool,
               section_comment: bool) -> str:  # fmt: skip
    lines = ["domain: database", "overview: x", "patterns:"]
    for text, sessions, extra in items:
        entry = [f"- text: {text}", "  source: learned", f"  sessions: [{sessions}]",
                 "  first_seen: '2026-11-01T10:00:00Z'", "  last_seen: '2026-11-01T10:00:00Z'"]  # fmt: skip
        lines += [" " * indent + line for line in entry + ([extra] if extra else [])]
        lines += [" " * (indent + 2) + f"# a note on {text}"] if comment else []
        lines += [""] if blank else []
        lines += ["# a comment at the left edge"] if section_comment else []
    text = "\n".join([*lines, "best_practices: []"])
    return text + "\n" if last_newline else text


@pytest.mark.parametrize("indent", [0, 2, 4])
@pytest.mark.parametrize("last_newline", [True, False])
def test_hand_laid_out_files_give_the_full_merges_bytes_or_decline(indent: int, last_newline: bool) -> None:
    """Comments inside and between items, blank lines, other indents, no newline at the end, with and
    without pruning: the cut by lines must come out as the splice's text."""
    base_items = [(f"L{n}", f"s{n}", "") for n in range(6)]
    ours_items = [*base_items[:2], ("L2", "s2, o1", ""), *base_items[3:], ("New ours", "o2", "")]
    kept = [i for i in base_items[1:] if i[0] != "L4"]
    theirs_items = [("L0", "s0", "  helpful: 2"), *kept, ("New theirs", "t1", "")]
    taken = 0
    for blank in (False, True):
        for comment in (False, True):
            for section_comment in (False, True):
                for cap in (1000, 45, 30):
                    base, ours, theirs = (_hand_laid(items, indent, blank, comment, last_newline, section_comment)
                                          for items in (base_items, ours_items, theirs_items))  # fmt: skip
                    quick = merge_for_driver((base, ours, theirs), domain="database", line_cap=cap)
                    if quick is None:
                        continue
                    taken += 1
                    full = _full(base, ours, theirs, cap)
                    assert full is not None and not full.conflicts
                    assert quick.text == full.text, (blank, comment, section_comment, cap)
                    assert [p.id for p in quick.pruned] == [p.id for p in full.pruned]
    if last_newline:  # without it, a merge that must cut lines declines: the splice keeps the file unended
        assert taken >= 6, taken


def test_two_equal_new_entries_pruned_at_the_cap_lose_one_as_the_full_merge_does() -> None:
    """The reader gives equal entries one object; pruning goes by the edit, never by the entry's identity."""
    from expertise_kit.document.prune import count_lines

    def learned(text: str, session: str, day: int) -> dict[str, Any]:
        stamp = f"2026-11-{day:02d}T10:00:00Z"
        return {"text": text, "source": "learned", "sessions": [session], "first_seen": stamp, "last_seen": stamp}

    def add(text: str, *items: dict[str, Any]) -> str:
        return apply_edits(parse_yaml_text(text, PATH), [Append("patterns", item) for item in items])

    base = add(domain_template("database"), *(learned(f"Lesson {n} about pools", f"s{n}", 20) for n in range(6)))
    ours = add(base, learned("Ours new lesson", "o1", 25))
    twice = learned("Old lesson learned twice", "d1", 1)
    theirs = add(base, twice, twice)
    for cap in range(count_lines(base), count_lines(base) + 12):
        full = merge_domain_texts(base, ours, theirs, path=PATH, domain="database", line_cap=cap)
        quick = merge_for_driver((base, ours, theirs), domain="database", line_cap=cap)
        assert quick is not None and quick.text == full.text, cap
        assert [p.text for p in quick.pruned] == [p.text for p in full.pruned], cap
