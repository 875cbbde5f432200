"""Red team, resources and tools: exhausting the machine, abusing the tool channel.

No limit may depend on the code cooperating (skill code can catch BaseException), so the
stopping limits are enforced from outside: the parent's CPU poll and wall deadline,
RLIMIT_AS/RLIMIT_CPU, and the worker's own trusted code ending the process.
"""

from __future__ import annotations

import json
import time

import pytest
from redteam import FAST, OK_CODE, Attack, check_stopped, run_attack

from sandbox import Limits

LIMIT = ("LimitExceeded",)
WALL = Limits(cpu_seconds=1, wall_seconds=1, max_tool_calls=20, max_output_bytes=4096,
              max_result_bytes=64 * 1024)

RESOURCES = [
    Attack("while_true", "def f():\n    while True:\n        pass\n", LIMIT, "CPU time", "cpu"),
    Attack("catch_base_exception_and_loop",
           "def f():\n    while True:\n        try:\n            while True:\n                pass\n"
           "        except BaseException:\n            pass\n",
           LIMIT, "CPU time", "cpu"),
    # One allocation refused outright never occupies memory: the parent sees nothing, so
    # it is the skill's MemoryError (no limit), and the run still ends.
    Attack("list_of_ten_billion", "def f():\n    return len([0] * 10**10)\n", ("MemoryError",),
           "allocation failed"),
    Attack("string_of_ten_billion", "def f():\n    return len('a' * 10**10)\n",
           ("MemoryError",), "allocation failed"),
    Attack("bytearray_of_ten_billion", "def f():\n    return len(bytearray(10**10))\n",
           ("MemoryError",), "allocation failed"),
    # Memory really used up to the cap: the parent reads the child's peak from /proc.
    Attack("growing_list",
           "def f():\n    x = []\n    while True:\n        x.append('a' * 10**6)\n",
           LIMIT, "memory limit", "memory"),
    Attack("catch_memory_error_then_spin",
           "def f():\n    try:\n        x = 'a' * 10**10\n    except MemoryError:\n"
           "        while True:\n            pass\n",
           LIMIT, "CPU time", "cpu"),
    Attack("power_tower", "def f():\n    return 10**10**8 > 0\n", LIMIT, "CPU time", "cpu"),
    Attack("factorial_bomb", "import math\ndef f():\n    return math.factorial(10**7) > 0\n",
           LIMIT, "CPU time", "cpu"),
    Attack("infinite_iterator", "import itertools\ndef f():\n    return sum(itertools.count())\n",
           LIMIT, "CPU time", "cpu"),
    Attack("deep_recursion", "def f():\n    return f()\n", ("RecursionError",),
           "maximum recursion depth"),
    Attack("recursion_error_caught_and_retried",
           "def g(n):\n    try:\n        return g(n + 1)\n    except RecursionError:\n"
           "        return g(n + 1)\ndef f():\n    return g(0)\n",
           LIMIT, "CPU time", "cpu"),
    Attack("print_flood", "def f():\n    while True:\n        print('flood' * 100)\n",
           LIMIT, "output limit", "output"),
    Attack("one_huge_print", "def f():\n    print('x' * 10**6)\n", LIMIT, "output limit",
           "output"),
    Attack("time_sleep", "import time\ndef f():\n    time.sleep(30)\n", LIMIT, "wall-clock",
           "wall", extended=True, limits=WALL),
    Attack("time_sleep_default_modules", "import time\ndef f():\n    time.sleep(30)\n",
           ("PolicyViolation",), '"time" is not allowed'),
    Attack("regex_backtracking",
           "import re\ndef f():\n    return bool(re.match(r'(a+)+$', 'a' * 64 + 'b'))\n",
           LIMIT, "CPU time", "cpu"),
    Attack("tool_call_flood", "def f():\n    while True:\n        ping()\n", LIMIT,
           "tool call limit", "tool_calls", tools={"ping": lambda: "pong"}),
    Attack("tool_call_flood_caught",
           "def f():\n    while True:\n        try:\n            ping()\n"
           "        except BaseException:\n            pass\n",
           LIMIT, "tool call limit", "tool_calls", tools={"ping": lambda: "pong"}),
    Attack("huge_result", "def f():\n    return 'x' * 200000\n", LIMIT, "larger than",
           "result_size"),
    Attack("generator_finalizer_spins_after_return",
           "def gen():\n    try:\n        yield 1\n    finally:\n        while True:\n"
           "            pass\ndef f():\n    g = gen()\n    next(g)\n    return 1\n",
           LIMIT, "CPU time", "cpu"),
    Attack("compile_bomb_nesting", "def f():\n    return " + "(" * 300 + "1" + ")" * 300 + "\n",
           ("SyntaxError", "PolicyViolation"), "nested|too complex"),
    Attack("compile_bomb_long_expression", "def f():\n    return " + "1+" * 100000 + "1\n",
           ("SyntaxError", "PolicyViolation"), "too complex|RecursionError"),
]


def _boom(**kwargs):
    raise AssertionError("a refused call must never reach the host tool")


class _Smuggler:
    """A host object with side effects in its dunders: it must never cross the pipe."""

    def __reduce__(self):
        return (print, ("smuggled",))


SCHEMA = {"type": "object", "additionalProperties": False, "required": ["query"],
          "properties": {"query": {"type": "string"},
                         "k": {"type": "integer", "minimum": 1, "maximum": 10},
                         "mode": {"enum": ["fast", "exact"]}}}

TOOL_ABUSE = [
    Attack("unlisted_tool", "def f():\n    return rm_rf('/')\n", ("ToolError",),
           "'rm_rf' is not available", tools={"search": _boom}),
    Attack("schema_wrong_type", "def f():\n    return search(query=123)\n", ("ToolError",),
           "expected string", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("schema_extra_property",
           "def f():\n    return search(query='x', cmd='rm -rf /')\n", ("ToolError",),
           "unexpected property 'cmd'", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("schema_enum", "def f():\n    return search(query='x', mode='evil')\n",
           ("ToolError",), "not one of", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("schema_maximum", "def f():\n    return search(query='x', k=10**9)\n",
           ("ToolError",), "maximum", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("schema_missing_required", "def f():\n    return search(k=1)\n", ("ToolError",),
           "missing required", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("too_many_positional", "def f():\n    return search('a', 1, 'fast', 'extra')\n",
           ("ToolError",), "positional", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("dunder_keyword_argument",
           "def f():\n    return search(**{'query': 'x', '__class__': 1})\n", ("ToolError",),
           "__class__", tools={"search": _boom}, schemas={"search": SCHEMA}),
    Attack("non_json_argument", "def f():\n    return search(query=f)\n", ("ToolError",),
           "invalid arguments", tools={"search": _boom}),
    Attack("oversized_argument", "def f():\n    return search(query='x' * 100000)\n",
           ("ToolError",), "larger than", tools={"search": _boom}),
    Attack("tool_result_object_smuggled", "def f():\n    return fetch()\n", ("ToolError",),
           "not JSON", tools={"fetch": lambda: _Smuggler()}),
    Attack("tool_result_deeply_nested",
           "def f():\n    return fetch()\n", ("ToolError",), "not JSON",
           tools={"fetch": lambda: __import__("functools").reduce(
               lambda acc, _: [acc], range(100000), [])}),
    Attack("tool_result_code_eval",
           "def f():\n    r = fetch()\n    return eval(r)\n", ("PolicyViolation",), "Eval calls",
           tools={"fetch": lambda: "__import__('os').system('touch {canary}')"}),
    Attack("tool_result_code_compile",
           "def f():\n    r = fetch()\n    return compile(r, 'x', 'exec')\n", ("NameError",),
           "compile",
           tools={"fetch": lambda: "open('{canary}', 'w')"}),
    Attack("tool_result_dunder_keys",
           "def f():\n    r = fetch()\n    return r['__builtins__']['open']('{canary}')\n",
           ("TypeError",), "string indices",
           tools={"fetch": lambda: {"__builtins__": "open", "__class__": "type"}}),
]

ALL = [*[("resources", a) for a in RESOURCES], *[("tool_abuse", a) for a in TOOL_ABUSE]]
#: Attacks where the tool call itself is fine: the result is data that cannot become code.
SMUGGLED = {"tool_result_code_eval", "tool_result_code_compile", "tool_result_dunder_keys"}


@pytest.mark.parametrize("family, attack", ALL, ids=[f"{fam}-{a.id}" for fam, a in ALL])
def test_attack_is_stopped(family, attack, sandbox, extended_sandbox, canary):
    box = extended_sandbox if attack.extended else sandbox
    started = time.monotonic()
    result = run_attack(attack, canary, box)
    elapsed = time.monotonic() - started
    check_stopped(result, attack, canary, box)
    # Limits are enforced promptly (CPU rounding, polling and a loaded machine: 4x slack).
    assert elapsed < 4 * max(attack.limits.wall_seconds, 1.0)
    if family == "tool_abuse" and attack.id not in SMUGGLED:
        assert result.calls, "a refused tool call must still be recorded"
        assert all(c.error for c in result.calls)
    if attack.id in SMUGGLED and result.calls:
        assert all(c.error is None for c in result.calls)
        assert isinstance(result.calls[0].result, (str, dict))  # plain data, nothing more


def test_refused_calls_are_recorded_with_arguments(sandbox):
    code = (
        "def f():\n    out = []\n"
        "    for kw in [{'query': 1}, {'query': 'x', 'cmd': 'y'}]:\n"
        "        try:\n            search(**kw)\n        except ToolError as e:\n"
        "            out.append(str(e))\n    try:\n        nope(1, a=2)\n"
        "    except ToolError as e:\n        out.append(str(e))\n    return out\n"
    )
    r = sandbox.run(code, entry="f", tools={"search": _boom}, tool_schemas={"search": SCHEMA})
    assert r.ok and len(r.value) == 3
    assert [(c.name, c.arguments) for c in r.calls] == [
        ("search", {"query": 1}),
        ("search", {"query": "x", "cmd": "y"}),
        ("nope", {"a": 2}),  # keyword arguments only: the positional 1 is refused
    ]
    assert all(c.error and c.result is None for c in r.calls)


def test_limits_do_not_leak_into_the_next_run(sandbox):
    r = sandbox.run("def f():\n    while True:\n        pass\n", entry="f")
    assert r.limit == "cpu"
    # The next run gets its full budget again (a fresh worker or re-armed limits).
    code = "def f():\n    t = 0\n    for i in range(300000):\n        t += i\n    return t\n"
    for _ in range(3):
        r = sandbox.run(code, entry="f")
        assert r.ok and r.value == sum(range(300000))
    assert sandbox.run(OK_CODE, entry="ok").value == 42


def test_a_slow_host_tool_counts_against_the_wall_clock(sandbox):
    def slow():
        time.sleep(1.2)
        return "late"

    r = sandbox.run("def f():\n    return [slow(), slow()]\n", entry="f", tools={"slow": slow},
                    limits=Limits(cpu_seconds=1, wall_seconds=1))
    assert not r.ok and r.limit == "wall"
    assert len(r.calls) == 1 and r.calls[0].result == "late"  # host code is not interrupted
    assert sandbox.run(OK_CODE, entry="ok").value == 42


def test_exception_messages_are_capped(sandbox):
    r = sandbox.run("def f():\n    raise ValueError('x' * 10**6)\n", entry="f", limits=FAST)
    assert not r.ok and r.error.type == "ValueError"
    assert len(r.error.message) <= 2003


def test_sources_over_the_size_cap_are_refused(sandbox):
    r = sandbox.run("def f():\n    return 1\n" + "#" * (600 * 1024), entry="f")
    assert not r.ok and r.error.type == "PolicyViolation" and "longer than" in r.error.message


def test_lone_surrogates_never_reach_the_host(sandbox):
    """'\\ud800' is a valid Python str but not UTF-8: in a result, print, error message or
    tool argument it made host code that writes the value to a UTF-8 file, a database or
    a terminal raise UnicodeEncodeError. Everything crossing the pipe is valid UTF-8."""
    seen = []

    def echo(text):
        seen.append(text)
        return text

    code = ("def f():\n    s = '\\ud800x\\udcff'\n    print(s)\n    echo(text=s)\n"
            "    return {s: [s, echo(text=s)]}\n")
    r = sandbox.run(code, entry="f", tools={"echo": echo})
    assert r.ok, r.error
    for text in (r.value, r.stdout, r.calls[0].arguments, seen):
        json.dumps(text, ensure_ascii=False).encode("utf-8")
    assert r.value == {"?x?": ["?x?", "?x?"]} and seen == ["?x?", "?x?"]
    r = sandbox.run("def f():\n    raise ValueError('\\udcff')\n", entry="f")
    assert r.error.type == "ValueError" and r.error.message == "?"


def test_tool_call_arguments_have_a_total_budget_per_run(sandbox):
    """Each call's arguments were capped, their total was not: max_tool_calls calls with
    max_result_bytes of '[[],[],...]' (~22 MB of host objects per MB) held gigabytes of
    host memory in r.calls. The total is TOOL_ARGUMENT_BUDGET x max_result_bytes."""
    from sandbox.host import TOOL_ARGUMENT_BUDGET

    got = []

    def sink(x):
        got.append(len(x))
        return 0

    code = ("def f():\n    a = [[] for i in range(20000)]\n"
            "    for i in range(20):\n        sink(x=a)\n    return 1\n")
    r = sandbox.run(code, entry="f", tools={"sink": sink})  # 60 KB per call, FAST: 64 KB
    assert not r.ok and r.limit == "tool_calls" and "in total" in r.error.message
    assert len(got) == len(r.calls) <= TOOL_ARGUMENT_BUDGET
    # Refused calls ship placeholders for a few arguments only, never megabytes.
    r = sandbox.run("def f():\n    try:\n        sink(*range(10**6))\n"
                    "    except ToolError as e:\n        return str(e)\n", entry="f",
                    tools={"sink": sink})
    assert r.ok and "larger than" in r.value and r.calls[0].arguments == {}
    assert sandbox.run(OK_CODE, entry="ok").value == 42
