"""Abstention's mention zone (skill_library.mentions): under the calibrated floor, down to a
second one, a top match is answered when the task names what it does and it changes one
thing; else the fetch abstains as under the floor."""

from __future__ import annotations

from skill_library import abstention, intent, mentions
from skill_library.abstention import Calibration
from skill_library.models import Skill
from skill_library.ranking import make_match

READ_ONLY = frozenset({"find_user", "get_user"})


def code_skill(name: str, params: str, body: str, tools: list[str], when: str) -> Skill:
    code = f"def {name}({params}):\n" + "".join(f"    {line}\n" for line in body.splitlines())
    return Skill.from_function(code, when=when, tools=tools)


LEAVE_ONE = code_skill("leave_one", "email: str, group: str",
                       "r1 = find_user(email=email)\nreturn remove_from_group(user_id=r1, group=group)",
                       ["find_user", "remove_from_group"],
                       "Remove an employee from one mailing-list group (after: find user). Needs the email "
                       "and the group.")
LEAVE_ALL = code_skill("leave_all", "email: str",
                       "r1 = find_user(email=email)\nr2 = get_user(user_id=r1)\n"
                       "for item in r2['groups']:\n    remove_from_group(user_id=r1, group=item)\nreturn r1",
                       ["find_user", "get_user", "remove_from_group"],
                       "Remove an employee from one mailing-list group, for every one that get user returns "
                       "(after: find user, get user). Needs the email.")
RESET = code_skill("reset", "email: str", "r1 = find_user(email=email)\nreturn reset_password(user_id=r1)",
                   ["find_user", "reset_password"],
                   "Reset an account's password (after: find user). Applies when the user's status is "
                   "active. Needs the email.")
OFFBOARD = code_skill("offboard", "email: str",
                      "r1 = find_user(email=email)\nrevoke_all(user_id=r1)\nreturn disable_account(user_id=r1)",
                      ["find_user", "revoke_all", "disable_account"],
                      "Revoke an employee's access, then disable an account (after: find user). Needs the email.")


def test_action_words_are_what_the_skill_does_and_its_inputs_not_how_it_looks_them_up():
    assert mentions.action_sentence(LEAVE_ALL.when) == "Remove an employee from one mailing-list group"
    assert mentions.action_words(LEAVE_ALL) == {"remove", "employee", "mailing", "list", "group", "email"}
    assert mentions.action_words(RESET) == {"reset", "account", "password", "email"}  # no condition words
    assert mentions.words("Could I leave both distribution lists? It's my account's") >= {"list", "account"}
    assert "could" not in mentions.words("Could you") and "the" not in mentions.words("the")


def test_words_most_skills_share_name_no_one_skill():
    skills = [LEAVE_ONE, LEAVE_ALL, RESET, OFFBOARD]
    assert mentions.common_words(skills) == {"email", "employee"}  # in 4 and 3 of the 4 skills
    assert mentions.common_words(skills[:3]) == frozenset()  # too few skills to tell


def test_a_task_names_a_skill_by_one_of_its_action_words():
    common = mentions.common_words([LEAVE_ONE, LEAVE_ALL, RESET, OFFBOARD])
    assert mentions.mentioned("Hi, could you take me off the quiz-night list? Thanks", LEAVE_ONE, common) == {"list"}
    assert mentions.mentioned("Please show my nickname in the staff directory", RESET, common) == set()
    assert mentions.mentioned("my email is a@b.c", RESET, common) == set()  # a common word names nothing


def test_a_skill_changes_one_thing_with_one_state_changing_tool_outside_a_loop():
    assert mentions.changes_one_thing(LEAVE_ONE, READ_ONLY)
    assert mentions.changes_one_thing(RESET, READ_ONLY)
    assert not mentions.changes_one_thing(LEAVE_ALL, READ_ONLY)  # a loop over the lookup's groups
    assert not mentions.changes_one_thing(OFFBOARD, READ_ONLY)  # two kinds of change
    tools = ["find_user", "get_user", "remove_from_group"]
    head = "r1 = find_user(email=email)\nr2 = get_user(user_id=r1)\n"
    for body in ("for g in r2['groups']:\n    remove_from_group(r1, g)\nreturn r1",  # positional
                 "return [remove_from_group(user_id=r1, group=g) for g in r2['groups']]",
                 "while r2['groups']:\n    remove_from_group(user_id=r1, group=r2['groups'].pop())\nreturn r1",
                 "return list(map(remove_from_group, r2['groups']))",  # the tool passed as a value
                 "remove_from_group(user_id=r1, group='a')\nreturn remove_from_group(user_id=r1, group='b')",
                 "def each(g):\n    return remove_from_group(user_id=r1, group=g)\nreturn each('a')"):
        looped = code_skill("wipe", "email: str", head + body, tools, "Remove an employee from a group.")
        assert not mentions.changes_one_thing(looped, READ_ONLY), body
    prose = Skill(name="offboard_steps", kind="instruction", when="Offboard an employee: revoke every access "
                  "and disable the account.", description="1. revoke every access 2. disable the account")
    assert not mentions.changes_one_thing(prose, READ_ONLY)  # nothing to read how often it changes


def test_words_fold_accents_and_keep_letters_together():
    assert mentions.words("Zurücksetzen, café, Résumé") == {"zurucksetzen", "cafe", "resume"}


def _found(floor: float = 0.5, mention: float | None = 0.44, common: tuple[str, ...] = ("email",)) -> Calibration:
    return Calibration(floor=floor, margin=0.02, precision=0.9, recall=0.95, false_accept=0.3, ambiguous=0.03,
                       top1=0.9, queries=40, skills=4, generation=1, method="test", mention_floor=mention,
                       common_words=common)


GROUPS = ("quiz-night", "book-club", "all-staff")


def _reading(text: str) -> intent.Reading:
    # the identifier values the skills' tools declare (skill_library.intent.skill_choices)
    return intent.Reading(text=text, vocabulary=intent.Vocabulary(), read_only=READ_ONLY,
                          choices={"leave_one": {"group": GROUPS}})


def grounding_free(result: abstention.FetchResult) -> bool:
    """The result abstained by the floor rule (its reason names the floor)."""
    return "under this library's calibrated floor" in result.reason


def test_under_the_floor_a_task_that_names_a_skill_changing_one_thing_is_answered():
    named = "Hi, could you take me off the quiz-night list? Thanks"
    result = abstention.decide([make_match(LEAVE_ONE, 0.47, 0.47)], 1, _found(), _reading(named))
    assert not result.abstained and [m.skill.name for m in result] == ["leave_one"]
    # the same similarity, a task that names nothing the skill does: abstained as under the floor
    unnamed = abstention.decide([make_match(RESET, 0.47, 0.47)], 1, _found(),
                                _reading("Please show my nickname in the staff directory"))
    assert unnamed.abstained and "under this library's calibrated floor 0.500" in unnamed.reason
    # a mention without a named value is too weak: the chance word "password", no value of the reset's
    wifi = abstention.decide([make_match(RESET, 0.47, 0.47)], 1, _found(),
                             _reading("the wi-fi password in meeting room 4 does not work, my account: a@b.c"))
    assert grounding_free(wifi) and wifi.abstained
    # the list named but not what the skill does: abstained too
    assert abstention.decide([make_match(LEAVE_ONE, 0.47, 0.47)], 1, _found(),
                             _reading("quiz-night starts at 8, see you there")).abstained
    # under the second floor, or with none (uncalibrated zone), or without the task's reading
    assert abstention.decide([make_match(LEAVE_ONE, 0.43, 0.43)], 1, _found(), _reading(named)).abstained
    assert abstention.decide([make_match(LEAVE_ONE, 0.47, 0.47)], 1, _found(mention=None), _reading(named)).abstained
    assert abstention.decide([make_match(LEAVE_ONE, 0.47, 0.47)], 1, _found(), None).abstained


def test_the_zone_never_answers_with_a_skill_that_changes_more_than_one_thing():
    every = "Please take me off every mailing list"
    assert abstention.decide([make_match(LEAVE_ALL, 0.47, 0.47)], 1, _found(), _reading(every)).abstained
    account = "Let Sam manage my calendar. Account in question: s@corp.example"  # "account": a chance word
    assert abstention.decide([make_match(OFFBOARD, 0.47, 0.47)], 1, _found(), _reading(account)).abstained
    # too close to call with a skill that would change more: any of them may be the one run
    close = abstention.decide([make_match(LEAVE_ONE, 0.47, 0.47), make_match(OFFBOARD, 0.46, 0.465)], 1, _found(),
                              _reading("take me off the quiz-night list and disable the account"))
    assert close.ambiguous and close.abstained
