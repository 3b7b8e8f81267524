"""`expertise feedback`: one revision per verdict, the note in the commit, and ranking that weighs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import Cli, git, snapshot


def _ids(run: Cli, domain: str) -> dict[str, str]:
    shown = json.loads(run("show", domain, "--json").stdout)
    return {entry.get("text") or entry.get("issue") or entry.get("path"): entry["id"] for entry in shown["entries"]}


def test_feedback_counts_and_commits_with_the_note(project: Path, run: Cli) -> None:
    run("add", "api", "patterns", "Paginate every list endpoint with cursors")
    entry = _ids(run, "api")["Paginate every list endpoint with cursors"]
    result = run("feedback", entry[:6], "--helpful", "--note", "saved a\nbroken pagination PR")
    assert result.exit_code == 0, result.output
    assert "helpful +1 (1)" in result.stdout and "committed" in result.stdout
    message = git(project, "log", "-1", "--format=%B")
    assert "Expertise-Change: feedback" in message and "Note: saved a broken pagination PR" in message
    assert git(project, "log", "-1", "--format=%s").strip() == f"expertise(api): helpful feedback on {entry}"
    again = json.loads(run("feedback", entry, "--harmful", "--json").stdout)
    assert again["count"] == 1 and again["verdict"] == "harmful"
    record = next(e for e in json.loads(run("show", "api", "--json").stdout)["entries"] if e["id"] == entry)
    assert (record["helpful"], record["harmful"], record["source"]) == (1, 1, "manual")  # still hand-written
    assert git(project, "status", "--porcelain", "--", ".expertise") == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("feedback", "zzzz", "--helpful"), "is not an entry id"),
        (("feedback", "ab", "--helpful"), "is not an entry id"),
        (("feedback", "abcdef12", "--harmful"), "no entry 'abcdef12' in any domain"),
    ],
)
def test_bad_feedback_is_one_line_and_changes_nothing(
    project: Path, run: Cli, args: tuple[str, ...], message: str
) -> None:
    run("add", "api", "patterns", "Paginate every list endpoint with cursors")
    before = snapshot(project)
    result = run(*args)
    assert result.exit_code == 1 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert snapshot(project) == before


def test_feedback_needs_a_verdict(project: Path, run: Cli) -> None:
    result = run("feedback", "abcd")
    assert result.exit_code == 2 and "--helpful or --harmful" in result.output


def test_harmful_evidence_sinks_an_entry(project: Path, run: Cli) -> None:
    run("add", "api", "patterns", "Retry the payment webhook with backoff")
    run("add", "api", "patterns", "Retry the payment webhook idempotently")
    first = json.loads(run("render", "--task", "retry the payment webhook", "--json").stdout)
    ids = _ids(run, "api")
    leader = first["included"][0]
    other = next(i for i in ids.values() if i != leader)
    for _ in range(5):
        assert run("feedback", leader, "--harmful").exit_code == 0
    after = json.loads(run("render", "--task", "retry the payment webhook", "--json").stdout)
    assert after["included"][0] == other  # the evidence moved it down

@pytest.mark.parametrize("flags", [("--helpful", "--harmful"), ("--harmful", "--helpful")])
def test_both_verdicts_is_a_usage_error_and_records_nothing(project: Path, run: Cli, flags: tuple[str, str]) -> None:
    run("add", "api", "patterns", "Paginate every list endpoint with cursors")
    entry = _ids(run, "api")["Paginate every list endpoint with cursors"]
    before = snapshot(project)
    result = run("feedback", entry, *flags)
    assert result.exit_code == 2 and "not both" in result.output
    assert snapshot(project) == before
