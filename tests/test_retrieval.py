"""What reaches the agent: essentials at session start, relevant entries of any domain per prompt above a
floor, each entry once per session, nothing stale, and old entries marked as old."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from builders import learned_failure as _failure
from conftest import Cli, git, settle

CALL = 'import expertise_kit.hook as h; h.main(["pre", "--agent", "claude-code"])'


def _learned(text: str, *, recurrence: int = 1, last_seen: str = "2026-11-20T10:00:00Z", **extra: str) -> str:
    fields = {"source": "learned", "recurrence": recurrence, "sessions": ["s1"], "last_seen": last_seen, **extra}
    return json.dumps({"text": text, **fields})


def _store(project: Path) -> None:
    """A store like a real one: a recurring git failure under general, payments knowledge filed under api,
    a hand-written convention, hot files, and plenty of unrelated entries."""
    expertise = project / ".expertise"
    (expertise / "general.yaml").write_text(
        "domain: general\n"
        "best_practices:\n  - Run `make check` before every push\n"
        "learned_from_failures:\n"
        f"  - {_failure('`git push`', 'fatal: The current branch feature has no upstream branch', 'ran `git push --set-upstream origin HEAD`', 4)}\n"  # noqa: E501
        "core_files:\n"
        "  - {path: shop/checkout.py, source: learned, recurrence: 7}\n"
        "  - {path: shop/pricing.py, source: learned, recurrence: 5}\n"
        "patterns:\n"
        f"  - {_learned('shop/payments.py retries must send the idempotency key header')}\n"
        f"  - {_learned('Refunds go through shop/payments.py refund(), never the gateway directly', stale='true')}\n"
        f"  - {_learned('The payments sandbox rejects amounts over 10000 cents', last_seen='2026-03-01T00:00:00Z')}\n"
    )
    unrelated = "".join(f"  - {_learned(f'Frontend note {n} about the {w} widget layout')}\n"
                        for n, w in enumerate(["carousel", "sidebar", "modal", "tooltip", "navbar"] * 10))  # fmt: skip
    (expertise / "frontend.yaml").write_text("domain: frontend\npatterns:\n" + unrelated)
    (expertise / "api.yaml").write_text(
        "domain: api\npatterns:\n"
        f"  - {_learned('Webhook handlers for shop/payments.py verify the Stripe signature')}\n"
    )
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a store")
    settle(project)


def _hook(project: Path, payload: dict[str, object]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-c", CALL],
        input=json.dumps({"cwd": str(project), **payload}),
        capture_output=True, text=True, timeout=120, check=False, env=dict(os.environ),
    )  # fmt: skip


def _context(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return str(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]) if done.stdout else ""


def _start(project: Path, session: str = "sess-1") -> str:
    return _context(_hook(project, {"hook_event_name": "SessionStart", "session_id": session}))


def _prompt(project: Path, text: str, session: str = "sess-1") -> str:
    return _context(_hook(project, {"hook_event_name": "UserPromptSubmit", "prompt": text, "session_id": session}))


def test_session_start_gets_the_essentials_across_domains(project: Path) -> None:
    _store(project)
    text = _start(project)
    assert 0 < len(text) <= 1500
    assert "git push --set-upstream" in text  # the most recurring failure, with its fix
    assert "Run `make check` before every push" in text  # a hand-written convention
    assert "`shop/checkout.py`" in text  # the most edited files
    assert "Frontend note" not in text  # essentials are not a dump


def test_essentials_give_failures_the_room_conventions_leave(project: Path) -> None:
    """With no hand-written conventions, the recurring failures take the room they would have had."""
    failures = "".join(
        f"  - {_failure(f'`make {target}`', f'make: *** [{target}] Error 2: the {target} step needs its own config in build/{target}.mk, made from the example', f'ran `cp build/{target}.example build/{target}.mk` first, then `make {target}` worked', 6 - n)}\n"  # noqa: E501
        for n, target in enumerate(["assets", "docs", "wheel", "image"])
    )
    (project / ".expertise" / "general.yaml").write_text("domain: general\nlearned_from_failures:\n" + failures)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "failures only")
    settle(project)
    text = _start(project)
    shown = [target for target in ["assets", "docs", "wheel", "image"] if f"`make {target}`" in text]
    assert len(shown) == 4, text  # two thirds of the room held only three of these
    assert len(text) <= 1500


def test_a_failure_seen_again_or_a_fact_of_the_machine_warns_at_session_start(project: Path) -> None:
    def unsolved(issue: str, error: str, recurrence: int) -> str:
        return json.dumps({"issue": issue, "error": error, "source": "learned", "recurrence": recurrence,
                           "sessions": [f"s{n}" for n in range(recurrence)], "last_seen": "2026-11-20T10:00:00Z"})

    (project / ".expertise" / "general.yaml").write_text(
        "domain: general\nlearned_from_failures:\n"
        f"  - {unsolved('`python - <<PY`', '/bin/bash: line 1: python: command not found', 2)}\n"
        f"  - {unsolved('`node gen.js`', 'Error: ENOENT: no such file or directory, open out/x.json', 1)}\n"
        f"  - {unsolved('`gofumpt -l .`', 'bash: gofumpt: command not found', 1)}\n"
    )  # fmt: skip
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "unsolved failures")
    settle(project)
    text = _start(project)
    assert "python: command not found" in text  # seen twice: worth a warning, fix or not
    assert "gofumpt: command not found" in text  # a fact about this machine: true at any task, seen once
    assert "node gen.js" not in text  # a one-off with no fix says too little


def test_an_uninformative_first_prompt_still_gets_the_essentials(project: Path) -> None:
    _store(project)
    text = _prompt(project, "Work on issue PROJ-142. Run `bd show PROJ-142` to see the details", "fresh")
    assert "git push --set-upstream" in text


def test_relevant_entries_above_the_floor_and_nothing_else(project: Path) -> None:
    _store(project)
    _start(project)
    text = _prompt(project, "make the retry in shop/payments.py safe against double charges")
    assert "idempotency key header" in text  # the prompt names the file and its words
    assert "Frontend note" not in text  # below the floor: the whole frontend domain is not dumped
    assert len(text) <= 2000


def test_render_and_the_hook_search_every_domain(project: Path, run: Cli) -> None:
    """Knowledge filed under a domain the classifier does not route the task to is still found: by
    `expertise render`, and by the hook, which ranks every domain through its small ranking files."""
    _store(project)
    (project / ".expertise" / "database.yaml").write_text(
        "domain: database\npatterns:\n"
        f"  - {_learned('The button component reads its theme colours from the tokens table')}\n"
    )
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a database entry")
    task = "verify the stripe webhook signature in shop/payments.py"
    data = json.loads(run("render", "--task", task, "--json").stdout)
    assert "Stripe signature" in data["text"]
    assert "Frontend note" not in data["text"]
    routed = json.loads(run("classify", "restyle the button component theme colours", "--json").stdout)
    assert "database" not in [routed["domain"], *routed.get("secondary", [])[:2]], routed
    settle(project)
    text = _prompt(project, "restyle the button component theme colours", session="sess-x")
    assert "tokens table" in text  # filed under database, routed elsewhere, found anyway
    assert "Frontend note" not in text


def test_each_entry_reaches_a_session_once(project: Path) -> None:
    _store(project)
    essentials = _start(project)
    first = _prompt(project, "retry logic in shop/payments.py with the idempotency key")
    assert "git push --set-upstream" in essentials and "git push --set-upstream" not in first
    assert "idempotency key header" in first
    again = _prompt(project, "more on the shop/payments.py retry and its idempotency key")
    assert "idempotency key header" not in again
    total = sum(len(_prompt(project, f"retry {n} in shop/payments.py idempotency")) for n in range(8))
    assert len(first) + len(again) + total <= 2 * len(first)  # ten prompts inject at most twice the first
    other = _prompt(project, "retry logic in shop/payments.py with the idempotency key", "sess-2")
    assert "idempotency key header" in other  # another session is told again


def test_a_long_session_on_many_topics_stays_within_twice_its_first_prompt(project: Path) -> None:
    """Ten prompts, each on a topic of its own with entries of its own: dedup alone would let every prompt
    add a full answer; the session budget keeps all ten within twice what the first got."""
    topics = ["invoice", "refund", "coupon", "shipping", "inventory", "webhook", "session", "avatar", "search",
              "export"]  # fmt: skip
    lines = "".join(
        f"  - {_learned(f'The {topic} module {n} keeps its {topic} rules in shop/{topic}_{n}.py and checks them')}\n"
        for topic in topics for n in range(4)
    )  # fmt: skip
    (project / ".expertise" / "api.yaml").write_text("domain: api\npatterns:\n" + lines)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "many topics")
    settle(project)
    said = [_prompt(project, f"change how the {topic} rules are checked", "sess-long") for topic in topics]
    assert said[0] and said[1], said[:2]  # the budget leaves room after the first prompt
    assert sum(map(len, said)) <= 2 * len(said[0])
    fresh = _prompt(project, f"change how the {topics[-1]} rules are checked", "sess-other")
    assert f"{topics[-1]} module" in fresh  # another session starts with a full budget


def test_session_start_and_the_first_prompt_together_stay_within_3000_characters(project: Path) -> None:
    rule = "  - Convention {} is to keep the {} handlers small, name them after the route and log each retry at info\n"
    rules = "".join(rule.format(n, n) for n in range(30))
    facts = "".join(
        f"  - {_learned(f'The invoice module {n} keeps its invoice rules in shop/invoice_{n}.py and checks them')}\n"
        for n in range(40)
    )  # fmt: skip
    (project / ".expertise" / "general.yaml").write_text("domain: general\nbest_practices:\n" + rules)
    (project / ".expertise" / "api.yaml").write_text("domain: api\npatterns:\n" + facts)
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "a full store")
    settle(project)
    start = _start(project, "sess-full")
    first = _prompt(project, "change how the invoice rules are checked", "sess-full")
    assert len(start) > 1000 and first  # both had plenty to say
    assert len(start) + len(first) <= 3000
    alone = _prompt(project, "change how the invoice rules are checked", "sess-no-start")
    assert len(alone) > 3000 - len(start)  # with no essentials given, the first prompt has the room


def test_the_session_state_line_reads_old_and_odd_counts() -> None:
    from expertise_kit.fast.session import _spent_line

    assert _spent_line("=1200,1800,900") == (1200, 1800, 900)
    assert _spent_line("=1200,1800") == (1200, 1800, 0)  # written before the start was kept
    assert _spent_line("=1,2,3,4") == _spent_line("=a,b") == _spent_line("abc123") == (0, 0, 0)


def test_missing_or_corrupt_session_state_never_breaks_the_hook(project: Path) -> None:
    _store(project)
    _start(project, "sess-9")
    state = project / ".git" / "expertise" / "cache" / "sessions" / "sess-9"
    assert state.is_file()
    state.write_bytes(b"\x00\xff" * 5000 + b"\n../../etc/passwd\n")
    text = _prompt(project, "retry logic in shop/payments.py with the idempotency key", "sess-9")
    assert "idempotency key header" in text
    state.unlink()
    state.mkdir()  # not even a file
    assert "idempotency key header" in _prompt(project, "shop/payments.py idempotency key", "sess-9")
    hostile = _hook(project, {"prompt": "shop/payments.py idempotency", "session_id": "../../../tmp/x"})
    assert "idempotency key header" in _context(hostile)  # an unusable id: no state, still answered
    assert not (project / ".git" / "tmp").exists()


def test_stale_entries_are_not_shown_and_old_ones_say_when(project: Path) -> None:
    _store(project)
    text = _prompt(project, "refunds and the payments sandbox amounts in shop/payments.py", "s-old")
    assert "never the gateway directly" not in text  # marked stale by validate
    assert "rejects amounts over 10000 cents" in text and "months ago)" in text


def test_a_posting_out_of_step_with_the_entries_is_left_out() -> None:
    from expertise_kit.fast.retrieve import for_prompt

    def entry(n: int, text: str) -> dict[str, object]:
        return {"id": f"e{n}", "kind": "learned_from_failures", "group": "failures", "order": n, "line": f"- {text}",
                "n": 3, "issue": text, "error": text, "solution": "retry with a fixed seed"}  # fmt: skip

    empty = {"entries": [], "postings": {}, "lengths": [], "paths": []}
    flaky = {"entries": [entry(1, "flaky network")], "postings": {"network": [0, 5], "flaky": [0, 5]},
             "lengths": [3], "paths": []}  # fmt: skip  # 5: an entry the file no longer has
    shown = for_prompt({"domains": {"a": empty, "b": flaky}}, ["a", "b"], task="flaky network")
    assert shown.included == ["e1"]
