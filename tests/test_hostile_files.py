"""Hostile domain files, links and revisions: one error line, exit 1, nothing changed, and never a hang.

Every case runs the real CLI on real files in a real git repo. Cases that used to hang run in a
subprocess with a timeout, so a regression fails instead of stalling the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import Result
from conftest import Cli, git, snapshot
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expertise_kit.document.entries import item_id
from expertise_kit.document.schema import DomainFile
from expertise_kit.document.yamlio import parse_yaml_text
from expertise_kit.errors import UserError

ONE_LINE = re.compile(r"^expertise: error: (?P<where>\S+?): (?P<message>.+); (?P<hint>[^;]+)$")
COMMANDS = {
    "show": ["show", "database"],
    "list": ["list"],
    "add": ["add", "database", "patterns", "a new entry"],
}


def state(repo: Path) -> tuple[dict[str, bytes], str, str]:
    """Every file's bytes, plus HEAD and git status: "nothing changed" covers commits too."""
    head = git(repo, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    return snapshot(repo), head, git(repo, "status", "--porcelain", "--untracked-files=all")


def assert_refused(result: Result | subprocess.CompletedProcess[str], where: str, message: str) -> str:
    code = result.exit_code if isinstance(result, Result) else result.returncode
    lines = result.stderr.splitlines()
    assert code == 1, (code, result.stdout, result.stderr)
    assert len(lines) == 1, result.stderr
    match = ONE_LINE.match(lines[0])
    assert match is not None, lines[0]
    assert match["where"].endswith(where), lines[0]
    assert message in match["message"], lines[0]
    assert "Traceback" not in result.stderr
    return lines[0]


def cli_process(repo: Path, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """The CLI in a child process: a file that blocks the reader makes this fail, not hang."""
    try:
        return subprocess.run(
            [sys.executable, "-m", "expertise_kit", "-C", str(repo), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"`expertise {' '.join(args)}` hung for {timeout}s")


# -- 1. values ruamel or Python can't build, and YAML features we refuse ---------------------------------

HUGE = "9" * 5000

BAD_VALUES: dict[str, tuple[str, str, str]] = {
    # name: (file text, "file:line" the error names, text the message contains)
    "huge_int_top": (f"domain: database\nbig: {HUGE}\n", "database.yaml:2", "integer of 5,000 digits is too long"),
    "huge_int_entry": (
        f"domain: database\npatterns:\n  - text: x\n    recurrence: {HUGE}\n",
        "database.yaml:4",
        "integer of 5,000 digits is too long",
    ),
    "impossible_last_seen": (
        "domain: database\nlearned_from_failures:\n  - issue: x\n    source: learned\n"
        "    last_seen: 2020-13-45T99:99:99\n",
        "database.yaml:5",
        "'2020-13-45T99:99:99' is not a real date or time (month must be in 1..12)",
    ),
    "impossible_first_seen": (
        "domain: database\npatterns:\n  - text: x\n    first_seen: 2021-02-30\n",
        "database.yaml:4",
        "'2021-02-30' is not a real date or time",
    ),
    "hour_24": ("domain: database\nlast_validated: 2020-01-01T24:00:00\n", "database.yaml:2", "not a real date"),
    "year_zero": ("domain: database\nlast_validated: 0000-01-01\n", "database.yaml:2", "year 0 is out of range"),
    "zone_25h": (
        "domain: database\nlast_validated: 2020-01-01T10:00:00+25:00\n",
        "database.yaml:2",
        "time zone offset must be under 24 hours",
    ),
    "past_9999_in_utc": (
        "domain: database\npatterns:\n  - text: x\n    last_seen: 9999-12-31T23:59:59-23:00\n",
        "database.yaml:4",
        "patterns[0].last_seen: Value error, is out of range once converted to UTC",
    ),
    "merge_in_flow": ("domain: database\ny: {<<: {b: 1}}\n", "database.yaml:2", "merge keys (<<) are not allowed"),
    "merge_in_block": ("domain: database\ny:\n  <<: {b: 1}\n", "database.yaml:3", "merge keys (<<) are not allowed"),
    "merge_in_entry": (
        "domain: database\npatterns:\n  - {text: x, <<: {source: learned}}\n",
        "database.yaml:3",
        "merge keys (<<) are not allowed",
    ),
    "bare_merge_value": ("domain: database\noverview: <<\n", "database.yaml:2", "a bare << is read as a merge key"),
    "omap": ("domain: database\nx: !!omap [a: 1, b: 2]\n", "database.yaml:2", "tags are not allowed (found !!omap)"),
    "set": ("domain: database\nx: !!set {a, b}\n", "database.yaml:2", "tags are not allowed (found !!set)"),
    "pairs": ("domain: database\nx: !!pairs [a: 1]\n", "database.yaml:2", "tags are not allowed (found !!pairs)"),
    "binary": ("domain: database\nx: !!binary aGVsbG8=\n", "database.yaml:2", "tags are not allowed (found !!binary)"),
    "python_apply": (
        "domain: database\nx: !!python/object/apply:os.system [echo pwned]\n",
        "database.yaml:2",
        "YAML tags are not allowed (found !!python/object/apply:os.system)",
    ),
    "tag_on_section": (
        "domain: database\npatterns: !!omap\n  - a: 1\n",
        "database.yaml:2",
        "YAML tags are not allowed (found !!omap)",
    ),
    "local_tag": ("domain: database\nx: !mine y\n", "database.yaml:2", "YAML tags are not allowed (found !mine)"),
    "int_and_bool_keys": ("domain: database\ny: {1: a, true: b}\n", "database.yaml:2", "key 1 is not a string"),
    "bool_key_top": ("domain: database\ntrue: x\n", "database.yaml:2", "key true is not a string"),
    "null_key_in_entry": (
        "domain: database\npatterns:\n  - text: x\n    ~: y\n",
        "database.yaml:4",
        "key ~ is not a string",
    ),
    "real_duplicate_in_entry": (
        "domain: database\npatterns:\n  - text: x\n    'text': y\n",
        "database.yaml:4",
        'found duplicate key "text"',
    ),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(BAD_VALUES))
def test_bad_value_is_one_error_line(project: Path, run: Cli, case: str, command: str) -> None:
    text, where, message = BAD_VALUES[case]
    (project / ".expertise" / "database.yaml").write_text(text)
    before = state(project)
    line = assert_refused(run(*COMMANDS[command]), where, message)
    assert "duplicate" not in line or "duplicate" in message
    assert state(project) == before


def test_keys_one_and_true_are_not_called_duplicates(project: Path, run: Cli) -> None:
    (project / ".expertise" / "database.yaml").write_text('domain: database\ny: {"1": a, "true": b}\n')
    assert run("show", "database").exit_code == 0  # quoted, they are two distinct strings
    (project / ".expertise" / "database.yaml").write_text("domain: database\ny: {1: a, true: b}\n")
    line = assert_refused(run("show", "database"), "database.yaml:2", "key 1 is not a string")
    assert "duplicate" not in line and "True" not in line


# -- 1b. an unreadable version in git history --------------------------------------------------------------

BAD_VERSION = (
    "domain: database\npatterns:\n  - keep me\n  - text: dated\n    source: learned\n"
    "    last_seen: 2020-13-45T99:99:99\n"
)
FIXED_VERSION = BAD_VERSION.replace("2020-13-45T99:99:99", "2020-12-01T09:00:00Z")


@pytest.fixture
def bad_history(project: Path) -> tuple[str, str]:
    """A bad version committed with plain git, then the fix: (bad sha, fixed sha)."""
    path = project / ".expertise" / "database.yaml"
    path.write_text(BAD_VERSION)
    git(project, "commit", "-q", "-am", "hand edit with a bad date")
    bad = git(project, "rev-parse", "HEAD").strip()
    path.write_text(FIXED_VERSION)
    git(project, "commit", "-q", "-am", "fix the date")
    return bad, git(project, "rev-parse", "HEAD").strip()


def test_history_lists_an_unreadable_version_with_unknown_changes(
    project: Path, run: Cli, bad_history: tuple[str, str]
) -> None:
    bad, fixed = bad_history
    result = run("history", "--json")
    assert result.exit_code == 0, result.stderr
    rows = {row["commit"]: row for row in json.loads(result.stdout)}
    # The fix's parent can't be read, and neither can the bad version: both rows stay, changes unknown.
    for sha in (bad, fixed):
        assert rows[sha]["by_hand"] and rows[sha]["added"] is None and rows[sha]["removed"] is None
    text = run("history")
    assert text.exit_code == 0
    assert f"{bad[:12]}" in text.stdout and "+? -?" in text.stdout
    assert text.stderr == ""


@pytest.mark.parametrize("which", ["bad", "fixed"])
def test_diff_names_the_unreadable_revision_and_file(
    project: Path, run: Cli, bad_history: tuple[str, str], which: str
) -> None:
    bad, fixed = bad_history
    before = state(project)
    result = run("diff", bad if which == "bad" else fixed)
    line = assert_refused(result, ".expertise/database.yaml:6", f"as of {bad[:12]}: '2020-13-45T99:99:99'")
    assert f"git show {bad[:12]}:.expertise/database.yaml" in line
    assert state(project) == before


def test_diff_across_an_unreadable_version_still_works(project: Path, run: Cli, bad_history: tuple[str, str]) -> None:
    bad, fixed = bad_history
    result = run("diff", f"{bad}~1..{fixed}")
    assert result.exit_code == 0, result.stderr
    assert "+" in result.stdout and "patterns: dated" in result.stdout


@pytest.mark.parametrize("which", ["bad", "fixed"])
def test_revert_of_an_unreadable_version_is_refused(
    project: Path, run: Cli, bad_history: tuple[str, str], which: str
) -> None:
    bad, fixed = bad_history
    before = state(project)
    result = run("revert", bad if which == "bad" else fixed)
    assert_refused(result, ".expertise/database.yaml:6", f"as of {bad[:12]}")
    assert state(project) == before


# -- 2. FIFOs and other special files ----------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("how", ["fifo", "link_to_fifo"])
def test_fifo_domain_file_is_refused_without_hanging(project: Path, command: str, how: str) -> None:
    path = project / ".expertise" / "database.yaml"
    path.unlink()
    if how == "fifo":
        os.mkfifo(path)
    else:
        os.mkfifo(project / ".expertise" / "pipe")
        path.symlink_to("pipe")
    before = state(project)
    result = cli_process(project, *COMMANDS[command])
    # The store follows a link inside .expertise/ and names the file it would read.
    named = "database.yaml" if how == "fifo" else ".expertise/pipe"
    assert_refused(result, named, "is a FIFO (named pipe), not a regular file")
    assert state(project) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_fifo_config_is_refused_without_hanging(project: Path, command: str) -> None:
    config = project / ".expertise" / "config.yaml"
    config.unlink()
    os.mkfifo(config)
    before = state(project)
    assert_refused(cli_process(project, *COMMANDS[command]), "config.yaml", "is a FIFO (named pipe)")
    assert state(project) == before


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_config_linked_to_a_device_is_refused(project: Path, command: str) -> None:
    config = project / ".expertise" / "config.yaml"
    config.unlink()
    config.symlink_to("/dev/zero")
    before = state(project)
    assert_refused(cli_process(project, *COMMANDS[command]), "config.yaml", "is a character device")
    assert state(project) == before


def test_socket_domain_file_is_refused(project: Path, run: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / ".expertise" / "database.yaml").unlink()
    monkeypatch.chdir(project / ".expertise")  # a relative name keeps clear of the socket path length limit
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind("database.yaml")
        before = state(project)
        for args in COMMANDS.values():
            assert_refused(run(*args), "database.yaml", "is a socket, not a regular file")
        assert state(project) == before
    finally:
        server.close()


# -- 3. symlink loops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("shape", ["self", "pair", "config"])
def test_symlink_loop_is_refused(project: Path, command: str, shape: str) -> None:
    directory = project / ".expertise"
    name = "config.yaml" if shape == "config" else "database.yaml"
    (directory / name).unlink()
    if shape == "pair":
        (directory / name).symlink_to("other.yaml")
        (directory / "other.yaml").symlink_to(name)
    else:
        (directory / name).symlink_to(name)
    before = state(project)
    assert_refused(cli_process(project, *COMMANDS[command]), name, "is a symlink loop")
    assert state(project) == before


def test_broken_domain_link_is_named(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    path.unlink()
    path.symlink_to("gone.yaml")
    # The store resolves links inside .expertise/ first, so the line names the missing target.
    assert_refused(run("show", "database"), ".expertise/gone.yaml", "file not found")


# -- 4. .expertise itself linked out of the repository ------------------------------------------------------


@pytest.fixture
def linked_out(project: Path, tmp_path: Path) -> Path:
    """`.expertise` moved outside the repo and linked back in; returns the outside directory."""
    outside = tmp_path / "outside"
    (project / ".expertise").rename(outside)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "move expertise away")
    (project / ".expertise").symlink_to(outside)
    return outside


@pytest.mark.parametrize(
    "args", [*COMMANDS.values(), ["init"], ["learn", "--help"], ["history"], ["diff"], ["revert", "HEAD"]]
)
def test_expertise_linked_outside_the_repo_is_refused_before_writing(
    project: Path, run: Cli, linked_out: Path, args: list[str]
) -> None:
    outside_before = snapshot(linked_out)
    before = state(project)
    result = run(*args)
    if args == ["learn", "--help"]:
        assert result.exit_code == 0  # help needs no project
        return
    assert_refused(result, ".expertise", f"is a symlink to {linked_out}, outside the project")
    assert snapshot(linked_out) == outside_before
    assert state(project) == before


def test_expertise_linked_inside_the_repo_still_works(project: Path, run: Cli) -> None:
    (project / "docs").mkdir()
    git(project, "mv", ".expertise", "docs/expertise")
    git(project, "commit", "-q", "-m", "move")
    (project / ".expertise").symlink_to("docs/expertise")
    result = run("add", "database", "patterns", "through a link inside the repo")
    assert result.exit_code == 0, result.stderr
    assert "through a link inside the repo" in (project / "docs" / "expertise" / "database.yaml").read_text()


# -- 5. messages, ranges, line endings, ids -----------------------------------------------------------------


@pytest.fixture
def forked(project: Path, run: Cli) -> Path:
    """`feature` forks from main; each then adds one entry."""
    git(project, "checkout", "-q", "-b", "feature")
    assert run("add", "database", "patterns", "from feature").exit_code == 0
    git(project, "checkout", "-q", "main")
    assert run("add", "database", "patterns", "from main").exit_code == 0
    return project


def test_symmetric_range_compares_with_the_merge_base(forked: Path, run: Cli) -> None:
    symmetric = run("diff", "main...feature")
    assert symmetric.exit_code == 0, symmetric.stderr
    assert "+ " in symmetric.stdout and "from feature" in symmetric.stdout
    assert "from main" not in symmetric.stdout  # main's own change is not part of what feature did
    direct = run("diff", "main..feature")
    assert "from feature" in direct.stdout and "- " in direct.stdout and "from main" in direct.stdout


def test_ranges_parse_like_git(project: Path, run: Cli) -> None:
    assert run("add", "database", "patterns", "later entry").exit_code == 0
    same = run("diff", "HEAD...HEAD~1")  # HEAD~1 is the merge base: nothing changed on that side
    assert same.exit_code == 0 and same.stdout == "" and "no entry changes" in same.stderr
    assert "later entry" in run("diff", "HEAD~1..").stdout  # an empty side is HEAD
    assert "later entry" in run("diff", "HEAD~1...").stdout
    for bad, message in [
        ("HEAD....HEAD~1", "bad range 'HEAD....HEAD~1'"),
        ("HEAD~1..HEAD..HEAD", "bad range"),
        ("nope..HEAD", "unknown revision 'nope'"),
        ("HEAD...-x", "bad revision '-x'"),
    ]:
        result = run("diff", bad)
        assert result.exit_code == 1 and len(result.stderr.splitlines()) == 1, result.stderr
        assert message in result.stderr
    before = state(project)
    result = run("revert", "HEAD~1..HEAD")
    assert result.exit_code == 1 and "'HEAD~1..HEAD' is a range, not one revision" in result.stderr
    assert state(project) == before


CRLF = b"domain: database\r\npatterns:\r\n  - keep me\r\nbest_practices: []\r\n"


def test_add_keeps_crlf_line_endings_byte_for_byte(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    path.write_bytes(CRLF)
    assert run("add", "database", "patterns", "new entry").exit_code == 0
    added = b"domain: database\r\npatterns:\r\n  - keep me\r\n  - new entry\r\nbest_practices: []\r\n"
    assert path.read_bytes() == added
    assert run("add", "database", "best_practices", "a practice").exit_code == 0
    failure = ["learned_from_failures", "it broke", "--error", "E1", "--solution", "fix"]
    assert run("add", "database", *failure).exit_code == 0
    data = path.read_bytes()
    assert data.count(b"\n") == data.count(b"\r\n"), data
    assert b"\r\r" not in data
    assert data.startswith(b"domain: database\r\npatterns:\r\n  - keep me\r\n  - new entry\r\nbest_practices:\r\n")
    assert run("show", "database").exit_code == 0


def test_crlf_file_without_final_newline_keeps_it_missing(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    path.write_bytes(b"domain: database\r\npatterns:\r\n  - keep me\r\nowner: me")
    assert run("add", "database", "patterns", "new entry").exit_code == 0
    assert path.read_bytes() == b"domain: database\r\npatterns:\r\n  - keep me\r\n  - new entry\r\nowner: me"


def test_lf_file_stays_lf(project: Path, run: Cli) -> None:
    path = project / ".expertise" / "database.yaml"
    path.write_bytes(CRLF.replace(b"\r\n", b"\n"))
    assert run("add", "database", "patterns", "new entry").exit_code == 0
    assert b"\r" not in path.read_bytes()


def test_punctuation_only_entries_get_distinct_ids(project: Path, run: Cli) -> None:
    ids = []
    for text in ["!!!", "???", "...", ";;;"]:
        result = run("add", "database", "patterns", text)
        assert result.exit_code == 0 and "already present" not in result.stdout, result.stdout
        ids.append(result.stdout.split()[1])
    assert len(set(ids)) == 4


def test_ids_of_ordinary_texts_did_not_change() -> None:
    # Values computed with the normalisation as it was before punctuation-only texts were kept apart.
    assert item_id("patterns", "Use UUIDs.") == "10e3cbbd"
    assert item_id("patterns", "Never log tokens") == "2b3e11b0"
    assert item_id("patterns", "Ｕｓｅ  UTF-8!") == "0ca37c1d"


# -- 6. an unborn branch -----------------------------------------------------------------------------------


def test_diff_on_an_unborn_branch_says_nothing_is_committed(project: Path, run: Cli) -> None:
    git(project, "checkout", "-q", "--orphan", "fresh")  # HEAD names a branch with no commits
    before = state(project)
    result = run("diff")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert result.stderr.splitlines() == ["nothing committed yet, so there is no revision to compare with"]
    as_json = run("diff", "--json")
    assert as_json.exit_code == 0 and json.loads(as_json.stdout) == []
    named = run("diff", "HEAD")
    assert named.exit_code == 1 and named.stderr.splitlines() == [
        "expertise: error: unknown revision 'HEAD': nothing is committed yet; commit first"
    ]
    assert state(project) == before


# -- any text at all: a UserError or plain data, never anything else ----------------------------------------

FRAGMENTS = [
    "domain: database", "patterns:", "  - x", "  - text: y", "    last_seen: 2020-13-45", "    recurrence: ",
    "9" * 4400, "<<: {a: 1}", "{<<: {b: 1}}", "!!omap [a: 1]", "!!set {a}", "&a [1]", "*a", "1: x", "true: y",
    "? [a]\n: b", "x: 2020-02-30T10:00:00+25:00", "'q': 1", "q: 2", "- !!binary aGk=", "k: =", "\t", "~: n",
    "y: {a: 1, a: 2}", "z: [", "9999-12-31T23:59:59-23:00", "0x" + "f" * 5000, "!x", "...", "---",
]  # fmt: skip


@settings(
    max_examples=int(os.environ.get("EXPERTISE_PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8), st.sampled_from(["\n", "\r\n", " "]))
def test_any_mix_of_hostile_fragments_is_data_or_one_user_error(parts: list[str], joiner: str) -> None:
    text = joiner.join(parts) + "\n"
    try:
        loaded = parse_yaml_text(text, Path("fuzz.yaml"))
    except UserError as exc:
        assert "\n" not in exc.one_line()
        return
    json.dumps(loaded.plain, default=str)  # string keys only; datetimes are the one non-JSON value
    assert all(isinstance(key, str) for key in loaded.plain)
    with contextlib.suppress(ValueError):  # pydantic's ValidationError: reported with a line by the store
        DomainFile.model_validate(loaded.plain)
