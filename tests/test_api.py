"""The Python API against the real commands: each method's data equal to the command's `--json` (a real
process), the router mounted in another app and served by uvicorn, and the hook path importing none of it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import Cli, git

import expertise_kit
from expertise_kit import Expertise, LockTimeout, UnknownDomain, UserError
from expertise_kit.document.atomic import write_lock


def command(root: Path, *args: str) -> Any:
    """`expertise ARGS --json` as a real process in ``root``."""
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", *args, "--json"], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_public_surface_is_what_all_lists() -> None:
    for name in expertise_kit.__all__:
        assert getattr(expertise_kit, name) is not None
    with pytest.raises(AttributeError):
        expertise_kit.not_exported  # noqa: B018


def test_reads_equal_the_commands(project: Path, run: Cli) -> None:
    run("add", "testing", "failures", "flaky clock", "--error", "AssertionError: 3 != 4", "--solution", "freeze it")
    kit = Expertise(project / "README.md")  # any path inside the project finds it
    assert kit.root == project
    assert kit.list() == command(project, "list")
    assert kit.show("testing") == command(project, "show", "testing")
    assert kit.history() == command(project, "history")
    assert kit.history("testing", 1) == command(project, "history", "testing", "-n", "1")
    head = git(project, "rev-parse", "HEAD").strip()
    assert kit.diff(head) == command(project, "diff", head)
    assert kit.diff() == command(project, "diff") == []
    assert kit.render("the clock test is flaky") == command(project, "render", "--task", "the clock test is flaky")
    assert "freeze it" in kit.render("the clock test is flaky")["text"]
    assert kit.validate("testing", check=True) == command(project, "validate", "testing", "--check")


def _masked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v is not None) if k in ("commit", "reverted") else _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return value


def test_writes_equal_the_commands(tmp_path: Path, run: Cli, project: Path) -> None:
    """add, feedback and revert on twin projects: one through the API, one through the command."""
    twin = tmp_path / "twin"
    twin.mkdir()
    git(twin, "init", "-q", "-b", "main")
    git(twin, "commit", "-q", "--allow-empty", "-m", "initial")
    Cli(twin)("init")
    kit = Expertise(project)
    args = ("testing", "patterns", "use tmp_path, never /tmp; token ghp_" + "a" * 36)
    added = kit.add(*args)
    assert added["added"] and sum(added["redacted"].values()) == 1
    assert "ghp_" not in json.dumps(kit.show("testing"))
    assert _masked(added) == _masked(command(twin, "add", *args))
    voted = kit.feedback(added["id"], "harmful", "too strict")
    assert _masked(voted) == _masked(command(twin, "feedback", added["id"], "--harmful", "--note", "too strict"))
    undone = kit.revert(git(project, "rev-parse", "HEAD").strip())
    twin_head = git(twin, "rev-parse", "HEAD").strip()
    assert _masked(undone) == _masked(command(twin, "revert", twin_head))
    assert undone["subject"] == "expertise(testing): harmful feedback on " + added["id"]
    assert undone["files"] == [".expertise/testing.yaml"]


def test_errors(project: Path) -> None:
    kit = Expertise(project, lock_timeout=0.2)
    with pytest.raises(UnknownDomain):
        kit.show("billing")
    for bad in ("../etc", "", "A"):
        with pytest.raises(UserError, match="domain name"):
            kit.history(bad)
    with pytest.raises(UserError, match="revision"):
        kit.revert("no-such-revision")
    with pytest.raises(UserError, match="not a plain file name"):
        kit.learn_text(b"{}\n", name="../../escape.jsonl")
    with write_lock(kit.project.lock_path, timeout=5), pytest.raises(LockTimeout):
        kit.add("testing", "patterns", "waits 0.2 s, then gives up")
    assert "waits 0.2 s" not in json.dumps(kit.show("testing"))


def test_learn_text_reports_the_name_given(project: Path) -> None:
    from builders import shop_session

    body = "".join(json.dumps(r) + "\n" for r in shop_session().records)
    report = Expertise(project).learn_text(body, name="night-run.jsonl", dry_run=True)
    assert report["dry_run"] and report["sessions"][0]["path"] == "night-run.jsonl"
    assert report["sessions"][0]["files_read"] == ["night-run.jsonl"]
    assert git(project, "status", "--porcelain").strip() == ""


@pytest.fixture
def mounted(project: Path) -> Iterator[str]:
    """An orchestrator's own FastAPI app with the router under /kit, served by uvicorn on a loopback port."""
    import uvicorn
    from fastapi import FastAPI

    from expertise_kit.httpapi import Projects, build_router, install_error_handlers

    app = FastAPI()

    @app.get("/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    broken = project.parent / "broken"
    broken.mkdir()
    git(broken, "init", "-q", "-b", "main")
    git(broken, "commit", "-q", "--allow-empty", "-m", "initial")
    Cli(broken)("init")
    (broken / ".expertise" / "config.yaml").write_text("domains: [unclosed\n")
    app.include_router(build_router(Projects.open({"shop": project, "broken": broken})), prefix="/kit")
    install_error_handlers(app)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_the_router_mounts_in_another_app(mounted: str, project: Path) -> None:
    with httpx.Client(base_url=mounted, trust_env=False) as http:
        assert http.get("/health").json() == {"status": "ok"}
        shop, broken = http.get("/kit/api/projects").json()
        assert shop["domains"][0] == "database" and shop["error"] is None
        assert broken["domains"] is None and "config.yaml" in broken["error"]
        assert "config.yaml" in http.get("/kit/api/projects/broken/expertise").json()["error"]["message"]
        assert http.get("/kit/api/projects/shop/expertise").json() == Expertise(project).list()
        assert http.get("/kit/api/projects/shop/render", params={"max_chars": 1}).status_code == 400
        schema = http.get("/openapi.json").json()
        assert "/kit/api/projects/{project_id}/expertise/{domain}/history" in schema["paths"]
        assert "/health" in schema["paths"]
        # No token here: a write that a web page sent (it carries an Origin) is refused, a program's is not.
        page = http.post("/kit/api/projects/shop/expertise/testing/validate", headers={"Origin": "https://a.test"})
        assert page.status_code == 403 and page.json()["error"]["status"] == 403
        assert git(project, "log", "-1", "--format=%s").strip() == "expertise: set up .expertise/ with 7 domains"
        assert http.post("/kit/api/projects/shop/expertise/testing/validate").status_code == 200


def test_the_hook_path_imports_none_of_it(project: Path) -> None:
    code = (
        "import sys, expertise_kit, expertise_kit.hook;"
        "print([m for m in sys.modules if m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette', 'httpx')"
        " or m in ('expertise_kit.api', 'expertise_kit.httpapi')])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    lazy = "import sys; import expertise_kit.httpapi.projects; print('fastapi' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True, check=True).stdout == "False\n"
