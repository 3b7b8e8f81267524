"""`expertise serve` as a real process on a loopback port, hit with a real HTTP client (httpx): every body
equal to the CLI's `--json` run as a real command, every error status, and 20 writes through the API with
20 through the CLI at once, nothing lost. Traffic goes to 127.0.0.1 only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from builders import shop_session
from conftest import IDENTITY, git

from expertise_kit.document.atomic import write_lock
from expertise_kit.project import find_project

TOKEN = "t0ken-for-tests-only-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and "PROXY" not in k.upper()}
    return {**env, **IDENTITY, "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"}


def cli(root: Path, env: dict[str, str], *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """The real command, as a process, run in ``root``."""
    done = subprocess.run(
        [sys.executable, "-m", "expertise_kit", *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    if ok:
        assert done.returncode == 0, done.stderr
    return done


def cli_json(root: Path, env: dict[str, str], *args: str) -> Any:
    return json.loads(cli(root, env, *args, "--json").stdout)


def make_project(root: Path, env: dict[str, str]) -> Path:
    """A repo with `expertise init` done, some code under the testing domain's paths, a few commits."""
    root.mkdir(parents=True)
    for args in (["init", "-q", "-b", "main"], ["config", "commit.gpgsign", "false"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    (root / "tests").mkdir()
    for n in range(3):
        (root / "tests" / f"test_part{n}.py").write_text(f"def test_{n}():\n    assert True\n")
        subprocess.run(["git", "add", "-A"], cwd=root, env=env, check=True)
        subprocess.run(["git", "commit", "-qm", f"tests {n}"], cwd=root, env=env, check=True)
    cli(root, env, "init")
    cli(root, env, "add", "testing", "core_files", "tests/test_part0.py")
    cli(root, env, "add", "testing", "patterns", "fixtures live in conftest.py")
    return root


class Server:
    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "expertise_kit", "serve", "--port", "0", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "serving http://127.0.0.1:PORT/api/projects (...)"
        assert line.startswith("serving http://127.0.0.1:"), line + self.process.stderr.read()
        self.base = line.split()[1].rsplit("/api/", 1)[0]
        self.client = httpx.Client(base_url=self.base, trust_env=False, timeout=120)

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.communicate(timeout=20)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Path], dict[str, str]]]:
    """One server for the read and error tests: two projects, a token, a short lock wait, a 1 MiB body cap."""
    base = tmp_path_factory.mktemp("served")
    env = _env(base / "home")
    roots = {name: make_project(base / name, env) for name in ("shop", "twin")}
    server = Server(
        env,
        *("--project", f"shop={roots['shop']}", "--project", f"twin={roots['twin']}"),
        *("--token", TOKEN, "--lock-wait", "0.5", "--max-body", "1"),
    )
    yield server, roots, env
    server.stop()


# -- bodies equal to the CLI's ------------------------------------------------------------------


def test_reads_equal_the_cli(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    server, roots, env = served
    root, http = roots["shop"], server.client
    projects = http.get("/api/projects").json()
    assert [(p["id"], p["root"]) for p in projects] == [("shop", str(roots["shop"])), ("twin", str(roots["twin"]))]
    assert http.get("/api/projects/shop/expertise").json() == cli_json(root, env, "list")
    assert http.get("/api/projects/shop/expertise/testing").json() == cli_json(root, env, "show", "testing")
    history = http.get("/api/projects/shop/expertise/testing/history").json()
    assert history == cli_json(root, env, "history", "testing")
    assert len(history) == 3  # init, and the two adds
    limited = http.get("/api/projects/shop/expertise/testing/history", params={"limit": 1}).json()
    assert limited == cli_json(root, env, "history", "testing", "-n", "1")
    task = {"task": "fix the failing fixture in the tests", "file": ["tests/test_part1.py"]}
    rendered = http.get("/api/projects/shop/render", params=task).json()
    assert rendered == cli_json(root, env, "render", "--task", task["task"], "--file", task["file"][0])
    assert "conftest.py" in rendered["text"]
    text = http.get("/api/projects/shop/render", params={**task, "format": "text"})
    assert text.headers["content-type"].startswith("text/markdown") and text.text == rendered["text"]
    whole = http.get("/api/projects/shop/render", params={"domain": "testing"}).json()
    assert whole == cli_json(root, env, "render", "--domain", "testing")
    newest = history[0]["commit"]
    assert http.get("/api/projects/shop/diff", params={"rev": newest}).json() == cli_json(root, env, "diff", newest)


def _masked(value: Any) -> Any:
    """Commits and validation times differ between two repos built alike; whether they are there does not."""
    if isinstance(value, dict):
        return {
            k: (v is not None) if k in ("commit", "last_validated") else _masked(v) for k, v in sorted(value.items())
        }
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def test_writes_equal_the_cli_one_commit_each(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    """The same write on twin projects: one through the API, one through the CLI."""
    server, roots, env = served
    http, shop, twin = server.client, roots["shop"], roots["twin"]
    for root in (shop, twin):  # something for validate to correct: a core file deleted
        git(root, "rm", "-q", "tests/test_part0.py")
        git(root, "commit", "-qm", "drop part0")
    before = {root: git(root, "rev-list", "--count", "HEAD") for root in (shop, twin)}
    validated = http.post("/api/projects/shop/expertise/testing/validate", headers=AUTH)
    assert validated.status_code == 200, validated.text
    assert validated.json()[0]["removed"] == ["tests/test_part0.py"]
    assert _masked(validated.json()) == _masked(cli_json(twin, env, "validate", "testing"))
    after = {root: git(root, "rev-list", "--count", "HEAD") for root in (shop, twin)}
    assert all(int(after[root]) == int(before[root]) + 1 for root in (shop, twin))

    improved = http.post("/api/projects/shop/expertise/testing/improve", headers=AUTH, params={"limit": 5})
    assert improved.status_code == 200, improved.text
    assert improved.json()[0]["added"] >= 1
    assert _masked(improved.json()) == _masked(cli_json(twin, env, "improve", "testing", "--limit", "5"))

    transcript = shop_session().write(twin / "session.jsonl")
    learned = http.post(
        "/api/projects/shop/learn", headers=AUTH, params={"name": "session.jsonl"}, content=transcript.read_bytes()
    )
    assert learned.status_code == 200, learned.text
    assert any(d["added"] for d in learned.json()["domains"].values())
    assert _masked(learned.json()) == _masked(cli_json(twin, env, "learn", "session.jsonl"))
    # The server's copy of the body is gone, and no report names where it was.
    assert "expertise-learn-" not in learned.text

    checked = http.post("/api/projects/shop/expertise/testing/validate", params={"check": "true"}, headers=AUTH)
    assert checked.status_code == 200 and checked.json()[0]["commit"] is None


# -- errors -------------------------------------------------------------------------------------


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["status"] == status and body["lines"]
    return str(body["message"])


def test_unknown_project_and_domain_are_404(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    http = served[0].client
    unknown = http.get("/api/projects/nope/expertise")
    assert "unknown project 'nope'" in _error(unknown, 404)
    assert unknown.json()["error"]["lines"][1] == "known projects: shop, twin"
    assert "unknown project" in _error(http.get("/api/projects/nope/render"), 404)
    for path in ("/expertise/billing", "/expertise/billing/history"):
        assert "unknown domain 'billing'" in _error(http.get(f"/api/projects/shop{path}"), 404)
    for action in ("validate", "improve"):
        response = http.post(f"/api/projects/shop/expertise/billing/{action}", headers=AUTH)
        assert "unknown domain" in _error(response, 404)
    assert "no endpoint" in _error(http.get("/api/projects/shop/expertise/testing/histroy"), 404)


@pytest.mark.parametrize(
    "domain",
    ["..%2F..%2F..%2Fetc%2Fpasswd", "%2E%2E", "..%2Fconfig", "Testing", "a%00b", "x" * 41, "con", "%2Fetc%2Fpasswd"],
)
def test_traversal_and_malformed_domains_are_400(
    served: tuple[Server, dict[str, Path], dict[str, str]], domain: str
) -> None:
    http, roots = served[0].client, served[1]
    before = git(roots["shop"], "rev-parse", "HEAD")
    for method, suffix in (("GET", ""), ("GET", "/history"), ("POST", "/validate"), ("POST", "/improve")):
        url = f"{served[0].base}/api/projects/shop/expertise/{domain}{suffix}"
        response = http.request(method, httpx.URL(url), headers=AUTH)
        assert "domain name" in _error(response, 400)
    assert git(roots["shop"], "rev-parse", "HEAD") == before


def test_bad_input_is_400(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    http = served[0].client
    render = "/api/projects/shop/render"
    assert "max_chars" in _error(http.get(render, params={"max_chars": 5}), 400)
    assert "task" in _error(http.get(render, params={"task": "x" * 8001}), 400)
    assert "file path" in _error(http.get(render, params={"file": " "}), 400)
    assert "format" in _error(http.get(render, params={"format": "xml"}), 400)
    assert "limit" in _error(http.get("/api/projects/shop/expertise/testing/history", params={"limit": 0}), 400)
    for rev in ("no-such-revision", "--output=/tmp/x", "HEAD~999"):
        assert "revision" in _error(http.get("/api/projects/shop/diff", params={"rev": rev}), 400)
        assert "revision" in _error(http.post("/api/projects/shop/revert", params={"rev": rev}, headers=AUTH), 400)
    assert "range" in _error(http.get("/api/projects/shop/diff", params={"rev": "a..b..c"}), 400)
    learn = "/api/projects/shop/learn"
    assert "binary" in _error(http.post(learn, content=b"\x00" * 64, headers=AUTH), 400)
    assert "empty" in _error(http.post(learn, content=b"", headers=AUTH), 400)
    assert "name" in _error(http.post(learn, params={"name": "../x.jsonl"}, content=b"{}\n", headers=AUTH), 400)
    assert "format" in _error(http.post(learn, params={"format": "word"}, content=b"{}\n", headers=AUTH), 400)
    assert "plain file name" in _error(http.post(learn, params={"name": "a\x00b"}, content=b"{}\n", headers=AUTH), 400)
    assert _error(http.delete("/api/projects/shop/expertise"), 405)  # the same error shape as ours
    cross = http.post(learn, content=b"{}\n", headers={"Origin": "https://example.test"})
    assert cross.status_code == 401  # a token is set here: without it, the request is refused first


def test_a_write_without_the_token_is_401(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    server, roots = served[0], served[1]
    http = server.client
    before = git(roots["shop"], "rev-parse", "HEAD")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}, {"Authorization": "Basic x"}):
        for path in ("/expertise/testing/validate", "/expertise/testing/improve", "/learn"):
            response = http.post(f"/api/projects/shop{path}", headers=headers, content=b"{}\n")
            _error(response, 401)
            assert response.headers["www-authenticate"] == "Bearer"
        _error(http.post("/api/projects/nope/learn", headers=headers), 401)  # who, before which project
    assert git(roots["shop"], "rev-parse", "HEAD") == before
    assert http.get("/api/projects/shop/expertise").status_code == 200  # reads are open on loopback


def test_a_busy_store_is_409(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    http, root = served[0].client, served[1]["twin"]
    with write_lock(find_project(root).lock_path, timeout=10):
        response = http.post("/api/projects/twin/expertise/testing/validate", headers=AUTH)
        assert "held the lock" in _error(response, 409)
        assert response.headers["retry-after"] == "1"
        assert http.get("/api/projects/twin/expertise/testing").status_code == 200  # readers need no lock
    assert http.post("/api/projects/twin/expertise/testing/validate", headers=AUTH).status_code == 200


def test_a_body_too_large_is_413(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    http = served[0].client
    big = b'{"type": "user"}\n' * (70_000)  # 1.2 MiB, over the 1 MiB the server was given
    _error(http.post("/api/projects/shop/learn", content=big, headers=AUTH), 413)

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(40):
            yield b"x" * 65536

    _error(http.post("/api/projects/shop/learn", content=chunks(), headers=AUTH), 413)
    assert http.get("/api/projects").status_code == 200  # still serving


def test_a_foreign_host_header_is_refused_on_loopback(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    http = served[0].client
    for path in ("/api/projects", "/api/projects/shop/expertise", "/api/projects/shop/render"):
        assert "Host" in _error(http.get(path, headers={"Host": "evil.example:80"}), 400)
    assert http.get("/api/projects", headers={"Host": "localhost:1"}).status_code == 200


def test_openapi_schema_lists_the_endpoints(served: tuple[Server, dict[str, Path], dict[str, str]]) -> None:
    paths = served[0].client.get("/openapi.json").json()["paths"]
    expected = {
        "/api/projects",
        "/api/projects/{project_id}/expertise",
        "/api/projects/{project_id}/expertise/{domain}",
        "/api/projects/{project_id}/expertise/{domain}/validate",
        "/api/projects/{project_id}/expertise/{domain}/improve",
        "/api/projects/{project_id}/expertise/{domain}/history",
        "/api/projects/{project_id}/render",
        "/api/projects/{project_id}/learn",
    }
    assert expected <= set(paths)
    assert "404" in paths["/api/projects/{project_id}/expertise/{domain}"]["get"]["responses"]


# -- starting -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--host", "0.0.0.0"], "refusing to serve on 0.0.0.0 without --token"),
        (["--host", "192.0.2.1"], "refusing to serve on 192.0.2.1 without --token"),
        (["--host", "::"], "refusing to serve on :: without --token"),
        (["--token", "short"], "shorter than 16"),
        (["--project", "a/b=."], "is not plain"),
        (["--project", "nodir"], "is not NAME=DIR"),
    ],
)
def test_refused_at_start(project: Path, args: list[str], message: str) -> None:
    """Refused before anything listens: one line, exit 1."""
    env = {k: v for k, v in os.environ.items() if k != "EXPERTISE_SERVE_TOKEN"}
    defaults = [] if any(a == "--project" for a in args) else ["--project", f"p={project}"]
    done = cli(project, env, "serve", "--port", "0", *defaults, *args, ok=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


def test_a_directory_without_expertise_is_refused(repo: Path) -> None:
    done = cli(repo, dict(os.environ), "serve", "--port", "0", "--project", f"p={repo}", ok=False)
    assert done.returncode == 1 and "expertise init" in done.stderr


# -- many writers -------------------------------------------------------------------------------


def test_twenty_api_writes_and_twenty_cli_writes_at_once(tmp_path: Path) -> None:
    """20 transcripts learned through the API while 20 `expertise add` processes run: every session
    counted, every entry there, every revision committed."""
    env = _env(tmp_path / "home")
    root = make_project(tmp_path / "busy", env)
    server = Server(env, "--project", f"busy={root}", "--lock-wait", "120")
    sessions = [f"5e55104e-1d2c-4b1a-9f00-{n:012d}" for n in range(1, 21)]
    bodies = [b"".join(json.dumps(r).encode() + b"\n" for r in shop_session(sid).records) for sid in sessions]
    go = threading.Event()  # every writer ready first, then all at once

    def through_api(body: bytes) -> httpx.Response:
        go.wait(timeout=60)
        return server.client.post("/api/projects/busy/learn", content=body)

    def through_cli(n: int) -> subprocess.CompletedProcess[str]:
        go.wait(timeout=60)
        return cli(root, env, "add", "testing", "patterns", f"writer rule {n}", ok=False)

    try:
        with ThreadPoolExecutor(max_workers=40) as pool:
            calls = [pool.submit(through_api, body) for body in bodies]
            commands = [pool.submit(through_cli, n) for n in range(20)]
            go.set()
            responses = [c.result() for c in calls]
            done = [c.result() for c in commands]
    finally:
        server.stop()
    assert [r.status_code for r in responses] == [200] * 20, [r.text for r in responses if r.status_code != 200]
    assert all(c.returncode == 0 for c in done), [c.stderr for c in done if c.returncode]
    assert all(not r.json()["errors"] for r in responses)
    shown = cli_json(root, env, "show", "testing")
    texts = {e.get("text") for e in shown["entries"]}
    assert {f"writer rule {n}" for n in range(20)} <= texts
    learned = [e for s in ("database", "api", "testing", "general") for e in cli_json(root, env, "show", s)["entries"]]
    counted = [e for e in learned if e.get("source") == "learned" and len(e.get("sessions", [])) == 20]
    assert counted, "no learned entry was counted once per session"
    assert all(e["recurrence"] == 20 for e in counted)
    rows = cli_json(root, env, "history")
    assert not any(r["deferred"] for r in rows)
    assert sum(1 for r in rows if r["subject"].endswith("by hand")) == 22  # the two of make_project, and the 20
    assert git(root, "status", "--porcelain", ".expertise").strip() == ""
