"""An end-to-end tour in a throwaway git repo: ``python -m expertise_kit.demo``.

It runs the real CLI, step by step, printing each command and what it printed.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

__all__ = ["main"]


def _run(argv: list[str], cwd: Path, env: dict[str, str], *, show: bool = True) -> str:
    if show:
        print(f"\n$ {shlex.join(argv)}")
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if show:
        sys.stdout.write(done.stdout)
        sys.stdout.write(done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"demo step failed with exit {done.returncode}: {shlex.join(argv)}")
    return done.stdout


def main() -> None:
    workdir = Path(tempfile.mkdtemp(prefix="expertise-demo-"))
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Demo User",
        "GIT_AUTHOR_EMAIL": "demo@example.test",
        "GIT_COMMITTER_NAME": "Demo User",
        "GIT_COMMITTER_EMAIL": "demo@example.test",
    }
    expertise = [sys.executable, "-m", "expertise_kit"]
    print(f"expertise_kit demo in {workdir}")
    _run(["git", "init", "-q", "-b", "main"], workdir, env)
    (workdir / "README.md").write_text("# demo project\n")
    _run(["git", "add", "README.md"], workdir, env, show=False)
    _run(["git", "commit", "-q", "-m", "initial commit"], workdir, env, show=False)
    _run([*expertise, "init"], workdir, env)
    _run([*expertise, "add", "database", "patterns", "Always use UUID primary keys"], workdir, env)
    _run(
        [
            *expertise,
            "add",
            "database",
            "failures",
            "Windows encoding error",
            "--error",
            "UnicodeDecodeError: 'charmap' codec can't decode byte 0x9d",
            "--solution",
            "Always pass encoding='utf-8' to open()",
        ],
        workdir,
        env,
    )
    _run([*expertise, "add", "database", "patterns", "always use uuid primary keys."], workdir, env)
    sample = resources.files("expertise_kit") / "demo_data" / "sample-session.jsonl"
    with resources.as_file(sample) as transcript:
        _run([*expertise, "learn", str(transcript)], workdir, env)
    _run([*expertise, "show", "testing"], workdir, env)
    _run([*expertise, "render", "--task", "the checkout test fails after the pricing change"], workdir, env)
    _run([*expertise, "show", "database"], workdir, env)
    _run([*expertise, "list"], workdir, env)
    print(f"\n$ cat .expertise/database.yaml\n{(workdir / '.expertise' / 'database.yaml').read_text()}")
    _run([*expertise, "history"], workdir, env)
    _run([*expertise, "diff", "HEAD"], workdir, env)
    _run(["git", "log", "-1", "--format=fuller", "--", ".expertise"], workdir, env)
    print(f"\nDone. The demo repo is left at {workdir} for you to look around.")


if __name__ == "__main__":
    main()
