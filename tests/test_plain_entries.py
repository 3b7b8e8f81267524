"""Entries and settings read without pydantic agree with the schema's reading, and learning imports no
pydantic at all (it cost a quarter of a learn); where the plain reading is unsure the schema still reads,
coerces or refuses, with the same one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from builders import shop_session
from conftest import Cli, git
from hypothesis import given, settings
from hypothesis import strategies as st

from expertise_kit.config import load_config
from expertise_kit.configschema import ConfigModel
from expertise_kit.plainconfig import plain_settings

_PROBE = """
import json, runpy, sys
sys.argv = ["expertise", *sys.argv[1:]]
code = 0
try:
    runpy.run_module("expertise_kit", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules(project: Path, *args: str) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE, *args], cwd=project, capture_output=True, text=True,
                          check=False)  # fmt: skip
    report = json.loads(done.stdout.splitlines()[-1])
    return report["code"], report["modules"]


def test_learning_imports_no_pydantic(project: Path, tmp_path: Path) -> None:
    transcript = shop_session().write(tmp_path / "s.jsonl")
    code, modules = _modules(project, "learn", str(transcript))
    assert code == 0
    assert [m for m in modules if m.split(".")[0] == "pydantic"] == []
    assert "learned" in git(project, "log", "-1", "--format=%(trailers)")  # it did learn, and commit
    code, _ = _modules(project, "learn", str(transcript))  # again: every entry is now read back from the file
    assert code == 0


def test_a_file_the_plain_reading_is_unsure_of_is_read_by_the_schema(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    text = path.read_text()
    odd = text.replace(
        "patterns: []",
        "patterns:\n  - {text: Keep connections warm, source: learned, recurrence: '3', first_seen: 2026-11-02}",
    )
    assert odd != text
    path.write_text(odd)
    shown = json.loads(run("show", "database", "--json").output)
    entry = next(e for e in shown["entries"] if e["section"] == "patterns")
    assert entry["recurrence"] == 3 and entry["first_seen"] == "2026-11-02T00:00:00Z"  # coerced, as before
    path.write_text(odd.replace("recurrence: '3'", "recurrence: lots"))
    refused = run("show", "database")
    assert refused.exit_code == 1 and len(refused.stderr.splitlines()) == 1, refused.stderr
    assert "database.yaml:" in refused.stderr and "recurrence" in refused.stderr


_odd = st.sampled_from([None, "", "900", "yes", 1.0, [], {}])  # what a schema may coerce or refuse
_count = st.one_of(st.integers(-2, 1200), st.sampled_from([36_500, 36_501, 100_000, 100_001, True]), _odd)
_mode = st.one_of(st.booleans(), st.sampled_from(["on", "read", "off", "failures", "always"]), _odd)
_words = st.one_of(st.lists(st.sampled_from(["invoice", "api/", "*.sql"]), max_size=2), st.just(["x", 1]), _odd)
_rules = st.fixed_dictionaries(
    {}, optional={"keywords": _words, "paths": _words, "extend": st.one_of(st.booleans(), _odd),
                  "description": st.one_of(st.just("Billing"), _odd), "other": st.just(1)},
)  # fmt: skip
_settings = st.fixed_dictionaries(
    {},
    optional={
        **{key: _count for key in ("line_cap", "failure_retention_days", "core_files_max", "shared_retire_days")},
        "shared_layer": st.one_of(st.booleans(), _odd), "shared": _mode, "reflect": _mode, "surprise": st.just(1),
        "domains": st.one_of(st.dictionaries(st.sampled_from(["payments", "testing", "Bad Name"]), st.one_of(
            _rules, _odd), max_size=2), _odd),
    },
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(data=_settings)
def test_plain_settings_are_the_schemas_or_decline(data: dict[str, Any]) -> None:
    plain = plain_settings(data)
    if plain is None:
        return
    if "domains" in data and data["domains"] is None:
        data["domains"] = {}  # `domains:` with nothing under it: config.py reads it as none before either reading
    schema = ConfigModel.model_validate(data).model_dump()  # raises if the plain reading took what it refuses
    for key in ("shared", "reflect"):  # the schema maps true/false to a mode with a validator; so does plain
        assert plain[key] == schema[key]
    schema_rules = {name: {k: v for k, v in rules.items()} for name, rules in schema.pop("domains").items()}
    plain_rules = plain.pop("domains")
    assert plain == schema
    for name, rules in plain_rules.items():  # given keys are the same; the schema also fills in the others
        assert {k: schema_rules[name][k] for k in rules} == rules


def test_a_config_the_plain_reading_declines_still_loads_or_refuses(project: Path) -> None:
    config = project / ".expertise" / "config.yaml"
    text = config.read_text()
    config.write_text(text.replace("line_cap: 1000", "line_cap: '900'"))
    assert load_config(project / ".expertise").line_cap == 900  # pydantic's lax int, as before
    config.write_text(text.replace("reflect: off", "reflect: true"))
    assert load_config(project / ".expertise").reflect == "failures"


def test_hand_written_keys_that_are_odd_for_python_are_kept(project: Path, run: Cli) -> None:
    """A key named like a parameter, and numbers JSON can't hold, as the schema's reading gives them."""
    path = project / ".expertise" / "database.yaml"
    odd = "patterns:\n  - {text: Keep it warm, self: x, score: .inf}"
    path.write_text(path.read_text().replace("patterns: []", odd))
    shown = run("show", "database", "--json")
    assert shown.exit_code == 0, shown.output
    entry = next(e for e in json.loads(shown.output)["entries"] if e["section"] == "patterns")
    assert entry["self"] == "x" and entry["score"] is None  # pydantic's JSON dump gives null for inf
    assert run("validate").exit_code == 0


def test_a_yaml_1_1_file_is_never_checked_by_a_yaml_1_2_reading(project: Path, run: Cli) -> None:
    """`%YAML 1.1` makes `yes` a boolean for the full parse and text for libyaml: a write checked by the
    quick reading would store an entry the next read refuses."""
    path = project / ".expertise" / "database.yaml"
    path.write_text("%YAML 1.1\n---\n" + path.read_text())
    git(project, "commit", "-qam", "yaml 1.1")
    run("add", "database", "patterns", "yes")
    shown = run("show", "database", "--json")
    assert shown.exit_code == 0, shown.output
    assert [e["text"] for e in json.loads(shown.output)["entries"] if e["section"] == "patterns"] == ["yes"]


def test_the_quick_reading_declines_what_the_full_parse_finds_too_deep() -> None:
    from expertise_kit.document.yamlio import parse_yaml_text
    from expertise_kit.errors import UserError
    from expertise_kit.versioning.quickmerge import strict_plain

    for depth in (62, 63, 64, 65):
        text = "domain: database\nnote: " + "[" * depth + "1" + "]" * depth + "\n"
        try:
            parse_yaml_text(text, Path("database.yaml"))
            refused = False
        except UserError:
            refused = True
        assert refused == (strict_plain(text) is None), depth


@pytest.mark.parametrize(
    "text",
    [
        "domain: database\npatterns:\n  - text: |#\n      block\n",  # a block header libyaml takes
        "domain: database\npatterns:\n  - text: |\n  \n      block\n",  # a blank line indented less
        "domain: database\npatterns:\n\ufeff - x\n",  # a byte-order mark inside the text
        "# c\n\ufeff# a: b\ndomain: database\n",  # one the full parse reads as a key
    ],
)
def test_the_quick_reading_never_reads_what_the_full_parse_refuses_or_reads_otherwise(text: str) -> None:
    from expertise_kit.document.domainfile import parse_domain_text
    from expertise_kit.errors import UserError
    from expertise_kit.versioning.quickmerge import valid_plain

    try:
        full = parse_domain_text(text, Path(".expertise/database.yaml"), "database").loaded.plain
    except UserError:
        full = None  # a shared file that reads here would not load in the worktree
    assert valid_plain(text, "database") in (None, full)
