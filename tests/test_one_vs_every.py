"""One item or every item (skill_library.one_vs_every): a loop skill against its look-alike
that takes the item as a parameter, learned from real traces (real sandbox replays, real
Chroma index, real MiniLM), then fetched both ways and for a task that does not tell them
apart; and the parts (role shapes, the pairs read from code, the every vocabulary)."""

from __future__ import annotations

import pytest

from skill_library import Policy, SkillLibrary, ToolSpec, one_vs_every, ranking
from skill_library.models import Example, Outcome, Skill, ToolCall, Trace

READ_ONLY = frozenset({"find_user", "get_user"})
GROUPS = ["eng-platform", "book-club", "london-office", "design-guild"]


def record(n: int) -> dict:
    return {"user_id": f"U{100 + n}", "email": f"p{n}@corp.example", "status": "active",
            "groups": [GROUPS[(n + i) % len(GROUPS)] for i in range(2 + n % 2)]}


def lookups(r: dict) -> list[ToolCall]:
    return [ToolCall(name="find_user", arguments={"email": r["email"]}, result=r["user_id"]),
            ToolCall(name="get_user", arguments={"user_id": r["user_id"]}, result=r)]


def leave_one(r: dict, task: str) -> Trace:
    group = r["groups"][0]
    return Trace(task=task.format(email=r["email"], group=group), params={"email": r["email"], "group": group},
                 calls=[*lookups(r), ToolCall(name="remove_from_group", arguments={"user_id": r["user_id"],
                                                                                    "group": group},
                                              result={"user_id": r["user_id"], "groups": r["groups"][1:]})],
                 outcome=Outcome(success=True, verifier="directory-audit"))


def leave_every(r: dict, task: str) -> Trace:
    calls = lookups(r)
    for i, group in enumerate(r["groups"]):
        calls.append(ToolCall(name="remove_from_group", arguments={"user_id": r["user_id"], "group": group},
                              result={"user_id": r["user_id"], "groups": r["groups"][i + 1:]}))
    return Trace(task=task.format(email=r["email"]), params={"email": r["email"]}, calls=calls,
                 outcome=Outcome(success=True, verifier="directory-audit"))


ONE_TASKS = ["Please take {email} off the {group} mailing list.", "Remove {email} from the {group} group.",
             "I keep getting {group} emails; please unsubscribe {email} from that list.",
             "Can you drop {email} from {group}?", "This is {email}. Please remove me from {group}."]
EVERY_TASKS = ["Remove {email} from all groups.", "Please remove {email} from all the mailing lists.",
               "Can you clear out every group membership of {email}?",
               "Unsubscribe {email} from all distribution lists.", "Take {email} off every list, please."]


@pytest.fixture(scope="module")
def pair_library(tmp_path_factory, embedder):
    library = SkillLibrary(tmp_path_factory.mktemp("ova") / "lib", embedder=embedder,
                           policy=Policy(auto_approve="all"))
    docs = {"find_user": "Find a user's id from their email.",
            "get_user": "A user's record: status and the mailing-list groups they are on.",
            "remove_from_group": "Remove a user from one mailing-list group."}
    library.register_tools({name: ToolSpec(side_effects=name not in READ_ONLY, description=text)
                            for name, text in docs.items()})
    one = library.learn_many([leave_one(record(n), t) for n, t in enumerate(ONE_TASKS)])
    every = library.learn_many([leave_every(record(n), t) for n, t in enumerate(EVERY_TASKS, start=5)])
    assert one[0].status == "saved" and every[0].status == "saved", (one, every)
    yield library, one[0].skill.name, every[0].skill.name
    library.close()


def names(matches) -> list[str]:
    return [m.skill.name for m in matches]


def test_the_pair_is_read_from_the_learned_code(pair_library):
    library, one, every = pair_library
    found = one_vs_every.scope(library)
    assert [(p.every, p.one, p.parameter) for p in found.pairs] == [(every, one, "group")]
    assert found.pairs[0].shapes == {"x-x"}  # from the masked example values (xxx-xxxxxxxx)
    assert "for every one that" in library.get(every).when


def test_a_task_naming_the_item_gets_the_one_item_skill(pair_library):
    library, one, every = pair_library
    task = "Hello, p21@corp.example here; please take me off london-office, just that one list."
    plain = library.fetch(task, k=2, explain=True)
    assert names(plain)[0] == one and not plain.ambiguous and not plain.abstained, plain.reason
    by_name = {m.skill.name: m for m in plain}
    assert by_name[one].missing == []
    if every in by_name:  # the loop skill would do more than the task asks: penalized
        assert by_name[every].explanation.specificity <= -one_vs_every.EVERY_PENALTY
    # the caller's args name the item too: the loop skill is penalized, and never first unflagged
    given = library.fetch("please sort out p21@corp.example's lists", k=2, explain=True,
                          args={"email": "p21@corp.example", "group": "book-club"})
    assert {m.skill.name: m.explanation.specificity for m in given}.get(every, -1.0) <= -one_vs_every.EVERY_PENALTY
    assert names(given)[0] != every or given.ambiguous, (names(given), given.reason)


def test_a_task_saying_every_gets_the_loop_skill_and_the_one_item_skill_misses_its_item(pair_library):
    library, one, every = pair_library
    task = "p22@corp.example is drowning in email: unsubscribe them from every mailing list there is."
    result = library.fetch(task, k=2, explain=True)
    assert names(result)[0] == every and not result.ambiguous and not result.abstained, result.reason
    by_name = {m.skill.name: m for m in result}
    assert by_name[every].explanation.specificity == 0.0
    assert one not in by_name or by_name[one].missing == ["group"]
    # a word form of the loop word counts ("everything" starts with "every")
    assert one_vs_every.scope(library).says_every("Please remove everything for p22@corp.example")


def test_a_task_that_says_both_or_neither_never_gets_the_loop_skill_alone(pair_library):
    library, one, every = pair_library
    both = library.fetch("Remove p23@corp.example from every list, including book-club.", k=2)
    assert both.ambiguous and {one, every} <= set(names(both)), (names(both), both.reason)
    assert all(m.ambiguous for m in both if m.skill.name in (one, every))
    assert "one item or every item" in both.reason
    neither = library.fetch("Could you take p24@corp.example off the mailing lists?", k=2)
    top = neither[0]
    # the loop skill first only flagged; the one-item skill first only with its item missing
    assert (top.skill.name == every and neither.ambiguous) or (top.skill.name == one and top.missing == ["group"]
                                                                and neither.abstained) \
        or top.skill.name not in (one, every), (names(neither), neither.reason)
    # abstain=False: the old shape, no flags
    assert not any(m.ambiguous for m in library.fetch("Remove p23@corp.example from every list, including "
                                                      "book-club.", k=2, abstain=False))


# -- the parts ----------------------------------------------------------------------------------


def test_role_shapes_keep_case_and_symbols_and_match_masked_values():
    assert one_vs_every.role_shape("eng-platform") == one_vs_every.role_shape("xxx-xxxxxxxx") == "x-x"
    assert one_vs_every.role_shape("LT-1234") == one_vs_every.role_shape("XX-0000") == "X-0"
    assert one_vs_every.role_shape("Jean-Luc") == "Xx-Xx"  # a hyphenated name is not a slug
    assert not one_vs_every.is_structured("x") and not one_vs_every.is_structured("Xx")
    assert not one_vs_every.is_structured("x x")
    assert one_vs_every.is_structured("x-x") and one_vs_every.is_structured("X-0")


def code_skill(name: str, params: str, body: str, tools: list[str]) -> Skill:
    code = f'def {name}({params}):\n    """Does it."""\n' + "".join(f"    {line}\n" for line in body.splitlines())
    return Skill.from_function(code, when=f"{name} things", tools=tools)


LOCK_TOOLS = ["find_user", "list_devices", "lock_device"]
LOCK_ONE = code_skill("lock_one", "email: str, asset_tag: str",
                      "r1 = find_user(email=email)\nlist_devices(user_id=r1)\nreturn lock_device(asset_tag=asset_tag)",
                      LOCK_TOOLS)
LOCK_ALL = code_skill("lock_all", "email: str",
                      "r1 = find_user(email=email)\nr2 = list_devices(user_id=r1)\nout = []\n"
                      "for item in r2:\n    out.append(lock_device(asset_tag=item['asset_tag']))\nreturn out",
                      LOCK_TOOLS)
LOCK_LISTED = code_skill("lock_listed", "email: str, asset_tags: list",
                         "out = []\nfor item in asset_tags:\n    out.append(lock_device(asset_tag=item))\nreturn out",
                         LOCK_TOOLS)


def test_pairs_come_from_a_loop_over_a_lookup_not_over_a_parameter():
    assert one_vs_every.loops(LOCK_ALL) == {("lock_device", "asset_tag")}
    assert one_vs_every.loops(LOCK_LISTED) == set()  # the caller names the items
    assert one_vs_every.takes(LOCK_ONE) == {("find_user", "email"): "email", ("lock_device", "asset_tag"): "asset_tag"}
    found = one_vs_every.find_pairs([LOCK_ONE, LOCK_ALL, LOCK_LISTED])
    assert [(e.name, o.name, p) for e, o, p in found] == [("lock_all", "lock_one", "asset_tag")]


def leave_pair() -> tuple[Skill, Skill]:
    """Remove one employee from one mailing list, and from every list the directory names."""
    leave_one = code_skill("leave_one", "email: str, group: str",
                           "r1 = find_user(email=email)\nget_user(user_id=r1)\n"
                           "return remove_from_group(user_id=r1, group=group)",
                           ["find_user", "get_user", "remove_from_group"])
    leave_all = code_skill("leave_all", "email: str",
                           "r1 = find_user(email=email)\nr2 = get_user(user_id=r1)\nout = []\n"
                           "for item in r2['groups']:\n    out.append(remove_from_group(user_id=r1, group=item))\n"
                           "return out", ["find_user", "get_user", "remove_from_group"])
    return leave_one, leave_all


def ex(*texts: str, **params: str) -> list[Example]:
    """Example tasks t0, t1, ... with ``params``."""
    return [Example(trace_id=f"t{i}", text=t, params=dict(params)) for i, t in enumerate(texts)]


def test_the_every_vocabulary_is_learned_from_the_library_s_own_examples():
    # two pairs whose users write German: "alle" tells both loop skills from their look-alikes,
    # a topic word of one pair ("geräte") does not join
    leave_one, leave_all = leave_pair()

    examples = {
        "lock_all": ex("Bitte alle Geräte von {email} sperren.", "Alle meine Geräte sperren: {email}."),
        "lock_one": ex("Bitte {asset_tag} von {email} sperren.", "Gerät {asset_tag} sperren, {email}.",
                       asset_tag="XX-0000"),
        "leave_all": ex("{email} aus alle Listen entfernen.", "Bitte alle Gruppen von {email} löschen."),
        "leave_one": ex("{email} aus {group} entfernen.", "Bitte {group} von {email} löschen.",
                        group="xxx-xxxxxxxx"),
    }
    found = one_vs_every.build([LOCK_ONE, LOCK_ALL, leave_one, leave_all], examples)
    assert {(p.every, p.one) for p in found.pairs} == {("lock_all", "lock_one"), ("leave_all", "leave_one")}
    assert found.learned == {"alle"}
    assert found.says_every("Bitte alle Geräte sperren") and not found.says_every("Bitte das Gerät sperren")
    pair = next(p for p in found.pairs if p.every == "lock_all")
    assert found.judge(pair, "Gerät LT-2231 sperren bitte").kind == "one"
    assert found.judge(pair, "Alle Geräte sperren").kind == "every"
    assert found.judge(pair, "alle Geräte außer LT-2231").kind == "both"
    assert found.judge(pair, "Mein Gerät ist weg").kind == "neither"


def test_ranking_applies_the_rule_to_candidates():
    found = one_vs_every.build([LOCK_ONE, LOCK_ALL], {"lock_one": [Example(trace_id="t", text="lock {asset_tag}",
                                                                            params={"asset_tag": "XX-0000"})]})

    def candidates(loop_sim: float, one_sim: float) -> list[ranking.Candidate]:
        return [ranking.Candidate(skill=s, similarity=sim, fitted=sim, entry="when", best_cosine=sim,
                                  by_entry={"when": sim}, shapes=None)
                for s, sim in ((LOCK_ALL, loop_sim), (LOCK_ONE, one_sim))]

    from skill_library.value_fit import TaskValues

    named = ranking.rank_candidates(candidates(0.70, 0.66), TaskValues.of("lock LT-1234 for me"), scope=found)
    assert names(named) == ["lock_one", "lock_all"] and not any(m.ambiguous for m in named)
    every = ranking.rank_candidates(candidates(0.66, 0.70), TaskValues.of("lock every device I have"),
                                    scope=found)
    assert {m.skill.name: m.missing for m in every}["lock_one"] == ["asset_tag"]
    assert every[0].skill.name == "lock_all"
    # neither, and the loop skill far ahead even after its penalty: both flagged
    far = ranking.rank_candidates(candidates(0.90, 0.50), TaskValues.of("my devices are gone"), scope=found)
    assert far[0].skill.name == "lock_all" and all(m.ambiguous for m in far)


def test_every_before_what_another_skill_acts_on_is_not_about_the_loop_s_items():
    revoke = code_skill("revoke_one", "email: str, system: str", "return revoke_access(email=email, system=system)",
                        ["revoke_access"])
    found = one_vs_every.build([LOCK_ONE, LOCK_ALL, revoke], {})
    pair = found.pairs[0]
    assert "system" in found.items and "system" not in pair.own
    assert not found.says_every("I am leaving: shut down every system I use", pair)
    assert not found.says_every("remove all systems of mine", pair)  # the plural too
    assert found.says_every("shut down every system I use")  # without a pair: any every word
    assert found.says_every("please lock every device and all my tablets", pair)
    assert found.judge(pair, "shut down every system I use").kind == "neither"


def test_a_loop_needing_an_input_the_one_item_skill_lacks_is_no_pair():
    # copy a colleague's every system (given the colleague's email) vs grant one system:
    # the same tools, but the loop runs over another lookup's items: another workflow
    tools = ["find_user", "get_user", "grant_access"]
    grant_one = code_skill("grant_one", "email: str, system: str, level: str",
                           "r1 = find_user(email=email)\nget_user(user_id=r1)\n"
                           "return grant_access(user_id=r1, system=system, level=level)", tools)
    copy_all = code_skill("copy_all", "email: str, colleague_email: str",
                          "r1 = find_user(email=email)\nr2 = find_user(email=colleague_email)\n"
                          "r3 = get_user(user_id=r2)\nout = []\nfor item in r3['access'].items():\n"
                          "    out.append(grant_access(user_id=r1, system=item[0], level=item[1]))\nreturn out", tools)
    assert one_vs_every.loops(copy_all) == {("grant_access", "system"), ("grant_access", "level")}
    assert one_vs_every.find_pairs([grant_one, copy_all]) == []
    assert [(e.name, o.name) for e, o, _ in one_vs_every.find_pairs([LOCK_ONE, LOCK_ALL, grant_one, copy_all])] \
        == [("lock_all", "lock_one")]


def test_function_words_never_join_the_every_vocabulary():
    leave_one, leave_all = leave_pair()

    # "of" and "them" happen to be in both loop skills' examples and in neither look-alike's
    examples = {
        "lock_all": ex("Lock all devices of {email}.", "Every device of {email}: lock them all."),
        "lock_one": ex("Lock {asset_tag}, it is {email}'s.", "Please lock {asset_tag} ({email}).",
                       asset_tag="XX-0000"),
        "leave_all": ex("Remove {email} from each list of theirs, all of them.", "Take {email} off all of them."),
        "leave_one": ex("Remove {email} from {group}.", "Please take {email} off {group}.", group="xxx-xxxxxxxx"),
    }
    found = one_vs_every.build([LOCK_ONE, LOCK_ALL, leave_one, leave_all], examples)
    assert "of" not in found.learned and "them" not in found.learned
    assert not found.says_every("Writing on behalf of my team: please take them off that one list")
    assert found.says_every("Please take them off all lists")


def test_a_loop_skill_that_does_more_is_still_the_loop_side_of_its_one_item_look_alike():
    # offboarding (revoke every system, then disable the account) vs revoking one system
    revoke_one = code_skill("revoke_one", "email: str, system: str",
                            "r1 = find_user(email=email)\nget_user(user_id=r1)\n"
                            "return revoke_access(user_id=r1, system=system)",
                            ["find_user", "get_user", "revoke_access"])
    offboard = code_skill("offboard", "email: str",
                          "r1 = find_user(email=email)\nr2 = get_user(user_id=r1)\n"
                          "for item in r2['access']:\n    revoke_access(user_id=r1, system=item)\n"
                          "return disable_account(user_id=r1)",
                          ["disable_account", "find_user", "get_user", "revoke_access"])
    assert [(e.name, o.name, p) for e, o, p in one_vs_every.find_pairs([revoke_one, offboard])] \
        == [("offboard", "revoke_one", "system")]
    # the other way round (the one-item skill using a tool the loop skill lacks) is no pair
    revoke_notify = code_skill("revoke_notify", "email: str, system: str",
                               "r1 = find_user(email=email)\nget_user(user_id=r1)\nnotify(user_id=r1)\n"
                               "return revoke_access(user_id=r1, system=system)",
                               ["find_user", "get_user", "notify", "revoke_access"])
    assert one_vs_every.takes(revoke_notify)[("revoke_access", "system")] == "system"
    assert one_vs_every.find_pairs([revoke_notify, offboard]) == []


def test_everything_else_excepts_the_rest_and_a_declared_value_names_the_item():
    tools = ["find_user", "get_user", "revoke_access"]
    revoke_one = code_skill("revoke_one", "email: str, system: str",
                            "r1 = find_user(email=email)\nget_user(user_id=r1)\n"
                            "return revoke_access(user_id=r1, system=system)", tools)
    revoke_all = code_skill("revoke_all", "email: str",
                            "r1 = find_user(email=email)\nr2 = get_user(user_id=r1)\nout = []\n"
                            "for item in r2['access']:\n    out.append(revoke_access(user_id=r1, system=item))\n"
                            "return out", tools)
    found = one_vs_every.build([revoke_one, revoke_all], {})
    (pair,) = found.pairs
    # "everything else stays" keeps the rest: it asks for no loop; "everything" alone does
    assert not found.says_every("Cut off the wiki for me; everything else stays.", pair)
    assert not found.says_every("Remove the wiki from me, and nobody else", pair)  # no every word at all
    assert found.says_every("Remove everything I have, please.", pair)
    # a plain-word system has no shape: the text alone cannot say it names the item ...
    assert found.judge(pair, "Please remove wiki from me").names_item is None
    # ... but a value the tool declares as an identifier (ranking.named_choices) does
    judged = found.judge(pair, "Please remove wiki from me", named=["system"])
    assert judged.names_item is True and judged.kind == "one"
    penalty, missing, _ = one_vs_every.adjustments(found, ["revoke_one", "revoke_all"], "Please remove wiki from me",
                                                   None, {"revoke_one": ["system"]})
    assert penalty == {"revoke_all": one_vs_every.EVERY_PENALTY} and missing == {}
