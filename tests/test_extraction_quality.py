"""Extraction keeps the lessons that matter: the real error, the real fix, one home per lesson."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import CWD, ClaudeSession
from conftest import TRANSCRIPTS, Cli

from expertise_kit.document.ids import error_signature
from expertise_kit.learning.audit import store_audit
from expertise_kit.learning.extract import extract, main_program, pick_error, program_kind
from expertise_kit.learning.portable import _portable
from expertise_kit.learning.quality import harness_noise, says_nothing, solution_names_action
from expertise_kit.learning.transcripts.model import Session, ToolCall
from expertise_kit.learning.transcripts.shell import program_of
from expertise_kit.learning.transcripts.tools import changed_lines, tool_call
from expertise_kit.project import find_project
from expertise_kit.store import Store

MAXNOOB = TRANSCRIPTS / "claude" / "maxnoobineating+UbuntuDevcontainer_Dotfiles" / "projects"
EDOUARD = TRANSCRIPTS / "codex" / "EdouardZemb+test-framework" / "sessions"


def _learn(run: Cli, *paths: Path) -> dict[str, Any]:
    result = run("learn", *map(str, paths), "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def _added(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(name, e["section"], e["text"]) for name, d in data["domains"].items() for e in d["added"]]


def _rejected(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for d in data["domains"].values() for r in d["rejected"]]


# -- harness noise ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "output",
    [
        "<tool_use_error>Sibling tool call errored</tool_use_error>",
        "File has not been read yet. Read it first before writing to it.",
        "File content (31337 tokens) exceeds maximum allowed tokens (25000).",
        "String to replace not found in file.\nString: foo",
        "File does not exist. Note: your current working directory is /x.",
        "InputValidationError: Edit failed due to the following issue: missing old_string",
        "EISDIR: illegal operation on a directory, read",
        "The user doesn't want to proceed with this tool use. The tool use was rejected",
        "Found 3 matches of the string to replace, but replace_all is false.",
    ],
)
def test_harness_noise_is_rejected_with_its_reason(project: Path, run: Cli, tmp_path: Path, output: str) -> None:
    s = ClaudeSession()
    s.prompt("Tidy the checkout module")
    s.tool("Edit", {"file_path": f"{CWD}/shop/checkout.py", "old_string": "a", "new_string": "b"}, output, error=True)
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    assert not [t for _, section, t in _added(data) if section == "learned_from_failures"]
    reasons = [r["reason"] for r in _rejected(data) if r["kind"] == "failure"]
    assert len(reasons) == 1 and ("harness noise" in reasons[0] or "the user" in reasons[0]), reasons


@pytest.mark.parametrize(
    "output",
    [
        "fatal: unable to access 'https://github.com/o/r.git/': Recv failure: Connection was reset",
        "fatal: unable to access 'https://github.com/o/r.git/': Failed to connect to github.com port 443 after "
        "21035 ms: Could not connect to server",
        "ssh: Could not resolve hostname github.com: Temporary failure in name resolution",
        "npm error code EAI_AGAIN\nnpm error request to https://registry.npmjs.org/x failed, reason: getaddrinfo "
        "EAI_AGAIN registry.npmjs.org",
        "error connecting to api.github.com\ncheck your internet connection or https://githubstatus.com",
    ],
)
def test_a_remote_network_failure_is_transient(project: Path, run: Cli, tmp_path: Path, output: str) -> None:
    s = ClaudeSession()
    s.prompt("Push the release branch")
    s.bash("git push origin release", output, exit_code=128)
    s.bash("git push origin release", "To github.com:o/r.git")  # it worked on the next try: still no lesson
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    assert not [t for _, section, t in _added(data) if section == "learned_from_failures"]
    assert [r["reason"] for r in _rejected(data) if r["kind"] == "failure"] == [
        "transient: the network to a remote host failed"
    ]


def test_a_refused_local_connection_and_a_missing_tool_are_judged_apart(
    project: Path, run: Cli, tmp_path: Path
) -> None:
    s = ClaudeSession()
    s.prompt("Check the API answers")
    s.bash("curl -sf localhost:4000/health", "curl: (7) Failed to connect to localhost port 4000: Connection refused",
           exit_code=7)  # fmt: skip
    s.bash("mix phx.server &", "started")
    s.bash("curl -sf localhost:4000/health", "ok")
    s.tool("AskUserQuestion", {"question": "which port?"}, "Error: No such tool available: AskUserQuestion",
           error=True)  # fmt: skip
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    added = [t for _, section, t in _added(data) if section == "learned_from_failures"]
    assert len(added) == 1 and "mix phx.server" in added[0]  # a lesson: start the server first
    reasons = [r["reason"] for r in _rejected(data) if r["kind"] == "failure"]
    assert reasons == ["harness noise: the agent called a tool its harness does not have"]


def test_real_harness_noise_of_a_claude_2_1_series_stores_nothing(project: Path, run: Cli) -> None:
    files = sorted(MAXNOOB.glob("*/*.jsonl")) if MAXNOOB.is_dir() else []
    if not files:
        pytest.skip("real transcripts not found (../shared)")
    data = _learn(run, *files)
    failures = [t for _, section, t in _added(data) if section == "learned_from_failures"]
    noise = ("EISDIR", "illegal operation on a directory", "modified since", "has not been read", "doesn't want")
    # What is stored comes from the model's own "Errors and fixes" summaries, never from harness noise.
    assert not [t for t in failures if any(marker in t for marker in noise)]
    reasons = {r["reason"] for r in _rejected(data) if r["kind"] == "failure"}
    assert any("directory" in r for r in reasons) and any("refused" in r for r in reasons)


# -- the error line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "line"),
    [
        ("Exit code 1\n** (CompileError) lib/app.ex:3: undefined function foo/0\n    (elixir) x", "** (Compile"),
        ("Exit code: 128\nWall time: 0.1 seconds\nOutput:\nfatal: not a git repository", "fatal: not a git"),
        ("Exit code 1\\nTraceback (most recent call last):\\n  x\\nKeyError: 'id'", "KeyError: 'id'"),
        ("  {:error, _reason} ->\n    error -> raise\nerror: undefined variable x", "error: undefined variable"),
        ("   Compiling hyper-timeout v0.5.2\nerror[E0599]: no variant named `X`", "error[E0599]"),
        ("F\nE   AssertionError: assert 1999 == 2000\n1 failed in 0.12s", "E   AssertionError"),
        # Colours are not text; a passing test named `error.test.ts` and the script line npm echoes are
        # not the error.
        ("\x1b[31m Failed Suites 1 \x1b[39m\n \x1b[32m✓\x1b[39m src/error.test.ts (2 tests)\n"
         "TypeError: load is not a function", "TypeError: load is not a function"),
        ("> vitest run src/utils/error.test.ts\n\nError: Failed to load url ./x", "Error: Failed to load url"),
        ("Error: \\u001b[2mexpect(\\u001b[22mreceived).toBe(expected)", "Error: expect(received).toBe("),
        ("PASS src/errors/a.test.ts\nFAIL src/b.test.ts\n  ReferenceError: document is not defined",
         "ReferenceError: document"),
    ],
)
def test_the_telling_line_is_picked(output: str, line: str) -> None:
    assert pick_error(output).startswith(line)


@pytest.mark.parametrize("output", ["Exit code 1", "Exit code: 2\nWall time: 0.2 seconds\nOutput:\n", "{:error, _r}"])
def test_an_error_that_says_nothing_is_rejected(project: Path, run: Cli, tmp_path: Path, output: str) -> None:
    assert pick_error(output) == ""
    s = ClaudeSession()
    s.prompt("Run the build")
    s.bash("./scripts/build.sh", output.removeprefix("Exit code 1"), exit_code=1)
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    assert not [t for _, section, t in _added(data) if section == "learned_from_failures"]
    assert any("says nothing" in r["reason"] for r in _rejected(data))
    assert says_nothing("exit code 1") and says_nothing("Exit code: 1") and not says_nothing("fatal: no upstream")


# -- pairing by program and subcommand --------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("cd app && mix test test/x_test.exs", "mix test"),
        ("bundle exec rspec spec/a_spec.rb", "rspec"),
        ("uv run pytest -q", "pytest"),
        ("poetry run pytest", "pytest"),
        ("npx vitest run", "vitest"),
        ("pnpm exec playwright test", "playwright"),
        ("git -C repo push -u origin feat/x", "git push"),
        ("./gradlew test", "gradlew test"),
        ("FOO=1 mix deps.get", "mix deps.get"),
        ("timeout 60 pytest tests/", "pytest"),
        ("timeout -s KILL 5m cargo test", "cargo test"),
        ("sudo -u app npm test", "npm test"),
        ("nice -n 10 make all", "make all"),
        ("env PYTHONPATH=. pytest -q", "pytest"),
    ],
)
def test_programs_are_seen_through_their_wrappers(command: str, program: str) -> None:
    assert program_of(command) == program


def test_compound_commands_name_the_program_that_matters() -> None:
    assert main_program("rm -rf /tmp/x && cargo new /tmp/x && cargo check") == "cargo check"
    assert main_program("python -m pytest -q 2>&1 | tail -5") == "python -m pytest"
    assert program_kind("mix test") == "test" and program_kind("mix format") == "tooling"
    assert program_kind("git push") == "tooling" and program_kind("bundle install") == "tooling"
    assert program_kind("cargo clippy") == "tooling" and program_kind("npm install") == "tooling"


def test_mix_test_is_not_fixed_by_mix_deps_get(project: Path, run: Cli, tmp_path: Path) -> None:
    s = ClaudeSession()
    s.prompt("Make the account tests pass")
    s.bash("mix test test/accounts_test.exs", "** (UndefinedFunctionError) function Accounts.get/1 is undefined",
           exit_code=2)  # fmt: skip
    s.bash("mix deps.get", "All dependencies are up to date")
    s.bash("mix test test/accounts_test.exs", "** (KeyError) key :email not found", exit_code=2)
    s.tool("Edit", {"file_path": f"{CWD}/lib/accounts.ex", "old_string": "a", "new_string": "b"}, "ok")
    s.bash("mix test test/accounts_test.exs", "3 tests, 0 failures")
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    failures = {t for _, section, t in _added(data) if section == "learned_from_failures"}
    # The first failure's window closed when the same command failed differently: no fix is claimed,
    # and `mix deps.get` (another subcommand) was not taken for its fix. Seen once and never fixed, it is
    # held back, not stored.
    assert "`mix test test/accounts_test.exs`" not in failures
    assert any("UndefinedFunctionError" in h["text"] for h in data["held"])
    assert any(t.startswith("`mix test test/accounts_test.exs` -> changed lib/accounts.ex") for t in failures)
    assert not any("deps.get" in t for t in failures)


def _session(*calls: ToolCall) -> Session:
    return Session("s-1", "claude-code", Path("s.jsonl"), cwd=CWD, prompts=["Fix it"], calls=list(calls))


def test_the_solution_says_what_changed() -> None:
    session = _session(
        ToolCall("1", "Bash", command="npm test", ok=False, error="TypeError: cart.total is not a function"),
        ToolCall("2", "Bash", command="npm install", ok=True),
        ToolCall("3", "Edit", paths=(f"{CWD}/src/cart.ts",), modifies=(f"{CWD}/src/cart.ts",), ok=True,
                  said="The cart exports total as a property, not a method. Let me fix the call.",
                  excerpt="const sum = cart.total;"),  # fmt: skip
        ToolCall("4", "Bash", command="npm test", ok=True),
    )
    [failure] = [item for item in extract(session, CWD).learnings if item.kind == "failure"]
    solution = failure.raw["solution"]
    assert solution.startswith("The cart exports total as a property, not a method.")
    assert "changed src/cart.ts: `const sum = cart.total;`" in solution
    assert "npm install" not in solution  # an install is no fix of a test: not the same subcommand... nor an action
    assert solution_names_action(solution)
    assert not solution_names_action("edited src/cart.ts") and not solution_names_action("read a.py first")


def test_an_edit_that_turns_an_error_into_another_is_its_fix() -> None:
    """Compiler errors are fixed one at a time: the edit made before the same command failed differently
    fixed the first error, so that failure gets the edit; the second gets the edit that made it pass."""
    cargo = "cargo test --test startup"
    session = _session(
        ToolCall("1", "Bash", command=cargo, ok=False, error="error[E0599]: no method named `is_some` found"),
        ToolCall("2", "Edit", paths=(f"{CWD}/src/db.rs",), modifies=(f"{CWD}/src/db.rs",), ok=True,
                  excerpt=".map(|guard| guard.is_some())"),
        ToolCall("3", "Bash", command=cargo, ok=False, error="error[E0277]: `Index` doesn't implement `Debug`"),
        ToolCall("4", "Edit", paths=(f"{CWD}/src/db.rs",), modifies=(f"{CWD}/src/db.rs",), ok=True,
                  said="The Index type has no Debug impl, so I will write one by hand.",
                  excerpt="impl fmt::Debug for Backend {"),
        ToolCall("5", "Bash", command=cargo, ok=True),
    )  # fmt: skip
    first, second = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert first["solution"] == "changed src/db.rs: `.map(|guard| guard.is_some())`"
    assert second["solution"].startswith("The Index type has no Debug impl")
    assert "impl fmt::Debug for Backend {" in second["solution"] and "is_some" not in second["solution"]


def test_another_call_of_the_same_program_failing_differently_is_not_this_one_fixed() -> None:
    session = _session(
        ToolCall("1", "Bash", command="gh api user/emails", ok=False, error="gh: Not Found (HTTP 404)"),
        ToolCall("2", "Edit", paths=(f"{CWD}/notes.md",), modifies=(f"{CWD}/notes.md",), ok=True, excerpt="- repo"),
        ToolCall("3", "Bash", command="gh api repos/o/r", ok=False, error="gh: Branch not protected (HTTP 404)"),
    )  # fmt: skip
    [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"][:1]
    assert "solution" not in failure


def test_an_edit_of_the_file_the_error_names_is_a_fix_said_as_not_re_run() -> None:
    error = 'File "/work/shop/app.py", line 73\n    x = f(\\"pt\\")\nSyntaxError: unexpected character after "\\"'
    named = _session(
        ToolCall("1", "Bash", command="python app.py", ok=False, error=error),
        ToolCall("2", "Edit", paths=(f"{CWD}/app.py",), modifies=(f"{CWD}/app.py",), ok=True, excerpt='x = f("pt")'),
    )
    [failure] = [item.raw for item in extract(named, CWD).learnings if item.kind == "failure"]
    assert failure["solution"] == 'changed app.py: `x = f("pt")` (not re-run)'
    # An edit of some other file, or another program run first, is no such fix.
    other = _session(
        ToolCall("1", "Bash", command="python app.py", ok=False, error=error),
        ToolCall("2", "Edit", paths=(f"{CWD}/b.py",), modifies=(f"{CWD}/b.py",), ok=True, excerpt="y = 1"),
    )
    ran = _session(
        ToolCall("1", "Bash", command="python app.py", ok=False, error=error),
        ToolCall("2", "Bash", command="pip install torch", ok=True),
        ToolCall("3", "Edit", paths=(f"{CWD}/app.py",), modifies=(f"{CWD}/app.py",), ok=True, excerpt='x = f("pt")'),
    )
    for session in (other, ran):
        [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
        assert "solution" not in failure, failure


def test_an_edit_fix_says_the_lines_it_changed_and_what_they_were() -> None:
    """The lines an edit quotes around its change are left out, and the lines it replaced are said: the
    difference is the lesson (`input()` in a script the agent runs, a config key's right name)."""
    old = 'def main():\n    play(track)\n    input("Press Enter to continue")\n    return 0\n'
    new = "def main():\n    play(track)\n    time.sleep(3)\n    return 0\n"
    def fixed_by(edit: dict[str, str], error: str) -> str:
        """The fix said for ``error`` of `python FILE`, when the Edit ``edit`` made it pass."""
        call = tool_call("2", "Edit", edit, "main", "")
        call.ok = True
        script = f"python {Path(edit['file_path']).name}"
        session = _session(ToolCall("1", "Bash", command=script, ok=False, error=error), call,
                           ToolCall("3", "Bash", command=script, ok=True))  # fmt: skip
        [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
        return str(failure["solution"])

    edit = {"file_path": f"{CWD}/play.py", "old_string": old, "new_string": new}
    said = 'changed play.py: `time.sleep(3)` (was `input("Press Enter to continue")`)'
    assert fixed_by(edit, "EOFError: EOF when reading a line") == said
    # Lines only taken out are said as removed.
    cut = {"file_path": f"{CWD}/play.py", "old_string": "a\nimport pdb\nb", "new_string": "a\nb"}
    assert fixed_by(cut, "EOFError: EOF when reading a line") == "changed play.py: removed `import pdb`"
    # A MultiEdit of one place is said the same way; of several places, by its new lines only: which old
    # lines went with which can't be said in one line.
    one = tool_call("5", "MultiEdit", {"file_path": "k.json", "edits": [
        {"old_string": '{\n  "ignoreUnlisted": [],\n}', "new_string": '{\n  "ignoreDependencies": [],\n}'},
        {"old_string": "x = 1", "new_string": "x = 1"},
    ]}, "", "")  # fmt: skip
    assert one.excerpt == '"ignoreDependencies": [],' and changed_lines(*one.change) == (
        '  "ignoreUnlisted": [],', '  "ignoreDependencies": [],'
    )
    many = tool_call("6", "MultiEdit", {"file_path": "p.py", "edits": [
        {"old_string": "import os", "new_string": "import os\nimport time"},
        {"old_string": "play()\ninput('x')", "new_string": "play()"},
    ]}, "", "")  # fmt: skip
    assert (many.excerpt, many.change) == ("import time", ("", ""))
    # A patch of one place in one file keeps its lines around the change the same way.
    patch = "*** Begin Patch\n*** Update File: a.rs\n@@\n fn a() {\n-    x.is_some()\n+    x.is_ok()\n }\n*** End Patch"
    patched = tool_call("7", "apply_patch", {"input": patch}, "", "")
    assert patched.excerpt == "x.is_ok()" and changed_lines(*patched.change) == ("    x.is_some()", "    x.is_ok()")
    two = patch.replace("*** End Patch", "*** Update File: b.rs\n@@\n-old_b\n+new_b\n*** End Patch")
    assert tool_call("8", "apply_patch", {"input": two}, "", "").change == ("", "")
    # A key's body changed between unchanged BEGIN and END lines is scrubbed with them: no body is stored.
    key = "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----"
    old_body, new_body = "MIIEpQIBAAKCAQEAzZ9" + "a1" * 30, "MIIEowIBAAKCAQEA7b1m" + "b2" * 30
    rotate = {"file_path": f"{CWD}/play.py", "old_string": key.format(old_body), "new_string": key.format(new_body)}
    said = fixed_by(rotate, "EOFError: EOF when reading a line")
    assert "MIIE" not in said and said == "edited play.py"
    # A key the scrubbing does not know (split over two literals) is never said as what the fix took out.
    split = {"file_path": f"{CWD}/play.py", "old_string": 'key = ("sk-live-4eC39HqLyjW" "DarjtT1zdp7dc")',
             "new_string": 'key = os.environ["KEY"]'}  # fmt: skip
    said = 'changed play.py: `key = os.environ["KEY"]` (was `key = ("[REDACTED:token]" "[REDACTED:token]")`)'
    assert fixed_by(split, "EOFError: EOF when reading a line") == said
    # Indentation is a change, said as one.
    reindent = {"file_path": f"{CWD}/a.py", "old_string": "if x:\n  y()", "new_string": "if x:\n    y()"}
    said = "changed a.py: the indentation or spacing of `y()`"
    assert fixed_by(reindent, "IndentationError: unindent does not match") == said
    # A change at the end of a long line is said from a word before it on both sides, not cut away.
    line = '"test": "vitest run --coverage --silent --passWithNoTests --reporter={}", "lint": "eslint src"'
    long = {"file_path": f"{CWD}/package.json", "old_string": line.format("dot"), "new_string": line.format("json")}
    said = ('changed package.json: `...--passWithNoTests --reporter=json", "lint": "eslint src"`'
            ' (was `...--passWithNoTests --reporter=dot", "lint": "eslint src"`)')
    assert fixed_by(long, "EOFError: EOF when reading a line") == said
    # A long word (a URL) before the change is cut into, so the change is in sight on both sides.
    url = '"registry": "https://registry.example.com/artifactory/api/npm/npm-virtual/{}"'
    moved = {"file_path": f"{CWD}/.npmrc", "old_string": url.format("v1"), "new_string": url.format("v2")}
    said = 'changed .npmrc: `...pm-virtual/v2"` (was `...pm-virtual/v1"`)'
    assert fixed_by(moved, "EOFError: EOF when reading a line") == said
    # A re-indent of a long block is still one, and a key replaced by another is no change of spacing.
    block = "\n".join(f"value_{n} = compute_value(alpha_{n}, beta_{n})" for n in range(60))
    wide = {"file_path": f"{CWD}/a.py", "old_string": "if x:\n" + block.replace("\n", "\n  "),
            "new_string": "if x:\n" + block.replace("\n", "\n    ")}  # fmt: skip
    assert fixed_by(wide, "IndentationError: unindent does not match").startswith(
        "changed a.py: the indentation or spacing of `value_1 = compute_value(alpha_1"
    )
    rotated = {"file_path": f"{CWD}/a.py", "old_string": 'STRIPE = "Ab3iK2ZWeqLm9Xq2Pz"',
               "new_string": 'STRIPE = "Zq9ubbbPIaQ7rT1kYw"'}  # fmt: skip
    assert fixed_by(rotated, "EOFError: EOF when reading a line") == "edited a.py"
    # A key where the change's text stops being read is left out whole, not said in part, and no change
    # past that point is taken for none.
    keys = ("Ab3iK2ZWeqLm9Xq2Pz", "Zq9ubbbPIaQ7rT1kYw")
    for width in (1979, 7979, 7990, 7996):
        head = "x" * width + ' = ("i", "{}")'
        cut = {"file_path": f"{CWD}/a.py", "old_string": head.format(keys[0]), "new_string": head.format(keys[1])}
        said = fixed_by(cut, "EOFError: EOF when reading a line")
        assert said == "edited a.py", (width, said)
    big = "\n".join([block] * 4)  # longer than is read
    beyond = {"file_path": f"{CWD}/a.py", "old_string": f"if x:\n  {big.replace(chr(10), chr(10) + '  ')}\n  z = 1",
              "new_string": f"if x:\n    {big.replace(chr(10), chr(10) + '    ')}\n    z = 2"}  # fmt: skip
    assert len(big) > 8000 and fixed_by(beyond, "IndentationError: unindent does not match") == "edited a.py"
    # A cut near a scrubbed secret starts at its marker, never inside it.
    query = "u=https://example.com/" + "a" * 40 + "/x?t=" + "Ab3iK2ZWeqLm9Xq2Pz" + "&v={}"
    marked = {"file_path": f"{CWD}/a.env", "old_string": query.format(1), "new_string": query.format(2)}
    said = fixed_by(marked, "EOFError: EOF when reading a line")
    assert said.startswith("changed a.env: `...[REDACTED:") and "&v=2" in said, said
    # A home directory in a quoted value is not `~`, which nothing expands there: it is said as <home>.
    home = {"file_path": f"{CWD}/settings.json", "old_string": '"DIR": "__HOME__/.app"',
            "new_string": '"DIR": "/home/jenkins/.app", "HOME": "/home/jenkins"'}  # fmt: skip
    said = 'changed settings.json: `"DIR": "<home>/.app", "HOME": "<home>"` (was `"DIR": "__HOME__/.app"`)'
    assert fixed_by(home, "EOFError: EOF when reading a line") == said


def test_the_agents_next_words_are_kept_only_when_they_speak_of_the_failure() -> None:
    def solution(said: str) -> str:
        session = _session(
            ToolCall("1", "Bash", command="npx knip", ok=False,
                      error="ERROR: Validation error: Unrecognized key(s) in object: 'ignoreUnlisted'"),
            ToolCall("2", "Edit", paths=(f"{CWD}/knip.json",), modifies=(f"{CWD}/knip.json",), ok=True, said=said,
                      excerpt='"ignoreDependencies": ["x"]'),
            ToolCall("3", "Bash", command="npx knip", ok=True),
        )  # fmt: skip
        [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
        return str(failure["solution"])

    assert solution("Wrong key name again. Let me check the docs.").startswith("Wrong key name again.")
    assert solution("Perfect! The release is out and everyone is happy.").startswith("changed knip.json")


def test_a_start_up_files_parse_error_above_the_real_error_does_not_hide_it() -> None:
    output = "(eval):1: parse error near `()'\nTraceback (most recent call last):\nNameError: name 'nn' is not defined"
    session = _session(ToolCall("1", "Bash", command="python test_fix.py", ok=False, error=output))
    [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert failure["error"] == "NameError: name 'nn' is not defined"


def test_a_compound_of_look_ups_that_finds_nothing_is_no_lesson() -> None:
    session = _session(
        ToolCall("1", "Bash", command="sleep 60 && ls -t checkpoints/ | head -3 && tail -3 train_log.txt", ok=False,
                  error="tail: cannot open 'train_log.txt' for reading: No such file or directory"),
        ToolCall("2", "Bash", command="sleep 5 && make train", ok=False, error="ModuleNotFoundError: torch"),
    )  # fmt: skip
    extraction = extract(session, CWD)
    assert [item.raw["issue"] for item in extraction.learnings if item.kind == "failure"] == ["`sleep 5 && make train`"]
    assert any("look-up" in r.reason for r in extraction.rejected)


def test_a_multi_line_command_is_described_by_what_it_ran() -> None:
    session = _session(
        ToolCall("1", "Bash", command='python -c "\nimport torch\nprint(torch.cuda.mem_info())\n"', ok=False,
                  error="AttributeError: module 'torch.cuda' has no attribute 'mem_info'"),
    )  # fmt: skip
    [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert failure["issue"] == '`python -c " import torch print(torch.cuda.mem_info()) "`'
    heredoc = _session(
        ToolCall("1", "Bash", command="python - <<'PY'\nimport yaml\nPY", ok=False,
                  error="/bin/bash: line 1: python: command not found"),
    )  # fmt: skip
    [failure] = [item.raw for item in extract(heredoc, CWD).learnings if item.kind == "failure"]
    assert failure["issue"] == "`python - <<'PY'`"  # a heredoc's first line is whole; its body is data


def test_a_fix_found_at_a_later_sighting_in_the_session_is_kept() -> None:
    crlf = "/usr/bin/env: 'bash\\r': No such file or directory"
    session = _session(
        ToolCall("1", "Bash", command="scripts/setup.sh --json", ok=False, error=crlf),
        ToolCall("2", "Bash", command="scripts/setup.sh --json", ok=False, error=crlf),
        ToolCall("3", "Bash", command="perl -pi -e 's/\\r$//' scripts/setup.sh", ok=True),
        ToolCall("4", "Bash", command="scripts/setup.sh --json", ok=True),
    )
    [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert failure["issue"] == "`scripts/setup.sh --json`" and "perl -pi" in failure["solution"]


def test_another_scripts_fix_for_the_same_error_is_not_this_ones() -> None:
    """A blind review judged it wrong: `setup.sh` failing, stored with the fix made to `other.sh` later."""
    crlf = "/usr/bin/env: 'bash\\r': No such file or directory"
    session = _session(
        ToolCall("1", "Bash", command="scripts/setup.sh --json", ok=False, error=crlf),
        ToolCall("2", "Bash", command="scripts/other.sh", ok=False, error=crlf),
        ToolCall("3", "Bash", command="perl -pi -e 's/\\r$//' scripts/other.sh", ok=True),
        ToolCall("4", "Bash", command="scripts/other.sh", ok=True),
    )
    [failure] = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert failure["issue"] == "`scripts/setup.sh --json`" and "solution" not in failure


@pytest.mark.parametrize(
    ("tool", "command", "error", "reason"),
    [
        ("Bash", "pytest tests/unit", "failed in sandbox: sandbox error: command was killed by a signal", "sandbox"),
        ("Bash", "scripts/new.sh", "failed in sandbox MacosSeatbelt with execution error: Denied { x }", "sandbox"),
        ("Bash", "git fetch --all", "error: cannot open '.git/FETCH_HEAD': Operation not permitted", ".git"),
        ("Bash", "cargo test", "command timed out after 10031 milliseconds", "time limit"),
        ("Bash", "python3 -c pass", "failed in sandbox:", "says nothing"),
        ("WebFetch", "", "Request failed with status code 403", "web look-up"),
        ("Bash", "python a.py 2>&;python b.py", "(eval):1: parse error near `;'", "did not parse"),
        ("Bash", "tail -5\"", "bash: eval: line 1: unexpected EOF while looking for matching `\"'", "parse"),
        ("Bash", "python t.py &", "Tool permission request failed: Error: Tool permission stream closed", "permission"),
        ("mcp__search__web", "", "MCP error -32001: user-cancel", "cancelled"),
    ],
)
def test_the_agents_sandbox_and_web_tools_are_not_project_lessons(
    tool: str, command: str, error: str, reason: str
) -> None:
    session = _session(ToolCall("1", tool, command=command, ok=False, error=error))
    extraction = extract(session, CWD)
    assert not [item for item in extraction.learnings if item.kind == "failure"]
    assert [r.reason for r in extraction.rejected if reason in r.reason], extraction.rejected


def test_a_failure_hidden_in_exit_0_output_counts() -> None:
    session = _session(
        ToolCall("1", "Bash", command="pytest -q | tail -3", ok=True,
                  output="FAILED tests/test_a.py::test_x - ValueError: bad\n1 failed, 3 passed"),  # fmt: skip
        ToolCall("2", "Edit", paths=(f"{CWD}/a.py",), modifies=(f"{CWD}/a.py",), ok=True, excerpt="return int(x)"),
        ToolCall("3", "Bash", command="pytest -q | tail -3", ok=True, output="4 passed"),
    )
    extraction = extract(session, CWD)
    [failure] = [item for item in extraction.learnings if item.kind == "failure"]
    assert "ValueError: bad" in failure.raw["error"] and "return int(x)" in failure.raw["solution"]
    assert extraction.failures_seen == 1


def test_a_compiler_error_piped_away_from_its_exit_code_is_no_success() -> None:
    ts2769 = "src/agent.ts(40,5): error TS2769: No overload matches this call."
    session = _session(
        ToolCall("1", "Bash", command="npm run build", ok=False,
                  error="src/agent.ts(217,9): error TS2322: Type '\"press\"' is not assignable to type 'Kind'."),
        ToolCall("2", "Edit", paths=(f"{CWD}/src/types.ts",), modifies=(f"{CWD}/src/types.ts",), ok=True,
                  excerpt="type Kind = 'click' | 'press'"),
        ToolCall("3", "Bash", command="npm run build 2>&1 | head -50", ok=True, output=ts2769),
        ToolCall("4", "Bash", command="grep -rn 'error TS' notes | head", ok=True, output=f"notes/a.md:3: {ts2769}"),
    )  # fmt: skip
    failures = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    first = next(f for f in failures if "TS2322" in f["error"])
    assert "head -50` worked" not in first["solution"]  # it did not: it failed with another error
    assert "'click' | 'press'" in first["solution"]  # the edit that made this error go away
    assert [f for f in failures if "TS2769" in f["error"]]  # the piped build's own failure
    assert not [f for f in failures if "grep" in f["issue"]]  # a look-up that found the words is no failure


def test_an_error_marked_with_a_cross_under_a_ruled_heading_is_read() -> None:
    output = (
        "check \u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\n\n"
        "  \u00d7 No files were processed in the specified paths.\n\n  i Check your biome.json\n"
    )
    assert pick_error(output) == "\u00d7 No files were processed in the specified paths."
    assert pick_error("check \u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\u2501\nChecked 0 files.") == ""


def test_compaction_summaries_give_failure_fix_pairs() -> None:
    summary = (
        "Summary:\n1. Primary Request:\n   Build it\n\n4. Errors and fixes:\n"
        '   - Error: "The C compiler `/usr/bin/clang` is not able to compile a simple test program"\n'
        "      - Root cause: System clang doesn't support Xtensa\n"
        "      - Fix: Don't use `-D IDF_TOOLCHAIN=clang`; use the default GCC with `idf.py reconfigure`\n"
        "   - Error: Python virtual environment not found when sourcing export.sh\n"
        "      - Fix: used the activation script activate_idf_v6.0.1.sh instead\n\n"
        "5. Problem Solving:\n   - Error: not in the section\n      - Fix: ignored\n"
    )
    session = _session()
    session.summaries = [summary]  # type: ignore[attr-defined]
    failures = [item.raw for item in extract(session, CWD).learnings if item.kind == "failure"]
    assert [f["error"][:30] for f in failures] == ["The C compiler `/usr/bin/clang", "Python virtual environment not"]
    assert "idf.py reconfigure" in failures[0]["solution"]


def test_generic_tool_orders_are_not_learned(project: Path, run: Cli, tmp_path: Path) -> None:
    s = ClaudeSession()
    s.prompt("Find the pricing code")
    s.tool("Glob", {"pattern": "**/*.py"}, "shop/pricing.py")
    s.tool("Read", {"file_path": f"{CWD}/shop/pricing.py"}, "def price(): ...")
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    assert not [t for _, section, t in _added(data) if section == "effective_patterns"]


def test_the_shells_test_builtin_is_no_test_runner(project: Path, run: Cli, tmp_path: Path) -> None:
    s = ClaudeSession()
    s.prompt("Build the bundle")
    s.tool("Edit", {"file_path": f"{CWD}/shop/pricing.py", "old_string": "a", "new_string": "b"}, "ok")
    s.tool("Bash", {"command": "test -f dist/bundle.js && echo built"}, "built")
    s.tool("Bash", {"command": "pytest -q"}, "3 passed in 0.1s")
    data = _learn(run, s.write(tmp_path / "s.jsonl"))
    patterns = [t for _, section, t in _added(data) if section == "effective_patterns"]
    assert patterns == ["Run `pytest -q` after editing: this project's tests run with it"]


@pytest.mark.parametrize(
    ("command", "runs_tests"),
    [("test -f dist/bundle.js", False), ("/usr/bin/test -d build", False), ("script/test", True),
     ("./test --verbose", True), ("bin/test", True), ("pytest -q", True)],
)  # fmt: skip
def test_a_project_test_script_is_a_test_run_the_builtin_is_not(command: str, runs_tests: bool) -> None:
    from expertise_kit.learning.extract import _is_test

    assert _is_test(command) is runs_tests


# -- one home per lesson ----------------------------------------------------------------------------


def test_error_signatures_mask_branches_temp_paths_numbers_hashes_and_durations() -> None:
    same = [  # fmt: skip
        ("fatal: The current branch feat/login has no upstream", "fatal: The current branch fix-db has no upstream"),
        ("ERROR: Not on a feature branch. Current branch: main", "ERROR: Not on a feature branch. Current branch: x/y"),
        ("command timed out after 10031 milliseconds", "command timed out after 12 ms"),
        ("error: could not apply fb89908... fix", "error: could not apply 04ef02a... fix"),
        ("No such file: /tmp/pytest-of-a/pytest-3/x.py", "No such file: /tmp/tmp.BpSznhzbvo/y.py"),
    ]
    for first, second in same:
        assert error_signature(first) == error_signature(second), (first, second)
    assert error_signature("fatal: not a git repository") != error_signature("fatal: no upstream configured")


def _push_session(session_id: str, branch: str, prompt: str, edited: str) -> ClaudeSession:
    s = ClaudeSession(session_id)
    s.prompt(prompt)
    s.tool("Edit", {"file_path": f"{CWD}/{edited}", "old_string": "a", "new_string": "b"}, "ok")
    hint = f"To push the current branch and set the remote as upstream, use\n\n git push --set-upstream origin {branch}"
    s.bash("git push", f"fatal: The current branch {branch} has no upstream branch.\n{hint}", exit_code=128)
    s.bash(f"git push --set-upstream origin {branch}", "branch set up to track")
    return s


def test_the_same_lesson_from_many_sessions_is_one_entry_in_general(project: Path, run: Cli, tmp_path: Path) -> None:
    sessions = [
        ("aaaaaaaa-0000-0000-0000-000000000001", "feat/db-index", "Add an index to the orders table", "db/s.sql"),
        ("bbbbbbbb-0000-0000-0000-000000000002", "fix/api-500", "Fix the 500 from the orders endpoint", "api/o.py"),
        ("cccccccc-0000-0000-0000-000000000003", "ui-button", "Restyle the checkout button", "components/B.tsx"),
        ("dddddddd-0000-0000-0000-000000000004", "feat/db-2", "Add a migration for refunds", "migrations/2.sql"),
    ]
    for number, (session_id, branch, prompt, edited) in enumerate(sessions):
        _learn(run, _push_session(session_id, branch, prompt, edited).write(tmp_path / f"{number}.jsonl"))
    homes = {p.stem: p.read_text() for p in (project / ".expertise").glob("*.yaml") if "upstream" in p.read_text()}
    assert list(homes) == ["general"]
    assert homes["general"].count("no upstream") == 1 and "recurrence: 4" in homes["general"]
    audit = store_audit(Store(find_project(project)))
    assert audit["entries_in_two_domains"] == 0 and audit["paths_in_two_domains"] == 0


def test_a_file_lives_where_its_path_says_and_never_in_two_domains(project: Path, run: Cli, tmp_path: Path) -> None:
    for number, prompt in enumerate(["Add an index on orders", "Fix the checkout button colour"]):
        s = ClaudeSession(f"eeeeeeee-0000-0000-0000-00000000000{number}")
        s.prompt(prompt)
        s.tool("Edit", {"file_path": f"{CWD}/notes/plan.txt", "old_string": "a", "new_string": "b"}, "ok")
        s.tool("Edit", {"file_path": f"{CWD}/lib/shop_web/live/cart_live.ex", "old_string": "a", "new_string": "b"},
               "ok")  # fmt: skip
        s.tool("Edit", {"file_path": f"{CWD}/priv/repo/migrations/1_add.exs", "old_string": "a", "new_string": "b"},
               "ok")  # fmt: skip
        _learn(run, s.write(tmp_path / f"{number}.jsonl"))
    where = {
        path: [p.stem for p in (project / ".expertise").glob("*.yaml") if f"path: {path}" in p.read_text()]
        for path in ("notes/plan.txt", "lib/shop_web/live/cart_live.ex", "priv/repo/migrations/1_add.exs")
    }
    assert where == {
        "notes/plan.txt": ["general"],  # no path signal: general, not the session's domain
        "lib/shop_web/live/cart_live.ex": ["frontend"],
        "priv/repo/migrations/1_add.exs": ["database"],
    }


def test_harness_noise_in_a_hand_reviewed_store_is_counted(project: Path, run: Cli) -> None:
    result = run("add", "api", "failures", "Edit api/x.py", "--error", "File has not been read yet", "--solution", "x")
    assert result.exit_code == 0, result.output
    audit = store_audit(Store(find_project(project)))
    assert audit["failures"] == 1 and audit["harness_noise"] == 1 and audit["with_action"] == 0.0
    assert harness_noise("fatal: no upstream") is None


# -- the real series --------------------------------------------------------------------------------


def test_a_real_codex_series_learns_clean(project: Path, run: Cli) -> None:
    files = sorted(EDOUARD.rglob("*.jsonl")) if EDOUARD.is_dir() else []
    if not files:
        pytest.skip("real transcripts not found (../shared)")
    for path in files:
        _learn(run, path)
    audit = store_audit(Store(find_project(project)))
    assert audit["harness_noise"] == 0 and audit["says_nothing"] == 0
    assert audit["paths_in_two_domains"] == 0 and audit["entries_in_two_domains"] == 0
    assert audit["near_duplicates"] <= 0.01
    text = "".join(p.read_text() for p in (project / ".expertise").glob("*.yaml"))
    assert "No such file or directory" not in text  # a guessed path is not a lesson
    # One the prompts keep naming, found elsewhere in two sessions, is: where it really is.
    assert "`_bmad/bmm/workflows/3-solutioning/architecture/steps/step-01-init.md` is not there: read `_bmad/" in text
    assert "Exit code" not in text


@pytest.mark.parametrize(
    "text, portable",
    [
        ('"DIR": "/home/bob/.app"', '"DIR": "<home>/.app"'),  # nothing expands a quoted ~
        ("cd /home/bob/app && make", "cd ~/app && make"),
        ('\\"/home/bob\\"', '\\"<home>\\"'),  # an escaped quote keeps its backslash
        ("PATH=/home/bob:/usr/bin", "PATH=~:/usr/bin"),  # a user name ends where the list goes on
        ("(/home/bob)", "(~)"),
        ("C:\\\\Users\\\\bob\\\\app", "~\\\\app"),  # JSON-escaped
        ("c:\\users\\bob\\app", "~\\app"),
        ("c:/users/bob/app", "~/app"),
        ("C:/Users/bob", "~"),
        ("C:\\Users\\bob Smith\\app", "~\\app"),  # a Windows profile name may hold spaces
        ("C:\\Users\\bob is here", "~ is here"),  # with no separator after, the name is one word
        ("gcc -I/home/bob/include -L/Users/bob/lib", "gcc -I~/include -L~/lib"),  # after a short flag
        ("docker run -v/home/bob:/x", "docker run -v~:/x"),
        ("C:\\\\Users\\\\bob\\\\app", "~\\\\app"),  # JSON inside JSON
        ("\\\\wsl.localhost\\Ubuntu\\home\\bob\\app", "~\\app"),  # WSL seen from Windows
        ("ls ~bob/app", "ls ~/app"),  # a shell's home of user bob
        ("cd /home//bob/app", "cd ~/app"),
        ("GET /open?path=%2Fhome%2Fbob%2Fapp", "GET /open?path=~%2Fapp"),  # URL-encoded
        ("file%3A%2F%2F%2FUsers%2Fbob%2Fapp", "file%3A%2F%2F~%2Fapp"),
        ("fatal: empty ident name (for <bob@DESKTOP-X1.localdomain>) not allowed",
         "fatal: empty ident name (for <<user>@<host>>) not allowed"),  # git's made-up identity
        ("unable to auto-detect email address (got 'bob@bob-laptop.(none)')",
         "unable to auto-detect email address (got '<user>@<host>')"),
        ("fatal: empty ident name (for <bob@Bobs-MacBook-Pro.local>) not allowed",
         "fatal: empty ident name (for <<user>@<host>>) not allowed"),
        ("empty ident name (for <ubuntu@ip-172-31-5-9.ec2.internal>)", "empty ident name (for <<user>@<host>>)"),
        ("cd /c/Users/bob/app && ls /mnt/c/Users/bob", "cd ~/app && ls ~"),  # Git Bash, WSL
        ("/var/home/bob/.config", "~/.config"),  # Fedora Silverblue
        ("/home/./bob/app", "~/app"),
        ("GET /open?p=C:%5CUsers%5Cbob%5Capp", "GET /open?p=C:~%5Capp"),  # URL-encoded backslashes
    ],
)
def test_home_directories_are_portable_and_name_no_user(text: str, portable: str) -> None:
    assert _portable(text, ()) == portable
    assert "bob" not in _portable(text, ())


@pytest.mark.parametrize(
    "text",
    ["src/pages/home/index.tsx", "app/home/page.tsx", "src/components/Users/UserList.tsx",
     "see https://example.com/Users/list", "Always keep the landing page under src/pages/home/",
     "git diff HEAD~1/x", "took ~5s", "~~struck/out~~", "src%2Fhome%2Findex.tsx", "ssh pi@raspberrypi.local",
     "git clone git@github.com:acme/shop.git", "see https://example.com/~bob/page.html", "about ~ten minutes",
     "mail bob@example.com about it", "src/a/Users/list.ts"],
)  # fmt: skip
def test_a_home_or_users_folder_inside_the_project_is_no_home_directory(text: str) -> None:
    assert _portable(text, ()) == text


@pytest.mark.parametrize("crafted", ["a" * 100_000 + "@", "a." * 50_000 + "@", ("word" * 50 + "@") * 500])
def test_a_long_run_before_an_at_sign_is_read_once(crafted: str) -> None:
    """Each rule of `_portable` is tried from each place of the text; none may read a run to its end from
    each (a pattern that did took 52 s on 100,000 `a` and an `@`). A rule quadratic here would take
    minutes, not the milliseconds of a linear one."""
    assert _portable(crafted, ("/home/dev/shop",)) == crafted
    assert _portable(f"empty ident name (for <{crafted[-150:]}>)", ()) == "empty ident name (for <<user>@<host>>)"
    assert _portable(f"cd /home/{crafted} && make", ()) == "cd ~ && make"


def test_the_project_root_is_cut_only_as_a_whole_path() -> None:
    """A short root (a container's `/app`) must not eat `src/app/api` or `/apple`; nor a root `shop` eat
    `shop-legacy`."""
    rule = "Put API routes in src/app/api/, not /apple/"
    assert _portable(rule, ("/app",)) == rule
    assert _portable("error in /app/src/x.py; cwd /app", ("/app",)) == "error in src/x.py; cwd ."
    assert _portable("/home/dev/shop-legacy/x and /home/dev/shop/y", ("/home/dev/shop",)) == "~/shop-legacy/x and y"
    assert _portable("gcc -I/home/dev/shop/include", ("/home/dev/shop",)) == "gcc -Iinclude"


def test_an_error_quoting_a_home_path_recurs_as_one_under_any_home() -> None:
    assert error_signature(_portable("FileNotFoundError: '/home/alice/p/data.csv'", ())) == error_signature(
        "FileNotFoundError: '/tmp/p/data.csv'"
    )

