"""Fetch latency over MCP against the same fetch in process.

    python benchmarks/perf_mcp.py [--skills 1000] [--queries 100]

Builds a library of synthetic skills (as perf_fetch.py does), then times, for the same
queries, ``SkillLibrary.fetch(q, k=3)`` in process, the ``fetch_skills`` tool through the
real mcp client in memory (same process), over stdio (``skills serve-mcp`` subprocess) and
over streamable HTTP (``skills serve-mcp --http``). Prints p50/p95 and the MCP overhead.
"""

from __future__ import annotations

import argparse
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from perf_fetch import percentile, synthetic_whens  # type: ignore[import-not-found]  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _time_client(client, probes: list[str]) -> list[float]:
    times = []
    for q in probes[:5]:
        await client.call_tool("fetch_skills", {"task": q, "k": 3})
    for q in probes:
        t0 = time.perf_counter()
        result = await client.call_tool("fetch_skills", {"task": q, "k": 3})
        times.append((time.perf_counter() - t0) * 1000)
        assert not result.is_error, result.content
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()

    import anyio
    from mcp import Client, StdioServerParameters

    from skill_library.embeddings import SentenceTransformerEmbedder
    from skill_library.integrations.mcp_server import SkillServer
    from skill_library.library import SkillLibrary
    from skill_library.models import Skill

    embedder = SentenceTransformerEmbedder(threads=1)
    whens = synthetic_whens(args.skills, seed=1)
    probes = [f"please {w}" for w in whens[: args.queries]]
    rows: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "lib"
        lib = SkillLibrary(folder, embedder=embedder)
        lib.add_many(
            [Skill.from_function(f"def skill_{i}(target: str) -> str:\n    return target\n", when=w)
             for i, w in enumerate(whens)],
            verified=True,
        )
        for q in probes[:5]:
            lib.fetch(q, k=3)
        rows["in process"] = []
        for q in probes:
            t0 = time.perf_counter()
            lib.fetch(q, k=3)
            rows["in process"].append((time.perf_counter() - t0) * 1000)

        async def in_memory() -> list[float]:
            async with Client(SkillServer(lib).server) as client:
                return await _time_client(client, probes)

        rows["mcp in memory"] = anyio.run(in_memory)
        lib.close()

        env = dict(os.environ, OMP_NUM_THREADS="1")
        command = [sys.executable, "-m", "skill_library.cli", "serve-mcp", "--dir", str(folder)]

        async def stdio() -> list[float]:
            params = StdioServerParameters(command=command[0], args=command[1:], env=env)
            async with Client(params, read_timeout_seconds=120) as client:
                return await _time_client(client, probes)

        rows["mcp stdio"] = anyio.run(stdio)

        port = _free_port()
        token = secrets.token_urlsafe(32)
        server = subprocess.Popen(command + ["--http", f"127.0.0.1:{port}"], env={**env, "SKILLS_MCP_TOKEN": token},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.time() + 120
            while time.time() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    time.sleep(0.2)

            async def http() -> list[float]:
                import httpx2
                from mcp.client.streamable_http import streamable_http_client

                auth = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=120)
                transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=auth)
                async with auth, Client(transport) as client:
                    return await _time_client(client, probes)

            rows["mcp streamable http"] = anyio.run(http)
        finally:
            server.terminate()
            server.wait(timeout=10)

    base = statistics.median(rows["in process"])
    print(f"\nfetch(k=3) at {args.skills} skills, {args.queries} queries, torch threads=1")
    print(f"{'path':<22} {'p50':>9} {'p95':>9} {'p50 - in process':>17}")
    for name, times in rows.items():
        p50 = statistics.median(times)
        print(f"{name:<22} {p50:>7.2f}ms {percentile(times, 0.95):>7.2f}ms {p50 - base:>+15.2f}ms")


if __name__ == "__main__":
    main()
