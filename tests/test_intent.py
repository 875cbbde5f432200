"""What a task asks for against what a skill does (skill_library.intent).

The phrasings here are written for this test, in several domains, none taken from a
benchmark suite: the rules are general English, not one suite's wording."""

from __future__ import annotations

import pytest

from skill_library import intent
from skill_library.intent import Reading, Vocabulary
from skill_library.models import Skill


@pytest.mark.parametrize("text", [
    "Which repositories can ana@x.org push to?",
    "Is the staging server still running?",
    "Hello! Does my subscription renew automatically, or do I need to do something?",
    "Could you tell me whether the invoice INV-2231 was paid?",
    "Please let me know if my parcel has shipped.",
    "What happens to my files when the trial ends?",
    "Should I restart the router first?",
    "Has anyone looked at ticket 4411 yet? Just wondering.",
])
def test_questions_and_requests_to_be_told_are_information(text):
    assert intent.message_kind(text) == "information"
    # without its question mark a wh-sentence is not read as a question (nothing is assumed)
    assert intent.message_kind("how many seats are left on our plan") == "statement"


@pytest.mark.parametrize("text", [
    "Can you cancel my gym membership from next month?",
    "Could the shared drive be archived, please?",
    "I'd like to close my savings account.",
    "Hi, is it possible to move my booking to Friday?",
    "Our printer queue is stuck; please clear it.",
    "Would you mind restoring yesterday's backup? Thanks, Priya",
    "The thermostat in room 4 needs resetting.",
    "We want to add two more seats to the plan.",
    "Is there a way to merge these two accounts? Both are mine.",
])
def test_requests_to_act_are_actions_also_when_worded_as_questions(text):
    assert intent.message_kind(text) == "action"


@pytest.mark.parametrize("text", [
    "Heads up: the lease was renewed for a year. No action needed on your side.",
    "Just FYI, Marek moved to the Berlin office.",
    "The audit is done and nothing has to be changed.",
    "Is my mailbox full? Don't change anything, I only want to know.",
    "For your information, the vendor updated their address.",
])
def test_statements_that_nothing_should_change(text):
    assert intent.message_kind(text) == "no_change"


@pytest.mark.parametrize("text", [
    "My screen has been flickering since the update.",
    "The heating on the second floor is broken.",
    "I'm blocked out of the booking tool after three tries.",
])
def test_plain_statements_claim_nothing(text):
    assert intent.message_kind(text) == "statement"


def test_an_action_anywhere_in_the_message_wins():
    text = "Is the door sensor offline? If so, please restart the hub. Cheers"
    assert intent.message_kind(text) == "action"


def test_emails_and_ids_do_not_split_sentences():
    assert intent.sentences("Does bo.li@corp.example still own VM-12.3? Thanks.") == [
        "Does bo.li@corp.example still own VM-12.3?", "Thanks."]


def test_opposites_are_derived_from_the_tool_vocabulary_with_reversing_prefixes():
    found = intent.derived_opposites(["mount", "unmount", "encrypt", "decrypt", "enable", "disable",
                                      "assign", "unassign", "pin", "unpin", "display", "play"])
    assert ("mount", "unmount") in found and ("encrypt", "decrypt") in found
    assert ("enable", "disable") in found and ("assign", "unassign") in found
    assert ("pin", "unpin") not in found  # a stem under MIN_STEM letters is not trusted
    assert ("play", "display") not in found  # a short stem against dis/de: rarely opposites
    assert ("connect", "disconnect") in intent.derived_opposites(["connect", "disconnect"])
    assert intent.tool_verb("unpublishPost") == "unpublish" and intent.tool_verb("lock_vault") == "lock"


def test_verbs_read_requests_not_states_things_or_negations():
    words = Vocabulary.of(["archive", "unarchive", "remove", "add"]).words
    assert intent.verbs("Please unarchive the Q3 folder.", words).asked == {"unarchive"}
    # a state (archived) and a thing (the archive) are not requests
    assert intent.verbs("The folder is archived; see the archive tab.", words).asked == frozenset()
    found = intent.verbs("Add Jo to the channel but don't remove anyone.", words)
    assert found.asked == {"add"} and found.negated == {"remove"}
    assert intent.verbs("Do it without removing the old keys", words).negated == {"remove"}
    assert intent.verbs("I'm archiving the old projects.", words).asked == {"archive"}


def _skill(name: str, tools: list[str]) -> Skill:
    body = "\n".join(f"    {t}(x=x)" for t in tools)
    return Skill.from_function(f"def {name}(x: str) -> None:\n{body}\n", when=f"{name} for x", tools=tools)


def _reading(text: str, read_only: tuple[str, ...] = ("get_vault",), tools=("lock_vault", "unlock_vault",
                                                                             "get_vault", "rotate_key")) -> Reading:
    vocabulary = Vocabulary.of({intent.tool_verb(t) for t in tools})
    return Reading(text=text, vocabulary=vocabulary, read_only=frozenset(read_only))


def test_a_skill_doing_the_opposite_of_the_request_conflicts():
    lock = _skill("lock_vault_by_id", ["get_vault", "lock_vault"])
    unlock = _skill("unlock_vault_by_id", ["get_vault", "unlock_vault"])
    asked = _reading("We found the key holder again; could you unlock vault V-7?")
    assert "opposite" in (asked.conflict(lock) or "")
    assert asked.conflict(unlock) is None
    # asking for the skill's own verb too ("locked" is a state; "lock it" a request)
    both = _reading("It locked itself by mistake. Unlock it now and lock it again tonight.")
    assert both.conflict(lock) is None and both.conflict(unlock) is None
    plain = _reading("Vault V-7 was tampered with, please lock it.")
    assert plain.conflict(lock) is None and "opposite" in (plain.conflict(unlock) or "")


def test_questions_and_no_change_rule_out_state_changing_skills_only():
    lock = _skill("lock_vault_by_id", ["get_vault", "lock_vault"])
    look = _skill("vault_status", ["get_vault"])
    question = _reading("Is vault V-7 locked right now?")
    assert "asks for information" in (question.conflict(lock) or "")
    assert question.conflict(look) is None  # a read-only skill answers questions
    quiet = _reading("FYI the vault audit passed; nothing needs to be changed.")
    assert "nothing should change" in (quiet.conflict(lock) or "") and quiet.conflict(look) is None
    negated = _reading("Rotate the key of V-7 but please do not lock the vault.")
    assert "not to lock" in (negated.conflict(lock) or "")


def test_a_general_pair_holds_without_the_library_having_both_tools():
    grant = _skill("grant_role_by_email", ["find_user", "grant_role"])
    reading = Reading(text="Please revoke the admin role of kai@x.org.", vocabulary=Vocabulary.of(["grant", "find"]),
                      read_only=frozenset({"find_user"}))
    assert "opposite (grant)" in (reading.conflict(grant) or "")
    # a verb with no opposite in the lists and the library says nothing
    rotate = _skill("rotate_key_by_id", ["get_vault", "rotate_key"])
    assert _reading("Please unlock vault V-7.").conflict(rotate) is None


def _candidate(skill: Skill, similarity: float, acting: int):
    from skill_library import ranking

    return ranking.Candidate(skill=skill, similarity=similarity, fitted=similarity, entry="when",
                             best_cosine=similarity, by_entry={"when": similarity}, shapes=None, acting=acting)


def test_ranking_demotes_a_ruled_out_skill_and_abstention_runs_no_stand_in():
    from skill_library import abstention, ranking

    lock = _skill("lock_vault_by_id", ["get_vault", "lock_vault"])
    rotate = _skill("rotate_key_by_id", ["get_vault", "rotate_key"])
    look = _skill("vault_status", ["get_vault"])
    reading = _reading("Found the spare key, could you unlock vault V-7 again?")
    ranked = ranking.rank_candidates([_candidate(lock, 0.8, 1), _candidate(rotate, 0.7, 1)], None,
                                     explain=True, reading=reading)
    assert [m.skill.name for m in ranked] == ["rotate_key_by_id", "lock_vault_by_id"]
    assert ranked[1].explanation.intent == -intent.CONFLICT_PENALTY and "opposite" in ranked[1].explanation.conflict
    assert reading.displaced is not None and reading.displaced[0] == "lock_vault_by_id"
    result = abstention.decide(ranked, 2, None, reading)
    # the next look-alike is no safer to run than the skill ruled out: abstain, keep both to ask about
    assert result.abstained and "reads most like lock_vault_by_id" in result.reason and len(result) == 2
    # a question: a read-only skill may take the state-changing one's place
    question = _reading("Is vault V-7 locked at the moment?")
    ranked = ranking.rank_candidates([_candidate(lock, 0.8, 1), _candidate(look, 0.7, 0)], None, reading=question)
    assert ranked[0].skill.name == "vault_status"
    assert not abstention.decide(ranked, 2, None, question).abstained
    # without a reading (fetch(..., abstain=False)) nothing changes
    plain = ranking.rank_candidates([_candidate(lock, 0.8, 1), _candidate(rotate, 0.7, 1)], None)
    assert plain[0].skill.name == "lock_vault_by_id" and not abstention.decide(plain, 2, None).abstained


def test_how_to_reach_the_sender_is_no_request():
    assert intent.message_kind("Is my parcel on its way? Please call me back on 555 0100 if needed.") == "information"
    assert intent.message_kind("Could you get back to me before noon?") == "statement"
    assert intent.message_kind("Please email the signed lease to the landlord.") == "action"


def test_identifier_choices_are_enums_of_names_not_phrases():
    schema = {"properties": {"region": {"type": "string", "enum": ["eu_west", "us-east", "apac"]},
                             "reason": {"type": "string", "enum": ["too expensive", "moved away"]},
                             "mode": {"type": "string", "enum": ["fast"]},
                             "note": {"type": "string"}}}
    assert intent.identifier_choices(schema) == {"region": ("eu_west", "us-east", "apac")}
    assert intent.names_value("Spin it up in EU west, please", ["eu_west", "apac"])
    assert intent.names_value("move the bucket to us-east", ["eu_west", "us-east"])
    assert intent.names_value("I need administrator rights", ["read", "admin"])
    assert not intent.names_value("Spin up a new bucket for the team", ["eu_west", "us-east", "apac"])


def test_a_parameter_the_task_names_no_value_of_is_missing():
    from skill_library import ranking

    code = ("def move_bucket_by_id(bucket: str, region: str) -> None:\n"
            "    get_bucket(bucket=bucket)\n    move_bucket(bucket=bucket, region=region)\n")
    move = Skill.from_function(code, when="move a bucket to a region", tools=["get_bucket", "move_bucket"])
    schemas = {"move_bucket": {"properties": {"bucket": {"type": "string"},
                                              "region": {"type": "string", "enum": ["eu_west", "us-east"]}}}}
    assert intent.skill_choices(move, schemas) == {"region": ("eu_west", "us-east")}
    vocabulary = Vocabulary.of(["get", "move"])

    def rank(text, args=None):
        reading = Reading(text=text, vocabulary=vocabulary, read_only=frozenset({"get_bucket"}),
                          choices={move.name: intent.skill_choices(move, schemas)})
        return ranking.rank_candidates([_candidate(move, 0.7, 1)], None, args, reading=reading)[0]

    assert rank("Please move bucket B-1 somewhere cheaper.").missing == ["region"]
    assert rank("Please move bucket B-1 to US East.").missing == []
    assert rank("Please move bucket B-1 somewhere cheaper.", {"bucket": "B-1", "region": "us-east"}).missing == []


def test_a_ruled_out_look_alike_within_the_margin_leaves_the_top_too_close_to_call():
    from skill_library import abstention, ranking
    from skill_library.abstention import Calibration

    enable = _skill("enable_login_by_id", ["get_vault", "enable_login"])
    rotate = _skill("rotate_key_by_id", ["get_vault", "rotate_key"])
    found = Calibration(floor=0.2, margin=0.05, precision=0.9, recall=0.9, false_accept=0.1, ambiguous=0.05,
                        top1=0.9, queries=40, skills=4, generation=None, method="test")
    reading = Reading(text="Please disable the login of V-7 and rotate its key.",
                      vocabulary=Vocabulary.of(["enable", "rotate", "get"]), read_only=frozenset({"get_vault"}))
    ranked = ranking.rank_candidates([_candidate(rotate, 0.70, 1), _candidate(enable, 0.68, 1)], None,
                                     reading=reading)
    assert ranked[0].skill.name == "rotate_key_by_id" and reading.displaced is None
    result = abstention.decide(ranked, 2, found, reading)
    assert result.abstained and "too close to call" in result.reason and "enable_login_by_id" in result.reason
    # far behind (more than the margin), the ruled-out skill says nothing of the top one
    reading = Reading(text=reading.text, vocabulary=reading.vocabulary, read_only=reading.read_only)
    ranked = ranking.rank_candidates([_candidate(rotate, 0.70, 1), _candidate(enable, 0.50, 1)], None,
                                     reading=reading)
    assert not abstention.decide(ranked, 2, found, reading).abstained


def test_what_the_task_says_to_keep_as_it_is_rules_out_skills_changing_it():
    assert intent.kept_things("Archive the project but keep all of its files exactly as they are.") == {"file"}
    assert intent.kept_things("Leave my calendar untouched while you move the mailbox.") == {"calendar"}
    assert intent.kept_things("Drop the beta flag; leave the rest of the settings alone.") == frozenset()
    assert intent.kept_things("I keep getting reminder emails, please stop them.") == frozenset()
    purge = _skill("archive_and_purge_files", ["get_project", "archive_project", "delete_files"])
    reading = Reading(text="Archive the project but keep all of its files exactly as they are.",
                      vocabulary=Vocabulary.of(["archive", "delete", "get"]), read_only=frozenset({"get_project"}))
    assert "keep the file as it is" in (reading.conflict(purge) or "")
    archive = _skill("archive_project_by_id", ["get_project", "archive_project"])
    assert reading.conflict(archive) is None


def _with_conditions(name: str, *conditions: "object") -> Skill:
    from skill_library.models import Provenance

    code = f'def {name}(email: str):\n    """Does it."""\n    return {{}}\n'
    skill = Skill.from_function(code, when=f"{name} things", tools=["get_employee", name])
    return skill.model_copy(update={"provenance": Provenance(preconditions=list(conditions))})


def test_a_state_the_task_names_rules_out_the_look_alike_whose_precondition_excludes_it():
    from skill_library.models import Condition

    role = {"tool": "get_employee", "path": ["role"]}
    grant = _with_conditions("grant_access", Condition(**role, op="in", value=["manager", "staff"]))
    request = _with_conditions("submit_access_request", Condition(**role, op="eq", value="contractor"))
    unlock = _with_conditions("unlock_account", Condition(tool="get_employee", path=["status"], value="locked"))
    skills = [grant, request, unlock]
    found = intent.named_states("Our contractors need read access to the wiki", skills)
    assert list(found) == ["grant_access"] and "'contractor' (role)" in found["grant_access"]
    assert list(intent.named_states("Please give our staff member wiki access", skills)) == ["submit_access_request"]
    # no state named, or a state of a read only one candidate has a condition on: nothing
    assert intent.named_states("Please give Dana read access to the wiki", skills) == {}
    assert intent.named_states("My account is locked", skills) == {}


def test_fetch_reads_the_task_against_what_another_library_object_added_since(library, embedder):
    """fetch's reading, one-vs-every scope and calibration are cached per index generation,
    the one fetch reads with the hits' records: a skill another library object adds (another
    process, as well) bumps it, and the next fetch here reads the task against it."""
    from skill_library import abstention, one_vs_every
    from skill_library.library import SkillLibrary

    assert library.add(_skill("pause_job_by_id", ["get_job", "pause_job"]), verified=True).added
    task = "The backlog is cleared now; could you unpause job J-7?"
    before = library.fetch(task, k=2, min_similarity=-1, min_reliability=0, explain=True)
    assert before[0].skill.name == "pause_job_by_id"
    # "unpause" is no verb of this library yet: nothing says the pause skill does the opposite
    assert before[0].explanation.conflict is None
    assert abstention._CACHE[library][1].skills == 1
    with SkillLibrary(library.path, embedder=embedder) as other:
        assert other.add(_skill("unpause_job_by_id", ["get_job", "unpause_job"]), verified=True).added
    generation = library.context.store.index_generation()
    after = library.fetch(task, k=2, min_similarity=-1, min_reliability=0, explain=True)
    pause = next(m for m in after if m.skill.name == "pause_job_by_id")
    assert "opposite" in (pause.explanation.conflict or "")
    assert after[0].skill.name == "unpause_job_by_id"
    assert intent._CACHE[library].vocabulary.generation == generation
    assert one_vs_every._CACHE[library].generation == generation
    assert abstention._CACHE[library][0] == generation and abstention._CACHE[library][1].skills == 2


def test_a_fetch_reads_the_index_generation_only_with_the_hits_records(library, monkeypatch):
    """One read of the generation serves the index check, the reading, the scope and the
    calibration: nothing in fetch reads it apart (a repeated read was one SQL statement more)."""
    assert library.add(_skill("lock_vault_by_id", ["get_vault", "lock_vault"]), verified=True).added
    library.fetch("please lock vault V-7", k=1)  # the caches are filled, the index open
    store = library.context.store
    calls = []
    monkeypatch.setattr(store, "index_generation", lambda: calls.append(1) or type(store).index_generation(store))
    result = library.fetch("please lock vault V-7", k=1)
    assert result and result[0].skill.name == "lock_vault_by_id"
    assert calls == []
