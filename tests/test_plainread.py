"""The merge driver's reader of files in our writers' layout (``document.plainread``): whatever it reads
is what the full parse reads, and anything it can't be sure of it declines (None), so libyaml reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expertise_kit.document.plainread import read_plain
from expertise_kit.document.splice import Append, apply_edits
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.errors import ExpertiseError, UserError
from expertise_kit.store.scaffold import _config_text, domain_template

PATH = Path(".expertise/database.yaml")
REPO = Path(__file__).resolve().parent.parent


def _full(text: str) -> dict[str, Any] | None:
    try:
        return parse_yaml_text(text, PATH).plain
    except UserError:
        return None


def _agrees(text: str, before: str = "") -> dict[str, Any] | None:
    """What it reads of ``text`` is what the full parse reads, also with the memo of reading ``before``."""
    mine = read_plain(text)
    if mine is not None:
        assert mine == _full(text), text
    seen: dict[str, Any] = {}
    read_plain(before, seen)
    assert read_plain(text, seen) == mine, (before, text)
    return mine


# Scalars where YAML readings part ways: numbers of every kind, dates, YAML 1.1 words, indicators, quoting,
# comments, characters outside the printable set.
_ODD = [
    "yes", "No", "on", "OFF", "y", "~", "null", "Null", "TRUE", "false", "tRue", "1e3", "1E3", "0x1F", "0o17",
    "0b101", "1_000", "+1", "-1", "-0", "007", ".5", "5.", ".inf", "-.Inf", ".nan", "2026-01-01",
    "2026-11-01T10:00:00Z", "12:30", "1:20:30", "5c0375b4-57a5", "1e3x", "12abc", "0xZZ", "<<", "=", "&a x",
    "*a", "!!str x", "!x y", "|", ">", "|-", "- a", "-a", "? a", "%YAML", "@x", "`x`", "'a''b'", "'a'b'",
    "'open", '"a\\"b"', '"a\\tb"', '"plain"', '"x', "a #b", "a#b", "a: b", "a:b", "a:", "[a, b]", "[a,]", "[,]",
    "[ ]", "[a, [b]]", "{a: b}", "{a: [b, c]}", "{a: {b: c}}", "{a: b, a: c}", "{a}", "[a: b]", "[a b, c]",
    "x\ty", "x\u2028y", "x\u00a0y", "x\u200bz", "\ufeffx", "é", "日本", "a  b", "a ", "/usr/bin", "_x", "(x)",
    "[a, 'b, c']", "['x', \"y\"]", "[5c0375b4-57a5, 12]", "",
]  # fmt: skip
_word = st.text(alphabet="abXZ01 _.,:'\"#-/[]{}!&*|>\t\\é", max_size=10)
_scalar = st.one_of(st.sampled_from(_ODD), _word)
_value = st.one_of(
    _scalar,
    st.builds(lambda s: "'" + s.replace("'", "''") + "'", _word),
    st.builds(lambda xs: "[" + ", ".join(xs) + "]", st.lists(_scalar, max_size=3)),
    st.builds(lambda ks, vs: "{" + ", ".join(f"{k}: {v}" for k, v in zip(ks, vs, strict=False)) + "}",
              st.lists(st.sampled_from(["path", "source", "sessions"]), max_size=3), st.lists(_scalar, max_size=3)),
)  # fmt: skip
_key = st.sampled_from(["domain", "overview", "patterns", "text", "source", "sessions", "true", "on", "a-b", "x y"])
_line = st.one_of(
    st.builds(lambda k, v: f"{k}: {v}", _key, _value),
    st.builds(lambda k: f"{k}:", _key),
    st.builds(lambda k, v: f"  - {k}: {v}", _key, _value),
    st.builds(lambda k, v: f"    {k}: {v}", _key, _value),
    st.builds(lambda v: f"  - {v}", _value),
    st.builds(lambda k, v: f"- {k}: {v}", _key, _value),
    st.builds(lambda k, v: f"  {k}: {v}", _key, _value),
    st.sampled_from(["# a comment", "    # inside", "", "---", "...", "  -", "patterns:", "  - text: x", "    ", "\t"]),
)


@settings(max_examples=600, deadline=None)
@given(
    lines=st.lists(_line, min_size=1, max_size=8),
    before=st.lists(_line, max_size=8),
    end=st.sampled_from(["\n", "", "\r\n"]),
)
def test_what_it_reads_the_full_parse_reads(lines: list[str], before: list[str], end: str) -> None:
    _agrees(end.join(lines) + end, before="\n".join(before + lines[: len(lines) // 2]) + "\n")


@settings(max_examples=300, deadline=None)
@given(
    texts=st.lists(st.text(max_size=30), min_size=1, max_size=4),
    sessions=st.lists(st.sampled_from(["5c0375b4-57a5-4f26", "s1", "12", "0e1", "x y"]), max_size=3),
    extra=st.dictionaries(st.sampled_from(["recurrence", "helpful", "note", "solution"]),
                          st.one_of(st.integers(-2, 10**19), st.booleans(), st.none(), st.text(max_size=12))),
)  # fmt: skip
def test_files_our_writer_leaves_are_read_or_declined_never_misread(
    texts: list[str], sessions: list[str], extra: dict[str, Any]
) -> None:
    edits = [Append("patterns", {"text": t, "source": "learned", "sessions": sessions, **extra}) for t in texts]
    edits.append(Append("core_files", {"path": "src/db.py", "source": "learned", "sessions": sessions}))
    try:
        text = apply_edits(parse_yaml_text(domain_template("database"), PATH), list(edits))
    except (UserError, ExpertiseError):
        return  # text the writer refuses (a control character): no file to read
    _agrees(text)


def test_the_usual_files_are_read_without_libyaml() -> None:
    stamp = "'2026-11-01T10:00:00Z'"
    template = domain_template("database")
    for emptied in ("best_practices", "learned_from_failures", "core_files"):
        template = template.replace(f"{emptied}: []\n", "")
    usual = template + (
        "best_practices:\n"
        "  - Use a connection pool\n"
        f"  - text: 'Lesson 3: keep connections warm'\n    source: learned\n"
        f"    sessions: [5c0375b4-57a5-4f26-b12d-d022ee4e51b7, s2]\n    first_seen: {stamp}\n    recurrence: 2\n"
        "learned_from_failures:\n"
        "  - issue: migrate\n    error: deadlock detected  # seen twice\n    solution:\n"
        "core_files:\n"
        f"  - {{path: CLAUDE.md, source: learned, sessions: [5c0375b4-57a5, fe5e1c67], first_seen: {stamp}}}\n"
    )
    for text in (usual, _config_text(None), _config_text("failures"), domain_template("testing")):
        assert _agrees(text) is not None, text
    for path in sorted((REPO / ".expertise").glob("*.yaml")):
        assert _agrees(path.read_text(encoding="utf-8")) is not None, path


@pytest.mark.parametrize(
    "text",
    [
        "",  # empty: the full parse refuses it
        "# only a comment\n",
        "domain: a\ndomain: b\n",  # a repeated key
        "patterns:\n  - text: x\n    text: y\n",
        "patterns:\n  - text: x\n    nested:\n      deeper: 1\n",
        "overview: a long\n  continued line\n",
        "overview: |\n  block\n",
        "patterns:\n  - &a x\n  - *a\n",
        "overview: !!str 1\n",
        "%YAML 1.1\n---\nshared: on\n",
        "overview: x\t\n",
        "line_cap: 1_000\n",
        "when: 2026-01-01\n",
        "true: 1\n",
    ],
)
def test_it_declines_what_it_is_not_sure_of(text: str) -> None:
    assert read_plain(text) is None


_json_plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(value=_json_plain)
def test_the_drivers_json_is_the_json_modules(value: Any) -> None:
    """What the merge driver records (``mergerecord``) is written without importing ``json``."""
    import json

    from expertise_kit.fast import fastjson

    assert fastjson.dumps(value) == json.dumps(value, ensure_ascii=False)
    assert fastjson.loads(fastjson.dumps(value)) == value
    with pytest.raises(TypeError):
        fastjson.dumps({"when": 1.5})
