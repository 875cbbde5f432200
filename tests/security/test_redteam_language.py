"""Red team, language level: escaping the restricted language itself.

Each attack must be stopped with a clear error, leave the canary untouched, and leave
the sandbox working for the next run. Families: imports, submodule leaks through allowed
modules, frame walking, subclass walks, dunder access, format strings, exception leaks,
host-side time bombs, and RestrictedPython's own CVEs by name.
"""

from __future__ import annotations

import pytest
from redteam import Attack, check_stopped, run_attack

POLICY = ("PolicyViolation",)
ATTR = ("AttributeError",)
COMPILE_OR_ATTR = ("PolicyViolation", "AttributeError")

IMPORTS = [
    Attack("import_os", "import os\ndef f():\n    return os.listdir('/')\n", POLICY,
           r'"os" is not allowed'),
    Attack("import_subprocess",
           "import subprocess\ndef f():\n    return subprocess.run(['id'])\n", POLICY,
           r'"subprocess" is not allowed'),
    Attack("import_ctypes", "import ctypes\ndef f():\n    return ctypes.CDLL(None)\n", POLICY,
           r'"ctypes" is not allowed'),
    Attack("import_importlib",
           "import importlib\ndef f():\n    return importlib.import_module('os')\n", POLICY,
           r'"importlib" is not allowed'),
    Attack("import_sys", "import sys\ndef f():\n    return sys.modules['os']\n", POLICY,
           r'"sys" is not allowed'),
    Attack("from_os_import_system", "from os import system\ndef f():\n    system('id')\n",
           POLICY, r'"os" is not allowed'),
    Attack("import_builtins", "import builtins\ndef f():\n    return builtins.open\n", POLICY,
           r'"builtins" is not allowed'),
    Attack("import_submodule_collections_abc",
           "import collections.abc\ndef f():\n    return 1\n", POLICY,
           r'"collections.abc" is not allowed'),
    Attack("relative_import", "from . import secrets\ndef f():\n    return 1\n", POLICY,
           "relative imports"),
    Attack("import_inside_function", "def f():\n    import posix\n    return posix.getcwd()\n",
           POLICY, r'"posix" is not allowed'),
    Attack("dunder_import_call", "def f():\n    return __import__('os')\n", POLICY,
           "__import__"),
    Attack("open_builtin", "def f():\n    return open('{canary}', 'w').write('x')\n",
           ("NameError",), "open"),
    Attack("eval_builtin", "def f():\n    return eval('1')\n", POLICY, "Eval calls"),
    Attack("exec_builtin", "def f():\n    exec('import os')\n", POLICY, "Exec calls"),
    Attack("compile_builtin", "def f():\n    return compile('1', 'x', 'eval')\n",
           ("NameError",), "compile"),
]

SUBMODULE_LEAKS = [
    Attack("json_codecs_open",
           "import json\ndef f():\n    return json.codecs.open('{canary}', 'w').write('x')\n",
           ATTR, "no attribute 'codecs'"),
    Attack("from_json_import_codecs",
           "from json import codecs\ndef f():\n    return codecs.open('{canary}').read()\n",
           ("ImportError",), "codecs"),
    Attack("json_decoder_submodule", "import json\ndef f():\n    return json.decoder.re\n",
           ATTR, "no attribute 'decoder'"),
    Attack("statistics_sys_modules_os",
           "import statistics\ndef f():\n"
           "    return statistics.sys.modules['os'].system('touch {canary}')\n",
           ATTR, "no attribute 'sys'"),
    Attack("from_statistics_import_sys", "from statistics import sys\ndef f():\n    return 1\n",
           ("ImportError",), "sys"),
    Attack("random_private_os", "import random\ndef f():\n    return random._os.getcwd()\n",
           POLICY, "_os", extended=True),
    Attack("random_private_os_getattr",
           "import random\ndef f():\n    return getattr(random, '_' + 'os').getcwd()\n",
           ATTR, "starts with", extended=True),
    Attack("re_internals_sre_compile", "import re\ndef f():\n    return re.sre_compile.sys\n",
           ATTR, "no attribute 'sre_compile'"),
    Attack("re_functools_module", "import re\ndef f():\n    return re.functools.partial\n",
           ATTR, "no attribute 'functools'"),
    Attack("re_private_compiler", "import re\ndef f():\n    return re._compiler\n", POLICY,
           "_compiler"),
    Attack("datetime_sys", "import datetime\ndef f():\n    return datetime.sys.modules\n",
           ATTR, "no attribute 'sys'"),
    Attack("module_loader_dunder",
           "import math\ndef f():\n    return getattr(math, '__loader__')\n", ATTR,
           "starts with"),
    Attack("operator_attrgetter",
           "import operator\ndef f():\n    return operator.attrgetter('__class__')(1)\n",
           ATTR, "no attribute 'attrgetter'", extended=True),
    Attack("functools_update_wrapper",
           "import functools\ndef f():\n    return functools.update_wrapper\n",
           ATTR, "no attribute 'update_wrapper'", extended=True),
    # IMPORT_FROM falls back to sys.modules[module.__name__ + "." + name] when the
    # attribute is missing: with a proxy carrying the real module's __name__, this handed
    # out real submodules, and json.scanner.re.enum.sys.modules['os'] was one walk away.
    Attack("from_json_import_scanner_to_sys",
           "from json import scanner\ndef f():\n"
           "    return scanner.re.enum.sys.modules['os'].getcwd()\n",
           ("ImportError",), "cannot import name 'scanner'"),
    Attack("from_json_import_decoder",
           "from json import decoder\ndef f():\n    return decoder.re.enum.bltns.open\n",
           ("ImportError",), "cannot import name 'decoder'"),
    Attack("from_collections_import_abc",
           "from collections import abc\ndef f():\n    return abc.Mapping\n",
           ("ImportError",), "cannot import name 'abc'"),
    Attack("dunder_import_fromlist_submodule",
           "def f():\n    return 1\nfrom json import encoder as enc\n",
           ("ImportError",), "cannot import name 'encoder'"),
]

FRAME_WALKING = [
    Attack("gi_frame_attribute",
           "def f():\n    g = (x for x in [1])\n    return g.gi_frame.f_back.f_globals\n",
           POLICY, "gi_frame"),
    Attack("gi_frame_getattr",
           "def f():\n    g = (x for x in [1])\n"
           "    fr = getattr(g, 'gi_' + 'frame')\n    return getattr(fr, 'f_back')\n",
           ATTR, "restricted name"),
    Attack("f_back_getattr_on_generator",
           "def gen():\n    yield 1\ndef f():\n    return getattr(gen(), 'gi_code')\n",
           ATTR, "restricted name"),
    Attack("f_globals_attribute", "def f(x=None):\n    return x.f_globals['__builtins__']\n",
           POLICY, "f_globals"),
    Attack("tb_frame_via_traceback",
           "def f():\n    try:\n        1 / 0\n    except Exception as e:\n"
           "        return e.__traceback__.tb_frame.f_back\n",
           POLICY, "__traceback__"),
    Attack("tb_frame_getattr",
           "def f():\n    try:\n        1 / 0\n    except Exception as e:\n"
           "        return getattr(e, '__traceback__')\n",
           ATTR, "starts with"),
    Attack("sys_getframe", "import sys\ndef f():\n    return sys._getframe(1).f_globals\n",
           POLICY, ""),
    Attack("coroutine_cr_frame",
           "async def co():\n    return 1\ndef f():\n    return co().cr_frame\n", POLICY,
           "AsyncFunctionDef|cr_frame"),
    Attack("gi_yieldfrom_getattr",
           "def gen():\n    yield from [1]\ndef f():\n    return getattr(gen(), 'gi_yieldfrom')\n",
           ATTR, "restricted name"),
]

SUBCLASS_WALKS = [
    Attack("tuple_class_base_subclasses",
           "def f():\n    return ().__class__.__base__.__subclasses__()\n", POLICY,
           "__class__"),
    Attack("getattr_chain_subclasses",
           "def f():\n    c = getattr((), '__cl' + 'ass__')\n"
           "    return getattr(getattr(c, '__base__'), '__subclasses__')()\n",
           ATTR, "starts with"),
    Attack("mro_to_object_subclasses",
           "def f():\n    obj = int.mro()[-1]\n    return getattr(obj, '__subclasses__')()\n",
           ATTR, "starts with"),
    Attack("catch_warnings_search",
           "def f():\n    obj = str.mro()[-1]\n"
           "    subs = getattr(obj, '__subclasses__')()\n"
           "    cw = [c for c in subs if c.__name__ == 'catch_warnings'][0]\n"
           "    return cw()._module.__builtins__['__import__']('os')\n",
           POLICY, "__name__"),
    Attack("builtin_importer_search",
           "def f():\n    obj = str.mro()[-1]\n"
           "    for c in getattr(obj, '__subclasses__')():\n"
           "        if 'BuiltinImporter' in repr(c):\n"
           "            return c.load_module('os').system('id')\n",
           ATTR, "starts with"),
    Attack("type_of_type_metaclass", "def f():\n    return type(int)('X', (), {})\n",
           ("TypeError",), "not available"),
    Attack("three_argument_type",
           "def f():\n    return type('X', (), {'__del__': lambda s: None})\n",
           ("TypeError",), "exactly one argument"),
    Attack("subclass_module_proxy",
           "import json\ndef f():\n    T = type(json)\n    class X(T):\n        pass\n"
           "    return 1\n",
           ("TypeError",), "not available"),
]

DUNDER_ACCESS = [
    Attack("getattr_dunder_class", "def f():\n    return getattr(1, '__class__')\n", ATTR,
           "starts with"),
    Attack("getattribute_method",
           "def f():\n    return (1).__getattribute__('__class__')\n", POLICY,
           "__getattribute__"),
    Attack("type_getattribute",
           "def f():\n    return type.__getattribute__(1, '__class__')\n", POLICY,
           "__getattribute__"),
    Attack("getattr_getattribute_runtime",
           "def f():\n    g = getattr(1, '__getattri' + 'bute__')\n    return g('__class__')\n",
           ATTR, "starts with"),
    Attack("map_getattr_indirection",
           "def f():\n    return list(map(getattr, [1], ['__class__']))\n", ATTR,
           "starts with"),
    Attack("partial_getattr_indirection",
           "import functools\ndef f():\n    g = functools.partial(getattr, 1)\n"
           "    return g('__class__')\n",
           ATTR, "starts with", extended=True),
    Attack("sorted_key_getattr",
           "def f():\n    return sorted(['__class__'], key=lambda n: getattr(1, n))\n",
           ATTR, "starts with"),
    Attack("function_globals",
           "def f():\n    return f.__globals__['__builtins__']\n", POLICY, "__globals__"),
    Attack("setattr_code_object",
           "def g():\n    pass\ndef f():\n    setattr(g, '__code__', None)\n", ATTR,
           "starts with"),
    Attack("vars_builtin", "def f():\n    return vars()\n", ("NameError",), "vars"),
    Attack("dict_of_class", "def f():\n    return getattr(int, '__dict__')\n", ATTR,
           "starts with"),
    Attack("abc_register_widens_isinstance",
           "import collections\ndef f():\n    collections.UserDict.register(type)\n", ATTR,
           '"register" of classes'),
    Attack("abc_register_getattr",
           "import collections\ndef f():\n    getattr(collections.UserList, 'register')(int)\n",
           ATTR, '"register" of classes'),
    Attack("tool_stub_closure",
           "def f():\n    return getattr(search, '__closure__')\n", ATTR, "starts with",
           tools={"search": lambda q: q}),
    # A generic alias forwards attribute reads to its origin: list[int].x is list.x.
    Attack("generic_alias_register",
           "import collections\ndef f():\n    collections.UserDict[int].register(int)\n",
           ATTR, '"register" of classes'),
    Attack("generic_alias_register_getattr",
           "import collections\ndef f():\n"
           "    getattr(collections.UserList[int], 'register')(int)\n",
           ATTR, '"register" of classes'),
    # A bound method forwards attribute reads to its function, and classmethod binds any
    # callable, a class too: C.g.register was collections.UserDict.register.
    Attack("classmethod_bound_class_register",
           "import collections\nclass C:\n    g = classmethod(collections.UserDict)\n"
           "def f():\n    C.g.register(int)\n", ATTR, '"register" of classes'),
    Attack("method_type_constructor",
           "import collections\ndef f():\n"
           "    return type(print)(collections.UserDict, 1).register(int)\n",
           ("TypeError",), r"type\(\) of this object"),
    Attack("generic_alias_type_constructor",
           "def f():\n    return type(list[int])(str, (int,)).format('{0.__class__}', 1)\n",
           ("TypeError",), r"type\(\) of this object"),
]

FORMAT_STRINGS = [
    Attack("classmethod_bound_str_format",
           "class C:\n    g = classmethod(str)\ndef f():\n"
           "    return C.g.format('{0.__init__.__globals__}', f)\n",
           ("NotImplementedError",), "format"),
    # str + UserDict is refused as a class now (a value type with a Python-level __eq__);
    # either refusal stops the walk.
    Attack("generic_alias_of_str_subclass_format",
           "import collections\nclass S(str, collections.UserDict):\n    pass\ndef f():\n"
           "    return S[int].format('{0.__init__.__globals__}', 1)\n",
           ("NotImplementedError", "TypeError"), "format|builtin value type"),
    Attack("generic_alias_of_str_subclass_format_map",
           "import collections\nclass S(str, collections.UserDict):\n    pass\ndef f():\n"
           "    return getattr(S[int], 'format_map')('{a.__class__}', {'a': 1})\n",
           ("NotImplementedError", "TypeError"), "format|builtin value type"),
    Attack("str_format_attribute", "def f():\n    return '{0.__class__}'.format(1)\n",
           ("NotImplementedError",), "format"),
    Attack("str_format_map", "def f():\n    return '{a.__class__}'.format_map({'a': 1})\n",
           ("NotImplementedError",), "format"),
    Attack("str_format_unbound", "def f():\n    return str.format('{0.__class__}', 1)\n",
           ("NotImplementedError",), "format"),
    Attack("getattr_format", "def f():\n    return getattr('{0.__class__}', 'format')(1)\n",
           ("NotImplementedError",), "format"),
    Attack("str_subclass_format",
           "class S(str):\n    pass\ndef f():\n    return S('{0.__class__}').format(1)\n",
           ("NotImplementedError",), "format"),
    Attack("string_formatter",
           "import string\ndef f():\n"
           "    return string.Formatter().format('{0.__class__.__base__}', 1)\n",
           ("NotImplementedError", "AttributeError"), "Formatter", extended=True),
    Attack("string_formatter_getattr",
           "import string\ndef f():\n    return getattr(string, 'Formatter')\n",
           ("NotImplementedError", "AttributeError"), "Formatter", extended=True),
    Attack("fstring_dunder", "def f():\n    x = 1\n    return f'{x.__class__}'\n", POLICY,
           "__class__"),
    Attack("format_builtin_spec", "def f():\n    return format(1, '{0.__class__}')\n",
           ("ValueError",), "format"),
]

EXCEPTION_LEAKS = [
    Attack("attribute_error_obj_module",
           "import json\ndef f():\n    try:\n        json.nothing\n"
           "    except AttributeError as e:\n        return repr(e.obj)\n",
           ATTR, '"obj" of exceptions'),
    Attack("attribute_error_obj_getattr",
           "import json\ndef f():\n    try:\n        json.nothing\n"
           "    except AttributeError as e:\n        return getattr(e, 'obj')\n",
           ATTR, '"obj" of exceptions'),
    Attack("attribute_error_obj_builtin",
           "def f():\n    try:\n        (1).nothing\n    except AttributeError as e:\n"
           "        return e.obj\n",
           ATTR, '"obj" of exceptions'),
    Attack("exception_context",
           "def f():\n    try:\n        1 / 0\n    except Exception as e:\n"
           "        return e.__context__\n",
           POLICY, "__context__"),
    Attack("try_star_except_group",
           "def f():\n    try:\n        raise ExceptionGroup('g', [ValueError()])\n"
           "    except* ValueError as eg:\n        return eg\n",
           POLICY, "TryStar"),
    Attack("augassign_obj_attribute",
           "def f():\n    try:\n        (1).x\n    except AttributeError as e:\n"
           "        e.obj += 1\n",
           POLICY, "augmented assignment"),
]

TIME_BOMBS = [
    Attack("eq_on_returned_object",
           "class T:\n    def __eq__(self, other):\n        while True:\n            pass\n"
           "def f():\n    return T()\n",
           ("ResultError",), "not plain JSON"),
    Attack("str_subclass_with_eq",
           "class S(str):\n    def __eq__(self, other):\n        return True\n"
           "def f():\n    return {'k': S('v')}\n",
           ("TypeError",), "builtin value type with a Python-level __eq__"),
    Attack("dict_subclass_result",
           "class D(dict):\n    pass\ndef f():\n    return D(a=1)\n",
           ("ResultError",), "type D"),
    Attack("int_subclass_result",
           "class I(int):\n    def __eq__(self, o):\n        return False\n"
           "def f():\n    return [I(1)]\n",
           ("TypeError",), "builtin value type with a Python-level __eq__"),
    Attack("str_subclass_result", "class S(str):\n    pass\ndef f():\n    return {'k': S('v')}\n",
           ("ResultError",), "type S"),
    Attack("del_method", "class T:\n    def __del__(self):\n        pass\ndef f():\n    return T()\n",
           POLICY, "__del__"),
    Attack("hash_method", "class T:\n    def __hash__(self):\n        return 1\ndef f():\n"
           "    return T()\n", POLICY, "__hash__"),
    Attack("function_result", "def f():\n    return f\n", ("ResultError",), "function"),
    Attack("generator_result", "def f():\n    return (x for x in [1])\n", ("ResultError",),
           "generator"),
    Attack("cyclic_result", "def f():\n    a = []\n    a.append(a)\n    return a\n",
           ("ResultError",), "nested"),
    Attack("non_finite_float", "def f():\n    return [float('inf')]\n", ("ResultError",),
           "not a JSON number"),
]

CVES = [
    # CVE-2023-37271: generator frames lead out of the sandbox.
    Attack("CVE-2023-37271_gi_frame_walk",
           "def f():\n    g = (x for x in [1])\n"
           "    return g.gi_frame.f_back.f_back.f_globals['__builtins__']\n",
           POLICY, "gi_frame"),
    Attack("CVE-2023-37271_gi_frame_runtime",
           "def f():\n    def gen():\n        yield 1\n"
           "    return getattr(gen(), 'gi' + '_frame')\n",
           ATTR, "restricted name"),
    # CVE-2023-41039: str.format / format_map / string.Formatter read attributes.
    Attack("CVE-2023-41039_format", "def f():\n    return '{0.__init__.__globals__}'.format(f)\n",
           ("NotImplementedError",), "format"),
    Attack("CVE-2023-41039_format_map",
           "def f():\n    return '{x.__init__}'.format_map({'x': 1})\n",
           ("NotImplementedError",), "format"),
    Attack("CVE-2023-41039_string_formatter",
           "import string\ndef f():\n"
           "    return string.Formatter().get_field('0.__class__', [1], {})\n",
           ("NotImplementedError", "AttributeError"), "Formatter", extended=True),
    # CVE-2024-47532: AttributeError.obj and the string module.
    Attack("CVE-2024-47532_attribute_error_obj",
           "import string\ndef f():\n    try:\n        string.foo\n"
           "    except AttributeError as e:\n        return e.obj\n",
           ATTR, '"obj" of exceptions', extended=True),
    # CVE-2025-22153: try/except* type confusion (CPython 3.11-3.13.1).
    Attack("CVE-2025-22153_try_star",
           "def f():\n    try:\n        pass\n    except* BaseException:\n        pass\n",
           POLICY, "TryStar"),
    # CVE-2026-55830: guard hooks shadowed by positional-only parameters.
    Attack("CVE-2026-55830_posonly_getattr",
           "def f(_getattr_=None, /):\n    return ().__class__\n", POLICY, "_getattr_"),
]

ALL = [
    *[("imports", a) for a in IMPORTS],
    *[("submodule_leaks", a) for a in SUBMODULE_LEAKS],
    *[("frame_walking", a) for a in FRAME_WALKING],
    *[("subclass_walks", a) for a in SUBCLASS_WALKS],
    *[("dunder_access", a) for a in DUNDER_ACCESS],
    *[("format_strings", a) for a in FORMAT_STRINGS],
    *[("exception_leaks", a) for a in EXCEPTION_LEAKS],
    *[("time_bombs", a) for a in TIME_BOMBS],
    *[("cves", a) for a in CVES],
]


@pytest.mark.parametrize("family, attack", ALL, ids=[f"{fam}-{a.id}" for fam, a in ALL])
def test_attack_is_stopped(family, attack, sandbox, extended_sandbox, canary):
    box = extended_sandbox if attack.extended else sandbox
    result = run_attack(attack, canary, box)
    check_stopped(result, attack, canary, box)


def test_suite_size():
    assert len(ALL) >= 60
    assert len({a.id for _, a in ALL}) == len(ALL)


def test_module_state_cannot_be_poisoned_across_runs(sandbox, extended_sandbox):
    attempts = [
        "import json\ndef f():\n    json.dumps = lambda *a: 'pwned'\n",
        "import json\ndef f():\n    setattr(json, 'dumps', lambda *a: 'pwned')\n",
        "import json\ndef f():\n    json.JSONEncoder.item_separator = 'pwned'\n",
        "import collections\ndef f():\n    collections.Counter.most_common = None\n",
    ]
    for code in attempts:
        r = sandbox.run(code, entry="f")
        assert not r.ok and r.error.type == "TypeError" and "cannot" in r.error.message
    r = sandbox.run("import json, collections\ndef f():\n"
                    "    return [json.dumps([1, 2]), collections.Counter('aab').most_common(1)]\n",
                    entry="f")
    assert r.ok and r.value == ["[1, 2]", [["a", 2]]]
    r = extended_sandbox.run("import decimal\ndef f():\n    decimal.getcontext().prec = 2\n",
                             entry="f")
    assert not r.ok and r.error.type == "TypeError"
    r = extended_sandbox.run("import decimal\ndef f():\n    decimal.setcontext(None)\n", entry="f")
    assert not r.ok and r.error.type == "AttributeError"
    # Public per-worker state is reset between runs: a seeded generator does not carry over.
    seeded = extended_sandbox.run("import random\ndef f():\n    random.seed(7)\n"
                                  "    return 1\n", entry="f")
    assert seeded.ok
    nxt = extended_sandbox.run("import random\ndef f():\n    return random.random()\n",
                               entry="f")
    first_after_seed_7 = 0.32383276483316237
    assert nxt.ok and nxt.value != first_after_seed_7


def test_host_receives_only_plain_json(sandbox):
    r = sandbox.run("class L(list):\n    pass\ndef f():\n    return [(1, 2), {'a': (3,)}]\n",
                    entry="f")
    assert r.ok and r.value == [[1, 2], {"a": [3]}]

    def kinds(v):
        if isinstance(v, dict):
            return {type(v)} | {t for x in v.values() for t in kinds(x)}
        if isinstance(v, list):
            return {type(v)} | {t for x in v for t in kinds(x)}
        return {type(v)}

    assert kinds(r.value) <= {list, dict, int}


def test_public_attribute_graph_reaches_no_module_frame_or_code():
    """Native attribute loads are emitted for public, non-sensitive names. Walk every
    object reachable that way (depth 4) from the sandbox's builtins, every vetted module
    proxy and instances of common types: none may be a module, frame, code object,
    traceback, or a namespace dict (one holding __builtins__/__name__/open), and nothing
    reachable from the builtins or the modules may be a mutable container."""
    import collections
    import datetime
    import re
    import types

    from sandbox.policy import SENSITIVE_ATTRS, VETTED_MODULES
    from sandbox.runtime import RunNamespace, build_module_proxies

    proxies = build_module_proxies(tuple(VETTED_MODULES))
    ns = RunNamespace(proxies, {}, 1000, lambda text: None)
    roots = {f"builtins.{k}": v for k, v in ns.globals["__builtins__"].items()
             if not k.startswith("_")}
    roots.update({f"module.{k}": v for k, v in proxies.items()})
    samples = {"str": "x", "int": 1, "list": [1], "dict": {"a": 1}, "exc": ValueError("x"),
               "gen": (x for x in [1]), "range": range(3), "bytes": b"x", "set": {1},
               "func": lambda: 1, "match": re.match("a", "a"), "print": ns.output._call_print,
               "datetime": datetime.datetime(2020, 1, 1)}
    roots.update({f"sample.{k}": v for k, v in samples.items()})
    bad_types = (types.ModuleType, types.FrameType, types.CodeType, types.TracebackType)
    seen: set[int] = set()
    queue = collections.deque((path, obj, 0) for path, obj in roots.items())
    found = []
    while queue:
        path, obj, depth = queue.popleft()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, bad_types) or (
            isinstance(obj, dict) and {"__builtins__", "__name__", "open"} & set(obj)
        ):
            found.append(path)
            continue
        if not path.startswith("sample.") and isinstance(
            obj, (dict, list, set, bytearray, collections.deque)
        ):
            # Shared by every run of a worker and mutable without any write guard
            # (``.update()``): one skill could change what the next one computes.
            found.append(path)
            continue
        if depth >= 4:
            continue
        try:
            names = dir(obj)
        except Exception:  # noqa: BLE001
            continue
        for name in names:
            if name.startswith("_") or name in SENSITIVE_ATTRS:
                continue
            try:
                value = getattr(obj, name)
            except Exception:  # noqa: BLE001
                continue
            if not isinstance(value, (int, float, str, bytes, bool, type(None))):
                queue.append((f"{path}.{name}", value, depth + 1))
    assert len(seen) > 1000
    assert found == []


def test_from_imports_of_members_still_work_without_a_module_name(sandbox):
    """Proxies carry no ``__name__`` (the IMPORT_FROM fallback key); members import."""
    r = sandbox.run("from json import loads, dumps as d\nfrom collections import Counter\n"
                    "import re\ndef f():\n"
                    "    return [loads(d([1])), Counter('aa')['a'], repr(re),\n"
                    "            hasattr(re, 'compile')]\n", entry="f")
    assert r.ok and r.value == [[1], 2, "<sandbox module 're'>", True], r.error


def test_class_level_state_of_allowed_modules_cannot_be_poisoned_across_runs():
    """textwrap.TextWrapper.unicode_whitespace_trans was a plain class-level dict: an item
    write (the inline dict fast path of the write guard) or ``.update()`` changed what
    ``textwrap.fill`` returned to every later run of the worker."""
    from sandbox import Sandbox

    victim = "import textwrap\ndef f():\n    return textwrap.fill('hello world')\n"
    attempts = [
        "import textwrap\ndef f():\n"
        "    textwrap.TextWrapper.unicode_whitespace_trans[ord('o')] = '0'\n",
        "import textwrap\ndef f():\n"
        "    textwrap.TextWrapper.unicode_whitespace_trans.update({ord('o'): '0'})\n",
        "import textwrap, operator\ndef f():\n"
        "    operator.ior(textwrap.TextWrapper.unicode_whitespace_trans, {ord('o'): '0'})\n",
        "import textwrap\ndef f():\n"
        "    textwrap.TextWrapper().unicode_whitespace_trans[ord('o')] = '0'\n",
    ]
    with Sandbox(workers=1, allowed_modules=("textwrap", "operator")) as box:
        for code in attempts:
            r = box.run(code, entry="f")
            assert not r.ok and r.error.type in ("TypeError", "AttributeError"), r
            after = box.run(victim, entry="f")
            assert after.ok and after.value == "hello world", after
        # The class still works with the frozen table.
        r = box.run("import textwrap\ndef f():\n"
                    "    return textwrap.TextWrapper(width=5).wrap('ab\\tcd ef gh')\n",
                    entry="f")
        assert r.ok and r.value == ["ab", "cd ef", "gh"], r
