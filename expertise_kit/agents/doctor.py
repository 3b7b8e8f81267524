"""``expertise hooks doctor``: whether each agent's hooks will really run, checked the way the agent
would run them.

Each check is one line: ok, warn (works, but not fully) or fail (the hooks will not do their job).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from expertise_kit.agents.installer import AGENTS, PROGRAM, ours, timeout_for
from expertise_kit.vocab import Agent

__all__ = ["Check", "AgentReport", "diagnose", "merge_driver_check", "ROUND_TRIP_SECONDS"]

ROUND_TRIP_SECONDS = 10
VERSION_SECONDS = 10


@dataclass
class Check:
    name: str
    status: str  # "ok", "warn" or "fail"
    detail: str


@dataclass
class AgentReport:
    agent: str
    settings: str
    installed: bool
    version: str | None = None
    checks: list[Check] = field(default_factory=list)

    @property
    def status(self) -> str:
        statuses = {c.status for c in self.checks}
        return "fail" if "fail" in statuses else "warn" if "warn" in statuses else "ok"

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}

    def add(self, name: str, status: str, detail: str) -> None:
        self.checks.append(Check(name, status, detail))


def diagnose(root: Path, agents: list[str], *, env: dict[str, str] | None = None) -> list[AgentReport]:
    """A report for each of ``agents`` whose settings file exists (or that was asked for by name)."""
    environ = dict(os.environ if env is None else env)
    return [_diagnose(root, AGENTS[name], environ) for name in agents]


def _diagnose(root: Path, spec: Agent, env: dict[str, str]) -> AgentReport:
    path = root / spec.settings
    report = AgentReport(spec.name, spec.settings, installed=False)
    hooks = _config(report, path, spec)
    if hooks is None:
        return report
    found = _our_hooks(hooks, spec)
    wanted = {spec.start_event: "pre", **({spec.prompt_event: "pre"} if spec.prompt_event else {})}
    wanted.update({event: "post" for event in spec.end_events})
    missing = [event for event in wanted if event not in found]
    report.installed = bool(found)
    if not found:
        report.add("hooks", "fail", f"no expertise_kit hooks in {spec.settings}: run `expertise hooks install --agent "
                                    f"{spec.name}`")  # fmt: skip
        return report
    if missing:
        report.add(
            "hooks", "fail", f"no hook for {', '.join(missing)}: run `expertise hooks install --agent {spec.name}`"
        )
    else:
        report.add("hooks", "ok", f"{', '.join(wanted)} hooked in {spec.settings}")
    _disabled(report, root, spec, env)
    _matchers(report, hooks, spec)
    _timeouts(report, found, spec, wanted)
    program = _command(report, env)
    _version(report, spec, env)
    _trust(report, root, path, spec, env)
    _learning(report, root, spec)
    _reflect(report, root, spec, found, env)
    if program:
        _round_trip(report, root, spec, env)
    _mcp(report, root, spec, env)
    return report


def _mcp(report: AgentReport, root: Path, spec: Agent, env: dict[str, str]) -> None:
    """Where the agent's MCP config registers our server, start it as the agent would and list its tools."""
    from expertise_kit.agents.mcp_config import MCP_CONFIGS, PROGRAM, SERVER_NAME, our_server
    from expertise_kit.agents.mcp_probe import MCP_EXTRA_HINT, probe_server
    from expertise_kit.agents.settingsfile import read_settings
    from expertise_kit.errors import UserError

    relative = MCP_CONFIGS.get(spec.name)
    if relative is None or not (root / relative).exists():
        return
    try:
        data = read_settings(root / relative, comments=spec.jsonc and relative == spec.settings).data
    except UserError as exc:
        report.add("mcp", "fail", f"{relative}: {exc.message}; the agent can't read its MCP servers either")
        return
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if not our_server(entry):
        return
    assert isinstance(entry, dict)
    probe = probe_server(root, PROGRAM, list(entry.get("args") or []), env)
    if probe.ok:
        report.add("mcp", "ok", f"`expertise mcp` ({probe.detail}) starts and lists {', '.join(probe.tools)}")
    elif probe.missing_extra:
        report.add("mcp", "fail", f"{relative} registers `expertise mcp`, which can't start: the mcp package is "
                                  f"not installed; {MCP_EXTRA_HINT}")  # fmt: skip
    else:
        report.add("mcp", "fail", f"{relative} registers `expertise mcp`, which can't start: {probe.detail}")


def _config(report: AgentReport, path: Path, spec: Agent) -> dict[str, Any] | None:
    """The settings' ``hooks`` object, or None after saying why there is none."""
    from expertise_kit.agents.settingsfile import read_settings
    from expertise_kit.errors import UserError

    if not path.exists():
        report.add(
            "config", "fail", f"{spec.settings} does not exist: run `expertise hooks install --agent {spec.name}`"
        )
        return None
    try:
        data = read_settings(path, comments=spec.jsonc).data
    except UserError as exc:
        where = f" line {exc.line}" if exc.line else ""
        report.add("config", "fail", f"{spec.settings}{where}: {exc.message}; the agent can't read it either")
        return None
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        report.add("config", "fail", f"{spec.settings} has no `hooks` object")
        return None
    report.add("config", "ok", f"{spec.settings} parses")
    return hooks


def _disabled(report: AgentReport, root: Path, spec: Agent, env: dict[str, str]) -> None:
    """Claude Code runs no hook at all when ``disableAllHooks`` is true in the settings that win: the
    project's local file, then the project's, then the user's."""
    if spec.name != "claude-code":
        return
    from expertise_kit.agents.settingsfile import read_settings
    from expertise_kit.errors import UserError

    base = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env.get("HOME") or Path.home()) / ".claude")
    for path, shown in (
        (root / ".claude" / "settings.local.json", ".claude/settings.local.json"),
        (root / ".claude" / "settings.json", ".claude/settings.json"),
        (base / "settings.json", str(base / "settings.json")),
    ):
        try:
            data = read_settings(path).data
        except UserError:
            continue  # the project file's own faults are the config check's; a user file we can't read, unknown
        if "disableAllHooks" not in data:
            continue
        if data["disableAllHooks"] is True:
            report.add("disabled", "fail", f'"disableAllHooks": true in {shown}, so Claude Code runs no hook at all: '
                                           "remove it, or set it to false")  # fmt: skip
        return


# The values a lifecycle event's matcher is tested against, per agent: a group whose matcher takes none
# of them never runs, and our pre hook must run when a session starts afresh.
_MATCHED: dict[tuple[str, str], tuple[str, ...]] = {
    ("claude-code", "SessionStart"): ("startup", "resume", "clear", "compact"),
    ("claude-code", "SessionEnd"): ("clear", "logout", "prompt_input_exit", "other"),
    ("gemini", "SessionStart"): ("startup", "resume", "clear"),
    ("gemini", "SessionEnd"): ("exit", "clear", "logout", "prompt_input_exit", "other"),
}
_MUST_MATCH = {"SessionStart": "startup"}


def _matches(matcher: str, value: str) -> bool | None:
    """Whether a hook group's matcher takes ``value`` (as the agents test it: the whole value against a
    regular expression, ``*`` or empty for all); None when it is not a valid expression."""
    import re

    if matcher in ("", "*"):
        return True
    try:
        return re.fullmatch(matcher, value) is not None
    except re.error:
        return None


def _matchers(report: AgentReport, hooks: dict[str, Any], spec: Agent) -> None:
    """A matcher on a group holding our hook can keep it from ever running (SessionEnd ``"bogus"``), or from
    running when it matters (SessionStart ``"resume"``: never on a new session)."""
    if spec.style == "flat":
        return
    problems = []
    for event, entries in hooks.items():
        values = _MATCHED.get((spec.name, event))
        if values is None or not isinstance(entries, list):
            continue
        for group in entries:
            if not isinstance(group, dict) or not any(ours(h) for h in group.get("hooks") or []):
                continue
            matcher = group.get("matcher")
            if matcher is None:
                continue
            if not isinstance(matcher, str):
                problems.append(f"{event}'s matcher {matcher!r} is not a string")
                continue
            taken = [value for value in values if _matches(matcher, value)]
            if any(_matches(matcher, value) is None for value in values):
                problems.append(f"{event}'s matcher {matcher!r} is not a valid pattern, so our hook never runs")
            elif not taken:
                problems.append(f"{event}'s matcher {matcher!r} matches none of {', '.join(values)}, so our hook "
                                "never runs")  # fmt: skip
            elif _MUST_MATCH.get(event) not in (None, *taken):
                problems.append(f"{event}'s matcher {matcher!r} runs our hook only on {', '.join(taken)}, never "
                                f"when a session starts ({_MUST_MATCH[event]})")  # fmt: skip
    if problems:
        report.add("matchers", "fail", f"{'; '.join(problems)}: remove the matcher from the group holding our "
                                       f"hook in {spec.settings}")  # fmt: skip


def _our_hooks(hooks: dict[str, Any], spec: Agent) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for event, entries in hooks.items():
        if not isinstance(entries, list):
            continue
        if spec.style == "flat":
            candidates = entries
        else:
            candidates = [
                h for g in entries if isinstance(g, dict) for h in (g.get("hooks") or []) if isinstance(h, dict)
            ]
        mine = [h for h in candidates if ours(h)]
        if mine:
            found[event] = mine
    return found


def _timeouts(report: AgentReport, found: dict[str, list[dict[str, Any]]], spec: Agent, wanted: dict[str, str]) -> None:
    if spec.style == "flat":
        return  # Cursor's hooks carry no timeout of ours
    unit = "milliseconds" if spec.timeout_unit == "ms" else "seconds"
    wrong = []
    for event, hooks in found.items():
        for hook in hooks:  # Codex's Stop holds two of ours: post and reflect
            expected = timeout_for(spec, ours(hook) or wanted.get(event, "pre"), event)
            value = hook.get("timeout")
            if value != expected:
                wrong.append(f"{event} has {value!r}, expected {expected}")
    if wrong:
        report.add("timeouts", "fail", f"{spec.name} reads timeouts in {unit}: {'; '.join(wrong)}; "
                                       f"run `expertise hooks install --agent {spec.name}`")  # fmt: skip
    else:
        report.add("timeouts", "ok", f"in {unit}, within {spec.name}'s limits")


def _command(report: AgentReport, env: dict[str, str]) -> str | None:
    program = shutil.which(PROGRAM, path=env.get("PATH", os.defpath))
    if program is None:
        report.add("command", "fail", f"`{PROGRAM}` is not on PATH, so the hooks do nothing (silently): install "
                                      "expertise-kit where the agent's PATH finds it (pipx, uv tool), or start the "
                                      "agent with its venv activated")  # fmt: skip
        return None
    report.add("command", "ok", f"{PROGRAM} is {program}")
    return program


def _version(report: AgentReport, spec: Agent, env: dict[str, str]) -> None:
    program = shutil.which(spec.version_args[0], path=env.get("PATH", os.defpath)) if spec.version_args else None
    if program is None:
        report.add("agent", "warn", f"`{spec.version_args[0]}` is not on PATH; its version is unknown")
        return
    try:
        done = subprocess.run(
            [program, *spec.version_args[1:]], capture_output=True, text=True, timeout=VERSION_SECONDS,
            env=env, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        report.add("agent", "warn", f"{program} --version did not answer: {exc}")
        return
    line = next((ln.strip() for ln in (done.stdout or done.stderr).splitlines() if ln.strip()), "")
    if done.returncode != 0 or not line:
        report.add("agent", "warn", f"{program} --version exited {done.returncode}")
        return
    report.version = line[:120]
    report.add("agent", "ok", f"{spec.name} {report.version}")


def _trust(report: AgentReport, root: Path, settings: Path, spec: Agent, env: dict[str, str]) -> None:
    if spec.name == "codex":
        _codex_trust(report, root, settings, env)
    elif spec.name == "gemini":
        _gemini_trust(report, root, env)
    elif spec.name == "claude-code":
        _claude_trust(report, root, env)


def _claude_trust(report: AgentReport, root: Path, env: dict[str, str]) -> None:
    """Claude Code asks once per folder, in an interactive session, before it runs a project's hooks; the
    answer is kept in ``~/.claude.json``. ``claude -p`` runs them without asking."""
    base = env.get("CLAUDE_CONFIG_DIR") or env.get("HOME") or str(Path.home())
    path = Path(base) / ".claude.json"
    try:
        projects = json.loads(path.read_text(encoding="utf-8")).get("projects") or {}
    except (OSError, ValueError, AttributeError):
        projects = {}
    here = os.path.realpath(root)
    accepted = any(
        isinstance(v, dict) and v.get("hasTrustDialogAccepted") and os.path.realpath(k) in (here, *_parents(here))
        for k, v in (projects.items() if isinstance(projects, dict) else [])
    )
    if accepted:
        report.add("trust", "ok", f"folder trusted in {path}")
    else:
        report.add("trust", "warn", f"not trusted yet in {path}: {AGENTS['claude-code'].trust_step}")


def _parents(path: str) -> list[str]:
    found = []
    while os.path.dirname(path) != path:
        path = os.path.dirname(path)
        found.append(path)
    return found


def _codex_trust(report: AgentReport, root: Path, settings: Path, env: dict[str, str]) -> None:
    """Codex runs a project's hooks only once the user has trusted the project and each hook (a hash of
    its event, command and timeout, under a key naming the hooks file and the hook's position), both in
    the user's config.toml: read here, and each hook's hash computed as Codex does."""
    home = Path(env.get("CODEX_HOME") or Path(env.get("HOME") or Path.home()) / ".codex")
    config_path = home / "config.toml"
    config = _toml(report, config_path)
    if config is None:
        return
    step = AGENTS["codex"].trust_step
    found = config.get("projects")
    projects: dict[str, Any] = found if isinstance(found, dict) else {}
    here = os.path.realpath(root)
    level = next(
        (v.get("trust_level") for k, v in projects.items() if isinstance(v, dict) and os.path.realpath(k) == here), None
    )
    if level != "trusted":
        report.add("trust", "fail", f"{config_path} does not trust {here}, so Codex ignores .codex/: {step}")
        return
    state = (config.get("hooks") or {}).get("state") if isinstance(config.get("hooks"), dict) else None
    state = state if isinstance(state, dict) else {}
    hooks_file = os.path.realpath(settings)
    untrusted, modified = [], []
    data = json.loads(settings.read_text(encoding="utf-8"))
    for event, groups in (data.get("hooks") or {}).items():
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            for h, handler in enumerate(handlers if isinstance(handlers, list) else []):
                if not ours(handler):
                    continue
                key = f"{hooks_file}:{_snake(event)}:{g}:{h}"
                stored = state.get(key) if isinstance(state.get(key), dict) else None
                if stored is None or "trusted_hash" not in stored:
                    untrusted.append(event)
                elif stored["trusted_hash"] != codex_hook_hash(event, group, handler):
                    modified.append(event)
    if modified:
        report.add("trust", "fail", f"Codex's trust in our {', '.join(modified)} hook(s) is for an older command or "
                                    f"timeout, so it skips them: trust them again (`codex`, then /hooks)")  # fmt: skip
    elif untrusted:
        report.add("trust", "fail", f"Codex has not trusted our {', '.join(untrusted)} hook(s) yet and skips them "
                                    f"without a word: {step}")  # fmt: skip
    else:
        report.add("trust", "ok", f"project and hooks trusted in {config_path}")


def _snake(event: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(event))


def codex_hook_hash(event: str, group: dict[str, Any], handler: dict[str, Any]) -> str:
    """The hash Codex records when the user trusts one hook: SHA-256 over the compact, key-sorted JSON of
    the event, the group's matcher and the handler's type, command, timeout (600 when unset) and async."""
    import hashlib

    hook: dict[str, Any] = {
        "type": handler.get("type", "command"),
        "command": handler.get("command"),
        "timeout": handler.get("timeout", 600),
        "async": bool(handler.get("async", False)),
    }
    if "statusMessage" in handler:
        hook["statusMessage"] = handler["statusMessage"]
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [hook]}
    if group.get("matcher") is not None:
        identity["matcher"] = group["matcher"]
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _toml(report: AgentReport, path: Path) -> dict[str, Any] | None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        report.add("trust", "warn", f"can't read {path} on Python 3.10 (no tomllib); check Codex's trust with /hooks")
        return None
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        report.add("trust", "fail", f"{path} does not exist, so nothing is trusted yet: {AGENTS['codex'].trust_step}")
    except (OSError, tomllib.TOMLDecodeError) as exc:
        report.add("trust", "fail", f"{path} can't be read ({exc}); Codex will not start either")
    return None


def _gemini_trust(report: AgentReport, root: Path, env: dict[str, str]) -> None:
    if env.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true":
        report.add("trust", "ok", "GEMINI_CLI_TRUST_WORKSPACE=true trusts every folder")
        return
    home = Path(env.get("HOME") or Path.home())
    path = home / ".gemini" / "trustedFolders.json"
    try:
        folders = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        folders = None
    if not isinstance(folders, dict):
        report.add("trust", "fail", f"{path} does not trust this folder, so Gemini CLI skips project hooks: "
                                    f"{AGENTS['gemini'].trust_step}")  # fmt: skip
        return
    here = os.path.realpath(root)
    for folder, level in folders.items():
        base = os.path.realpath(os.path.expanduser(str(folder)))
        if (level == "TRUST_FOLDER" and (here == base or here.startswith(base + os.sep))) or (
            level == "TRUST_PARENT" and here.startswith(os.path.dirname(base) + os.sep)
        ):
            report.add("trust", "ok", f"trusted in {path} ({level} {folder})")
            return
        if level == "DO_NOT_TRUST" and here == base:
            report.add("trust", "fail", f"{path} marks this folder DO_NOT_TRUST: Gemini CLI skips its hooks")
            return
    report.add("trust", "fail", f"{path} does not trust this folder, so Gemini CLI skips project hooks: "
                                f"{AGENTS['gemini'].trust_step}")  # fmt: skip


def _learning(report: AgentReport, root: Path, spec: Agent) -> None:
    if spec.learning:
        report.add("learning", "warn", spec.learning)
        return
    from expertise_kit.learning.background import failed, pending

    expertise_dir = str(root / ".expertise")
    stuck = failed(expertise_dir)
    waiting = pending(expertise_dir)
    if stuck:
        report.add("learning", "warn", f"{len(stuck)} session(s) could not be learned; see {stuck[0]} (its `error`), "
                                       "then delete it, or run `expertise learn` on its transcript")  # fmt: skip
    elif waiting:
        report.add("learning", "ok", f"{len(waiting)} session(s) queued for the background learner")
    else:
        end = "after every turn" if spec.end_per_turn else "at session end"
        report.add("learning", "ok", f"learns {end} ({', '.join(spec.end_events)}), in the background")


def _reflect(
    report: AgentReport, root: Path, spec: Agent, found: dict[str, list[dict[str, Any]]], env: dict[str, str]
) -> None:
    """Whether the agent will be asked to write its lessons (docs/reflect.md), and why not."""
    from expertise_kit.config import load_config
    from expertise_kit.errors import UserError
    from expertise_kit.fast.reflectgate import ENV_SWITCH, MAX_ASKS, switched_off

    try:
        mode = load_config(root / ".expertise").reflect
    except UserError:
        return  # the config check reports it
    hooked = any(ours(h) == "reflect" for hooks in found.values() for h in hooks)
    if spec.reflect_event is None:
        if mode != "off" or hooked:
            report.add("reflect", "warn", f"`reflect: {mode}` does nothing for {spec.name}: {spec.reflect_note}")
        return
    if mode == "off":
        if hooked:
            report.add("reflect", "ok", f"the {spec.reflect_event} hook is installed; `reflect: off` in config.yaml")
        return
    if not hooked:
        report.add("reflect", "warn", f"`reflect: {mode}` in config.yaml, but no {spec.reflect_event} hook: run "
                                      f"`expertise hooks install --agent {spec.name} --reflect`")  # fmt: skip
        return
    off = switched_off(env)
    detail = f"asks at {spec.reflect_event}, at most {MAX_ASKS} times a session (`reflect: {mode}`)"
    report.add("reflect", "ok", detail + (f"; {ENV_SWITCH}=off here turns it off" if off else ""))


def _round_trip(report: AgentReport, root: Path, spec: Agent, env: dict[str, str]) -> None:
    """Run the pre hook as the agent would, with a sample payload, and check its answer."""
    event = spec.prompt_event or spec.start_event
    payload = {  # no session id: the sample leaves no session state behind
        "hook_event_name": event,
        "prompt": "expertise hooks doctor: sample prompt",
        "cwd": str(root),
        "workspace_roots": [str(root)],
    }
    from expertise_kit.agents.installer import hook_command

    with tempfile.TemporaryDirectory() as scratch:
        try:
            done = subprocess.run(
                hook_command("pre", spec.name), shell=True, input=json.dumps(payload), capture_output=True,
                text=True, timeout=ROUND_TRIP_SECONDS, cwd=root, env={**env, "TMPDIR": scratch},
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            report.add("round-trip", "fail", f"the pre hook took over {ROUND_TRIP_SECONDS} s")
            return
    out = done.stdout.strip()
    if done.returncode != 0:
        report.add("round-trip", "fail", f"the pre hook exited {done.returncode}: {done.stderr.strip()[:200]}")
        return
    note = done.stderr.strip().splitlines()[0] if done.stderr.strip() else ""
    if out:
        try:
            answer = json.loads(out)
        except ValueError:
            report.add("round-trip", "fail", f"the pre hook printed something that is not JSON: {out[:120]!r}")
            return
        if not isinstance(answer, dict):
            report.add("round-trip", "fail", "the pre hook printed JSON that is not an object")
            return
    elif spec.quiet_stdout:
        report.add("round-trip", "fail", f"the pre hook printed nothing; {spec.name} needs {spec.quiet_stdout}")
        return
    status = "warn" if note else "ok"
    said = f" (it said: {note[:200]})" if note else ""
    report.add("round-trip", status, f"the pre hook answered a sample {event} in JSON, exit 0{said}")


def merge_driver_check(root: Path) -> Check:
    """Whether this clone's git config names the merge driver `.expertise/.gitattributes` asks for: git
    config does not travel with a clone, so each clone runs `expertise init` once."""
    from expertise_kit.versioning.mergedriver import DRIVER_NAME

    try:
        done = subprocess.run(
            ["git", "config", "--get", f"merge.{DRIVER_NAME}.driver"], cwd=root, capture_output=True, text=True,
            timeout=VERSION_SECONDS, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("merge-driver", "warn", f"git could not be asked ({exc})")
    command = done.stdout.strip()
    if not command:
        return Check("merge-driver", "warn", "not registered in this clone, so .expertise/ files merge line by line "
                                             "and conflict: run `expertise init` once here")  # fmt: skip
    import shlex

    try:
        program = shlex.split(command)[0]
    except (ValueError, IndexError):
        program = ""
    if not program or (os.sep in program and not os.access(program, os.X_OK)) or shutil.which(program) is None:
        return Check("merge-driver", "fail", f"git config names `{program or command}`, which is not there: run "
                                             "`expertise init` again from this installation")  # fmt: skip
    return Check("merge-driver", "ok", f"registered ({program})")


def shared_layer_check(project: Any) -> Check:
    """What the shared layer (``refs/expertise/shared``) holds, whether it names a commit, and whether this
    clone shares it with a remote."""
    from expertise_kit.config import load_config
    from expertise_kit.errors import UserError
    from expertise_kit.versioning.shared import SHARED_REF, _git, read_ref, shared_files

    try:
        config = load_config(project.expertise_dir)
        if not config.shared_layer:
            return Check("shared-layer", "ok", "off (`shared: off` in config.yaml)")
    except UserError as exc:
        return Check("shared-layer", "warn", f"config.yaml can't be read: {exc.one_line()}")
    git = project.git
    commit = read_ref(git)
    if commit is None:
        return Check("shared-layer", "ok", f"on; nothing published to {SHARED_REF} yet")
    try:
        files = shared_files(git, commit)
    except (ValueError, OSError, UserError) as exc:
        return Check("shared-layer", "fail", f"{SHARED_REF} can't be read as a shared layer ({exc}): start it "
                                             f"over with `git update-ref -d {SHARED_REF}`")  # fmt: skip
    remotes = _git(git, ["for-each-ref", "--format=%(refname)", "refs/expertise/remotes/"], check=False).decode()
    synced = sorted({line.split("/")[3] for line in remotes.splitlines() if line.count("/") >= 4})
    shared = f"synced with {', '.join(synced)}" if synced else "not synced with any remote (`expertise sync` shares it)"
    from expertise_kit.versioning.ledger import is_ledger

    count = sum(1 for path in files if not is_ledger(path))
    mode = "on" if config.shared_publish else "read only (`shared: read`: nothing published here)"
    return Check("shared-layer", "ok", f"{mode}; {count} files at {commit[:12]}; {shared}")
