"""The helpdesk look-alike suite: IT tickets whose workflows come in look-alike pairs.

Twelve workflows over the helpdesk world's tools, in seven pairs that share their first calls
and differ by one thing (``LOOKALIKES``): one item vs every item (remove one system's
access vs offboard; leave one mailing list vs all; lock one device vs all; grant one system
vs copy a colleague's every system), a state a read returns (the account is locked, active
or disabled: unlock vs reset the password vs re-enable) or a role (staff are granted
access directly, a contractor's access is requested from their manager). Some tickets say
which one it is ("our contractor", "locked out"); some do not, and only the directory does.

Every instruction is a ticket as people write them: an optional greeting, the requester (the
employee themselves, or a colleague or manager writing about them: third person), the
request in one of several phrasings, often chatter that binds nothing (a home address, a
manager's name, the train they lost a laptop on), and a signature (a name, a department, a
phone number), with names before or after the request and names from many languages.
``params`` are the values of the ticket that the gold actions use, by name.

* train: ``TRAIN_PER_WORKFLOW`` tickets per workflow, ``TRAIN_PHRASINGS`` request phrasings each;
  requesters and subjects whose first name is not in ``TEST_FIRST_NAMES``;
* test: ``TEST_PER_WORKFLOW`` tickets per workflow in held-out phrasings, only people whose
  first name is in ``TEST_FIRST_NAMES``; and ``OOS_INSTANCES`` tickets for each of the
  ``OUT_OF_SCOPE`` requests: helpdesk requests no learned workflow covers (questions that
  must change nothing, and changes no workflow makes), many of them close in wording to a
  workflow whose skill would change the directory if it ran. Their workflow is
  ``oos:<name>``; their gold actions are what a careful agent would do by hand (often only
  reads, or nothing).

Tickets are spread over ``WORLD_SEEDS`` (``Task.seed``); every gold solution is replayed on
its seed while generating.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, Callable

from benchmarks.worlds.base import GoldAction, Task, deep_copy
from benchmarks.worlds.helpdesk import GROUPS, LEVELS, SYSTEMS, HelpdeskWorld

SUITE_SEED = 0
TRAIN_PER_WORKFLOW = 8
TEST_PER_WORKFLOW = 5
TRAIN_PHRASINGS = 5  # the first five phrasings of a workflow are train, the rest test
OOS_INSTANCES = 2
#: people with these first names appear only in test tickets
TEST_FIRST_NAMES = frozenset({"Thandiwe", "Wojciech", "Ximena", "Anneke", "Björk", "Emeka"})
WORLD_SEEDS = range(1, 41)
OOS_PREFIX = "oos:"

SELF, OTHER = "self", "other"

# -- the requester's voice ---------------------------------------------------------------------

GREETINGS = ["Hi IT,", "Hello helpdesk,", "Hey,", "Good morning,", "Dear Service Desk,", "Hi team!", "", ""]
# the employee writing about themselves, before the request ...
SELF_BEFORE = [
    "This is {first} {last} ({email}).",
    "{first} {last} here, {email}.",
    "My work email is {email}.",
    "Hey, {first} here ({email}).",
    "I'm {first} {last} from {department}; my address is {email}.",
]
# ... or after it
SELF_AFTER = [
    "My account: {email}.",
    "(That's for {email}.)",
    "Account in question: {email}, {first} {last}.",
]
# a colleague or manager writing about someone else
INTROS = [
    "I'm {r_first}, team lead in {r_department}.",
    "{r_first} {r_last} from {r_department} here.",
    "Writing on behalf of my team.",
    "",
    "",
]
TARGETS = ["{first} {last} ({email})", "{email} ({first} {last})", "{email}", "{first} ({email})"]
SIGNATURES = [
    "Thanks, {first}",
    "Best regards,\n{first} {last}\n{phone}",
    "— {first} {last}, {department}",
    "Cheers! {first}",
    "Kind regards, {first} {last} (tel. {phone})",
    "",
]
CHATTER = [
    "I'm working from home today ({home_address}).",
    "This is urgent, I have a client call at 3 pm.",
    "Sorry for the typos, I'm on my phone.",
    "{manager_first} asked me to raise this.",
    "Thanks for the quick help last time!",
    "Please call me back on {phone} if anything is unclear.",
    "",
    "",
]

# workflow -> request phrasings (voice, template): the first TRAIN_PHRASINGS train, the rest test
REQUESTS: dict[str, list[tuple[str, str]]] = {
    "revoke_access": [
        (SELF, "Please remove my {system} access, I don't need it any more."),
        (OTHER, "Please revoke {system} access for {target}."),
        (OTHER, "Can you take {system} away from {target}? They moved teams."),
        (SELF, "I no longer need access to {system}; please remove it from my account."),
        (OTHER, "{target} should not have {system} any more, please remove just that one."),
        (OTHER, "Could you cut off {system} for {target}? Only that system, everything else stays."),
        (SELF, "I'd like my {system} permission withdrawn please."),
        (OTHER, "Drop {target} from {system}; leave the rest of their access alone."),
    ],
    "offboard_employee": [
        (OTHER, "{target} left the company yesterday. Please offboard them."),
        (OTHER, "Please offboard {target}, their last day was Friday."),
        (OTHER, "{target} has resigned; remove all of their access and disable the account."),
        (SELF, "Today is my last day here. Please remove all my access and close my account."),
        (OTHER, "Please process the leaver {target}: every system and the account."),
        (OTHER, "{target} no longer works here as of today — please revoke everything and close the account."),
        (OTHER, "Last working day for {target} was yesterday; full offboarding please."),
        (SELF, "I'm leaving the company tonight, so please shut down every system I use and my login."),
    ],
    "remove_from_group": [
        (SELF, "Please take me off the {group} mailing list."),
        (OTHER, "Remove {target} from the {group} group, please."),
        (SELF, "I keep getting {group} emails; please unsubscribe me from that list."),
        (OTHER, "Can you drop {target} from {group}? They don't work on that any more."),
        (SELF, "Please remove me from {group}."),
        (OTHER, "{target} shouldn't be on {group} — please take them off that one list."),
        (SELF, "Could I leave the {group} distribution list?"),
        (OTHER, "Kindly end the {group} membership of {target}."),
    ],
    "remove_from_all_groups": [
        (SELF, "Please take me off every mailing list I'm on."),
        (OTHER, "Remove {target} from all groups, please."),
        (SELF, "I'm drowning in email. Please remove me from all the mailing lists."),
        (OTHER, "Can you clear out every group membership of {target}?"),
        (SELF, "Unsubscribe me from all distribution lists, please."),
        (OTHER, "{target} should not be on any mailing list any more; remove them from each one."),
        (SELF, "Could you pull me out of every group list at once?"),
        (OTHER, "Please strip all list memberships from {target}."),
    ],
    "lock_device": [
        (SELF, "I lost my {device} {asset_tag} on the train. Please lock it."),
        (OTHER, "{target} left their {device} {asset_tag} in a taxi; please lock that device."),
        (SELF, "My {device} {asset_tag} was stolen, can you lock it remotely?"),
        (OTHER, "Please remotely lock {asset_tag}, which belongs to {target}."),
        (SELF, "Can't find {asset_tag} anywhere, please lock it just in case."),
        (OTHER, "{target} misplaced the {device} {asset_tag} — lock only that one, please."),
        (SELF, "Please secure my {device} {asset_tag}; I think I left it at the airport."),
        (OTHER, "Lock down asset {asset_tag} (assigned to {target}); the other devices are still with them."),
    ],
    "lock_all_devices": [
        (SELF, "My bag was stolen with all my devices in it. Please lock everything."),
        (OTHER, "{target} had a bag stolen with every device in it; please lock all of them."),
        (SELF, "Please lock every device assigned to me, I was burgled last night."),
        (OTHER, "Lock all devices of {target}, please — their car was broken into."),
        (SELF, "I lost all my equipment at the conference. Can you lock all of it?"),
        (OTHER, "Every gadget {target} carries went missing at the airport; lock them all remotely."),
        (SELF, "Please remotely lock each of my devices, my suitcase is gone."),
        (OTHER, "Could you secure all hardware assigned to {target}? Their home was broken into."),
    ],
    "grant_access": [
        (SELF, "Could I get {level} access to {system}, please?"),
        (OTHER, "Please give {target} {level} access to {system}."),
        (OTHER, "{target} needs {system} with {level} rights for the new project."),
        (SELF, "Please grant me {level} permission on {system}."),
        (OTHER, "Can you set up {system} ({level}) for {target}?"),
        (OTHER, "Please enable {system} for {target} at {level} level."),
        (SELF, "I'd need {level} rights in {system} to do my job; can you add that?"),
        (OTHER, "Kindly provision {level} {system} access to {target}."),
    ],
    # a contractor's access is requested from their manager; some tickets do not say it is one
    "request_contractor_access": [
        (OTHER, "Our contractor {target} needs {level} access to {system}."),
        (SELF, "I'm an external contractor on the billing project; could I get {level} access to {system}?"),
        (OTHER, "Please give {target} {level} access to {system}."),
        (OTHER, "{target} (freelancer, started Monday) needs {system} with {level} rights."),
        (SELF, "Could I get {level} access to {system}, please?"),
        (OTHER, "The consultant {target} from our agency needs {level} rights to {system}."),
        (SELF, "As a contractor here I need {level} access to {system} please."),
        (OTHER, "Please enable {system} for {target} at {level} level."),
    ],
    "copy_access": [
        (OTHER, "{target} is joining the team; please give them the same access as {colleague}."),
        (SELF, "Could I have the same system access as {colleague}? We do the same job."),
        (OTHER, "Mirror the access of {colleague} onto {target}, please."),
        (OTHER, "Set {target} up with whatever {colleague} has."),
        (SELF, "I'm taking over from {colleague}; please give me the same permissions."),
        (OTHER, "Please give {target} exactly the permissions {colleague} has."),
        (SELF, "Can my access be cloned from {colleague}?"),
        (OTHER, "{target} replaces {colleague} in the team — duplicate that access for them."),
    ],
    "unlock_account": [
        (SELF, "I'm locked out of my account after too many wrong passwords."),
        (OTHER, "{target} is locked out, can you unlock the account?"),
        (SELF, "My account got locked this morning, please unlock it. I remember my password."),
        (OTHER, "Please unlock the account of {target}; they typed the password wrong too often."),
        (SELF, "I can't sign in, it says my account is locked."),
        (OTHER, "The account of {target} shows as locked — please release it."),
        (SELF, "Too many failed attempts and now I'm blocked. Could you lift the lock?"),
        (SELF, "I can't get into my account, please help."),
    ],
    "reset_password": [
        (SELF, "I forgot my password, please reset it."),
        (OTHER, "Please reset the password for {target}."),
        (SELF, "My password expired and I can't remember the old one. Can you reset it?"),
        (OTHER, "{target} needs a new password, theirs doesn't work any more."),
        (SELF, "Could you send me a temporary password? I've forgotten mine."),
        (OTHER, "{target} cannot remember their password — please issue a temporary one."),
        (SELF, "Please give me a fresh password, I have no idea what the current one is."),
        (SELF, "I can't get into my account, please help."),
    ],
    "reactivate_account": [
        (OTHER, "{target} is back from parental leave; please switch their account back on."),
        (SELF, "I'm back from sabbatical and my account is disabled. Can you enable it?"),
        (OTHER, "Please re-enable the account of {target}, they have rejoined the company."),
        (OTHER, "{target} returned from long-term leave today; their account needs enabling."),
        (SELF, "My account was deactivated while I was away. Please turn it back on."),
        (OTHER, "Please restore the disabled login of {target} — they're back with us."),
        (SELF, "Could you reactivate my account? I returned from leave this week."),
        (OTHER, "{target} has come back after a career break; please enable the account again."),
    ],
}
WORKFLOWS = list(REQUESTS)

#: the look-alike pairs: (workflow, workflow, what tells them apart)
LOOKALIKES: list[tuple[str, str, str]] = [
    ("revoke_access", "offboard_employee", "one system vs every system and the account"),
    ("remove_from_group", "remove_from_all_groups", "one mailing list vs every one"),
    ("lock_device", "lock_all_devices", "one device vs every device"),
    ("grant_access", "copy_access", "one system vs every system a colleague has"),
    ("grant_access", "request_contractor_access", "role: staff vs contractor"),
    ("unlock_account", "reset_password", "account state: locked vs active"),
    ("unlock_account", "reactivate_account", "account state: locked vs disabled"),
]


@dataclass(frozen=True)
class OutOfScope:
    """A helpdesk request no workflow covers: its voice, wording, the values it needs
    (``needs``: params beyond the employee's email) and what an agent does by hand."""

    voice: str
    template: str
    needs: tuple[str, ...] = ()
    gold: str = "look"  # "nothing" | "find" | "look" (find + get_employee) | "devices" | a write tool
    email: bool = True  # the ticket names an employee's email (params["email"])


OUT_OF_SCOPE: dict[str, OutOfScope] = {
    # questions: nothing may change
    "ask_account_status": OutOfScope(SELF, "Is my account locked? Please just tell me, don't change anything."),
    "list_access": OutOfScope(OTHER, "Which systems does {target} have access to? I need it for an audit."),
    "list_groups": OutOfScope(SELF, "What mailing lists am I on at the moment?"),
    "list_devices": OutOfScope(OTHER, "Which devices are registered to {target}?", gold="devices"),
    "who_is_manager": OutOfScope(SELF, "Who is listed as my manager in the directory?"),
    "check_device": OutOfScope(SELF, "Is the {device} {asset_tag} still registered to me? I'm doing an inventory.",
                               ("asset_tag",), gold="devices"),
    "still_has_access": OutOfScope(OTHER, "Does {target} still have {system} access? Just checking before the audit.",
                                   ("held_system",)),
    "request_status": OutOfScope(SELF, "Has my request for {system} access been approved yet?", ("system",)),
    "contract_extended": OutOfScope(OTHER, "FYI the contract of {target} was extended by three months; "
                                    "nothing needs to change on their account."),
    "password_policy": OutOfScope(SELF, "How long does a password need to be here, and how often must I change it?",
                                  gold="nothing"),
    # changes no learned workflow makes
    "add_to_group": OutOfScope(SELF, "Please add me to the {group} mailing list.", ("new_group",), gold="add_to_group"),
    "add_colleague_to_group": OutOfScope(OTHER, "Can you put {target} on {group}? They just joined that team.",
                                         ("new_group",), gold="add_to_group"),
    "suspend_keep_access": OutOfScope(OTHER, "Please disable the account of {target} during the investigation, "
                                      "but keep all of their access exactly as it is.", gold="disable_account"),
    "sabbatical_disable": OutOfScope(SELF, "I'm going on sabbatical; please disable my account until I'm back but "
                                     "leave my access in place.", gold="disable_account"),
    # things no tool does
    "unlock_device": OutOfScope(SELF, "I found my {device} {asset_tag} again, can you unlock it?", ("asset_tag",),
                                gold="devices"),
    "return_laptop": OutOfScope(SELF, "I'm handing my old {device} {asset_tag} back to IT tomorrow; what do I "
                                "need to do?", ("asset_tag",), gold="devices"),
    "mfa_new_phone": OutOfScope(SELF, "I got a new phone; please move my MFA token to it.", gold="find"),
    "display_name": OutOfScope(SELF, "Please change how my name is displayed in the address book.", gold="find"),
    "shared_mailbox": OutOfScope(SELF, "Please give me access to the finance shared mailbox.", gold="find"),
    "lost_badge": OutOfScope(SELF, "I lost my building badge; can you block it?", gold="find"),
    "calendar_delegate": OutOfScope(SELF, "Please let {colleague} manage my calendar while I'm away.",
                                    ("colleague_email",), gold="find"),
    "new_hire_account": OutOfScope(OTHER, "We have a new hire starting Monday; please create an account for them.",
                                   gold="nothing", email=False),
    "vpn_slow": OutOfScope(SELF, "The VPN has been really slow since this morning.", gold="nothing"),
    "printer_jam": OutOfScope(SELF, "The printer on the third floor is jammed again.", gold="nothing"),
}


def is_out_of_scope(task: Task) -> bool:
    """A ticket no learned workflow covers (its workflow is ``oos:<name>``)."""
    return task.workflow.startswith(OOS_PREFIX)


# -- making tasks ----------------------------------------------------------------------------


def _act(name: str, **arguments: Any) -> GoldAction:
    return GoldAction(name=name, arguments=arguments)


class _Seed:
    """One world seed's directory and the employees its tickets have used."""

    def __init__(self, seed: int) -> None:
        world = HelpdeskWorld()
        world.reset(seed)
        self.seed, self.db = seed, world.db
        self.used: set[str] = set()

    def replays(self, gold: list[GoldAction]) -> bool:
        world = HelpdeskWorld()
        world.seed, world.db = self.seed, deep_copy(self.db)
        return all(r["error"] is None for r in world.replay(gold))

    def people(self, split: str, *, fresh: bool = True) -> list[dict[str, Any]]:
        """The employees of ``split`` (by first name); with ``fresh``, those no ticket used
        yet when there are any."""
        mine = [e for e in sorted(self.db["employees"].values(), key=lambda e: e["employee_id"])
                if (e["first_name"] in TEST_FIRST_NAMES) == (split == "test")]
        unused = [e for e in mine if e["employee_id"] not in self.used]
        return unused or mine if fresh else mine

    def devices(self, employee: dict[str, Any]) -> list[dict[str, Any]]:
        return [d for d in self.db["devices"].values() if d["owner_id"] == employee["employee_id"]]


Instance = tuple[dict[str, Any], dict[str, Any], list[GoldAction], dict[str, str]]
Builder = Callable[[_Seed, dict[str, Any], random.Random, str], Instance | None]


def _look(e: dict[str, Any]) -> list[GoldAction]:
    return [_act("find_employee_by_email", email=e["email"]), _act("get_employee", employee_id=e["employee_id"])]


def _devices(e: dict[str, Any]) -> list[GoldAction]:
    return [_act("find_employee_by_email", email=e["email"]), _act("list_devices", employee_id=e["employee_id"])]


def _others(e: dict[str, Any]) -> list[str]:
    return [s for s in e["access"] if s != "email"]


def _build(workflow: str, seed: _Seed, e: dict[str, Any], rng: random.Random, split: str) -> Instance | None:
    """(employee, params, gold, extra render values) of ``workflow`` for employee ``e``, or None."""
    eid, p = e["employee_id"], {"email": e["email"]}
    active = e["status"] == "active"
    if workflow == "revoke_access":
        if not active or len(_others(e)) < 2:
            return None
        system = rng.choice(_others(e))
        return e, {**p, "system": system}, _look(e) + [_act("revoke_access", employee_id=eid, system=system)], {}
    if workflow == "offboard_employee":
        if not active or len(e["access"]) < 3:
            return None
        revoke = [_act("revoke_access", employee_id=eid, system=s) for s in e["access"]]
        return e, p, _look(e) + revoke + [_act("disable_account", employee_id=eid)], {}
    if workflow == "remove_from_group":
        choices = [g for g in e["groups"] if g != "all-staff"]
        if len(e["groups"]) < 3 or not choices:
            return None
        group = rng.choice(choices)
        return e, {**p, "group": group}, _look(e) + [_act("remove_from_group", employee_id=eid, group=group)], {}
    if workflow == "remove_from_all_groups":
        if len(e["groups"]) < 3:
            return None
        remove = [_act("remove_from_group", employee_id=eid, group=g) for g in e["groups"]]
        return e, p, _look(e) + remove, {}
    if workflow in ("lock_device", "lock_all_devices"):
        devices = seed.devices(e)
        if len(devices) < 2:
            return None
        if workflow == "lock_all_devices":
            return e, p, _devices(e) + [_act("lock_device", asset_tag=d["asset_tag"]) for d in devices], {}
        device = rng.choice(devices)
        return (e, {**p, "asset_tag": device["asset_tag"]},
                _devices(e) + [_act("lock_device", asset_tag=device["asset_tag"])], {"device": device["kind"]})
    if workflow in ("grant_access", "request_contractor_access"):
        wanted_role = ("contractor",) if workflow == "request_contractor_access" else ("staff", "manager")
        missing = [s for s in SYSTEMS if s not in e["access"]]
        if not active or e["role"] not in wanted_role or not missing:
            return None
        system, level = rng.choice(missing), rng.choice(LEVELS[:2] * 3 + LEVELS[2:])
        params = {**p, "system": system, "level": level}
        if workflow == "grant_access":
            act = _act("grant_access", employee_id=eid, system=system, level=level)
        else:
            act = _act("submit_access_request", employee_id=eid, system=system, level=level,
                       approver_id=e["manager_id"])
        return e, params, _look(e) + [act], {}
    if workflow == "copy_access":
        if not active or e["role"] == "contractor":
            return None
        colleagues = [c for c in seed.people(split, fresh=False) if c["employee_id"] != eid
                      and len([s for s in c["access"] if c["access"][s] != e["access"].get(s)]) >= 2]
        if not colleagues:
            return None
        c = rng.choice(colleagues)
        gold = [_act("find_employee_by_email", email=e["email"]),
                _act("find_employee_by_email", email=c["email"]),
                _act("get_employee", employee_id=c["employee_id"])]
        gold += [_act("grant_access", employee_id=eid, system=s, level=level) for s, level in c["access"].items()]
        return e, {**p, "colleague_email": c["email"]}, gold, {"colleague": _name_email(c, rng)}
    status = {"unlock_account": "locked", "reset_password": "active", "reactivate_account": "disabled"}
    if workflow in status:
        tool = {"unlock_account": "unlock_account", "reset_password": "reset_password",
                "reactivate_account": "enable_account"}[workflow]
        if e["status"] != status[workflow]:
            return None
        return e, p, _look(e) + [_act(tool, employee_id=eid)], {}
    raise KeyError(workflow)


def _build_oos(name: str, seed: _Seed, e: dict[str, Any], rng: random.Random, split: str) -> Instance | None:
    spec = OUT_OF_SCOPE[name]
    eid = e["employee_id"]
    params: dict[str, Any] = {"email": e["email"]} if spec.email else {}
    extra: dict[str, str] = {}
    for need in spec.needs:
        if need == "asset_tag":
            device = rng.choice(seed.devices(e))
            params["asset_tag"], extra["device"] = device["asset_tag"], device["kind"]
        elif need == "held_system":
            params["system"] = rng.choice(list(e["access"]))
        elif need == "system":
            params["system"] = rng.choice([s for s in SYSTEMS if s not in e["access"]] or SYSTEMS)
        elif need == "new_group":
            missing = [g for g in GROUPS if g not in e["groups"]]
            if not missing:
                return None
            params["group"] = rng.choice(missing)
        elif need == "colleague_email":
            others = [c for c in seed.people(split, fresh=False) if c["employee_id"] != eid]
            if not others:
                return None
            colleague = rng.choice(others)
            params["colleague_email"] = colleague["email"]
            extra["colleague"] = _name_email(colleague, rng)
    gold: list[GoldAction]
    if spec.gold == "nothing":
        gold = []
    elif spec.gold == "find":
        gold = [_act("find_employee_by_email", email=e["email"])]
    elif spec.gold == "look":
        gold = _look(e)
    elif spec.gold == "devices":
        gold = _devices(e)
    elif spec.gold == "add_to_group":
        gold = _look(e) + [_act("add_to_group", employee_id=eid, group=params["group"])]
    elif spec.gold == "disable_account":
        if e["status"] == "disabled":
            return None
        gold = _look(e) + [_act("disable_account", employee_id=eid)]
    else:
        raise KeyError(spec.gold)
    return e, params, gold, extra


def _name_email(e: dict[str, Any], rng: random.Random) -> str:
    return rng.choice(TARGETS).format(first=e["first_name"], last=e["last_name"], email=e["email"])


class _Maker:
    def __init__(self, seed: int = SUITE_SEED) -> None:
        self.rng = random.Random(f"helpdesk-suite-{seed}")
        self.seeds = [_Seed(s) for s in WORLD_SEEDS]
        self.turn = 0
        self.seen: set[str] = set()

    def make(self, key: str, split: str, build: Callable[..., Instance | None]) -> tuple[_Seed, Instance]:
        for _ in range(2000):
            seed = self.seeds[self.turn % len(self.seeds)]
            self.turn += 1
            people = seed.people(split)
            made = build(key, seed, self.rng.choice(people), self.rng, split)
            if made is None:
                continue
            e, params, gold, _extra = made
            fingerprint = json.dumps([key, seed.seed, params], sort_keys=True)
            if fingerprint in self.seen or not seed.replays(gold):
                continue
            self.seen.add(fingerprint)
            seed.used.add(e["employee_id"])
            return seed, made
        raise RuntimeError(f"could not make a {split} {key} ticket")

    def ticket(self, seed: _Seed, voice: str, template: str, split: str, made: Instance) -> str:
        """The ticket's text: greeting, requester, request, chatter and signature."""
        e, params, _gold, extra = made
        rng = self.rng
        manager = seed.db["employees"].get(e["manager_id"]) or e
        if voice == SELF:
            writer = e
        else:
            writers = [w for w in seed.people(split, fresh=False) if w["employee_id"] != e["employee_id"]] or [e]
            writer = manager if manager in writers and rng.random() < 0.5 else rng.choice(writers)
        values = {**{k: v for k, v in params.items() if isinstance(v, str)}, **extra}
        values["target"] = _name_email(e, rng)
        request = template.format(**values)
        person = {"first": writer["first_name"], "last": writer["last_name"], "email": writer["email"],
                  "department": writer["department"], "phone": writer["phone"]}
        parts = [rng.choice(GREETINGS)]
        if voice == SELF and rng.random() < 0.35:
            parts += [request, rng.choice(SELF_AFTER).format(**person)]
        elif voice == SELF:
            parts += [rng.choice(SELF_BEFORE).format(**person), request]
        else:
            intro = rng.choice(INTROS).format(r_first=writer["first_name"], r_last=writer["last_name"],
                                              r_department=writer["department"])
            parts += [intro, request]
        parts.append(rng.choice(CHATTER).format(home_address=writer["home_address"], phone=writer["phone"],
                                                manager_first=manager["first_name"]))
        signature = rng.choice(SIGNATURES).format(**person)
        text = " ".join(p for p in parts if p)
        return text + ("\n\n" + signature if signature else "")


def helpdesk_tasks(seed: int = SUITE_SEED) -> list[Task]:
    maker = _Maker(seed)
    tasks: list[Task] = []

    def add(split: str, n: int, workflow: str, world_seed: _Seed, made: Instance, text: str, scope: str) -> None:
        tasks.append(Task(
            id=f"helpdesk-{split}-{n:03d}-{workflow.replace(':', '-')}", world="helpdesk", instruction=text,
            params=made[1], split=split, workflow=workflow,  # type: ignore[arg-type]
            goal={"scope": scope}, gold=made[2], seed=world_seed.seed,
        ))

    for split, per_workflow in (("train", TRAIN_PER_WORKFLOW), ("test", TEST_PER_WORKFLOW)):
        n = 0
        for round_ in range(per_workflow):
            for workflow in WORKFLOWS:
                n += 1
                phrasings = REQUESTS[workflow]
                pool = phrasings[:TRAIN_PHRASINGS] if split == "train" else phrasings[TRAIN_PHRASINGS:]
                voice, template = pool[round_ % len(pool)]
                world_seed, made = maker.make(workflow, split, _build)
                add(split, n, workflow, world_seed, made, maker.ticket(world_seed, voice, template, split, made), "in")
        if split == "test":
            for _round in range(OOS_INSTANCES):
                for name, spec in OUT_OF_SCOPE.items():
                    n += 1
                    world_seed, made = maker.make(name, split, _build_oos)
                    text = maker.ticket(world_seed, spec.voice, spec.template, split, made)
                    add(split, n, OOS_PREFIX + name, world_seed, made, text, "out")
    return tasks
