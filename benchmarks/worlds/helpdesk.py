"""An IT helpdesk world: a company directory with accounts, system access, groups and devices.

``reset(seed)`` generates the directory from the seed: about 48 employees (names from many
languages, emails, desk phones, home addresses), each with an account status (active,
locked or disabled), a role (staff, contractor or manager) and a manager, access to some
business systems at a level, mailing-list groups and assigned devices. Thirteen tools: three
read the directory, ten change it. The directory enforces little on its own, as real ones
do: resetting the password of a locked account works (and leaves it locked), granting a
contractor access directly works (though policy says a contractor's access is requested
from their manager). The helpdesk's procedures, which the task suites encode in their gold
actions, decide what is right; a task succeeds when the final directory equals the one
reached by replaying the task's gold actions on the same seed.
"""

from __future__ import annotations

import random
import unicodedata
from typing import Any, Sequence

from benchmarks.worlds.base import (
    PersonalValue,
    Task,
    ToolError,
    Verdict,
    World,
    deep_copy,
    evaluation_factory,
    params_values,
)

FIRST_NAMES = [
    "Ana", "Søren", "Zoë", "José", "Łukasz", "Ngozi", "Mei", "Aarav", "Fatima", "Jürgen",
    "Chloé", "Oğuz", "Ingrid", "Mateo", "Priya", "Kenji", "Aleksandra", "Tomás", "Yusuf",
    "Élodie", "Bjørn", "Siobhán", "Dmitri", "Hana", "Kwame", "Lucía", "Nils", "Olga",
    "Rafael", "Saanvi", "Thandiwe", "Wojciech", "Ximena", "Anneke", "Björk", "Emeka",
]
LAST_NAMES = [
    "Ruiz", "Nørgaard", "Müller", "O'Brien", "Kowalczyk", "Okonkwo", "Chen", "Sharma",
    "Haddad", "Çelik", "Lindqvist", "García", "Tanaka", "Nowak", "Dubois", "Ivanova",
    "Mensah", "Šimić", "Fernández", "Nakamura", "Andersson", "Papadopoulos", "Szabó",
    "Đặng", "Kovačević", "Achterberg", "Wiśniewska", "Ó Súilleabháin",
]
DEPARTMENTS = ["Finance", "Sales", "Engineering", "Design", "People", "Support", "Legal"]
SYSTEMS = ["email", "vpn", "crm", "payroll", "git", "wiki", "hr_portal", "expenses"]
LEVELS = ["read", "write", "admin"]
GROUPS = [
    "all-staff", "sales-emea", "eng-platform", "finance-team", "social-club", "oncall-rota",
    "design-guild", "london-office", "book-club", "security-champions",
]
DEVICE_KINDS = {"laptop": "LT", "phone": "PH", "tablet": "TB"}
DEVICE_MODELS = {
    "laptop": ["ThinkPad X1", "MacBook Air", "Latitude 7440"],
    "phone": ["Pixel 8", "iPhone 15", "Galaxy S23"],
    "tablet": ["iPad Air", "Galaxy Tab S9"],
}
STREETS = [
    "Kastanienallee", "Rue des Lilas", "Calle Mayor", "Ulica Długa", "Vesterbrogade",
    "Via Roma", "High Street", "Baker Lane", "Nørrebrogade", "Rua Augusta",
]
CITIES = [
    ("Berlin", "10435"), ("Lyon", "69003"), ("Madrid", "28013"), ("Gdańsk", "80-831"),
    ("København", "1620"), ("Bologna", "40126"), ("Leeds", "LS1 4AP"), ("Porto", "4000-123"),
]
STATUSES = ["active", "locked", "disabled"]
ROLES = ["staff", "contractor", "manager"]
EMPLOYEES = 48
DOMAIN = "northwind.example"

#: the task params whose values are a person's data (PersonalValue kinds)
PERSONAL_PARAMS = {"email": "email", "colleague_email": "email", "asset_tag": "asset_tag",
                   "employee_id": "employee_id"}


def ascii_fold(text: str) -> str:
    """``text`` without accents and with the letters NFKD cannot split spelled out (ø -> o)."""
    special = {"ø": "o", "Ø": "O", "ł": "l", "Ł": "L", "đ": "d", "Đ": "D", "ß": "ss", "æ": "ae"}
    text = "".join(special.get(c, c) for c in text)
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required, "additionalProperties": False}


class HelpdeskWorld(World):
    """A company's IT directory, generated from a seed."""

    name = "helpdesk"
    description = (
        "The IT helpdesk of a company: a directory of employees with accounts (active, locked "
        "or disabled), roles, managers, access to business systems, mailing-list groups and "
        "devices. The tools look an employee up by email and read their record and devices, "
        "and change the directory: unlock, reset, enable or disable an account, grant or "
        "revoke a system's access or file an access request for approval, add to or remove "
        "from a group, and lock a device."
    )

    def __init__(self) -> None:
        super().__init__()
        self.db: dict[str, Any] = {"employees": {}, "devices": {}, "access_requests": []}
        # a tool that is down (name -> error message); see ``break_tool``
        self.broken: dict[str, str] = {}

    # -- generation -------------------------------------------------------------------

    def reset(self, seed: int = 0, task: Task | None = None) -> None:
        """Generate the directory for ``seed`` (tasks carry the seed they were written for)."""
        if task is not None:
            seed = task.seed
        self.seed = seed
        self.broken = {}
        rng = random.Random(f"helpdesk-{seed}")
        names = rng.sample([(f, last) for f in FIRST_NAMES for last in LAST_NAMES], EMPLOYEES)
        employees: dict[str, Any] = {}
        used_emails: set[str] = set()
        ids = rng.sample(range(10000, 99999), EMPLOYEES)
        for (first, last), number in zip(names, ids):
            local = f"{ascii_fold(first)}.{ascii_fold(last)}".lower().replace("'", "").replace(" ", "")
            email = f"{local}@{DOMAIN}"
            if email in used_emails:
                email = f"{local}{rng.randrange(2, 9)}@{DOMAIN}"
            used_emails.add(email)
            city, postcode = rng.choice(CITIES)
            access = {s: rng.choice(LEVELS[:2]) for s in rng.sample(SYSTEMS[1:], rng.randrange(1, 5))}
            access["email"] = "write"
            employees[f"E{number}"] = {
                "employee_id": f"E{number}",
                "first_name": first,
                "last_name": last,
                "email": email,
                "phone": f"+{rng.choice([33, 34, 44, 45, 48, 49])} {rng.randrange(100, 999)} "
                         f"{rng.randrange(100, 999)} {rng.randrange(100, 999)}",
                "home_address": f"{rng.choice(STREETS)} {rng.randrange(1, 120)}, {postcode} {city}",
                "department": rng.choice(DEPARTMENTS),
                "role": rng.choices(ROLES, weights=[6, 3, 1])[0],
                "manager_id": None,
                "status": rng.choices(STATUSES, weights=[6, 3, 1])[0],
                "must_change_password": False,
                "password_resets": 0,
                "failed_logins": 0,
                "access": dict(sorted(access.items())),
                "groups": sorted(rng.sample(GROUPS[1:], rng.randrange(1, 4)) + ["all-staff"]),
            }
        managers = [e for e in employees.values() if e["role"] == "manager"]
        if not managers:
            first = next(iter(employees.values()))
            first["role"] = "manager"
            managers = [first]
        for employee in employees.values():
            if employee["status"] == "locked":
                employee["failed_logins"] = rng.randrange(5, 9)
            candidates = [m for m in managers if m["employee_id"] != employee["employee_id"]] or managers
            employee["manager_id"] = rng.choice(candidates)["employee_id"]
        devices: dict[str, Any] = {}
        for employee in employees.values():
            for kind in rng.sample(list(DEVICE_KINDS), rng.randrange(1, 4)):
                tag = f"{DEVICE_KINDS[kind]}-{rng.randrange(1000, 9999)}"
                while tag in devices:
                    tag = f"{DEVICE_KINDS[kind]}-{rng.randrange(1000, 9999)}"
                devices[tag] = {"asset_tag": tag, "kind": kind, "model": rng.choice(DEVICE_MODELS[kind]),
                                "owner_id": employee["employee_id"], "status": "assigned"}
        self.db = {"employees": employees, "devices": dict(sorted(devices.items())), "access_requests": []}

    # -- World API --------------------------------------------------------------------

    def tool_functions(self):
        return {
            "find_employee_by_email": self.find_employee_by_email,
            "get_employee": self.get_employee,
            "list_devices": self.list_devices,
            "unlock_account": self.unlock_account,
            "reset_password": self.reset_password,
            "enable_account": self.enable_account,
            "disable_account": self.disable_account,
            "grant_access": self.grant_access,
            "revoke_access": self.revoke_access,
            "submit_access_request": self.submit_access_request,
            "add_to_group": self.add_to_group,
            "remove_from_group": self.remove_from_group,
            "lock_device": self.lock_device,
        }

    def read_only_tools(self) -> frozenset[str]:
        return frozenset({"find_employee_by_email", "get_employee", "list_devices"})

    def trusted_output_tools(self) -> frozenset[str]:
        # the company's own directory: its records are the helpdesk's data (ids, statuses,
        # managers, access levels), no third party writes free text into them
        return frozenset({"find_employee_by_email", "get_employee", "list_devices"})

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        s = {"type": "string"}
        eid = {"employee_id": s}
        return {
            "find_employee_by_email": _obj({"email": s}),
            "get_employee": _obj(eid),
            "list_devices": _obj(eid),
            "unlock_account": _obj(eid),
            "reset_password": _obj(eid),
            "enable_account": _obj(eid),
            "disable_account": _obj(eid),
            "grant_access": _obj({**eid, "system": {"type": "string", "enum": SYSTEMS},
                                  "level": {"type": "string", "enum": LEVELS}}),
            "revoke_access": _obj({**eid, "system": {"type": "string", "enum": SYSTEMS}}),
            "submit_access_request": _obj({**eid, "system": {"type": "string", "enum": SYSTEMS},
                                           "level": {"type": "string", "enum": LEVELS}, "approver_id": s}),
            "add_to_group": _obj({**eid, "group": {"type": "string", "enum": GROUPS}}),
            "remove_from_group": _obj({**eid, "group": {"type": "string", "enum": GROUPS}}),
            "lock_device": _obj({"asset_tag": s}),
        }

    def tool_descriptions(self) -> dict[str, str]:
        return {name: (fn.__doc__ or "").strip() for name, fn in self.tool_functions().items()}

    def personal_values(self, tasks: Sequence[Task]) -> list[PersonalValue]:
        """Every employee's names, email, id, phone, home address and device tags, on every
        seed of ``tasks``, and the personal params of the tasks themselves."""
        out: list[PersonalValue] = []
        for seed in sorted({t.seed for t in tasks}):
            world = HelpdeskWorld()
            world.reset(seed)
            for e in world.db["employees"].values():
                owner = f"{seed}:{e['employee_id']}"
                out += [PersonalValue(e["first_name"], "first_name", owner),
                        PersonalValue(e["last_name"], "last_name", owner),
                        PersonalValue(f"{e['first_name']} {e['last_name']}", "name", owner),
                        PersonalValue(e["email"], "email", owner),
                        PersonalValue(e["employee_id"], "employee_id", owner),
                        PersonalValue(e["phone"], "phone", owner),
                        PersonalValue(e["home_address"], "address", owner)]
            for d in world.db["devices"].values():
                out.append(PersonalValue(d["asset_tag"], "asset_tag", f"{seed}:{d['owner_id']}"))
        out += params_values(tasks, PERSONAL_PARAMS)
        return out

    def state(self) -> dict[str, Any]:
        return deep_copy(self.db)

    def verify(self, task: Task) -> Verdict:
        """Success when the directory equals the one reached by replaying the gold actions."""
        return self.verify_against_gold(task, "directory")

    def break_tool(self, name: str, message: str) -> None:
        """Make tool ``name`` raise ``ToolError(message)`` until the next reset (an outage)."""
        if name not in self.tool_functions():
            raise KeyError(f"unknown tool {name!r}")
        self.broken[name] = message

    # -- read tools -------------------------------------------------------------------

    def find_employee_by_email(self, email: str) -> str:
        """Find an employee's id (like 'E12345') from their work email address."""
        self._up("find_employee_by_email")
        for employee in self.db["employees"].values():
            if employee["email"] == email.strip().lower():
                return employee["employee_id"]
        raise ToolError(f"no employee has the email {email!r}; check the spelling (work emails end in @{DOMAIN})")

    def get_employee(self, employee_id: str) -> dict[str, Any]:
        """An employee's record: name, email, department, role (staff, contractor or manager), manager_id, account
        status (active, locked or disabled), system access (system -> level) and groups."""
        self._up("get_employee")
        record = deep_copy(self._employee(employee_id))
        for private in ("home_address", "password_resets"):
            record.pop(private)
        return record

    def list_devices(self, employee_id: str) -> list[dict[str, Any]]:
        """The devices assigned to an employee: asset tag, kind, model and status (assigned or locked)."""
        self._up("list_devices")
        self._employee(employee_id)
        return [deep_copy(d) for d in self.db["devices"].values() if d["owner_id"] == employee_id]

    # -- write tools ------------------------------------------------------------------

    def unlock_account(self, employee_id: str) -> dict[str, Any]:
        """Unlock a locked account (after too many failed sign-ins); the password stays the same. An account that is
        not locked is left as it is."""
        self._up("unlock_account")
        employee = self._employee(employee_id)
        changed = employee["status"] == "locked"
        if changed:
            employee["status"], employee["failed_logins"] = "active", 0
        return {"employee_id": employee_id, "status": employee["status"], "changed": changed}

    def reset_password(self, employee_id: str) -> dict[str, Any]:
        """Reset an account's password: a temporary one is sent to the employee's phone and must be changed at the
        next sign-in. The account's status does not change."""
        self._up("reset_password")
        employee = self._employee(employee_id)
        employee["must_change_password"] = True
        employee["password_resets"] += 1
        return {"employee_id": employee_id, "must_change_password": True, "status": employee["status"]}

    def enable_account(self, employee_id: str) -> dict[str, Any]:
        """Switch a disabled account back on (status active); other accounts are left as they are."""
        self._up("enable_account")
        employee = self._employee(employee_id)
        changed = employee["status"] == "disabled"
        if changed:
            employee["status"] = "active"
        return {"employee_id": employee_id, "status": employee["status"], "changed": changed}

    def disable_account(self, employee_id: str) -> dict[str, Any]:
        """Disable an account: nobody can sign in with it until it is enabled again."""
        self._up("disable_account")
        employee = self._employee(employee_id)
        employee["status"] = "disabled"
        return {"employee_id": employee_id, "status": "disabled"}

    def grant_access(self, employee_id: str, system: str, level: str) -> dict[str, Any]:
        """Give an employee access to a system at a level (read, write or admin), replacing any level they had."""
        self._up("grant_access")
        employee = self._employee(employee_id)
        employee["access"][system] = level
        employee["access"] = dict(sorted(employee["access"].items()))
        return {"employee_id": employee_id, "access": dict(employee["access"])}

    def revoke_access(self, employee_id: str, system: str) -> dict[str, Any]:
        """Remove an employee's access to one system."""
        self._up("revoke_access")
        employee = self._employee(employee_id)
        if system not in employee["access"]:
            raise ToolError(f"{employee_id} has no access to {system}; their systems are: "
                            f"{', '.join(employee['access']) or 'none'}")
        del employee["access"][system]
        return {"employee_id": employee_id, "access": dict(employee["access"])}

    def submit_access_request(self, employee_id: str, system: str, level: str, approver_id: str) -> dict[str, Any]:
        """File a request for an employee's access to a system at a level, for an approver (the employee's manager)
        to approve; nothing is granted until then."""
        self._up("submit_access_request")
        self._employee(employee_id)
        self._employee(approver_id)
        request = {"request_id": f"AR-{len(self.db['access_requests']) + 1:04d}", "employee_id": employee_id,
                   "system": system, "level": level, "approver_id": approver_id, "status": "pending"}
        self.db["access_requests"].append(request)
        return dict(request)

    def add_to_group(self, employee_id: str, group: str) -> dict[str, Any]:
        """Add an employee to a mailing-list group."""
        self._up("add_to_group")
        employee = self._employee(employee_id)
        if group in employee["groups"]:
            raise ToolError(f"{employee_id} is already in {group}")
        employee["groups"] = sorted(employee["groups"] + [group])
        return {"employee_id": employee_id, "groups": list(employee["groups"])}

    def remove_from_group(self, employee_id: str, group: str) -> dict[str, Any]:
        """Remove an employee from one mailing-list group."""
        self._up("remove_from_group")
        employee = self._employee(employee_id)
        if group not in employee["groups"]:
            raise ToolError(f"{employee_id} is not in {group}; their groups are: {', '.join(employee['groups'])}")
        employee["groups"] = [g for g in employee["groups"] if g != group]
        return {"employee_id": employee_id, "groups": list(employee["groups"])}

    def lock_device(self, asset_tag: str) -> dict[str, Any]:
        """Lock a device remotely (a lost or stolen one) by its asset tag, like 'LT-1234'."""
        self._up("lock_device")
        device = self.db["devices"].get(asset_tag.strip().upper())
        if device is None:
            raise ToolError(f"no device has the asset tag {asset_tag!r}; list_devices gives an employee's tags")
        device["status"] = "locked"
        return dict(device)

    # -- internals --------------------------------------------------------------------

    def _up(self, tool: str) -> None:
        if tool in self.broken:
            raise ToolError(self.broken[tool])

    def _employee(self, employee_id: str) -> dict[str, Any]:
        if employee_id not in self.db["employees"]:
            raise ToolError(f"no employee with id {employee_id!r}; find it with find_employee_by_email")
        return self.db["employees"][employee_id]


#: the tools factory of ``skills evaluate --world benchmarks.worlds.helpdesk:factory``
factory = evaluation_factory(HelpdeskWorld)
