"""`hooks doctor` fails, in one line saying what to change, for hooks that will never run: all hooks
disabled, our SessionStart kept off new sessions by a matcher, a matcher that takes no SessionEnd reason;
and `hooks install --mcp` / `hooks doctor` start the MCP server for real."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
from conftest import Cli, snapshot

from expertise_kit.agents.installer import install_hooks

BIN = str(Path(sys.executable).parent)


def _doctor(run: Cli, agent: str) -> tuple[int, dict[str, dict[str, str]]]:
    result = run("hooks", "doctor", "--agent", agent, "--json")
    (report,) = json.loads(result.stdout)["agents"]
    return result.exit_code, {c["name"]: c for c in report["checks"]}


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([BIN, os.environ.get("PATH", "")]))


def _edit(path: Path, change: object) -> None:
    data = json.loads(path.read_text()) if path.exists() else {}
    assert callable(change)
    change(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("where", ["project", "local", "user"])
def test_disable_all_hooks_fails_the_doctor(project: Path, run: Cli, on_path: None, where: str) -> None:
    install_hooks(project, "claude-code")
    home = Path(os.environ["HOME"])
    path = {
        "project": project / ".claude" / "settings.json",
        "local": project / ".claude" / "settings.local.json",
        "user": home / ".claude" / "settings.json",
    }[where]
    _edit(path, lambda data: data.update(disableAllHooks=True))
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["disabled"]["status"] == "fail"
    detail = checks["disabled"]["detail"]
    assert '"disableAllHooks": true' in detail and "remove it, or set it to false" in detail
    assert (".claude/settings.local.json" if where == "local" else str(path) if where == "user" else
            ".claude/settings.json") in detail  # fmt: skip
    # A false where it wins (the local file) turns them back on.
    _edit(project / ".claude" / "settings.local.json", lambda data: data.update(disableAllHooks=False))
    assert "disabled" not in _doctor(run, "claude-code")[1]


@pytest.mark.parametrize(
    ("event", "matcher", "says"),
    [
        ("SessionStart", "resume", "runs our hook only on resume, never when a session starts (startup)"),
        ("SessionStart", "clear|compact", "runs our hook only on clear, compact"),
        ("SessionEnd", "bogus", "matches none of clear, logout, prompt_input_exit, other, so our hook never runs"),
        ("SessionEnd", "(", "is not a valid pattern"),
    ],
)
def test_a_matcher_that_keeps_our_hook_from_running_fails(
    project: Path, run: Cli, on_path: None, event: str, matcher: str, says: str
) -> None:
    path = install_hooks(project, "claude-code").path
    _edit(path, lambda data: data["hooks"][event][0].update(matcher=matcher))
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["matchers"]["status"] == "fail"
    detail = checks["matchers"]["detail"]
    assert f"{event}'s matcher {matcher!r}" in detail and says in detail
    assert detail.endswith("remove the matcher from the group holding our hook in .claude/settings.json")
    plain = run("hooks", "doctor", "--agent", "claude-code")
    assert sum("fail matchers" in line for line in plain.stdout.splitlines()) == 1


@pytest.mark.parametrize("matcher", ["", "*", "startup", "startup|resume", ".*"])
def test_a_matcher_that_takes_a_new_session_is_fine(project: Path, run: Cli, on_path: None, matcher: str) -> None:
    path = install_hooks(project, "claude-code").path
    _edit(path, lambda data: data["hooks"]["SessionStart"][0].update(matcher=matcher))
    assert "matchers" not in _doctor(run, "claude-code")[1]


# -- the MCP server ----------------------------------------------------------------------------------------


@pytest.fixture
def without_mcp_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An `expertise` on PATH whose interpreter can't import the MCP SDK, as in an install without the extra:
    a package named `mcp` first on its path that fails to import the way a missing one does."""
    blocker = tmp_path / "no-mcp"
    (blocker / "mcp").mkdir(parents=True)
    (blocker / "mcp" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "expertise"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={blocker} exec {sys.executable} -m expertise_kit "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), BIN, os.environ.get("PATH", "")]))
    return bin_dir


def test_install_mcp_refuses_a_server_that_cannot_start(project: Path, run: Cli, without_mcp_extra: Path) -> None:
    before = snapshot(project)
    result = run("hooks", "install", "--agent", "claude-code", "--mcp")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert "`expertise mcp` can't start here: the mcp package is not installed" in line
    assert "pip install 'expertise-kit[mcp]'" in line and "nothing was changed" in line
    assert snapshot(project) == before


def test_doctor_starts_the_registered_server_and_lists_its_tools(
    project: Path, run: Cli, on_path: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run("hooks", "install", "--agent", "claude-code", "--mcp").exit_code == 0
    code, checks = _doctor(run, "claude-code")
    assert checks["mcp"]["status"] == "ok", checks["mcp"]
    assert "starts and lists add, feedback, get, search" in checks["mcp"]["detail"]
    # The same registration, served by an installation without the extra: a fail that says what to install.
    blocker = tmp_path / "no-mcp"
    (blocker / "mcp").mkdir(parents=True)
    (blocker / "mcp" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'mcp'\", name='mcp')\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "expertise"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={blocker} exec {sys.executable} -m expertise_kit "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", os.pathsep.join([str(bin_dir), BIN, os.environ.get("PATH", "")]))
    code, checks = _doctor(run, "claude-code")
    assert code == 1 and checks["mcp"]["status"] == "fail"
    assert "the mcp package is not installed" in checks["mcp"]["detail"]
    assert "pip install 'expertise-kit[mcp]'" in checks["mcp"]["detail"]
