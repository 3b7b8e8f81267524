"""validate and improve against real temp repos."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from conftest import Cli, git, snapshot

from expertise_kit import clock


def _code(project: Path, files: dict[str, str], message: str = "code") -> None:
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(project, "add", *files)
    git(project, "commit", "-q", "-m", message)


@pytest.fixture
def coded(project: Path, run: Cli) -> Path:
    _code(
        project,
        {
            "src/db/models.py": "def compute_total(cart):\n    return 1\n",
            "src/db/old.py": "x = 1\n",
            "src/db/gone.py": "y\n",
        },
    )
    for path in ("src/db/models.py", "src/db/old.py", "src/db/gone.py"):
        assert run("add", "database", "core_files", path).exit_code == 0
    run("add", "database", "patterns", "Use `compute_total()` from src/db/models.py")
    run("add", "database", "patterns", "Call `refresh_totals()` after writing an order")
    return project


def test_rename_followed_delete_removed_symbol_flagged(coded: Path, run: Cli) -> None:
    git(coded, "mv", "src/db/old.py", "src/db/renamed.py")
    git(coded, "rm", "-q", "src/db/gone.py")
    git(coded, "commit", "-q", "-m", "move and delete")
    result = json.loads(run("validate", "database", "--json").stdout)[0]
    assert result["renamed"][0]["from"] == "src/db/old.py" and result["renamed"][0]["to"] == "src/db/renamed.py"
    assert result["removed"] == ["src/db/gone.py"]
    assert [s["missing"] for s in result["stale"]] == [["refresh_totals()"]]
    text = (coded / ".expertise" / "database.yaml").read_text()
    assert "src/db/renamed.py" in text and "src/db/old.py" not in text and "gone.py" not in text
    assert "- text: Call `refresh_totals()` after writing an order\n    stale: true" in text  # kept, marked
    assert "Use `compute_total()` from src/db/models.py" in text  # still true: untouched
    assert "last_validated: '20" in text
    body = git(coded, "log", "-1", "--format=%B")
    assert "Expertise-Change: validated" in body and "src/db/old.py -> src/db/renamed.py" in body
    assert git(coded, "status", "--porcelain") == ""


def test_check_changes_nothing_and_gates(coded: Path, run: Cli) -> None:
    git(coded, "rm", "-q", "src/db/gone.py")
    git(coded, "commit", "-q", "-m", "delete")
    before = snapshot(coded)
    failing = run("validate", "--check")
    assert failing.exit_code == 1 and "removed  src/db/gone.py" in failing.stdout
    assert snapshot(coded) == before
    assert run("validate").exit_code == 0
    passing = run("validate", "--check")
    assert passing.exit_code == 0, passing.output  # the stale entry is marked: a human has seen it


def test_a_symbol_that_comes_back_is_unmarked(coded: Path, run: Cli) -> None:
    run("validate", "database")
    _code(coded, {"src/db/orders.py": "def refresh_totals():\n    pass\n"})
    result = json.loads(run("validate", "database", "--json").stdout)[0]
    assert result["stale"] == [] and len(result["no_longer_stale"]) == 1
    assert "stale: true" not in (coded / ".expertise" / "database.yaml").read_text()


def test_failures_pruned_at_the_retention_boundary(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    fixed = datetime(2026, 11, 22, 12, 0, 0, tzinfo=timezone.utc)
    monkeypatch.setattr(clock, "now", lambda: fixed)
    path = project / ".expertise" / "testing.yaml"
    entries = {
        "just inside": "2026-10-23T12:00:00Z",  # exactly 30 days: kept
        "just outside": "2026-10-23T11:59:59Z",  # a second more: pruned
        "recent": "2026-11-21T09:00:00Z",
    }
    failures = "".join(
        f"  - issue: {name}\n    error: {name} broke\n    source: learned\n    last_seen: '{stamp}'\n"
        for name, stamp in entries.items()
    )
    failures += "  - issue: hand written\n    error: never pruned\n"
    path.write_text(path.read_text().replace("learned_from_failures: []\n", f"learned_from_failures:\n{failures}"))
    git(project, "commit", "-q", "-am", "seed")
    result = json.loads(run("validate", "testing", "--json").stdout)[0]
    assert len(result["pruned_failures"]) == 1 and "just outside" in result["pruned_failures"][0]
    text = path.read_text()
    assert "just inside" in text and "recent" in text and "hand written" in text and "just outside" not in text


def test_validate_reports_a_broken_file_and_exits_1(project: Path, run: Cli) -> None:
    (project / ".expertise" / "api.yaml").write_text("domain: api\npatterns: [x\n")
    result = run("validate")
    assert result.exit_code == 1 and "api.yaml:3: invalid YAML" in result.stderr
    assert "database: 0 corrections made" in result.stdout  # the others were still validated


def test_improve_ranks_by_history(project: Path, run: Cli) -> None:
    _code(
        project,
        {"db/migrations/0001_init.sql": "--\n", "db/migrations/0002_orders.sql": "--\n", "db/schema.sql": "--\n"},
    )
    for n in range(3):
        _code(project, {"db/migrations/0002_orders.sql": f"-- 2 v{n}\n"}, f"orders v{n}")
    _code(project, {"db/schema.sql": "-- s2\n"}, "schema")
    _code(project, {"node_modules/db/index.sql": "-- vendored\n", "db/dump.sql.gz": "binary"}, "noise")
    (project / ".gitignore").write_text("ignored/\n")
    (project / "ignored").mkdir()
    (project / "ignored" / "secret.sql").write_text("--\n")
    data = json.loads(run("improve", "database", "--json").stdout)[0]
    ranked = [c["path"] for c in data["candidates"]]
    assert ranked[:3] == ["db/migrations/0002_orders.sql", "db/schema.sql", "db/migrations/0001_init.sql"]
    assert "node_modules/db/index.sql" not in ranked and "ignored/secret.sql" not in ranked
    assert data["skipped"].get("vendored or build output") == 1
    text = (project / ".expertise" / "database.yaml").read_text()
    assert "{path: db/migrations/0002_orders.sql, source: learned" in text
    assert "Expertise-Change: improved" in git(project, "log", "-1", "--format=%B")
    again = json.loads(run("improve", "database", "--json").stdout)[0]
    assert again["candidates"] == []  # already known: nothing new


def test_improve_respects_the_limit_and_dry_run(project: Path, run: Cli) -> None:
    _code(project, {f"db/migrations/{n:04d}.sql": "--\n" for n in range(30)})
    before = snapshot(project)
    dry = json.loads(run("improve", "database", "--dry-run", "--limit", "5", "--json").stdout)[0]
    assert len(dry["candidates"]) == 5 and snapshot(project) == before


def test_pre_commit_hook_definition_exists() -> None:
    text = (Path(__file__).resolve().parents[1] / ".pre-commit-hooks.yaml").read_text()
    assert "id: expertise-validate" in text and "entry: expertise validate --check" in text


def test_one_validate_run_is_one_commit(project: Path, run: Cli) -> None:
    before = int(git(project, "rev-list", "--count", "HEAD"))
    assert run("validate").exit_code == 0
    assert int(git(project, "rev-list", "--count", "HEAD")) == before + 1
    files = git(project, "show", "--name-only", "--format=", "HEAD").split()
    assert len(files) == 7 and all(f.startswith(".expertise/") for f in files)
    assert git(project, "log", "-1", "--format=%s").strip() == "expertise(7 domains): validate against the code"
