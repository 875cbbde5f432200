"""Functional tests of the sandbox: tools, composition, output, concurrency, recycling."""

from __future__ import annotations

import gc
import os
import pathlib
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandbox import (
    CallRecord,
    Limits,
    PolicyViolation,
    RunResult,
    Sandbox,
    SandboxError,
    check_source,
)
from sandbox.schema import arguments_schema, schema_errors

FAST = Limits(cpu_seconds=2, wall_seconds=5)


@pytest.fixture(scope="module")
def sb():
    with Sandbox(limits=FAST, workers=2) as box:
        yield box


def _alive(pid: int) -> bool:
    """True while /proc has the pid (a zombie counts as alive: it was not reaped)."""
    return os.path.exists(f"/proc/{pid}")


# -- basics ------------------------------------------------------------------------------
def test_default_sandbox_runs_and_returns_plain_json():
    with Sandbox() as box:
        r = box.run("def f(a, b=2):\n    return {'sum': a + b, 't': (1, 2)}\n", entry="f",
                    args={"a": 40})
    assert isinstance(r, RunResult)
    assert r.ok, r.error
    assert r.value == {"sum": 42, "t": [1, 2]}
    assert type(r.value["t"]) is list
    assert r.error is None and r.limit is None and r.calls == []
    assert r.duration_ms > 0


def test_result_types_are_exact_json_types(sb):
    r = sb.run("def f():\n    return [True, 1, 1.5, 'x', None, {'k': [1]}, {1: 'int key'}]\n",
               entry="f")
    assert r.ok
    assert r.value == [True, 1, 1.5, "x", None, {"k": [1]}, {"1": "int key"}]
    assert [type(v) for v in r.value[:5]] == [bool, int, float, str, type(None)]


def test_exception_reports_type_message_and_line(sb):
    code = "def f(x):\n    y = 1\n    return y / x\n"
    r = sb.run(code, entry="f", args={"x": 0})
    assert not r.ok
    assert isinstance(r.error, SandboxError)
    assert r.error.type == "ZeroDivisionError"
    assert r.error.message == "division by zero"
    assert r.error.line == 3


def test_policy_violation_is_a_result_not_an_exception(sb):
    r = sb.run("import os\ndef f():\n    return 1\n", entry="f")
    assert not r.ok and r.error.type == "PolicyViolation" and r.error.line == 1
    assert "os" in r.error.message
    r = sb.run("def f(:\n", entry="f")
    assert not r.ok and r.error.type == "SyntaxError" and r.error.line == 1


def test_missing_entry_and_bad_arguments(sb):
    r = sb.run("def g():\n    return 1\n", entry="f")
    assert not r.ok and r.error.type == "NameError" and "'f'" in r.error.message
    r = sb.run("def f(a):\n    return a\n", entry="f", args={"b": 1})
    assert not r.ok and r.error.type == "TypeError" and "b" in r.error.message


def test_host_misuse_raises_in_the_host(sb):
    with pytest.raises(TypeError):
        sb.run("def f(x):\n    return x\n", entry="f", args={"x": object()})
    with pytest.raises(TypeError):
        sb.run(123, entry="f")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sb.run("def f():\n    pass\n", entry="f", tools={"t": "not callable"})


def test_stdout_is_captured_across_functions(sb):
    code = (
        "def helper(x):\n    print('helper', x)\n    return x * 2\n"
        "def f():\n    print('start')\n    v = helper(21)\n    print('end', v, sep='|')\n"
        "    return v\n"
    )
    r = sb.run(code, entry="f")
    assert r.ok and r.value == 42
    assert r.stdout == "start\nhelper 21\nend|42\n"


def test_allowed_modules_work(sb):
    code = """
import json, re, math, datetime, itertools, collections, statistics
from collections import Counter
def f(text):
    words = re.findall(r"[a-z]+", text.lower())
    c = Counter(words)
    d = collections.defaultdict(int)
    for w in words:
        d[w] += 1
    return {
        "top": c.most_common(1)[0][0],
        "n": d["the"],
        "json": json.loads(json.dumps({"a": [1, 2]})),
        "sqrt": math.sqrt(16),
        "mean": statistics.mean([1, 2, 3]),
        "pairs": list(itertools.combinations([1, 2, 3], 2)),
        "day": datetime.date(2024, 5, 17).isoformat(),
    }
"""
    r = sb.run(code, entry="f", args={"text": "The cat and the hat and THE bat"})
    assert r.ok, r.error
    assert r.value["top"] == "the" and r.value["n"] == 3
    assert r.value["json"] == {"a": [1, 2]}
    assert r.value["sqrt"] == 4.0 and r.value["mean"] == 2
    assert r.value["pairs"] == [[1, 2], [1, 3], [2, 3]]
    assert r.value["day"] == "2024-05-17"


def test_common_python_constructs_are_allowed(sb):
    code = """
class Acc:
    def __init__(self, start):
        self.total = start
        self.items = []
    def add(self, x):
        self.total += x
        self.items.append(x)
        return self
def f():
    a = Acc(1).add(2).add(3)
    counts = {}
    for k in "abca":
        counts[k] = counts.get(k, 0) + 1
    counts["a"] += 10
    first, *rest = [1, 2, 3]
    (p, q), r = (4, 5), 6
    total: int = sum(x * x for x in range(4))
    words = sorted({"b": 2, "a": 1}.items(), key=lambda kv: kv[1])
    return [a.total, a.items, counts, first, rest, p + q + r, total, words,
            f"{a.total:>4}", isinstance(a, Acc), type(1) is int]
"""
    r = sb.run(code, entry="f")
    assert r.ok, r.error
    assert r.value == [6, [2, 3], {"a": 12, "b": 1, "c": 1}, 1, [2, 3], 15, 14,
                       [["a", 1], ["b", 2]], "   6", True, True]


# -- tools -------------------------------------------------------------------------------
def test_tool_call_is_recorded(sb):
    def search(query, k=3):
        return [f"{query}-{i}" for i in range(k)]

    r = sb.run("def f(q):\n    return search(query=q, k=2)\n", entry="f", args={"q": "cats"},
               tools={"search": search})
    assert r.ok and r.value == ["cats-0", "cats-1"]
    assert len(r.calls) == 1
    call = r.calls[0]
    assert isinstance(call, CallRecord)
    assert call.name == "search"
    assert call.arguments == {"query": "cats", "k": 2}
    assert call.result == ["cats-0", "cats-1"] and call.error is None
    assert call.duration_ms >= 0


def test_positional_arguments_follow_schema_property_order(sb):
    seen = {}

    def book(**kwargs):
        seen.update(kwargs)
        return "ok"

    schema = {"type": "object",
              "properties": {"city": {"type": "string"}, "nights": {"type": "integer"}},
              "required": ["city"]}
    r = sb.run("def f():\n    return book('Paris', 3)\n", entry="f",
               tools={"book": book}, tool_schemas={"book": schema})
    assert r.ok, r.error
    assert r.calls[0].arguments == {"city": "Paris", "nights": 3}
    assert seen == {"city": "Paris", "nights": 3}


def test_openai_style_schema_is_accepted(sb):
    schema = {"name": "add", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}}
    r = sb.run("def f():\n    return add(2, b=3)\n", entry="f",
               tools={"add": lambda a, b: a + b}, tool_schemas={"add": schema})
    assert r.ok and r.value == 5 and r.calls[0].arguments == {"a": 2, "b": 3}
    assert arguments_schema(schema) == schema["parameters"]


def test_positional_arguments_without_a_schema_are_refused(sb):
    """Without a schema nothing names positional arguments the way the tool binds them
    (``*args``, positional-only parameters): refused, and the record says so."""
    called = []

    def move(src, dst, *, overwrite=False):
        called.append((src, dst, overwrite))
        return "moved"

    r = sb.run("def f():\n    return move('a', 'b', overwrite=True)\n", entry="f",
               tools={"move": move})
    assert not r.ok and r.error.type == "ToolError"
    assert "2 positional argument(s)" in r.error.message and "schema" in r.error.message
    assert called == []
    assert r.calls[0].arguments == {"overwrite": True} and r.calls[0].error
    r = sb.run("def f():\n    return move(src='a', dst='b')\n", entry="f", tools={"move": move})
    assert r.ok and called == [("a", "b", False)]
    assert r.calls[0].arguments == {"src": "a", "dst": "b"}


def test_records_hold_exactly_the_keyword_arguments_the_tool_received(sb):
    received = []

    def log(*parts, **fields):
        received.append([list(parts), fields])
        return len(received)

    r = sb.run("def f():\n    return log(level='x', n=2)\n", entry="f", tools={"log": log})
    assert r.ok and received == [[[], {"level": "x", "n": 2}]]
    assert r.calls[0].arguments == received[0][1]
    r = sb.run("def f():\n    return log(1, 2, level='x')\n", entry="f", tools={"log": log})
    assert not r.ok and len(received) == 1  # *args: refused, never reached the tool
    assert r.calls[0].arguments == {"level": "x"}


def test_host_tool_error_is_a_catchable_tool_error(sb):
    def flaky(x):
        raise RuntimeError(f"backend down for {x}")

    code = (
        "def f():\n    try:\n        flaky(x=1)\n    except ToolError as e:\n"
        "        return 'caught: ' + str(e)\n"
    )
    r = sb.run(code, entry="f", tools={"flaky": flaky})
    assert r.ok and r.value == "caught: backend down for 1"
    assert r.calls[0].error == "backend down for 1" and r.calls[0].result is None


def test_uncaught_tool_error_fails_the_run_with_its_line(sb):
    def boom():
        raise ValueError("nope")

    r = sb.run("def f():\n    x = 1\n    return boom()\n", entry="f", tools={"boom": boom})
    assert not r.ok and r.error.type == "ToolError" and r.error.message == "nope"
    assert r.error.line == 3
    assert [c.error for c in r.calls] == ["nope"]


def test_schema_violation_is_refused_and_recorded(sb):
    called = []

    def search(query):
        called.append(query)
        return []

    schema = {"type": "object", "properties": {"query": {"type": "string"}},
              "required": ["query"], "additionalProperties": False}
    code = (
        "def f():\n    out = []\n"
        "    for args in [{'query': 5}, {'query': 'x', 'extra': 1}, {}]:\n"
        "        try:\n            search(**args)\n"
        "        except ToolError as e:\n            out.append(str(e))\n"
        "    return out\n"
    )
    r = sb.run(code, entry="f", tools={"search": search}, tool_schemas={"search": schema})
    assert r.ok, r.error
    assert called == []
    assert "expected string, got integer" in r.value[0]
    assert "unexpected property 'extra'" in r.value[1]
    assert "missing required property 'query'" in r.value[2]
    assert len(r.calls) == 3 and all(c.error for c in r.calls)
    assert r.calls[1].arguments == {"query": "x", "extra": 1}


def test_unlisted_tool_raises_tool_error_and_is_recorded(sb):
    code = "def f():\n    try:\n        delete_all('/')\n    except ToolError as e:\n" \
           "        return str(e)\n"
    r = sb.run(code, entry="f", tools={"search": lambda q: q})
    assert r.ok
    assert "'delete_all' is not available" in r.value
    assert r.calls == [CallRecord("delete_all", {}, None, r.calls[0].error,
                                  r.calls[0].duration_ms)]


def test_tool_returning_non_json_is_an_error(sb):
    r = sb.run("def f():\n    return bad()\n", entry="f", tools={"bad": lambda: object()})
    assert not r.ok and r.error.type == "ToolError" and "not JSON" in r.error.message


def test_tool_arguments_must_be_json(sb):
    r = sb.run("def f():\n    return t(x={1, 2})\n", entry="f", tools={"t": lambda x: x})
    assert not r.ok and r.error.type == "ToolError"
    assert "invalid arguments" in r.error.message
    assert r.calls[0].error and r.calls[0].arguments == {"x": "<set>"}


def test_tool_call_cap(sb):
    code = "def f():\n    for i in range(100):\n        ping()\n"
    r = sb.run(code, entry="f", tools={"ping": lambda: 1},
               limits=Limits(cpu_seconds=2, wall_seconds=5, max_tool_calls=5))
    assert not r.ok and r.limit == "tool_calls"
    assert len(r.calls) == 6 and r.calls[-1].error == "tool call limit of 5 exceeded"
    assert sb.run("def f():\n    return 1\n", entry="f").ok


# -- composition ------------------------------------------------------------------------
def test_several_sources_share_one_namespace(sb):
    base = "def slug(s):\n    return '-'.join(s.lower().split())\n"
    mid = "def title_slug(t):\n    return slug(t) + '.html'\n"
    top = "def page(title):\n    return {'url': title_slug(title), 'n': count_pages()}\n"
    r = sb.run([top, mid, base], entry="page", args={"title": "Hello Big World"},
               tools={"count_pages": lambda: 7})
    assert r.ok, r.error
    assert r.value == {"url": "hello-big-world.html", "n": 7}


def test_error_in_a_dependency_names_its_source(sb):
    dep = "def helper():\n    return [][1]\n"
    r = sb.run(["def f():\n    return helper()\n", dep], entry="f")
    assert not r.ok and r.error.type == "IndexError"
    assert r.error.line == 2 and r.error.source_index == 1


# -- limits, recycling, cache, concurrency ------------------------------------------------
def test_per_run_limits_override_defaults(sb):
    r = sb.run("def f():\n    while True:\n        pass\n", entry="f",
               limits=Limits(cpu_seconds=0.5, wall_seconds=3))
    assert not r.ok and r.limit == "cpu" and r.duration_ms < 2900
    assert sb.run("def f():\n    return 'next'\n", entry="f").value == "next"


def test_output_limit(sb):
    r = sb.run("def f():\n    while True:\n        print('spam' * 10)\n", entry="f",
               limits=Limits(cpu_seconds=2, wall_seconds=5, max_output_bytes=1000))
    assert not r.ok and r.limit == "output" and len(r.stdout) == 1000
    assert r.stdout.startswith("spam")


def test_result_size_limit(sb):
    r = sb.run("def f():\n    return 'x' * 5000\n", entry="f",
               limits=Limits(cpu_seconds=2, wall_seconds=5, max_result_bytes=1000))
    assert not r.ok and r.limit == "result_size"


def test_workers_are_recycled_after_n_runs():
    with Sandbox(workers=1, max_runs_per_worker=3) as box:
        pids = set()
        for _ in range(7):
            r = box.run("def f():\n    return 1\n", entry="f")
            assert r.ok
            pids.update(w.pid for w in box._pool.workers)
        assert box.stats()["workers_started"] >= 3
        assert len(pids) >= 3


def test_a_limit_hit_ends_the_runs_child_and_the_next_run_is_fresh():
    with Sandbox(workers=1, limits=FAST) as box:
        box.run("def f():\n    return 1\n", entry="f")
        (zygote,) = [w.pid for w in box._pool.workers]
        r = box.run("def f():\n    x = []\n    while True:\n        x.append('a' * 10**6)\n",
                    entry="f")
        assert r.limit == "memory" and r.error.type == "LimitExceeded"
        assert "memory limit of 256 MB" in r.error.message
        # One allocation refused outright never occupied memory: the skill's MemoryError.
        r = box.run("def f():\n    x = 'a' * 10**10\n", entry="f")
        assert r.limit is None and r.error.type == "MemoryError"
        r = box.run("def f():\n    return 2\n", entry="f")
        assert r.ok and r.value == 2
        assert [w.pid for w in box._pool.workers] == [zygote]  # the zygote is never dirty


def test_every_run_compiles_its_own_sources_by_default():
    """No cache unless asked for: nothing of one run's compile serves (or is timed by)
    another; per-run compile time is not reported."""
    with Sandbox(workers=1) as box:
        code = "def f(x):\n    return x + 1\n"
        results = [box.run(code, entry="f", args={"x": i}) for i in range(5)]
        assert [r.value for r in results] == [1, 2, 3, 4, 5]
        assert {r.compile_ms for r in results} == {0.0}
        stats = box.stats()
        assert stats["runs"] == 5 and stats["compiled"] == 5 and stats["cache_hits"] == 0
        assert stats["compile_ms"] > 0
        assert box._pool.code_cache is None


def test_code_cache_reuses_what_a_child_compiled_for_later_runs():
    """code_cache=True: the first run's child sends its compiled code before running
    anything; every later run of the source loads it (the zygote never sees a source)."""
    with Sandbox(workers=1, code_cache=True) as box:
        code = "def f(x):\n    return x + 1\n"
        dep = "def g(x):\n    return f(x) * 2\n"
        results = [box.run([code, dep], entry="g", args={"x": i}) for i in range(5)]
        assert [r.value for r in results] == [2, 4, 6, 8, 10]
        stats = box.stats()
        assert stats["compiled"] == 2 and stats["cache_hits"] == 8
        assert len(box._pool.code_cache) == 2
        # Errors still name the source and line of cached code.
        bad = "def h():\n    x = 1\n    return x / 0\n"
        for _ in range(2):
            r = box.run([code, bad], entry="h")
            assert r.error.type == "ZeroDivisionError" and r.error.line == 3
            assert r.error.source_index == 1
        assert box.stats()["cache_hits"] == 8 + 3


def test_code_cache_is_capped_in_bytes():
    from sandbox.codecache import CodeCache, entry_size

    cache = CodeCache(max_bytes=1000)
    entry = {"code": "A" * 300, "called": ["f"], "defined": []}
    for i in range(5):
        cache.put(str(i), dict(entry))
    assert len(cache) == 3 and cache.size <= 1000
    assert cache.get("0") is None and cache.get("4") is not None
    cache.put("big", {"code": "A" * 2000, "called": [], "defined": []})
    assert cache.get("big") is None and entry_size(entry) == 304


def test_fresh_namespace_per_run(sb):
    sb.run("counter = [0]\ndef f():\n    counter.append(1)\n    return len(counter)\n",
           entry="f")
    r = sb.run("def f():\n    return counter\n", entry="f")
    assert not r.ok and r.error.type in ("NameError", "ToolError")
    r = sb.run("counter = [0]\ndef f():\n    counter.append(1)\n    return len(counter)\n",
               entry="f")
    assert r.value == 2


def test_concurrent_runs_from_threads(sb):
    results: dict[int, RunResult] = {}
    errors: list[BaseException] = []
    owner: dict[int, int] = {}

    def tool(n):
        owner[n] = threading.get_ident()
        return n * 10

    def worker(i):
        try:
            results[i] = sb.run("def f(n):\n    return [n, tool(n=n)]\n", entry="f",
                                args={"n": i}, tools={"tool": tool})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors
    assert sorted(results) == list(range(12))
    for i, r in results.items():
        assert r.ok and r.value == [i, i * 10]
        assert r.calls[0].arguments == {"n": i}
    assert len(set(owner.values())) > 1  # tools ran on the callers' threads


def test_close_reaps_workers_and_refuses_new_runs():
    box = Sandbox(workers=2)
    assert box.run("def f():\n    return 1\n", entry="f").ok
    pids = [w.pid for w in box._pool.workers]
    assert len(pids) == 2
    box.close()
    box.close()  # idempotent
    for pid in pids:
        assert not _alive(pid)
    with pytest.raises(RuntimeError):
        box.run("def f():\n    return 1\n", entry="f")


def test_forgotten_sandbox_leaves_no_zombies():
    def make():
        box = Sandbox(workers=2)
        assert box.run("def f():\n    return 1\n", entry="f").ok
        return [w.pid for w in box._pool.workers]

    pids = make()
    gc.collect()
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_close_during_a_run_returns_a_result():
    box = Sandbox(workers=1, limits=Limits(cpu_seconds=10, wall_seconds=20))
    box.run("def f():\n    return 1\n", entry="f")
    out = {}
    t = threading.Thread(target=lambda: out.update(r=box.run(
        "def f():\n    while True:\n        pass\n", entry="f")))
    t.start()
    time.sleep(0.3)
    box.close()
    t.join(timeout=10)
    assert not t.is_alive()
    assert not out["r"].ok and out["r"].error.type == "SandboxClosed"


# -- check_source ------------------------------------------------------------------------
def test_check_source_accepts_valid_code():
    check_source("import json\ndef f(x):\n    return json.dumps(x)\n")


@pytest.mark.parametrize("code, line, fragment", [
    ("x = 1\nimport os\n", 2, '"os" is not allowed'),
    ("def f():\n    return ().__class__\n", 2, "__class__"),
    ("def f(:\n", 1, "invalid syntax"),
    ("def f():\n    exec('1')\n", 2, "Exec calls are not allowed"),
    ("try:\n    pass\nexcept* ValueError:\n    pass\n", 1, "TryStar"),
])
def test_check_source_rejects(code, line, fragment):
    with pytest.raises(PolicyViolation) as info:
        check_source(code)
    assert info.value.line == line
    assert fragment in info.value.message


def test_check_source_honours_a_module_allow_list():
    check_source("import random\n", allowed_modules=("random",))
    with pytest.raises(PolicyViolation):
        check_source("import random\n")
    with pytest.raises(ValueError):
        check_source("import os\n", allowed_modules=("os",))


# -- schema validator ---------------------------------------------------------------------
def test_schema_subset():
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 1, "maximum": 10},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "opt": {"type": ["string", "null"]},
        },
        "required": ["n"],
        "additionalProperties": False,
    }
    assert schema_errors({"n": 3, "mode": "a", "tags": ["x"], "opt": None}, schema) == []
    assert schema_errors({"n": 3.0}, schema) == []
    errors = schema_errors({"n": True, "mode": "c", "tags": ["x", 1], "zz": 1}, schema)
    assert any("arguments.n: expected integer, got boolean" in e for e in errors)
    assert any("not one of" in e for e in errors)
    assert any("arguments.tags[1]: expected string" in e for e in errors)
    assert any("unexpected property 'zz'" in e for e in errors)
    assert schema_errors({"n": 0}, schema) == ["arguments.n: 0 is less than the minimum 1"]
    assert schema_errors({"n": 11}, schema) == ["arguments.n: 11 is greater than the maximum 10"]
    assert schema_errors({}, schema) == ["arguments: missing required property 'n'"]


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**12, 10**12)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_json)
def test_json_values_round_trip_through_args_tools_and_results(sb, value):
    r = sb.run("def f(v):\n    return [v, echo(v=v)]\n", entry="f", args={"v": value},
               tools={"echo": lambda v: v})
    assert r.ok, r.error
    assert r.value == [value, value]
    assert r.calls[0].arguments == {"v": value} and r.calls[0].result == value


def test_sandbox_package_never_imports_skill_library():
    root = pathlib.Path(__file__).resolve().parents[1] / "sandbox"
    for path in root.glob("*.py"):
        text = path.read_text()
        assert "import skill_library" not in text and "from skill_library" not in text, path


def test_host_with_many_open_fds():
    """Worker pipes numbered above FD_SETSIZE (1024) still work (poll, not select)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1200:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        with Sandbox(workers=1) as box:
            worker = next(iter(box._pool.workers))
            assert worker.sock.fileno() > 1024
            r = box.run("def f():\n    return 7\n", entry="f")
            assert r.ok and r.value == 7
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_skill_may_shadow_a_tool_name(sb):
    code = "def search(q):\n    return 'skill:' + q\n"
    r = sb.run(code, entry="search", args={"q": "x"}, tools={"search": lambda q: "tool"})
    assert r.ok and r.value == "skill:x" and r.calls == []


def test_a_tool_may_run_another_skill_on_the_same_sandbox():
    with Sandbox(workers=1) as box:
        def sub_skill(x):
            inner = box.run("def g(x):\n    return x * 2\n", entry="g", args={"x": x})
            assert inner.ok
            return inner.value

        r = box.run("def f():\n    return sub_skill(x=21)\n", entry="f",
                    tools={"sub_skill": sub_skill})
        assert r.ok and r.value == 42
        assert len(box._pool.workers) == 1  # the lent worker was given back and retired


def test_a_worker_that_cannot_start_is_reported(monkeypatch):
    import sandbox.pool as pool

    monkeypatch.setattr(pool, "_WORKER_MODULE", "sandbox.no_such_worker")
    with Sandbox(workers=1, start_timeout=20) as box:
        r = box.run("def f():\n    return 1\n", entry="f")
    assert not r.ok and r.error.type == "SandboxUnavailable"
    assert "No module named" in r.error.message


def _flaky_next_child(monkeypatch, failures: int, exc: Exception) -> list[int]:
    """Make the next ``failures`` workers fail to hand over a child; their pids."""
    import sandbox.host as host

    real = host._Worker.next_child
    failed: list[int] = []

    def next_child(self, deadline):
        if len(failed) < failures:
            failed.append(self.pid)
            raise exc
        return real(self, deadline)

    monkeypatch.setattr(host._Worker, "next_child", next_child)
    return failed


def test_a_worker_that_cannot_hand_over_a_child_is_retired_and_the_run_retried(monkeypatch):
    import sandbox.host as host

    failed = _flaky_next_child(monkeypatch, 1, host._Died("stale"))
    with Sandbox(workers=1) as box:
        assert box.run("def f():\n    return 1\n", entry="f").value == 1
        assert box.check_many(["def g():\n    return 2\n"]) == [None]
        assert len(failed) == 1 and failed[0] not in {w.pid for w in box._pool.workers}
        assert box.workers_started == 2 and box.stats()["runs"] == 1


def test_a_run_is_tried_on_start_attempts_workers_then_reported_unavailable(monkeypatch):
    import sandbox.host as host

    failed = _flaky_next_child(monkeypatch, 99, host._Deadline())
    with Sandbox(workers=1) as box:
        r = box.run("def f():\n    return 1\n", entry="f")
        assert len(failed) == host.START_ATTEMPTS == len(set(failed))
        assert not r.ok and r.error.type == "SandboxUnavailable"
        assert r.error.message.startswith("could not start a sandbox worker: no child process")
        assert box.stats()["runs"] == 0


def test_a_check_that_cannot_get_a_child_raises(monkeypatch):
    import sandbox.host as host

    failed = _flaky_next_child(monkeypatch, 99, host._Died("stale"))
    with Sandbox(workers=1) as box:
        with pytest.raises(RuntimeError, match="^could not start a sandbox worker: stale$"):
            box.check("def f():\n    return 1\n")
        assert len(failed) == host.START_ATTEMPTS


def test_workers_are_reaped_at_interpreter_exit_without_close():
    import subprocess
    import sys

    script = (
        "from sandbox import Sandbox\n"
        "sb = Sandbox(workers=2)\n"
        "assert sb.run('def f():\\n    return 1\\n', entry='f').ok\n"
        "print(' '.join(str(w.pid) for w in sb._pool.workers))\n"
    )
    root = pathlib.Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids)


def test_a_check_timing_out_says_why_and_hardening_never_leaks_a_private_error(monkeypatch):
    import sandbox.host as host

    _flaky_next_child(monkeypatch, 99, host._Deadline())
    with Sandbox(workers=1) as box:
        with pytest.raises(RuntimeError, match="^could not start a sandbox worker: no child process within"):
            box.check("def f():\n    return 1\n")

    def never_ready(self, timeout):
        raise host._Died("worker exited at start")

    monkeypatch.setattr(host._Worker, "ensure_ready", never_ready)
    with Sandbox(workers=1) as box:
        with pytest.raises(RuntimeError, match="^could not start a sandbox worker: worker exited at start$"):
            box.hardening()
