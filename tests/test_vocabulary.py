"""One vocabulary: a section added as one row of ``vocab.SECTIONS`` is followed by add, the cap,
rendering, the schema, the render cache and the hook, with no other change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import git

from expertise_kit import vocab

# The one change: a row in the table. Run before anything else of the package is imported.
PRELUDE = (
    "import expertise_kit.vocab as v; "
    "v.SECTIONS = (*v.SECTIONS, v.Section('anti_patterns', v.TEXT, prune_rank=6, floor=0, group='pitfalls')); "
)


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = PRELUDE + "import sys; from expertise_kit.cli import main; sys.argv[0] = 'expertise'; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=repo, capture_output=True, text=True, check=False, timeout=120
    )


def _hook(repo: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    code = PRELUDE + "import expertise_kit.hook as h; h.main(['pre', '--agent', 'claude-code'])"
    payload = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(repo)})
    return subprocess.run(
        [sys.executable, "-I", "-c", code], input=payload, capture_output=True, text=True, check=False, timeout=120
    )


def test_a_section_added_in_one_place_is_followed_everywhere(repo: Path) -> None:
    assert "anti_patterns" not in vocab.section_names()  # the package itself is unchanged
    assert _cli(repo, "init").returncode == 0
    api = repo / ".expertise" / "api.yaml"
    assert "anti_patterns: []" in api.read_text()  # new files carry the section

    added = _cli(repo, "add", "api", "anti-patterns", "Never retry a payment call without an idempotency key")
    assert added.returncode == 0, added.stderr
    assert "(anti_patterns)" in added.stdout

    schema = json.loads(_cli(repo, "schema").stdout)
    assert "anti_patterns" in schema["properties"]

    rendered = _cli(repo, "render", "--task", "retry the payment api call")
    assert rendered.returncode == 0, rendered.stderr
    pitfalls = rendered.stdout.split("### Known pitfalls", 1)
    assert len(pitfalls) == 2 and "idempotency key" in pitfalls[1].split("###")[0]
    assert "What worked before" not in rendered.stdout

    hooked = _hook(repo, "retry the payment api call")
    assert hooked.returncode == 0 and "idempotency key" in hooked.stdout, hooked.stderr

    shown = json.loads(_cli(repo, "show", "api", "--json").stdout)
    assert any(e["section"] == "anti_patterns" for e in shown["entries"])


def test_the_cap_prunes_an_added_section_without_crashing(repo: Path) -> None:
    """The obvious route once crashed `add` with KeyError: 'anti_patterns' when the file hit its cap."""
    assert _cli(repo, "init").returncode == 0
    (repo / ".expertise" / "config.yaml").write_text("line_cap: 60\n")
    api = repo / ".expertise" / "api.yaml"
    learned = "".join(
        f"  - text: learned anti-pattern number {n}\n    source: learned\n    sessions: [s{n}]\n"
        f"    last_seen: '2026-10-{n % 28 + 1:02d}T00:00:00Z'\n"
        for n in range(14)
    )
    api.write_text(api.read_text().replace("anti_patterns: []\n", "anti_patterns:\n" + learned))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fill anti_patterns")
    result = _cli(repo, "add", "api", "anti_patterns", "Never log card numbers")
    assert result.returncode == 0, result.stderr
    assert "pruned learned anti_patterns entry" in result.stderr
    text = api.read_text()
    assert len(text.splitlines()) <= 60 and "Never log card numbers" in text
