"""Rendering a dataflow plan (:mod:`.steps`) as skill code: the function, its docstring,
its ``when`` text and its name, and the :class:`Candidate` that carries them."""

from __future__ import annotations

import json
import keyword
from collections.abc import Mapping, Sequence
from typing import Any

from skill_library import signature
from skill_library.induction import describe, description
from skill_library.induction.candidate import Candidate
from skill_library.induction.describe import ToolDoc
from skill_library.induction.steps import Plan, Spec, Step, annotation, collect_refs, fresh, literal, param_names
from skill_library.models import ToolCall

#: ``(state_tool, key, param)``: the skill returns at once when ``state_tool()[key] >= param``
Guard = tuple[str, str, str]
_LOOP_VARS = ("item", "entry", "element", "each_item")


def _docstring(text: str) -> str:
    """``text`` as a triple-quoted Python string literal."""
    body = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if body.endswith('"'):
        body += " "
    return f'"""{body}"""'


def render(plan: Plan, calls: Sequence[ToolCall], *, taken: set[str], read_only: frozenset[str],
           tool_docs: Mapping[str, ToolDoc]) -> Candidate:
    """``plan`` (over the trace's successful ``calls``) as skill code and a
    :class:`Candidate`; the names it gives (result, loop and state variables, the function)
    are added to ``taken``. The code checks the :func:`goal_guard` first when there is one."""
    # names for results that are referenced, and for the loop variable
    referenced: set[int] = set()
    for step in plan.steps:
        for _arg, spec in step.args:
            collect_refs(spec, referenced)
        if step.loop_over:
            collect_refs(step.loop_over, referenced)
    if plan.returns is not None:
        collect_refs(plan.returns, referenced)
    else:
        referenced.add(len(calls) - 1)
    step_var: dict[int, str] = {}
    call_var: dict[int, str] = {}
    for number, step in enumerate(plan.steps):
        if any(c in referenced for c in step.calls):
            base = f"r{step.calls[0] + 1}"
            step_var[number] = fresh(taken, base + "s" if step.loop_over else base)
            for c in step.calls:
                call_var[c] = step_var[number]
    loop_var = next((v for v in _LOOP_VARS if v not in taken), None) or fresh(taken, "item")
    taken.add(loop_var)
    element_var = fresh(taken, "element")

    def expr(spec: Spec) -> str:
        kind = spec[0]
        if kind == "param":
            return spec[1]
        if kind == "const":
            return literal(json.loads(spec[1]))
        if kind == "text":
            return repr(spec[1])
        if kind == "ref":
            base = call_var[spec[1]]
            if spec[1] in plan.loop_call:  # one result of a loop: first, last or by index
                step_index, m = plan.loop_call[spec[1]]
                last = len(plan.steps[step_index].calls) - 1
                base += "[-1]" if m == last else f"[{m}]"
            return base + "".join(f"[{k!r}]" for k in spec[2])
        if kind == "item":
            return loop_var + "".join(f"[{k!r}]" for k in spec[1])
        if kind == "dict":
            return "{" + ", ".join(f"{k!r}: {expr(s)}" for k, s in spec[1]) + "}"
        if kind == "list":
            return "[" + ", ".join(expr(s) for s in spec[1]) + "]"
        if kind == "concat":
            return " + ".join(expr(s) for s in spec[1])
        if kind == "expr":
            return f"({expr(spec[2])} {spec[1]} {expr(spec[3])})"
        if kind == "len":
            return f"len({expr(spec[1])})"
        if kind == "num":
            return repr(spec[1])
        if kind == "round":
            return f"round({expr(spec[1])}, {spec[2]})"
        if kind == "items":
            return f"{expr(spec[1])}.items()"
        if kind == "map":
            var = element_var
            return f"[{var}{''.join(f'[{k!r}]' for k in spec[2])} for {var} in {expr(spec[1])}]"
        raise AssertionError(kind)

    def call_expr(step: Step) -> str:
        if all(a.isidentifier() and not keyword.iskeyword(a) for a, _ in step.args):
            inner = ", ".join(f"{a}={expr(s)}" for a, s in step.args)
        else:
            inner = "**{" + ", ".join(f"{a!r}: {expr(s)}" for a, s in step.args) + "}"
        return f"{step.tool}({inner})"

    guard = goal_guard(plan, calls, read_only)
    when = when_text(plan, calls, guard, read_only=read_only, tool_docs=tool_docs)
    func_name = skill_name(plan, taken, read_only=read_only)
    args = ", ".join(f"{p.name}{annotation(p.value)}" for p in plan.params)
    tools = sorted({c.name for c in calls if c.kind == "tool"})
    skills = list(dict.fromkeys(c.name for c in calls if c.kind == "skill"))
    # types only in the docstring: example values may be personal data
    body = describe.docstring(when, [(p.name, annotation(p.value)) for p in plan.params],
                              tools + skills)
    doc_lines = body.split("\n")
    doc = "\n".join(doc_lines[:1] + [("    " + line) if line else "" for line in doc_lines[1:]])
    lines = [f"def {func_name}({args}):", "    " + _docstring(doc + "\n    ")]
    if guard is not None:
        tool, key, param = guard
        state = fresh(taken, "state")
        lines += [f"    {state} = {tool}()",
                  f"    if isinstance({state}, dict) and {state}.get({key!r}, 0) >= {param}:",
                  f"        return {state}"]
    for number, step in enumerate(plan.steps):
        var = step_var.get(number)
        if step.loop_over is None:
            lines.append(f"    {var} = {call_expr(step)}" if var else f"    {call_expr(step)}")
            continue
        if var:
            lines.append(f"    {var} = []")
        lines.append(f"    for {loop_var} in {expr(step.loop_over)}:")
        body = call_expr(step)
        lines.append(f"        {var}.append({body})" if var else f"        {body}")
    if plan.returns is not None:
        lines.append(f"    return {expr(plan.returns)}")
    elif plan.steps[-1].loop_over is not None:  # the results of the final loop
        lines.append(f"    return {step_var[len(plan.steps) - 1]}")
    else:
        lines.append(f"    return {expr(('ref', len(calls) - 1, ()))}")
    code = "\n".join(lines) + "\n"
    func = signature.find_function(code, func_name)
    return Candidate(
        name=func_name,
        when=when,
        description=signature.docstring(func),
        code=code,
        parameters=signature.parameters_schema(func),
        tools=tools,
        depends_on=skills,
        example_args={p.name: p.value for p in plan.params},
        generalizer="dataflow",
    )


def goal_guard(plan: Plan, calls: Sequence[ToolCall], read_only: frozenset[str]) -> Guard | None:
    """``(state_tool, key, param)`` when the trace shows a goal test a skill can check
    before acting: a read-only tool without arguments returns a mapping; the last acting
    call names a constant object, takes a numeric parameter, and the state after it
    (a later read, or a mapping of the same keys in its result) holds at least that
    parameter's value of that object. Goal-conditioned skills skip work already done.
    """
    if not read_only:
        return None
    readers = [c for c in calls if c.name in read_only and c.kind == "tool"
               and not c.arguments and isinstance(c.result, dict)]
    if not readers:
        return None
    tool, keys = readers[0].name, set(readers[-1].result)
    acting = [st for st in plan.steps if st.tool not in read_only]
    if not acting or acting[-1].loop_over is not None:
        return None
    main = acting[-1]
    last = main.calls[-1]
    later = [c.result for c in calls[last + 1:] if c.name == tool and isinstance(c.result, dict)]
    final: Any = later[-1] if later else None
    if final is None and isinstance(calls[last].result, dict):
        final = next((v for v in calls[last].result.values()
                      if isinstance(v, dict) and keys & set(v)), None)
    if not isinstance(final, dict):
        return None
    params = {p.name: p.value for p in plan.params}
    counts = [spec[1] for _a, spec in main.args if spec[0] == "param"
              and isinstance(params.get(spec[1]), (int, float))
              and not isinstance(params.get(spec[1]), bool)]
    for _arg, spec in main.args:
        if spec[0] != "const":
            continue
        obj = json.loads(spec[1])
        have = final.get(obj) if isinstance(obj, str) else None
        if not isinstance(have, (int, float)) or isinstance(have, bool):
            continue
        for param in counts:
            if 0 < params[param] <= have:
                return tool, obj, param
    return None


def when_text(plan: Plan, calls: Sequence[ToolCall], guard: Guard | None = None, *,
              read_only: frozenset[str], tool_docs: Mapping[str, ToolDoc]) -> str:
    """What the skill does, from its steps and the tools' docs (:mod:`.describe`)."""
    steps = []
    for st in plan.steps:
        over = None
        if st.loop_over is not None:
            names = sorted(param_names(st.loop_over))
            source = st.loop_over[1] if st.loop_over[0] == "items" else st.loop_over
            if source[0] == "ref":
                over = "lookup:" + calls[source[1]].name
            elif names:
                over = "param:" + names[0]
            else:
                over = "lookup:" + st.tool
        constants = {a: json.loads(spec[1]) for a, spec in st.args if spec[0] == "const"}
        steps.append(describe.Step(tool=st.tool, loop_over=over, constants=constants,
                                   whole=any(spec[0] == "map" for _a, spec in st.args)))
    note = None
    if guard is not None:
        what = describe.object_words(guard[1])
        note = f"Returns at once when {guard[0]} already shows enough{' ' + what if what else ''}."
    return describe.describe_steps(steps, [p.name for p in plan.params], tool_docs,
                                   read_only=read_only, guard=note)


def skill_name(plan: Plan, taken: set[str], *, read_only: frozenset[str]) -> str:
    """A snake_case name from what the skill does (see :mod:`.description`), added to ``taken``."""
    steps = [(st.tool, dict(st.args), st.loop_over is not None) for st in plan.steps]
    constants = {
        n: {a: json.loads(spec[1]) for a, spec in st.args if spec[0] == "const"}
        for n, st in enumerate(plan.steps)
    }
    whole = [n for n, st in enumerate(plan.steps) if any(spec[0] == "map" for _a, spec in st.args)]
    name = description.behaviour_name(
        steps, constants=constants, read_only=read_only, taken=taken, whole=whole
    )
    taken.add(name)
    return name
