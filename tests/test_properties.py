"""Property tests: entries round-trip through YAML exactly, and splicing never disturbs other lines."""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.document.entries import item_id, parse_item
from expertise_kit.document.ids import error_signature, normalise_text
from expertise_kit.document.splice import Append, Remove, apply_edits
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.fast.render import strip_controls
from expertise_kit.project import project_for_init
from expertise_kit.store import Store, manual_item
from expertise_kit.store.scaffold import domain_template, initialise

# Raise it locally for a deeper search: EXPERTISE_PROPERTY_EXAMPLES=3000 pytest tests/test_properties.py
EXAMPLES = int(os.environ.get("EXPERTISE_PROPERTY_EXAMPLES", "150"))

# Printable text, including YAML's own syntax characters, quotes, unicode and inner newlines.
entry_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="\x85\u2028\u2029\ufeff")
    | st.sampled_from(list(":#-[]{}&*!|>'\"%@`, \n\t")),
    min_size=1,
    max_size=80,
).filter(lambda s: strip_controls(s).strip() != "")  # not only invisible characters (U+00AD), which writes strip

learned_entry = st.fixed_dictionaries(
    {
        "text": entry_text,
        "source": st.just("learned"),
        "sessions": st.lists(
            st.one_of(st.integers(0, 10**6), st.from_regex(r"[a-z0-9-]{1,12}", fullmatch=True)), max_size=3
        ),
        "recurrence": st.integers(1, 50),
    }
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    """One project for the module (module-scoped: hypothesis runs each example in the same test call)."""
    project = project_for_init(tmp_path_factory.mktemp("prop"))
    initialise(project)
    return Store(project)


def _fresh(store: Store) -> Store:
    """``store`` with database.yaml started afresh, for one example."""
    (store.project.expertise_dir / "database.yaml").write_text(domain_template("database"))
    return store


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(entry_text, min_size=1, max_size=4))
def test_added_text_reads_back_exactly(store: Store, texts: list[str]) -> None:
    store = _fresh(store)
    raws = [manual_item("patterns", text) for text in texts if "\t" not in text.strip()[:1]]
    result = store.add_items("database", [("patterns", raw) for raw in raws])
    read_back = store.load("database").model.items("patterns")
    assert [item if isinstance(item, str) else item.text for item in read_back] == [
        raw for raw in dict.fromkeys(raws) if item_id("patterns", raw) in set(result.added)
    ]
    assert len(result.added) + len(result.duplicates) == len(raws)


@settings(max_examples=EXAMPLES // 2, deadline=None)
@given(entries=st.lists(learned_entry, min_size=1, max_size=4))
def test_learned_entries_round_trip_with_provenance(store: Store, entries: list[dict[str, Any]]) -> None:
    store = _fresh(store)
    result = store.add_items("database", [("effective_patterns", entry) for entry in entries])
    first_by_id: dict[str, Any] = {}
    for entry in entries:
        parsed = parse_item("effective_patterns", entry)
        first_by_id.setdefault(item_id("effective_patterns", parsed), parsed)
    assert result.added == list(first_by_id)
    stored = store.load("database").model.items("effective_patterns")
    assert stored == list(first_by_id.values())


INDENTS = st.sampled_from([("", 2), ("  ", 2), ("    ", 4), ("  ", 4), ("", 3)])


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A hand-styled file: sections in random indentation, with comments between items."""
    lines = ["# a header comment\n", "domain: database\n"]
    sections = []
    for section in ("patterns", "best_practices", "effective_patterns"):
        dash, offset = draw(INDENTS)
        items = draw(
            st.lists(st.from_regex(r"[A-Za-z][A-Za-z0-9 ]{0,20}[A-Za-z0-9]", fullmatch=True), max_size=4, unique=True)
        )
        if not items and draw(st.booleans()):
            lines.append(f"{section}: []\n")
        else:
            lines.append(f"{section}:\n")
            for item in items:
                if draw(st.booleans()):
                    lines.append(f"{dash}# about {item}\n")
                quoted = draw(st.sampled_from(["{}", "'{}'", '"{}"']))
                lines.append(f"{dash}-{' ' * (offset - 1)}{quoted.format(item)}\n")
        sections.append(section)
        if draw(st.booleans()):
            lines.append("\n")
    lines.append("last_validated: null  # never\n")
    return "".join(lines), sections


@settings(max_examples=EXAMPLES, deadline=None)
@given(doc=documents(), data=st.data())
def test_splice_touches_only_the_edited_items(doc: tuple[str, list[str]], data: st.DataObject) -> None:
    text, sections = doc
    loaded = parse_yaml_text(text, Path("database.yaml"))
    edits: list[Any] = []
    for section in sections:
        present = loaded.plain.get(section) or []
        if present and data.draw(st.booleans()):
            edits.append(Remove(section, data.draw(st.integers(0, len(present) - 1))))
        if data.draw(st.booleans()):
            edits.append(Append(section, data.draw(entry_text)))
    new_text = apply_edits(loaded, edits)
    # Every line that survives is byte-identical and in the same order.
    matcher = difflib.SequenceMatcher(a=text.splitlines(True), b=new_text.splitlines(True), autojunk=False)
    for tag, a0, a1, _b0, _b1 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            removed = text.splitlines(True)[a0:a1]
            # Only item lines and the `key: []` lines of sections that gained an item may go.
            assert all(line.lstrip().startswith("-") or line.rstrip().endswith("[]") for line in removed), removed


@given(st.text(max_size=60))
def test_normalise_text_is_idempotent(text: str) -> None:
    assert normalise_text(normalise_text(text)) == normalise_text(text)


@given(
    st.sampled_from(["KeyError", "FileNotFoundError", "TimeoutError"]),
    st.integers(0, 10**9),
    st.integers(0, 10**9),
    st.from_regex(r"/[a-z]{1,8}(/[a-z0-9_]{1,8}){0,4}\.py", fullmatch=True),
    st.from_regex(r"/[a-z]{1,8}(/[a-z0-9_]{1,8}){0,4}\.py", fullmatch=True),
)
def test_error_signature_ignores_particulars(kind: str, n1: int, n2: int, p1: str, p2: str) -> None:
    first = f"{kind}: {p1} line {n1} at 0x{n1:x}"
    second = f"{kind}: {p2} line {n2} at 0x{n2:x}"
    assert error_signature(first) == error_signature(second)
