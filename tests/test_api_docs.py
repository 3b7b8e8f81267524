"""docs/api.md's Python examples, run in order in one fresh project, as the doc says they run."""

from __future__ import annotations

import re
import shutil
from importlib import resources
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_the_doc_has_examples() -> None:
    assert len(_blocks()) >= 6


def test_the_examples_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sample = resources.files("expertise_kit") / "demo_data" / "sample-session.jsonl"
    with resources.as_file(sample) as path:
        shutil.copyfile(path, project / "session.jsonl")
    monkeypatch.chdir(project)
    namespace: dict[str, object] = {"__name__": "docs_api"}
    for number, block in enumerate(_blocks(), 1):
        code = compile(block, f"docs/api.md python block {number}", "exec")
        exec(code, namespace)  # each block's asserts are the checks
    assert "kit" in namespace and "app" in namespace
