"""Every bad input: exit 1, one line on stderr naming the file (and line), and the file untouched."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from conftest import Cli, snapshot

GOOD_HEAD = "domain: database\npatterns:\n  - keep me\n"

BAD_FILES: dict[str, tuple[bytes, str]] = {
    # name: (file content, text the error line must contain)
    "malformed": (b"domain: database\npatterns: [unclosed\nbest_practices: []\n", "database.yaml:3: invalid YAML"),
    "tab_indent": (b"domain: database\npatterns:\n\t- x\n", "database.yaml:3"),
    "schema": (
        b"domain: database\npatterns:\n  - ok\n  - 42\n",
        "database.yaml:4: patterns[1]: Input should be a valid string",
    ),
    "schema_entry": (
        b"domain: database\npatterns:\n  - text: x\n    recurrence: -2\n",
        "database.yaml:4: patterns[0].recurrence",
    ),
    "wrong_domain": (b"domain: api\npatterns: []\n", "database.yaml:1: says `domain: api`"),
    "not_mapping": (b"- just\n- a list\n", "database.yaml:1: top level is a seq"),
    "empty": (b"", "database.yaml:1: file is empty"),
    "anchor": (
        b"domain: database\nbase: &b [x]\npatterns: *b\n",
        "database.yaml:2: anchors and aliases are not allowed",
    ),
    "scalar_anchor": (b"domain: database\noverview: &o hi\nother: *o\n", "anchors and aliases are not allowed"),
    "alias_bomb": (
        b"domain: database\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n",
        "database.yaml:2: anchors and aliases are not allowed",
    ),
    "merge_key": (b"domain: database\nx: &x {a: 1}\ny:\n  <<: *x\n", "anchors and aliases are not allowed"),
    "duplicate_key": (
        b"domain: database\npatterns: []\npatterns: [x]\n",
        'database.yaml:3: found duplicate key "patterns"',
    ),
    "custom_tag": (
        b"domain: database\nx: !python/object foo\n",
        "database.yaml:2: YAML tags are not allowed (found !python/object)",
    ),
    "latin1": (b"domain: database\noverview: caf\xe9\n", "database.yaml:2: not valid UTF-8"),
    "utf8_bom": (b"\xef\xbb\xbfdomain: database\n", "database.yaml:1: file starts with a UTF-8 byte-order mark"),
    "utf16": ("domain: database\n".encode("utf-16"), "byte-order mark"),
    "control_char": (b"domain: database\noverview: a\x01b\n", "database.yaml:2: invalid YAML: unacceptable character"),
    "too_big": (b"domain: database\noverview: '" + b"x" * (1 << 20) + b"'\n", "over the 1,048,576-byte limit"),
    "deep_nesting": (b"domain: database\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n", "database.yaml: nested too deeply"),
}


COMMANDS = {"add": ["add", "database", "patterns", "new entry"], "show": ["show", "database"], "list": ["list"]}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_file_is_refused_and_untouched(project: Path, run: Cli, case: str, command: str) -> None:
    content, expected = BAD_FILES[case]
    path = project / ".expertise" / "database.yaml"
    path.write_bytes(content)
    before = snapshot(project)
    result = run(*COMMANDS[command])
    assert result.exit_code == 1
    if command == "list":  # the other domains are still listed; the bad one gets an error row
        assert "database" in result.stdout and "error" in result.stdout
    else:
        assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("expertise: error: ")
    assert expected in lines[0]
    assert snapshot(project) == before


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("../x", "not a plain identifier"),
        ("CON", "reserved device name on Windows"),
        ("con", "reserved device name on Windows"),
        ("lpt1", "reserved device name on Windows"),
        ("config", "domain name 'config' is taken by .expertise/config.yaml"),
        ("", "domain name is empty"),
        ("data base", "not a plain identifier"),
        ("Database", "not a plain identifier"),
        (".hidden", "not a plain identifier"),
        ("a" * 41, "not a plain identifier"),
        ("nope", "unknown domain 'nope'"),
    ],
)
def test_hostile_domain_names_on_the_command_line(project: Path, run: Cli, name: str, expected: str) -> None:
    before = snapshot(project)
    for args in (["show", name], ["add", name, "patterns", "x"]):
        result = run(*args)
        assert result.exit_code == 1
        assert len(result.stderr.splitlines()) == 1
        assert expected in result.stderr
    assert snapshot(project) == before
    assert not (project / "x.yaml").exists()


@pytest.mark.parametrize("name", ["../x", "CON", "config", "''", "'data base'", "'a/b'"])
def test_hostile_domain_names_in_config(project: Path, run: Cli, name: str) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text(f"line_cap: 1000\ndomains:\n  {name}:\n    keywords: [x]\n")
    before = snapshot(project)
    for args in (["list"], ["init"], ["add", "database", "patterns", "x"]):
        result = run(*args)
        assert result.exit_code == 1, args
        assert result.stderr.count("\n") == 1
        assert "config.yaml:3: domain name" in result.stderr
    assert snapshot(project) == before


def test_bad_config_values_name_the_line(project: Path, run: Cli) -> None:
    config = project / ".expertise" / "config.yaml"
    config.write_text("line_cap: 10\nfailure_retention_days: 30\n")
    result = run("show", "database")
    assert result.exit_code == 1
    assert "config.yaml:1: line_cap: Input should be greater than or equal to 50" in result.stderr
    config.write_text("line_cap: 1000\nlinecap: 5\n")
    result = run("show", "database")
    assert "config.yaml:2: linecap: unknown setting" in result.stderr


def test_symlink_outside_expertise_is_refused(project: Path, run: Cli, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("domain: database\npatterns: []\n")
    path = project / ".expertise" / "database.yaml"
    path.unlink()
    path.symlink_to(outside)
    for args in (["show", "database"], ["add", "database", "patterns", "x"]):
        result = run(*args)
        assert result.exit_code == 1
        assert "database.yaml: is a symlink to" in result.stderr
        assert "outside .expertise/" in result.stderr
    assert outside.read_text() == "domain: database\npatterns: []\n"
    assert path.is_symlink()


def test_symlink_inside_expertise_is_followed_and_kept(project: Path, run: Cli) -> None:
    real = project / ".expertise" / "shared-db.yaml"
    path = project / ".expertise" / "database.yaml"
    real.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to("shared-db.yaml")
    assert run("add", "database", "patterns", "through the link").exit_code == 0
    assert path.is_symlink()
    assert "through the link" in real.read_text()


def test_read_only_expertise_dir_is_refused(project: Path, run: Cli) -> None:
    directory = project / ".expertise"
    before = snapshot(project)
    os.chmod(directory, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    try:
        result = run("add", "database", "patterns", "x")
        assert result.exit_code == 1
        assert result.stderr.count("\n") == 1
        assert ".expertise: directory is read-only; make it writable" in result.stderr
        assert run("show", "database").exit_code == 0  # reading still works
    finally:
        os.chmod(directory, 0o755)
    assert snapshot(project) == before


def test_outside_any_project_says_run_init(tmp_path: Path) -> None:
    result = Cli(tmp_path)("list")
    assert result.exit_code == 1
    assert "no .expertise/ directory" in result.stderr
    assert "run `expertise init`" in result.stderr


def test_missing_domain_file_is_reported_in_list(project: Path, run: Cli) -> None:
    (project / ".expertise" / "api.yaml").unlink()
    result = run("list", "--json")
    assert result.exit_code == 1
    rows = {row["domain"]: row for row in __import__("json").loads(result.stdout)}
    assert rows["api"]["status"] == "missing"
    assert rows["database"]["status"] == "ok"
    assert "api.yaml: file not found" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["add", "database", "patterns", "   "], "entry text is empty"),
        (["add", "database", "patterns", "a\x07b"], "control characters"),
        (["add", "database", "patterns", "x" * 10_001], "over the 10,000 limit"),
        (["add", "database", "bogus", "x"], "unknown section 'bogus'"),
    ],
)
def test_bad_entries_are_refused(project: Path, run: Cli, args: list[str], expected: str) -> None:
    before = snapshot(project)
    result = run(*args)
    assert result.exit_code == 1
    assert expected in result.stderr
    assert snapshot(project) == before
