"""`GET /api/projects/{id}/render` against the in-process `Expertise.render` it serves, side by side in one
run: 7 domains at the 1000-line cap, the same task, p50 of N calls each, alternated so both see the same
machine load. The HTTP figure is a real `expertise serve` process on a loopback port and a keep-alive httpx
client: it adds the request's parsing, the threadpool hop and the response's encoding.

    .venv/bin/python bench/bench_api.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, temp_repo  # noqa: E402
from bench_hook import fill  # noqa: E402

TASK = "fix the failing migration index test"
FILES = ["db/migrations/0042_index.py"]


def _serve(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [*expertise_argv(), "serve", "--port", "0", "--project", f"bench={root}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()  # "serving http://127.0.0.1:PORT/api/projects (bench)"
    return server, line.split()[1].rsplit("/api/", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    fill(root)
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_") or k == "HOME"})
    from expertise_kit.api import Expertise

    expertise = Expertise(root)
    expertise.render(TASK, FILES)  # the render cache built once, as the first prompt would
    server, base = _serve(root, env)
    try:
        with httpx.Client(base_url=base, trust_env=False) as client:
            params = {"task": TASK, "file": FILES}
            url = "/api/projects/bench/render"
            served = client.get(url, params=params)
            served.raise_for_status()
            assert served.json()["text"] == expertise.render(TASK, FILES)["text"], "the API and the call differ"
            for _ in range(20):  # warm both: imports, the cache read, the connection
                client.get(url, params=params)
                expertise.render(TASK, FILES)
            local, remote = [], []
            for _ in range(args.runs):
                start = time.perf_counter()
                expertise.render(TASK, FILES)
                local.append(time.perf_counter() - start)
                start = time.perf_counter()
                client.get(url, params=params).raise_for_status()
                remote.append(time.perf_counter() - start)
    finally:
        server.terminate()
        server.wait(timeout=10)
    chars = len(served.json()["text"])
    print(f"7 domains at the cap; render of {chars} characters; p50 of {args.runs} calls each, alternated\n")
    print(f"  Expertise.render, in process             {p50(local) * 1000:7.2f} ms")
    print(f"  GET /api/projects/bench/render           {p50(remote) * 1000:7.2f} ms")
    print(f"  ratio HTTP / in process                  {p50(remote) / p50(local):7.2f}x  (budget 2x)")


if __name__ == "__main__":
    main()
