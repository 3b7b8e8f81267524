"""A hand-written file keeps every byte that an edit did not touch."""

from __future__ import annotations

import difflib
from pathlib import Path

from conftest import Cli

HAND_WRITTEN = """\
# yaml-language-server: $schema=expertise.schema.json
# Hand-kept by the data team. Do not reorder: newest last.
domain:   database      # odd spacing after the colon
overview: >-
  PostgreSQL 15, accessed through SQLAlchemy.
  Migrations with Alembic.
owner: "data-team"       # an unknown key: ours to keep
core_files:
-   'src/db/schema.sql'
-   src/db/session.py
patterns:
      - "Always use UUID primary keys"   # decided in 2024
      - 'JSONB for flexible metadata'
      # the next one came from an incident
      - text: ON DELETE CASCADE for child tables
        source: learned
        sessions: [12, 15]
        first_seen: 2026-10-01T09:00:00Z
        recurrence: 2
        reviewer: bob          # unknown key inside an entry
best_practices: []   # none yet
learned_from_failures:
  - issue: Windows encoding error
    error: |
      UnicodeDecodeError: 'charmap' codec can't decode
      # this line is part of the error text
    solution: Always pass encoding='utf-8' to open()
    sessions: [12, 15, 23]
effective_patterns:
    -    Read file, then Edit, then run the tests
successful_techniques:
last_validated: ~
# trailing comment at the end of the file
"""


def _write(project: Path, text: str) -> Path:
    path = project / ".expertise" / "database.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _only_insertions(before: str, after: str) -> list[str]:
    """The lines added, asserting that nothing else changed."""
    matcher = difflib.SequenceMatcher(a=before.splitlines(True), b=after.splitlines(True), autojunk=False)
    added: list[str] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        assert tag in ("equal", "insert"), (tag, before.splitlines(True)[a0:a1], after.splitlines(True)[b0:b1])
        if tag == "insert":
            added.extend(after.splitlines(True)[b0:b1])
    return added


def test_adding_an_entry_changes_only_its_own_lines(project: Path, run: Cli) -> None:
    path = _write(project, HAND_WRITTEN)
    result = run("add", "database", "patterns", "Index every foreign key")
    assert result.exit_code == 0, result.output
    added = _only_insertions(HAND_WRITTEN, path.read_text())
    assert added == ["      - Index every foreign key\n"]


def test_each_section_style_gets_lines_in_its_own_indentation(project: Path, run: Cli) -> None:
    path = _write(project, HAND_WRITTEN)
    assert run("add", "database", "core_files", "./src/db/models.py").exit_code == 0
    assert run("add", "database", "effective_patterns", "Grep, then Read the match").exit_code == 0
    added = _only_insertions(HAND_WRITTEN, path.read_text())
    assert added == ["-   src/db/models.py\n", "    -    Grep, then Read the match\n"]


def test_failure_with_block_scalar_neighbour_lands_after_it(project: Path, run: Cli) -> None:
    path = _write(project, HAND_WRITTEN)
    result = run(
        "add", "database", "failures", "Lock timeout", "--error", "deadlock detected: 42", "--solution", "retry"
    )
    assert result.exit_code == 0, result.output
    after = path.read_text()
    added = _only_insertions(HAND_WRITTEN, after)
    assert added == [
        "  - issue: Lock timeout\n",
        "    error: 'deadlock detected: 42'\n",
        "    solution: retry\n",
    ]
    show = run("show", "database", "--json")
    errors = [
        e["error"] for e in __import__("json").loads(show.stdout)["entries"] if e["section"] == "learned_from_failures"
    ]
    assert errors[0].endswith("# this line is part of the error text\n")


def test_empty_and_null_sections_keep_their_comments(project: Path, run: Cli) -> None:
    path = _write(project, HAND_WRITTEN)
    assert run("add", "database", "best_practices", "Run migrations in a transaction").exit_code == 0
    assert run("add", "database", "successful_techniques", "Reproduce with a failing test first").exit_code == 0
    after = path.read_text()
    # The flow `[]` line is the one line that changes besides the new entries.
    assert "best_practices:  # none yet\n-   Run migrations in a transaction\n" in after
    assert "successful_techniques:\n-   Reproduce with a failing test first\nlast_validated: ~\n" in after
    assert after.endswith("# trailing comment at the end of the file\n")
    before_lines = [line for line in HAND_WRITTEN.splitlines() if not line.startswith("best_practices")]
    after_lines = after.splitlines()
    assert all(line in after_lines for line in before_lines)


def test_a_missing_section_is_appended_at_the_end(project: Path, run: Cli) -> None:
    text = "domain: database\npatterns:\n  - one\n"
    path = _write(project, text)
    assert run("add", "database", "core_files", "src/x.py").exit_code == 0
    assert path.read_text() == text + "core_files:\n  - src/x.py\n"


def test_a_file_without_final_newline_keeps_it_missing(project: Path, run: Cli) -> None:
    text = "domain: database\npatterns:\n  - one\nlast_validated: null"
    path = _write(project, text)
    assert run("add", "database", "patterns", "two").exit_code == 0
    assert path.read_text() == "domain: database\npatterns:\n  - one\n  - two\nlast_validated: null"


def test_flow_style_list_falls_back_to_a_faithful_rewrite(project: Path, run: Cli) -> None:
    text = "domain: database  # keep me\npatterns: [one, two]\n"
    path = _write(project, text)
    assert run("add", "database", "patterns", "three").exit_code == 0
    after = path.read_text()
    assert "# keep me" in after
    doc = __import__("json").loads(run("show", "database", "--json").stdout)
    assert [e["text"] for e in doc["entries"]] == ["one", "two", "three"]


def test_unknown_keys_and_entry_fields_survive_and_show_in_json(project: Path, run: Cli) -> None:
    _write(project, HAND_WRITTEN)
    doc = __import__("json").loads(run("show", "database", "--json").stdout)
    assert doc["extra"] == {"owner": "data-team"}
    learned = [e for e in doc["entries"] if e.get("source") == "learned"]
    assert learned[0]["reviewer"] == "bob"
    assert learned[0]["recurrence"] == 2
