"""Shared pieces of the red-team suite: attack records, a canary file, the checks."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from sandbox import Limits, RunResult, Sandbox

#: Small limits keep the resource attacks (and the whole suite) fast. The wall limit is 8 s so
#: that a CPU-bound attack on a loaded 2-core machine (two test workers beside it) still meets
#: its 1 s CPU limit first, which is what these attacks check; wall-limit attacks use WALL.
FAST = Limits(cpu_seconds=1, wall_seconds=8, memory_mb=256, max_tool_calls=20,
              max_output_bytes=4096, max_result_bytes=64 * 1024)
#: Modules beyond the default allow-list, for attacks on them (all vetted ones).
EXTENDED_MODULES = ("math", "json", "re", "datetime", "itertools", "collections",
                    "statistics", "random", "string", "time", "functools", "operator",
                    "decimal")

OK_CODE = "import json\ndef ok():\n    return json.loads(json.dumps({'v': 42}))['v']\n"


@dataclass(frozen=True)
class Attack:
    """One attack snippet: ``f`` is the entry; ``{canary}`` is replaced by the canary path.

    ``errors``: acceptable ``RunResult.error.type`` values; ``match``: a regex the error
    message must contain; ``limit``: the limit that must have stopped it.
    """

    id: str
    code: str
    errors: tuple[str, ...]
    match: str = ""
    limit: str | None = None
    extended: bool = False
    limits: Limits = FAST
    tools: dict[str, Any] = field(default_factory=dict)
    schemas: dict[str, Any] = field(default_factory=dict)


class Canary:
    """A file outside the sandbox that no attack may read-modify-write, remove or touch."""

    def __init__(self, directory: str) -> None:
        self.dir = directory
        self.path = os.path.join(directory, "canary.txt")
        self.secret = "canary-" + secrets.token_hex(16)
        with open(self.path, "w") as fh:
            fh.write(self.secret)
        os.chmod(self.path, 0o666)  # even world-writable: only isolation protects it
        self.stat = os.stat(self.path)
        self.digest = self._digest()

    def _digest(self) -> str:
        with open(self.path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()

    def assert_untouched(self) -> None:
        assert os.listdir(self.dir) == ["canary.txt"], "files appeared next to the canary"
        st = os.stat(self.path)
        assert (st.st_size, st.st_mtime_ns, st.st_mode) == (
            self.stat.st_size, self.stat.st_mtime_ns, self.stat.st_mode)
        assert self._digest() == self.digest


def check_stopped(result: RunResult, attack: Attack, canary: Canary, box: Sandbox) -> None:
    """The attack failed with a clear error, touched nothing, and the sandbox still works."""
    assert not result.ok, f"attack {attack.id} was not stopped: value={result.value!r}"
    assert result.value is None
    assert result.error is not None and result.error.type and result.error.message
    assert result.error.type in attack.errors, (
        f"{attack.id}: got {result.error.type}: {result.error.message}")
    if attack.match:
        assert re.search(attack.match, result.error.message), (
            f"{attack.id}: message {result.error.message!r} lacks {attack.match!r}")
    assert result.limit == attack.limit, f"{attack.id}: limit {result.limit} != {attack.limit}"
    canary.assert_untouched()
    after = box.run(OK_CODE, entry="ok")
    assert after.ok and after.value == 42, f"sandbox broken after {attack.id}: {after.error}"


def run_attack(attack: Attack, canary: Canary, box: Sandbox) -> RunResult:
    code = attack.code.replace("{canary}", canary.path)
    return box.run(code, entry="f", tools=attack.tools, tool_schemas=attack.schemas or None,
                   limits=attack.limits)
