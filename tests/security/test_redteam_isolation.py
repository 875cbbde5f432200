"""Red team, isolation between runs: nothing a run does is observable by a later run.

Every run is served by a fresh child forked from a zygote that never ran skill code, so
state cannot survive by construction. These tests plant state in run N and probe for it
in run N+1 (across every vetted module and the builtins), and keep one reproducer for
each class of the red-team report of issue 9: format walks through
``collections.UserString``, cache poisoning with classes that mix a builtin value type
with Python-level ``__eq__``/``__hash__``, CPU charged around cheap tool calls, byte
caps, call records, ``check_source`` in the host, limit reports forged by the skill, and
a worker crash.
"""

from __future__ import annotations

import resource
import time

import pytest
from redteam import FAST, OK_CODE, Attack, check_stopped, run_attack

from sandbox import Limits, Sandbox, check_source
from sandbox.policy import MAX_SOURCE_BYTES, VETTED_MODULES

ALL_MODULES = tuple(sorted(VETTED_MODULES))

FORMAT_ROUTES = [
    Attack("userstring_format",
           "import collections\ndef f():\n"
           "    return collections.UserString('{0.__init__.__globals__}').format(f)\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_format_map",
           "import collections\ndef f():\n"
           "    return collections.UserString('{a.__class__}').format_map({'a': 1})\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_format_getattr",
           "import collections\ndef f():\n"
           "    s = collections.UserString('{0.gi_frame.f_back.f_locals}')\n"
           "    return getattr(s, 'for' + 'mat')((x for x in [1]))\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_class_format",
           "import collections\ndef f():\n"
           "    return collections.UserString.format(collections.UserString('{0.__class__}'), 1)\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_subclass_format",
           "import collections\nclass U(collections.UserString):\n    pass\ndef f():\n"
           "    return U('{0.__class__}').format(1)\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_bound_method_format",
           "import collections\nclass C:\n    g = classmethod(collections.UserString)\n"
           "def f():\n    return C.g.format\n",
           ("NotImplementedError",), "format"),
    Attack("userstring_generic_alias_format",
           "import collections\ndef f():\n"
           "    return collections.UserString[int].format\n",
           ("NotImplementedError",), "format"),
]

VALUE_TYPE_MIXES = [
    Attack(f"mix_{name}", f"import collections\nclass K({bases}):\n    pass\ndef f():\n"
           "    return 1\n", ("TypeError",), "builtin value type")
    for name, bases in [
        ("userstring_str", "collections.UserString, str"),
        ("str_userstring", "str, collections.UserString"),
        ("userstring_int", "collections.UserString, int"),
        ("userdict_str", "collections.UserDict, str"),
        ("userlist_tuple", "collections.UserList, tuple"),
        ("userdict_frozenset", "collections.UserDict, frozenset"),
        ("userstring_bytes", "collections.UserString, bytes"),
        ("userstring_float", "collections.UserString, float"),
    ]
] + [
    Attack("mix_own_hash_via_base",
           "class B:\n    def __eq__(self, o):\n        return True\n"
           "class K(B, str):\n    pass\ndef f():\n    return 1\n",
           ("TypeError",), "builtin value type"),
    Attack("mix_int_own_eq",
           "class K(int):\n    def __eq__(self, o):\n        return True\ndef f():\n    return 1\n",
           ("TypeError",), "builtin value type"),
]

FORGED_LIMITS = [
    Attack("raise_memory_error", "def f():\n    raise MemoryError('memory limit exceeded')\n",
           ("MemoryError",), "memory limit exceeded"),
    Attack("class_named_limit_exceeded",
           "class LimitExceeded(Exception):\n    pass\n"
           "def f():\n    raise LimitExceeded('CPU time limit of 1 s exceeded')\n",
           ("skill:LimitExceeded",), "CPU time"),
    Attack("class_named_worker_crashed",
           "class WorkerCrashed(Exception):\n    pass\ndef f():\n    raise WorkerCrashed('x')\n",
           ("skill:WorkerCrashed",), "x"),
    Attack("class_named_policy_violation",
           "class PolicyViolation(Exception):\n    pass\ndef f():\n    raise PolicyViolation('no')\n",
           ("skill:PolicyViolation",), "no"),
]

ALL = [*[("format_routes", a) for a in FORMAT_ROUTES],
       *[("value_type_mixes", a) for a in VALUE_TYPE_MIXES],
       *[("forged_limits", a) for a in FORGED_LIMITS]]


@pytest.mark.parametrize("family, attack", ALL, ids=[f"{fam}-{a.id}" for fam, a in ALL])
def test_attack_is_stopped(family, attack, sandbox, canary):
    result = run_attack(attack, canary, sandbox)
    check_stopped(result, attack, canary, sandbox)  # forged limits: result.limit is None


# -- planting in run N, probing in run N+1 ---------------------------------------------
#: Walk the public attribute graph of every module and the builtins (two levels) and
#: describe what is there: names, types, and the value of every constant.
PROBE = '''
import {modules}
NAMES = {names}
def kind(v):
    try:
        return repr(type(v))
    except TypeError:
        return 'type() refused'
def fingerprint():
    mods = [{modules}]
    roots = [(repr(m), m) for m in mods]
    for b in [len, str, dict, list, sorted, range, ToolError, object, min, max, sum, map,
              zip, format, isinstance, repr, int, float, bytes, tuple, set, frozenset]:
        roots.append((repr(b), b))
    out = []
    for path, obj in roots:
        for attr in NAMES.get(path, NAMES['*']):
            if attr.startswith('_') or attr in ('format', 'format_map', 'register', 'obj'):
                continue
            try:
                value = getattr(obj, attr)
            except Exception as e:
                out.append([path, attr, 'error', repr(type(e))])
                continue
            if isinstance(value, (int, float, str, bytes, bool, type(None), tuple)):
                out.append([path, attr, kind(value), repr(value)])
            else:
                out.append([path, attr, kind(value), ''])
    return out

def behaviour():
    import re, datetime, random, json, collections, statistics
    return [
        bool(re.match('^[a-z0-9]+$', 'ADMIN\\n; rm -rf /')),
        re.sub('a', 'b', 'banana'),
        str(datetime.datetime.strptime('01/02/2024', '%d/%m/%Y').date()),
        json.dumps({{'k': [1, 2]}}),
        collections.Counter('aab').most_common(1),
        statistics.mean([1, 2, 3]),
        random.random() != 0.32383276483316237,   # not the first value after seed(7)
    ]

def probe():
    return [fingerprint(), behaviour()]
'''

PLANT = '''
import {modules}
NAMES = {names}
import re, datetime, random, collections

class Sticky:
    def __init__(self, v):
        self.v = v

def plant():
    mods = [{modules}]
    done = []
    random.seed(7)
    for p in ['^[a-z0-9]+$', 'a', '(?P<x>b)']:
        re.compile(p)
    re.sub('a', 'b', 'banana')
    datetime.datetime.strptime('02/01/2024', '%m/%d/%Y')
    for m in mods:
        for attr in NAMES.get(repr(m), []):
            for value in (Sticky(attr), None, 'pwned'):
                try:
                    setattr(m, attr, value)
                    done.append(attr)
                except Exception:
                    pass
                try:
                    target = getattr(m, attr)
                    setattr(target, 'planted', Sticky(attr))
                    done.append(attr + '.planted')
                except Exception:
                    pass
                try:
                    getattr(m, attr)['planted'] = Sticky(attr)
                    done.append(attr + '[planted]')
                except Exception:
                    pass
    for b in [len, str, dict, list, object, ToolError, int, sorted]:
        try:
            setattr(b, 'planted', 1)
            done.append(repr(b))
        except Exception:
            pass
    return done
'''


def _pids_of_runs(box: Sandbox, code: str, entry: str, n: int) -> list[int]:
    """Run ``n`` times with a tool that notes which child process serves the run."""
    pids: list[int] = []

    def who():
        (worker,) = [w for w in box._pool.workers if w.current is not None]
        pids.append(worker.current.pid)
        return 1

    for _ in range(n):
        r = box.run(code, entry=entry, tools={"who": who})
        assert r.ok, r.error
    return pids


def test_every_run_is_served_by_a_process_no_earlier_run_used():
    with Sandbox(workers=1) as box:
        pids = _pids_of_runs(box, "def f():\n    return who()\n", "f", 8)
    assert len(set(pids)) == 8


def _public_names() -> dict[str, list[str]]:
    """The public attribute names of every module proxy and of the builtin types (the
    sandbox has no ``dir``), keyed as the skill code's ``repr`` shows them."""
    import builtins

    from sandbox.runtime import build_module_proxies

    names = {f"<sandbox module {m!r}>": sorted(n for n in vars(p) if not n.startswith("_"))
             for m, p in build_module_proxies(ALL_MODULES).items()}
    everything: set[str] = set()
    for name in ("len str dict list sorted range object min max sum map zip format "
                 "isinstance repr int float bytes tuple set frozenset").split():
        everything |= {n for n in dir(getattr(builtins, name)) if not n.startswith("_")}
    names["*"] = sorted(everything - {"format", "format_map", "register", "obj"})
    return names


def test_state_planted_in_one_run_is_not_seen_by_the_next():
    modules = ", ".join(ALL_MODULES)
    names = repr(_public_names())
    with Sandbox(workers=1, allowed_modules=ALL_MODULES, limits=Limits(cpu_seconds=10,
                 wall_seconds=20)) as box:
        probe = PROBE.format(modules=modules, names=names)
        before = box.run(probe, entry="probe")
        assert before.ok, before.error
        fingerprint, behaviour = before.value
        assert len(fingerprint) > 500  # the walk covers the modules and the builtins
        assert behaviour == [False, "bbnbnb", "2024-02-01", '{"k": [1, 2]}', [["a", 2]], 2,
                             True]
        planted = box.run(PLANT.format(modules=modules, names=names), entry="plant")
        assert planted.ok, planted.error
        assert planted.value == []  # every write to shared objects is refused as well
        for _ in range(3):  # the spare forked before the plant, and ones forked after it
            after = box.run(probe, entry="probe")
            assert after.ok, after.error
            assert after.value == before.value


def test_random_state_is_fresh_in_every_run():
    with Sandbox(workers=1, allowed_modules=("random",)) as box:
        values = [box.run("import random\ndef f():\n    return random.random()\n",
                          entry="f").value for _ in range(6)]
        seeded = box.run("import random\ndef f():\n    random.seed(7)\n    return 1\n",
                         entry="f")
        assert seeded.ok
        nxt = box.run("import random\ndef f():\n    return random.random()\n", entry="f")
    assert len(set(values)) == 6  # no two children share a generator state
    assert nxt.value != 0.32383276483316237


def test_reused_compiled_code_carries_no_run_state():
    """Cached code is loaded afresh by every child, never shared: a run that mutates
    everything it can reach of its own code leaves the next run's copy as compiled."""
    code = ("state = {'n': 0}\nseen = []\ndef f():\n    state['n'] += 1\n"
            "    seen.append(state['n'])\n    return [state['n'], len(seen)]\n")
    with Sandbox(workers=1, limits=FAST, code_cache=True) as box:
        assert [box.run(code, entry="f").value for _ in range(6)] == [[1, 1]] * 6
        assert box.stats()["cache_hits"] == 5


# -- CPU is charged however often the skill calls tools ------------------------------------
@pytest.mark.parametrize("budget", [0.5, 1.0])
def test_cpu_is_charged_around_cheap_tool_calls(budget):
    """The parent used to check CPU only when its poll timed out: a skill calling a cheap
    tool every few milliseconds ran 3 s of CPU against cpu_seconds=1."""
    code = ("def f():\n    n = 0\n    while True:\n        for i in range(3000):\n"
            "            n += i\n        ping()\n")
    with Sandbox(workers=1) as box:
        started = time.monotonic()
        r = box.run(code, entry="f", tools={"ping": lambda: 1},
                    limits=Limits(cpu_seconds=budget, wall_seconds=30, max_tool_calls=10**6))
        elapsed = time.monotonic() - started
        (worker,) = box._pool.workers
        used = None
        for _ in range(300):  # the zygote reports the child's rusage when it reaps it
            worker._pump_quietly()
            if worker.exit_cpu:
                used = worker.exit_cpu[max(worker.exit_cpu)]
                break
            time.sleep(0.01)
    assert r.limit == "cpu" and len(r.calls) > 10, r
    assert used is not None, "the zygote did not report the child's CPU time"
    assert used <= budget * 1.1 + 0.05, f"the child used {used:.3f} s of CPU"
    assert elapsed < 30


# -- caps count UTF-8 bytes ---------------------------------------------------------------
EMOJI = "\U0001f600"  # 4 bytes in UTF-8


def test_output_cap_counts_bytes(sandbox):
    cap = FAST.max_output_bytes
    r = sandbox.run(f"def f():\n    print('{EMOJI}' * {cap // 4})\n", entry="f")
    assert r.limit == "output" and r.error.type == "LimitExceeded"
    assert len(r.stdout.encode("utf-8")) <= cap
    r = sandbox.run(f"def f():\n    print('{EMOJI}' * {cap // 4 - 1})\n    return 1\n",
                    entry="f")
    assert r.ok and len(r.stdout.encode("utf-8")) <= cap


def test_result_cap_counts_bytes(sandbox):
    cap = FAST.max_result_bytes
    r = sandbox.run(f"def f():\n    return '{EMOJI}' * {cap // 4}\n", entry="f")
    assert r.limit == "result_size" and "larger than" in r.error.message
    r = sandbox.run(f"def f():\n    return '{EMOJI}' * {cap // 4 - 1}\n", entry="f")
    assert r.ok and len(r.value) == cap // 4 - 1


def test_tool_argument_cap_counts_bytes(sandbox):
    got = []
    cap = FAST.max_result_bytes
    r = sandbox.run(f"def f():\n    return sink(x='{EMOJI}' * {cap // 4})\n", entry="f",
                    tools={"sink": lambda x: got.append(x) or 1})
    assert not r.ok and r.error.type == "ToolError" and "larger than" in r.error.message
    assert got == []


# -- call records are exactly what the tool received -----------------------------------------
def test_positional_arguments_never_reach_a_tool_without_a_schema(sandbox):
    received = []

    def star(*args, **kwargs):
        received.append((args, kwargs))
        return 1

    def posonly(a, /, b=0):
        received.append(((a,), {"b": b}))
        return 1

    for tool in (star, posonly):
        r = sandbox.run("def f():\n    return t(1, b=2)\n", entry="f", tools={"t": tool})
        assert not r.ok and r.error.type == "ToolError" and "schema" in r.error.message
        assert r.calls[0].arguments == {"b": 2} and r.calls[0].error
    assert received == []
    schema = {"type": "object", "properties": {"a": {}, "b": {}}}
    r = sandbox.run("def f():\n    return t(1, b=2)\n", entry="f", tools={"t": star},
                    tool_schemas={"t": schema})
    assert r.ok and received == [((), {"a": 1, "b": 2})]
    assert r.calls[0].arguments == received[0][1]


# -- check_source never parses unbounded input in the host ---------------------------------
def test_check_source_refuses_oversized_sources_before_parsing():
    huge = "x = 1\n" * (MAX_SOURCE_BYTES // 6 + 10)
    t0 = time.process_time()
    with pytest.raises(Exception) as info:
        check_source(huge)
    assert "longer than" in str(info.value)
    assert time.process_time() - t0 < 0.2
    wide = "s = '" + EMOJI * (MAX_SOURCE_BYTES // 4) + "'\n"  # under the cap in characters
    with pytest.raises(Exception) as info:
        check_source(wide)
    assert "longer than" in str(info.value)


def test_check_source_compiles_in_a_limited_child_not_in_the_host():
    heavy = "def f():\n    return " + "+".join(f"x{i}" for i in range(40000)) + "\n"
    assert len(heavy) < MAX_SOURCE_BYTES
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.monotonic()
    try:
        check_source(heavy)
    except Exception as exc:  # noqa: BLE001 - refused is fine: it just must not run here
        assert "complex" in str(exc) or "RecursionError" in str(exc) or "limit" in str(exc)
    after = resource.getrusage(resource.RUSAGE_SELF)
    host_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    wall = time.monotonic() - t0
    assert host_cpu < max(0.3, wall / 3), (host_cpu, wall)


# -- a crash is a crash, and the pool recovers ----------------------------------------------
def test_deeply_nested_iterators_crash_the_child_not_the_sandbox(sandbox):
    code = ("import itertools\ndef f():\n    x = iter([])\n    for i in range(300000):\n"
            "        x = itertools.chain(x)\n    return list(x)\n")
    r = sandbox.run(code, entry="f", limits=Limits(cpu_seconds=5, wall_seconds=20))
    assert not r.ok and r.error.type == "WorkerCrashed" and r.limit is None, r.error
    assert "SIGSEGV" in r.error.message
    assert sandbox.run(OK_CODE, entry="ok").value == 42


def test_attack_count():
    """The red team's size, stated in sandbox/README.md."""
    from test_redteam_language import ALL as LANGUAGE
    from test_redteam_resources import ALL as RESOURCES

    assert len(ALL) == 21
    assert len(LANGUAGE) + len(RESOURCES) + len(ALL) == ATTACKS


#: Parametrised attack snippets in the three red-team tables (README: Tests).
ATTACKS = 165
