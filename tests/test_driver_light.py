"""Issue 25, point 6: the merge driver's quick path loads the standard library and a few of our modules
(PyYAML only for a file not in our writers' layout), no more (the time is measured by bench/bench_merge.py,
never here); and the pieces that stand in for pydantic, ruamel and the config model give what those give,
or decline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Cli, git
from hypothesis import given, settings
from hypothesis import strategies as st

import expertise_kit
from expertise_kit.config import load_config
from expertise_kit.document.cap import _facts
from expertise_kit.document.entries import domain_data, domain_data_by_schema, item_by_schema, parse_item
from expertise_kit.document.plainentry import describe, valid_domain_data, valid_item
from expertise_kit.document.plainrender import render_plain
from expertise_kit.document.schema import DomainFile, validate_item
from expertise_kit.document.splice import Append, apply_edits, render_by_ruamel
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.gitmerge import _place, _plain_line_cap
from expertise_kit.versioning.merge import merge_domain_texts
from expertise_kit.versioning.mergedriver import DRIVER_CODE

DB = Path(".expertise/database.yaml")
HEAVY = ("pydantic", "pydantic_core", "ruamel", "click", "git", "filelock")
OURS = ("expertise_kit.store", "expertise_kit.config", "expertise_kit.cli", "expertise_kit.document.entries")

_PROBE = """
import json, runpy, sys
sys.path.insert(0, sys.argv.pop(1))  # the package's own directory: no site, so no editable-install finder
sys.argv = ["expertise_kit", "merge-driver", *sys.argv[1:]]
try:
    runpy.run_module("expertise_kit", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _learned(text: str, session: str) -> dict[str, Any]:
    stamp = "2026-11-01T10:00:00Z"
    return {"text": text, "source": "learned", "sessions": [session], "first_seen": stamp, "last_seen": stamp}


def _sides(root: Path, entries: int) -> tuple[str, str, str]:
    path = root / DB
    base = apply_edits(
        parse_yaml_text(path.read_text(), path),
        [Append("patterns", _learned(f"Lesson {n}: keep {n} connections warm", f"s{n}")) for n in range(entries)],
    )

    def side(tag: str) -> str:
        edits = [Append("best_practices", _learned(f"{tag} practice {n}: index foreign keys", f"{tag}{n}"))
                 for n in range(6)]  # fmt: skip
        return apply_edits(parse_yaml_text(base, path), list(edits))

    return base, side("ours"), side("theirs")


@pytest.mark.parametrize("entries", [5, 240])  # below the cap, and pruned at it
def test_the_quick_path_as_git_runs_it_imports_no_heavy_package(project: Path, entries: int) -> None:
    base, ours, theirs = _sides(project, entries)
    scratch = project / "scratch"
    scratch.mkdir()
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        (scratch / name).write_text(text)
    package_home = str(Path(expertise_kit.__file__).resolve().parent.parent)
    done = subprocess.run(  # -S: nothing of site-packages, which the quick path must not need
        [sys.executable, "-I", "-S", "-c", _PROBE, package_home, "scratch/O", "scratch/A", "scratch/B", str(DB)],
        cwd=project, capture_output=True, text=True, check=False,
    )  # fmt: skip
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["code"] == 0, done.stderr
    loaded = [m for m in report["modules"] if m.split(".")[0] in HEAVY or m.startswith(OURS)]
    assert loaded == [], loaded
    assert "expertise_kit.gitmerge" in report["modules"]
    assert "yaml" not in report["modules"]  # files in our writers' layout are read without libyaml (plainread)
    assert "pathlib" not in report["modules"]  # the project and git dirs are found as text (locate)
    full = merge_domain_texts(base, ours, theirs, path=DB, domain="database", line_cap=1000)
    assert (scratch / "A").read_text() == full.text  # the full merge's bytes
    assert ("pruned" in done.stderr) == bool(full.pruned)


def test_every_config_key_is_read_plainly() -> None:
    """A key config.py knows and the quick path doesn't sends every merge to pydantic: say so here."""
    from expertise_kit.configschema import ConfigModel
    from expertise_kit.plainconfig import SETTINGS

    assert set(ConfigModel.model_fields) == set(SETTINGS)
    assert {k: f.default for k, f in ConfigModel.model_fields.items() if k != "domains"} == {
        k: default for k, (default, _) in SETTINGS.items() if k != "domains"
    }


def test_a_config_it_cannot_read_plainly_takes_the_full_reading(project: Path) -> None:
    config = project / ".expertise" / "config.yaml"
    text = config.read_text()
    cases = {
        text: 1000,
        text.replace("line_cap: 1000", "line_cap: 120"): 120,
        text.replace("domains: {}", "domains:\n  billing:\n    keywords: [invoice]\n    extend: false"): 1000,
        text.replace("line_cap: 1000", "line_cap: '900'"): None,  # pydantic's lax int: the full reading decides
        text.replace("line_cap: 1000", "line_cap: 10"): None,  # invalid: the full reading refuses it
        text.replace("line_cap: 1000", "line_cap: true"): None,
        text.replace("domains: {}", "domains:\n  Bad Name:\n    keywords: [x]"): None,
        text + "surprise: 1\n": None,
        "line_cap: [unclosed\n": None,
        text.replace("reflect: off", "reflect: always"): 1000,
        text.replace("reflect: off", "reflect: sometimes"): None,
        text.replace("shared: on", "shared: read"): 1000,
        text.replace("shared_retire_days: 3", "shared_retire_days: -1"): None,
    }
    for content, want in cases.items():
        config.write_text(content)
        found = _plain_line_cap(_place(str(project.resolve())))
        assert found == want, content
        if found is not None:
            assert found == load_config(project / ".expertise").line_cap


def test_old_driver_configs_and_the_click_command_still_work(project: Path, run: Cli) -> None:
    """A clone registered before (`expertise merge-driver ...` on PATH) merges the same way."""
    git(project, "config", "merge.expertise.driver", "expertise merge-driver %O %A %B %P")
    base, ours, theirs = _sides(project, 5)
    scratch = project / "scratch"
    scratch.mkdir()
    for name, text in (("O", base), ("A", ours), ("B", theirs)):
        (scratch / name).write_text(text)
    result = run("merge-driver", *(str(scratch / name) for name in "OAB"), str(DB))
    assert result.exit_code == 0, result.output
    assert (scratch / "A").read_text() == merge_domain_texts(base, ours, theirs, path=DB, domain="database",
                                                             line_cap=1000).text  # fmt: skip
    for started in (["-m", "expertise_kit", "merge-driver"], ["-c", DRIVER_CODE]):  # as older clones and init name it
        wrong = subprocess.run([sys.executable, "-I", *started, "only-one"],
                               cwd=project, capture_output=True, text=True, check=False)  # fmt: skip
        assert wrong.returncode == 2 and "Usage" in wrong.stderr  # click still says what is wrong


# -- the stand-ins agree with pydantic and ruamel, or decline ---------------------------------------------

_words = st.text(alphabet="abcXYZ019 _.,:'#-/\t\né", max_size=14)
_scalars = st.one_of(_words, st.integers(-3, 5), st.booleans(), st.none(),
                     st.sampled_from(["2026-11-01T10:00:00Z", "2026-11-01T10:00:00", "2026-02-30T10:00:00Z",
                                      "9999-12-31T23:59:59-05:00", "learned", "manual", "", "yes", "1e3"]))  # fmt: skip
_keys = st.sampled_from(["text", "path", "issue", "error", "solution", "source", "sessions", "first_seen",
                         "last_seen", "last_feedback", "recurrence", "helpful", "harmful", "ended_well", "stale",
                         "note", "model_x", "self"])  # fmt: skip
_items = st.one_of(_words, st.dictionaries(_keys, st.one_of(_scalars, st.lists(_scalars, max_size=3)), max_size=6))
_sections = st.sampled_from(["core_files", "patterns", "best_practices", "learned_from_failures"])


@settings(max_examples=400, deadline=None)
@given(section=_sections, raw=_items)
def test_plain_validation_accepts_only_what_the_model_accepts_and_reads_it_the_same(section: str, raw: Any) -> None:
    if not valid_item(section, raw):
        return
    by_schema = item_by_schema(section, raw)  # raises if the stand-in accepted what the model refuses
    item = parse_item(section, raw)  # the plain reading
    assert item == by_schema
    assert describe(section, raw) == _facts(item, section)
    if not isinstance(item, str):  # what `show --json`, the API and the hook's cache give of it
        assert item.as_json() == validate_item(section, raw).model_dump(mode="json")


@settings(max_examples=150, deadline=None)
@given(raws=st.lists(_items, max_size=4), overview=_scalars)
def test_plain_validation_of_a_whole_file(raws: list[Any], overview: Any) -> None:
    plain = {"domain": "database", "overview": overview, "patterns": raws, "learned_from_failures": None}
    if valid_domain_data(plain, "database"):
        read = domain_data(plain, "database")
        assert read == domain_data_by_schema(plain)
        assert domain_data(read.as_json(), "database") == read  # as a view remembers it
        assert read.as_json() == {
            k: v for k, v in DomainFile.model_validate(plain).model_dump(mode="json").items()
            if k != "last_validated" or v is not None
        }


@settings(max_examples=400, deadline=None)
@given(raw=_items, column=st.sampled_from([0, 2, 4]), offset=st.sampled_from([2, 3, 4]))
def test_plain_rendering_is_ruamels_or_declines(raw: Any, column: int, offset: int) -> None:
    mine = render_plain(raw, column, offset)
    assert mine is None or mine == render_by_ruamel(raw, column, offset)


def test_plain_rendering_takes_the_usual_entries() -> None:
    usual = [
        "Use a connection pool",
        "Lesson 3: keep connections warm",
        _learned("Lesson 3: keep connections warm", "5e55104e-1d2c-4b1a-9f00-000000000001"),
        {"issue": "migrate", "error": "deadlock detected", "solution": None, "recurrence": 2},
    ]
    for raw in usual:
        assert render_plain(raw, 2, 2) == render_by_ruamel(raw, 2, 2)


def test_a_broken_config_does_not_stop_either_path(project: Path, run: Cli) -> None:
    """config.yaml in conflict itself (git merges it first, with markers): the quick path and the full
    merge (here: a true conflict, which only the full merge marks) take the default cap and go on."""
    conflicted = "<<<<<<< ours\nline_cap: 900\n=======\nline_cap: 800\n>>>>>>>\n"
    (project / ".expertise" / "config.yaml").write_text(conflicted)
    base = (project / DB).read_text()
    scratch = project / "scratch"
    scratch.mkdir()
    def overview(text: str) -> str:
        return "\n".join(f'overview: "{text}"' if line.startswith("overview:") else line for line in base.split("\n"))

    cases = [
        (base.replace("\npatterns: []", "\npatterns: [Ours]"), base.replace("\npatterns: []", "\npatterns: [T]"), 0),
        (overview("ours"), overview("theirs"), 1),  # changed differently on both sides: a true conflict
    ]  # fmt: skip
    for ours, theirs, status in cases:
        for name, text in (("O", base), ("A", ours), ("B", theirs)):
            (scratch / name).write_text(text)
        result = run("merge-driver", *(str(scratch / name) for name in "OAB"), str(DB))
        assert result.exit_code == status, result.output
        assert "config" not in result.output
