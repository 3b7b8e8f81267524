"""`expertise mcp` with 7 domains at the 1000-line cap, through the SDK's own stdio client: the time to a
ready session; the first search at once, and 2 s later (the server parses the domain files on a thread
from its start); then searches and gets on a warm server, side by side with `expertise render --task`
for the same task run as a command.

    .venv/bin/python bench/bench_mcp.py [--runs N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import bench_env, expertise_argv, p50, temp_repo, time_command  # noqa: E402
from bench_hook import fill  # noqa: E402

TASK = "fix the failing migration index test"


async def _session(root: Path, env: dict[str, str], runs: int, pause: float) -> dict[str, Any]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "expertise_kit", "mcp"], cwd=str(root), env=env)
    figures: dict[str, Any] = {}
    start = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        figures["ready"] = time.perf_counter() - start
        await anyio.sleep(pause)  # an agent's first call comes later: the server parses the files meanwhile
        start = time.perf_counter()
        first = await session.call_tool("search", {"query": TASK, "limit": 50})
        figures["first"] = time.perf_counter() - start
        results = first.structured_content["results"] if first.structured_content else []
        figures["hits"] = len(results)
        searches, gets = [], []
        for _ in range(runs):
            start = time.perf_counter()
            await session.call_tool("search", {"query": TASK})
            searches.append(time.perf_counter() - start)
            start = time.perf_counter()
            await session.call_tool("get", {"entry_id": results[0]["id"]})
            gets.append(time.perf_counter() - start)
        figures["search"], figures["get"] = p50(searches), p50(gets)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    env = bench_env()
    root = temp_repo(env)
    subprocess.run([*expertise_argv(), "-C", str(root), "init"], env=env, check=True, capture_output=True)
    fill(root)
    subprocess.run(
        [*expertise_argv(), "-C", str(root), "render", "--task", TASK], env=env, check=True, capture_output=True
    )
    figures = anyio.run(_session, root, env, args.runs, 0.0)
    paused = anyio.run(_session, root, env, 1, 2.0)
    render = p50(time_command([*expertise_argv(), "-C", str(root), "render", "--task", TASK], 10, env))
    print(f"7 domains at the cap; p50 of {args.runs} calls on one warm server\n")
    print(f"  start to an initialised session          {figures['ready'] * 1000:7.1f} ms")
    print(f"  first search (limit 50: {figures['hits']} hits)          {figures['first'] * 1000:7.1f} ms")
    print(f"  first search, 2 s after initialising      {paused['first'] * 1000:7.1f} ms")
    print(f"  search, warm                             {figures['search'] * 1000:7.1f} ms")
    print(f"  get, warm                                {figures['get'] * 1000:7.1f} ms")
    print(f"  expertise render --task, as a command    {render * 1000:7.1f} ms")
    print(f"  ratio warm search / render command       {figures['search'] / render:7.2f}x")


if __name__ == "__main__":
    main()
