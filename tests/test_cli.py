"""The command-line surface: help everywhere, init twice, list/show/add/schema output."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from conftest import Cli, git, snapshot

from expertise_kit.cli import cli
from expertise_kit.vocab import DEFAULT_DOMAINS


def _commands() -> list[str]:
    return sorted(cli.commands)


@pytest.mark.parametrize("name", _commands())
def test_every_command_has_help_text(name: str, tmp_path: Path) -> None:
    command = cli.commands[name]
    assert command.help and len(command.help.strip()) > 20
    assert command.get_short_help_str().strip()
    for param in command.params:
        if isinstance(param, click.Option):
            assert param.help, f"{name} {param.opts} has no help"
    result = Cli(tmp_path)(name, "--help")
    assert result.exit_code == 0
    assert "Usage: " in result.output


def test_top_level_help_lists_the_commands(tmp_path: Path) -> None:
    result = Cli(tmp_path)("--help")
    assert result.exit_code == 0
    for name in ("init", "list", "show", "add", "schema"):
        assert name in result.output


def test_init_creates_everything_and_is_safe_to_rerun(repo: Path, run: Cli) -> None:
    first = run("init")
    assert first.exit_code == 0
    directory = repo / ".expertise"
    for name in DEFAULT_DOMAINS:
        text = (directory / f"{name}.yaml").read_text()
        assert text.startswith("# yaml-language-server: $schema=expertise.schema.json\n")
        assert f"domain: {name}\n" in text
    assert (directory / "config.yaml").exists()
    assert (directory / ".gitignore").read_text().count("\n") >= 3
    json.loads((directory / "expertise.schema.json").read_text())
    (directory / "database.yaml").write_text((directory / "database.yaml").read_text() + "# my note\n")
    before = snapshot(repo)
    second = run("init")
    assert second.exit_code == 0
    assert "already set up" in second.output
    assert snapshot(repo) == before


def test_init_from_a_subdirectory_uses_the_repo_top(repo: Path) -> None:
    sub = repo / "src" / "pkg"
    sub.mkdir(parents=True)
    assert Cli(sub)("init").exit_code == 0
    assert (repo / ".expertise" / "database.yaml").exists()
    assert not (sub / ".expertise").exists()
    assert Cli(sub)("show", "database").exit_code == 0


def test_init_creates_files_for_user_defined_domains(project: Path, run: Cli) -> None:
    (project / ".expertise" / "config.yaml").write_text(
        "domains:\n  payments:\n    keywords: [invoice]\n    description: Billing and invoices.\n"
    )
    result = run("init")
    assert result.exit_code == 0
    assert "created .expertise/payments.yaml" in result.output
    assert 'overview: "Billing and invoices."' in (project / ".expertise" / "payments.yaml").read_text()
    assert run("add", "payments", "patterns", "Amounts are integer cents").exit_code == 0
    rows = json.loads(run("list", "--json").stdout)
    assert [row["domain"] for row in rows] == [*DEFAULT_DOMAINS, "payments"]


def test_init_outside_git_uses_the_current_directory(tmp_path: Path) -> None:
    assert Cli(tmp_path)("init").exit_code == 0
    assert (tmp_path / ".expertise" / "general.yaml").exists()


def test_list_reports_lines_and_entries(project: Path, run: Cli) -> None:
    run("add", "api", "patterns", "Version every endpoint")
    rows = {row["domain"]: row for row in json.loads(run("list", "--json").stdout)}
    assert rows["api"]["entries"] == 1
    assert rows["api"]["lines"] == (project / ".expertise" / "api.yaml").read_text().count("\n")
    human = run("list").stdout.splitlines()
    assert human[0].split() == ["domain", "lines", "entries", "status", "last", "revision"]
    assert any(line.split()[:3] == ["api", str(rows["api"]["lines"]), "1"] for line in human)
    head = git(project, "rev-parse", "HEAD").strip()
    assert rows["api"]["last_revision"]["commit"] == head
    assert rows["api"]["last_revision"]["subject"] == "expertise(api): add 1 entry by hand"
    assert rows["database"]["last_revision"]["subject"].startswith("expertise: set up")


def test_add_then_show_with_ids(project: Path, run: Cli) -> None:
    added = run("add", "security", "best-practices", "Never log tokens")
    assert added.exit_code == 0
    entry_id = added.stdout.split()[1]
    assert len(entry_id) == 8
    shown = run("show", "security")
    assert f"{entry_id}  Never log tokens  [hand-written]" in shown.stdout
    data = json.loads(run("show", "security", "--json").stdout)
    assert data["entries"] == [
        {"id": entry_id, "section": "best_practices", "text": "Never log tokens", "source": "manual"}
    ]


def test_adding_the_same_learning_twice_keeps_one(project: Path, run: Cli) -> None:
    assert run("add", "testing", "patterns", "Use  tmp_path for files.").exit_code == 0
    again = run("add", "testing", "patterns", "use tmp_path for files")
    assert again.exit_code == 0
    assert "already present" in again.stdout
    data = json.loads(run("show", "testing", "--json").stdout)
    assert len(data["entries"]) == 1


def test_error_and_solution_only_for_failures(project: Path, run: Cli) -> None:
    result = run("add", "api", "patterns", "x", "--error", "boom")
    assert result.exit_code == 2
    assert "only apply to learned_from_failures" in result.output


def test_schema_is_valid_json_schema_that_accepts_our_files(project: Path, run: Cli) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(run("schema").stdout)
    assert schema["title"] == "expertise_kit domain file"
    jsonschema.Draft202012Validator.check_schema(schema)
    run("add", "api", "patterns", "Version every endpoint")
    run("add", "api", "failures", "Timeout", "--error", "504 from upstream", "--solution", "raise the timeout")
    from expertise_kit.document.yamlio import load_yaml_file

    plain = load_yaml_file(project / ".expertise" / "api.yaml").plain
    jsonschema.validate(plain, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**plain, "patterns": [42]}, schema)
