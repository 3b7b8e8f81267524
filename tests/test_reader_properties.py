"""Property tests for the transcript readers: any JSON lines at all, and they never raise."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from expertise_kit.document.ids import _signature_rules
from expertise_kit.learning.extract import _from_difference, extract
from expertise_kit.learning.rules import _SENTENCE
from expertise_kit.learning.transcripts.claude import read_claude
from expertise_kit.learning.transcripts.codex import read_codex
from expertise_kit.learning.transcripts.generic import read_generic
from expertise_kit.learning.transcripts.tools import changed_lines

KEYS = [
    "type", "uuid", "parentUuid", "logicalParentUuid", "isSidechain", "sessionId", "cwd", "timestamp", "message",
    "content", "role", "id", "name", "input", "tool_use_id", "is_error", "toolUseResult", "payload", "call_id",
    "arguments", "output", "tool_name", "success", "command", "file_path", "text", "isMeta", "status",
]  # fmt: skip
TYPES = [
    "user", "assistant", "system", "summary", "tool_use", "tool_result", "text", "session_meta", "response_item",
    "function_call", "function_call_output", "custom_tool_call", "event_msg", "message",
]  # fmt: skip

leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(TYPES), st.text(max_size=20),
    st.sampled_from(["Bash", "Edit", "Write", "Read", "apply_patch", "shell", "u1", "t1", "/p/a.py", "git mv x y"]),
)  # fmt: skip
json_values = st.recursive(
    leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.sampled_from(KEYS), children, max_size=6)
    ),
    max_leaves=25,
)
records = st.lists(st.dictionaries(st.sampled_from(KEYS), json_values, max_size=8), max_size=12)


def _write(rows: list[dict[str, Any]], garbage: bool, directory: str) -> Path:
    path = Path(directory) / "t.jsonl"
    lines = [json.dumps(row) for row in rows]
    if garbage:
        lines.insert(len(lines) // 2, "{not json")
    path.write_text("\n".join(lines) + "\n")
    return path


@settings(
    max_examples=int(os.environ.get("EXPERTISE_PROPERTY_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(rows=records, garbage=st.booleans())
def test_readers_and_extraction_never_raise(rows: list[dict[str, Any]], garbage: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = _write(rows, garbage, directory)
        for reader in (read_claude, read_codex, read_generic):
            session = reader(path)
            result = extract(session, "/p")
            assert result.failures_seen >= 0
            for learning in result.learnings:
                assert all(len(str(v)) <= 10_000 for v in learning.raw.values())


# -- shell commands: the programs a command line runs ------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_./-", min_size=1, max_size=8).filter(
    lambda w: not w.startswith("-") and w not in (".", "-")
)
_QUOTED = st.text(alphabet="abc |;&<>\n$", max_size=12).map(lambda t: "'" + t + "'")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_reads_as_programs_without_raising(command: str) -> None:
    from expertise_kit.learning.extract import main_program
    from expertise_kit.learning.transcripts.shell import programs_in

    programs = programs_in(command)
    assert all(isinstance(p, str) and p for p in programs)
    assert main_program(command) in (*programs, "")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["grep", "tree", "node", "rspec", "tar"]), st.lists(_QUOTED | _WORD, max_size=3)),
        min_size=1,
        max_size=4,
    ),  # fmt: skip
    st.lists(st.sampled_from([" && ", " || ", "; ", " | ", "\n", " 2>&1 | "]), min_size=3, max_size=3),
)
def test_quoted_separators_and_redirects_split_no_command(
    commands: list[tuple[str, list[str]]], joins: list[str]
) -> None:
    from expertise_kit.learning.transcripts.shell import programs_in

    line = ""
    for index, (program, args) in enumerate(commands):
        line += (joins[index - 1] if index else "") + " ".join([program, *args])
    assert programs_in(line) == tuple(program for program, _ in commands)


def test_heredoc_bodies_are_data_not_commands() -> None:
    from expertise_kit.learning.extract import main_program
    from expertise_kit.learning.transcripts.shell import programs_in

    assert programs_in("cat > notes.md <<'EOF'\nrm -rf / | make\nEOF\ngit status") == ("cat", "git status")
    assert programs_in("python3 - <<PY\nimport os\nPY") == ("python3",)
    assert programs_in('grep x <<< "a | b" && make') == ("grep", "make")  # a here-string has no body
    assert main_program("tree . -I 'node_modules|.git' -L 3") == "tree"
    assert main_program("make &> build.log && echo done") == "make"
    assert main_program("npm test 2>&1 | tail -20") == "npm test"


_lines = st.lists(st.sampled_from(["a", "b", "  a", "a  ", "c = 1"]), max_size=8)


@given(before=_lines, after=_lines)
def test_an_edits_change_is_what_lies_between_its_unchanged_ends(before: list[str], after: list[str]) -> None:
    """Old and new are the same lines (trailing spaces aside) around what is said taken out and put in, and
    that middle is as small as can be: nothing when they are the same, and it starts and ends with a line
    that changed."""
    removed, added = changed_lines("\n".join(before), "\n".join(after))
    taken, put = (text.split("\n") if text else [] for text in (removed, added))
    same = [line.rstrip() for line in before] == [line.rstrip() for line in after]
    assert same == (not taken and not put)

    def ends(lines: list[str], middle: list[str]) -> set[tuple[int, int]]:
        """Every (head, tail) of ``lines`` around ``middle``."""
        return {
            (head, len(lines) - head - len(middle))
            for head in range(len(lines) - len(middle) + 1)
            if lines[head : head + len(middle)] == middle
        }

    around = ends(before, taken) & ends(after, put)
    assert any(
        [x.rstrip() for x in before[:head]] == [x.rstrip() for x in after[:head]]
        and [x.rstrip() for x in before[len(before) - tail :]] == [x.rstrip() for x in after[len(after) - tail :]]
        for head, tail in around
    )
    if taken and put:
        assert taken[0].rstrip() != put[0].rstrip() and taken[-1].rstrip() != put[-1].rstrip()


@given(head=st.text(st.sampled_from("ab ="), max_size=120), old=st.text("xy ", max_size=30),
       new=st.text("xz ", max_size=30))  # fmt: skip
def test_a_long_shared_head_is_cut_on_both_sides_alike_and_never_past_the_difference(
    head: str, old: str, new: str
) -> None:
    removed, added = _from_difference(head + old, head + new)
    if (removed, added) == (head + old, head + new):
        return
    assert removed.startswith("...") and added.startswith("...")
    kept = len(removed) - 3
    assert (head + old).endswith(removed[3:]) and (head + new).endswith(added[3:])
    assert len(head + old) - kept == len(head + new) - (len(added) - 3)  # the same cut on both sides
    same = len(os.path.commonprefix([head + old, head + new]))
    # the cut leaves 12 to 30 shared characters before the change: a word or so, and the change is in sight
    assert same - 30 <= len(head + old) - kept <= same - 12


@given(st.text(" -.!;Aa\n", max_size=40))
def test_a_sentence_break_is_found_where_it_was_before_runs_of_spaces_were_tried_once(text: str) -> None:
    """`(?<!\\s)` only spares the regex trying each space of a run as a start; the splits are the same."""
    before = re.compile(r"(?<=[.!;。！；])\s+|(?<=[。！；])|\s+-\s+(?=[A-Z])")
    assert _SENTENCE.split(text) == before.split(text)


@given(st.text("ab1._@+-/\\:~ C<>", max_size=40).map(lambda s: s.replace("<>", "<home>")))
@example("x " + "a." * 30 + ":/x")
@example(".a.b/c ab.C:\\foo -x/y")
def test_a_path_is_found_where_it_was_before_its_runs_were_tried_once(text: str) -> None:
    """Trying a bare relative path only where a run of its characters starts is the same as trying it at every
    word boundary in the run, which took quadratic time on a long run with no slash after it."""
    before = re.compile(r"(?:[A-Za-z]:)?(?:~|<home>|\.{1,2})?(?:[/\\][\w.@+~-]+)+[/\\]?|\b[\w.@+-]+(?:/[\w.@+-]+)+/?")
    pattern, placeholder = next(rule for rule in _signature_rules() if "<path>" in rule[1])
    assert pattern.sub(placeholder, text) == before.sub("<path>", text)
