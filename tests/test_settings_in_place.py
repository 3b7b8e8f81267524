"""`hooks install`/`uninstall` edit an agent's settings in place: a round trip gives back the same bytes,
escapes, number spellings, one-line arrays and Gemini CLI's comments included; a key given twice is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Cli, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.agents.installer import AGENTS, install_hooks, uninstall_hooks
from expertise_kit.agents.mcp_config import MCP_CONFIGS
from expertise_kit.agents.settingsfile import read_settings, settings_text
from expertise_kit.errors import UserError

ASKED = '{"permissions": {"allow": ["Bash(ls:*)"]}, "name": "\\u00e9t\\u00e9", "ratio": 1.0e2, "n": -0}\n'
SPREAD = """{
    "permissions": {"allow": ["Bash(ls:*)", "Read(*)"]},
    "name": "\\u00e9",
    "ratio": 1.0e2,
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}]
    }
}
"""
GEMINI = """{
  // the user's theme
  "theme": "dark", /* inline */
  "hooks": {
    // a guard of theirs
    "BeforeTool": [
      {"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "./guard.sh"}]}, // theirs
    ],
  },
  "mcpServers": {
    "other": {"command": "other-server"} // keep me
  }
}
"""


def _settings_file(project: Path, agent: str, text: str) -> Path:
    path = project / AGENTS[agent].settings
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
@pytest.mark.parametrize("text", [ASKED, SPREAD, ASKED.rstrip("\n")])
def test_install_then_uninstall_gives_back_the_same_bytes(project: Path, run: Cli, agent: str, text: str) -> None:
    path = _settings_file(project, agent, text)
    assert run("hooks", "install", "--agent", agent).exit_code == 0
    installed = path.read_text()
    assert installed.count(f"--agent {agent}") >= 2
    for kept in ('"Bash(ls:*)"', "\\u00e9", "1.0e2"):
        assert kept in installed  # bytes outside our keys are as they were
    assert run("hooks", "uninstall", "--agent", agent).exit_code == 0
    assert path.read_text() == text


def test_gemini_settings_with_comments_are_read_edited_and_restored(project: Path, run: Cli) -> None:
    path = _settings_file(project, "gemini", GEMINI)
    result = run("hooks", "install", "--agent", "gemini", "--mcp")
    assert result.exit_code == 0, result.output
    installed = path.read_text()
    for comment in ("// the user's theme", "/* inline */", "// a guard of theirs", "// theirs", "// keep me"):
        assert comment in installed
    data = read_settings(path, comments=True).data
    assert {"BeforeTool", "SessionStart", "BeforeAgent", "SessionEnd"} <= set(data["hooks"])
    assert data["mcpServers"]["expertise"] == {"command": "expertise", "args": ["mcp"]}
    assert run("hooks", "doctor", "--agent", "gemini", "--json").stdout.count("is not valid JSON") == 0
    assert run("hooks", "uninstall", "--agent", "gemini").exit_code == 0
    assert path.read_text() == GEMINI


def test_comments_are_still_refused_where_the_agent_reads_plain_json(project: Path, run: Cli) -> None:
    path = _settings_file(project, "claude-code", GEMINI)
    before = snapshot(project)
    result = run("hooks", "install", "--agent", "claude-code")
    assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1
    assert f"{path}:2: not valid JSON" in result.stderr and snapshot(project) == before


@pytest.mark.parametrize("agent", ["claude-code", "gemini"])
def test_a_key_given_twice_is_refused_in_one_line_and_nothing_changes(project: Path, run: Cli, agent: str) -> None:
    _settings_file(project, agent, '{\n  "theme": "dark",\n  "hooks": {},\n  "theme": "light"\n}\n')
    before = snapshot(project)
    for command in (["install", "--agent", agent], ["uninstall", "--agent", agent]):
        result = run("hooks", *command)
        assert result.exit_code == 1
        [line] = result.stderr.splitlines()
        assert ":4: key 'theme' is given twice (lines 2 and 4)" in line and "nothing was changed" in line
        assert snapshot(project) == before


def test_uninstall_works_on_a_gemini_file_with_comments_it_did_not_write(project: Path) -> None:
    install_hooks(project, "gemini")
    path = project / AGENTS["gemini"].settings
    text = path.read_text().replace("{", '{\n  "theme": "dark", // mine\n  /* block */', 1)
    path.write_text("// my settings\n" + text)
    assert uninstall_hooks(project, "gemini").changed
    assert path.read_text() == '// my settings\n{\n  "theme": "dark" // mine\n  /* block */\n}\n'


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=8),
    st.sampled_from(["1.0e2", "-0.5", "1E+3"]).map(float),
)  # fmt: skip
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "hooks"), _values, max_size=4),
    indent=st.sampled_from([None, 2, 4, "\t"]),
    escape=st.booleans(),
    agent=st.sampled_from(sorted(AGENTS)),
)
def test_any_settings_survive_a_round_trip_byte_for_byte(
    tmp_path: Path, data: dict[str, object], indent: int | str | None, escape: bool, agent: str
) -> None:
    text = json.dumps(data, indent=indent, ensure_ascii=escape)
    path = tmp_path / AGENTS[agent].settings
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    install_hooks(tmp_path, agent)
    installed = read_settings(path, comments=True).data
    assert {k: v for k, v in installed.items() if k not in ("hooks", "version")} == {
        k: v for k, v in data.items() if k != "version"
    }
    uninstall_hooks(tmp_path, agent)
    after = path.read_text()
    if AGENTS[agent].style == "flat" and "version" not in data:
        after_data = json.loads(after)
        assert after_data.pop("version") == 1 and after_data == data  # Cursor's version key stays
    else:
        assert after == text


@given(
    data=st.dictionaries(st.text(max_size=6), _values, max_size=4),
    drop=st.sets(st.integers(0, 3), max_size=4),
    extra=st.dictionaries(st.text(max_size=4), _values, max_size=2),
    indent=st.sampled_from([None, 2]),
)
@settings(max_examples=80, deadline=None)
def test_edits_splice_to_exactly_the_data(
    tmp_path_factory: pytest.TempPathFactory, data: dict[str, object], drop: set[int], extra: dict[str, object],
    indent: int | None,
) -> None:  # fmt: skip
    path = tmp_path_factory.mktemp("s") / "settings.json"
    path.write_text(json.dumps(data, indent=indent))
    loaded = read_settings(path)
    for index, key in enumerate(list(loaded.data)):
        if index in drop:
            del loaded.data[key]
    for key, value in extra.items():
        if key not in data:
            loaded.data[key] = value
    assert json.loads(settings_text(loaded)) == loaded.data


def test_mcp_configs_are_named_for_each_agent() -> None:
    assert set(MCP_CONFIGS) <= set(AGENTS)
    with pytest.raises(UserError):
        read_settings(Path("/"))
