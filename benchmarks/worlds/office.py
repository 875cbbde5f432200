"""An office-assistant world: colleagues, calendar, rooms, tasks, documents, channels, requests.

``reset(seed)`` generates a small company workspace from the seed: 24 colleagues (a first
name each, an email, a phone), meeting rooms and their bookings, calendar events, to-do
tasks, documents in folders, chat channels. 33 tools: six read (find a colleague, a task or
a document by name; list rooms, events and bookings of a day) and 27 act for the user
(messages, meetings, bookings, tasks, documents, expenses, leave, out-of-office replies,
supply orders, IT tickets, channel posts, reminders, contacts, the phone number on their
profile). Made for the paraphrase suite: many distinct workflows, each learned from one
trace. A task succeeds when the final state equals the one reached by replaying its gold
actions on the same seed.
"""

from __future__ import annotations

import random
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

PEOPLE = [
    "Amara", "Bastian", "Carmen", "Dariusz", "Efua", "Florin", "Gaia", "Henrik", "Isolde", "Jovan",
    "Keiko", "Leandro", "Mirela", "Nadia", "Osvaldo", "Petra", "Quentin", "Rukmini", "Stellan", "Tiago",
    "Ulrike", "Vesna", "Wilhelmina", "Yannick",
]
ROOMS = ["Aurora", "Baltic", "Cedar", "Delta", "Ember", "Fjord", "Granite", "Harbor"]
FOLDERS = ["Finance", "Marketing", "Legal", "Research", "Onboarding", "Archive2024", "Contracts", "Design"]
CHANNELS = ["general", "random", "announcements", "engineering", "sales", "kudos", "wellbeing", "events"]
EVENT_TITLES = [
    "Quarterly planning", "Vendor sync", "Budget review", "Design critique", "Hiring panel", "Customer demo",
    "Sprint retrospective", "Security briefing", "Pricing workshop", "Roadmap kickoff", "Partner call",
    "Board rehearsal",
]
TASK_TITLES = [
    "Draft the newsletter", "Update the price list", "Renew the domain", "Collect survey answers",
    "Prepare slides", "Clean the wiki", "Translate the brochure", "Audit licences", "Fix the invoice template",
    "Order badges", "Book the venue", "Check the backups",
]
DOC_TITLES = [
    "Tender dossier", "Travel policy", "Brand guidelines", "Lab notebook", "Supplier contract", "Welcome pack",
    "Market study", "Tax memo", "Sketchbook", "Pilot results", "Style sheet", "Meeting minutes",
]
ROLES = ["viewer", "commenter", "editor"]
LEAVE_KINDS = ["vacation", "sick", "parental", "unpaid"]
TICKET_CATEGORIES = ["hardware", "software", "network", "access"]
EXPENSE_CATEGORIES = ["travel", "meals", "books", "training", "hotel"]
DOMAIN = "acme.example"

#: the task params whose values are a person's data (PersonalValue kinds)
PERSONAL_PARAMS = {"name": "first_name", "email": "email", "phone": "phone"}


def _obj(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props,
            "required": list(props) if required is None else required, "additionalProperties": False}


_S = {"type": "string"}


class OfficeWorld(World):
    """A small company's workspace, generated from a seed."""

    name = "office"
    description = (
        "A personal assistant's workspace in a small company: colleagues, a calendar, meeting "
        "rooms, to-do tasks, documents in folders and chat channels. The tools find colleagues, "
        "tasks and documents and list rooms, events and bookings, and act for the user: send "
        "messages, schedule, cancel and book, manage tasks and documents, file expenses, leave "
        "and IT tickets, post to channels, set reminders and update contacts and their profile."
    )

    def __init__(self) -> None:
        super().__init__()
        self.db: dict[str, Any] = {}
        self._ids = iter(range(1000, 10**6))  # the next record ids (restarted by reset)

    def reset(self, seed: int = 0, task: Task | None = None) -> None:
        if task is not None:
            seed = task.seed
        self.seed = seed
        rng = random.Random(f"office-{seed}")
        people = {}
        for name in PEOPLE:
            email = f"{name.lower()}.{rng.choice(['k', 'm', 'r', 's', 't'])}{rng.randrange(10, 99)}@{DOMAIN}"
            people[name] = {"name": name, "email": email,
                            "phone": f"+31 6 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}"}
        counter = iter(range(1000, 10**6))  # ids: the same sequence on every reset of a seed
        dates = [f"2026-{m:02d}-{d:02d}" for m in (3, 4, 5) for d in (3, 9, 14, 18, 23, 27)]
        events = {}
        for title in EVENT_TITLES:
            eid = f"ev-{next(counter)}"
            events[eid] = {"event_id": eid, "title": title, "date": rng.choice(dates),
                           "time": f"{rng.randrange(9, 17)}:{rng.choice(['00', '30'])}",
                           "attendees": sorted(people[p]["email"] for p in rng.sample(PEOPLE, 3))}
        tasks = {}
        for title in TASK_TITLES:
            tid = f"task-{next(counter)}"
            tasks[tid] = {"task_id": tid, "title": title, "assignee": people[rng.choice(PEOPLE)]["email"],
                          "due": rng.choice(dates), "done": False}
        documents = {}
        for title in DOC_TITLES:
            did = f"doc-{next(counter)}"
            documents[did] = {"doc_id": did, "title": title, "folder": rng.choice(FOLDERS), "shared": {},
                              "archived": False, "deleted": False, "comments": [],
                              "link": f"https://docs.{DOMAIN}/d/{did}"}
        bookings = {}
        for room in ROOMS:
            bid = f"bk-{next(counter)}"
            bookings[bid] = {"booking_id": bid, "room": room, "date": rng.choice(dates),
                             "time": f"{rng.randrange(9, 17)}:00"}
        self.db = {
            "people": people, "rooms": list(ROOMS), "events": events, "tasks": tasks, "documents": documents,
            "bookings": bookings, "channels": {c: {"joined": c in ("general", "random"), "posts": []}
                                               for c in CHANNELS},
            "outbox": [], "expenses": [], "leave": [], "out_of_office": None, "orders": [], "tickets": [],
            "reminders": [], "contacts": {}, "profile": {"phone": "+31 6 0000 0000"},
        }
        self._ids = counter

    # -- World API --------------------------------------------------------------------

    def tool_functions(self):
        names = [n for n in TOOL_SCHEMAS]
        return {n: getattr(self, n) for n in names}

    def read_only_tools(self) -> frozenset[str]:
        return frozenset({"find_colleague", "find_task", "find_document", "list_rooms", "list_events",
                          "list_bookings"})

    def tool_schemas(self) -> dict[str, dict[str, Any]]:
        return deep_copy(TOOL_SCHEMAS)

    def tool_descriptions(self) -> dict[str, str]:
        return {name: (fn.__doc__ or "").strip() for name, fn in self.tool_functions().items()}

    def personal_values(self, tasks: Sequence[Task]) -> list[PersonalValue]:
        """Every colleague's name, email and phone on the seeds of ``tasks``, and the tasks'
        personal params (a new contact's email, the user's new phone)."""
        out: list[PersonalValue] = []
        for seed in sorted({t.seed for t in tasks}):
            world = OfficeWorld()
            world.reset(seed)
            for person in world.db["people"].values():
                owner = f"{seed}:{person['name']}"
                out += [PersonalValue(person["name"], "first_name", owner),
                        PersonalValue(person["email"], "email", owner),
                        PersonalValue(person["phone"], "phone", owner)]
        out += params_values(tasks, PERSONAL_PARAMS)
        return out

    def state(self) -> dict[str, Any]:
        return deep_copy(self.db)

    def verify(self, task: Task) -> Verdict:
        return self.verify_against_gold(task, "workspace")

    # -- read tools -------------------------------------------------------------------

    def find_colleague(self, name: str) -> dict[str, Any]:
        """A colleague's name, email and phone, by their first name."""
        person = self.db["people"].get(name.strip().title())
        if person is None:
            raise ToolError(f"no colleague called {name!r}")
        return dict(person)

    def find_task(self, title: str) -> dict[str, Any]:
        """A to-do task by its title: id, assignee, due date, whether it is done."""
        return dict(self._by_title("tasks", title))

    def find_document(self, title: str) -> dict[str, Any]:
        """A document by its title: id, folder, link, who it is shared with."""
        return deep_copy(self._by_title("documents", title))

    def list_rooms(self) -> list[str]:
        """The meeting rooms."""
        return list(self.db["rooms"])

    def list_events(self, date: str) -> list[dict[str, Any]]:
        """The calendar events of a day (YYYY-MM-DD): id, title, time, attendees."""
        return [deep_copy(e) for e in self.db["events"].values() if e["date"] == date]

    def list_bookings(self, date: str) -> list[dict[str, Any]]:
        """The room bookings of a day (YYYY-MM-DD): id, room, time."""
        return [dict(b) for b in self.db["bookings"].values() if b["date"] == date]

    # -- write tools ------------------------------------------------------------------

    def send_message(self, to: str, subject: str, body: str) -> dict[str, Any]:
        """Send a message to a colleague's email."""
        self._email(to)
        self.db["outbox"].append({"to": to, "subject": subject, "body": body})
        return {"sent": True}

    def schedule_meeting(self, attendees: list[str], title: str, date: str, time: str) -> dict[str, Any]:
        """Put a meeting with the given attendees (emails) in the calendar."""
        for email in attendees:
            self._email(email)
        eid = f"ev-{next(self._ids)}"
        self.db["events"][eid] = {"event_id": eid, "title": title, "date": date, "time": time,
                                  "attendees": sorted(attendees)}
        return dict(self.db["events"][eid])

    def cancel_event(self, event_id: str) -> dict[str, Any]:
        """Remove an event from the calendar."""
        return self._pop("events", event_id)

    def book_room(self, room: str, date: str, time: str) -> dict[str, Any]:
        """Book a meeting room for a day and time."""
        if room not in self.db["rooms"]:
            raise ToolError(f"no room called {room!r}; list_rooms gives them")
        bid = f"bk-{next(self._ids)}"
        self.db["bookings"][bid] = {"booking_id": bid, "room": room, "date": date, "time": time}
        return dict(self.db["bookings"][bid])

    def cancel_booking(self, booking_id: str) -> dict[str, Any]:
        """Release a room booking."""
        return self._pop("bookings", booking_id)

    def add_attendee(self, event_id: str, email: str) -> dict[str, Any]:
        """Invite one more colleague (email) to an event."""
        event = self._get("events", event_id)
        self._email(email)
        event["attendees"] = sorted(set(event["attendees"]) | {email})
        return deep_copy(event)

    def create_task(self, assignee: str, title: str, due: str) -> dict[str, Any]:
        """Create a to-do task for a colleague (email) with a due date."""
        self._email(assignee)
        tid = f"task-{next(self._ids)}"
        self.db["tasks"][tid] = {"task_id": tid, "title": title, "assignee": assignee, "due": due, "done": False}
        return dict(self.db["tasks"][tid])

    def complete_task(self, task_id: str) -> dict[str, Any]:
        """Mark a to-do task done."""
        task = self._get("tasks", task_id)
        task["done"] = True
        return dict(task)

    def reassign_task(self, task_id: str, assignee: str) -> dict[str, Any]:
        """Give a to-do task to another colleague (email)."""
        task = self._get("tasks", task_id)
        self._email(assignee)
        task["assignee"] = assignee
        return dict(task)

    def share_document(self, doc_id: str, email: str, role: str) -> dict[str, Any]:
        """Share a document with a colleague (email) as viewer, commenter or editor."""
        document = self._get("documents", doc_id)
        self._email(email)
        if role not in ROLES:
            raise ToolError(f"role must be one of {', '.join(ROLES)}")
        document["shared"][email] = role
        return deep_copy(document)

    def archive_document(self, doc_id: str) -> dict[str, Any]:
        """Archive a document (kept, read-only)."""
        document = self._get("documents", doc_id)
        document["archived"] = True
        return deep_copy(document)

    def move_document(self, doc_id: str, folder: str) -> dict[str, Any]:
        """Move a document to another folder."""
        document = self._get("documents", doc_id)
        document["folder"] = folder
        return deep_copy(document)

    def rename_document(self, doc_id: str, new_title: str) -> dict[str, Any]:
        """Give a document a new title."""
        document = self._get("documents", doc_id)
        document["title"] = new_title
        return deep_copy(document)

    def create_document(self, title: str, folder: str) -> dict[str, Any]:
        """Create an empty document in a folder."""
        did = f"doc-{next(self._ids)}"
        self.db["documents"][did] = {"doc_id": did, "title": title, "folder": folder, "shared": {},
                                     "archived": False, "deleted": False, "comments": [],
                                     "link": f"https://docs.{DOMAIN}/d/{did}"}
        return deep_copy(self.db["documents"][did])

    def delete_document(self, doc_id: str) -> dict[str, Any]:
        """Delete a document for good."""
        return self._pop("documents", doc_id)

    def comment_on_document(self, doc_id: str, text: str) -> dict[str, Any]:
        """Add a comment to a document."""
        document = self._get("documents", doc_id)
        document["comments"].append(text)
        return deep_copy(document)

    def submit_expense(self, amount: float, category: str, note: str) -> dict[str, Any]:
        """File an expense claim (amount in euros)."""
        self.db["expenses"].append({"amount": amount, "category": category, "note": note})
        return {"filed": True}

    def request_leave(self, start: str, end: str, kind: str) -> dict[str, Any]:
        """Request leave (vacation, sick, parental or unpaid) from one day to another."""
        self.db["leave"].append({"start": start, "end": end, "kind": kind})
        return {"requested": True}

    def set_out_of_office(self, until: str, message: str) -> dict[str, Any]:
        """Turn on the automatic out-of-office reply until a day, with a message."""
        self.db["out_of_office"] = {"until": until, "message": message}
        return dict(self.db["out_of_office"])

    def order_supplies(self, item: str, quantity: int) -> dict[str, Any]:
        """Order office supplies."""
        self.db["orders"].append({"item": item, "quantity": quantity})
        return {"ordered": True}

    def create_ticket(self, category: str, summary: str) -> dict[str, Any]:
        """Open an IT support ticket."""
        self.db["tickets"].append({"category": category, "summary": summary})
        return {"ticket": f"IT-{len(self.db['tickets']):04d}"}

    def post_to_channel(self, channel: str, text: str) -> dict[str, Any]:
        """Post a message in a chat channel."""
        self._channel(channel)["posts"].append(text)
        return {"posted": True}

    def join_channel(self, channel: str) -> dict[str, Any]:
        """Join a chat channel."""
        self._channel(channel)["joined"] = True
        return {"joined": True}

    def leave_channel(self, channel: str) -> dict[str, Any]:
        """Leave a chat channel."""
        self._channel(channel)["joined"] = False
        return {"joined": False}

    def set_reminder(self, text: str, at: str) -> dict[str, Any]:
        """Set a reminder for a time."""
        self.db["reminders"].append({"text": text, "at": at})
        return {"set": True}

    def add_contact(self, name: str, email: str) -> dict[str, Any]:
        """Save a contact (name and email) in the user's address book."""
        self.db["contacts"][email] = name
        return {"saved": True}

    def update_phone(self, phone: str) -> dict[str, Any]:
        """Change the phone number on the user's profile."""
        self.db["profile"]["phone"] = phone
        return dict(self.db["profile"])

    # -- internals --------------------------------------------------------------------

    def _email(self, email: str) -> None:
        if email not in {p["email"] for p in self.db["people"].values()}:
            raise ToolError(f"no colleague has the email {email!r}; find_colleague gives it")

    def _by_title(self, kind: str, title: str) -> dict[str, Any]:
        for record in self.db[kind].values():
            if record["title"].lower() == title.strip().lower():
                return record
        raise ToolError(f"no {kind[:-1]} titled {title!r}")

    def _get(self, kind: str, key: str) -> dict[str, Any]:
        if key not in self.db[kind]:
            raise ToolError(f"no {kind[:-1]} with id {key!r}")
        return self.db[kind][key]

    def _pop(self, kind: str, key: str) -> dict[str, Any]:
        record = self._get(kind, key)
        del self.db[kind][key]
        return deep_copy(record)

    def _channel(self, channel: str) -> dict[str, Any]:
        if channel not in self.db["channels"]:
            raise ToolError(f"no channel called {channel!r}; channels are: {', '.join(self.db['channels'])}")
        return self.db["channels"][channel]


_DATE = {"type": "string"}
TOOL_SCHEMAS: dict[str, dict[str, Any]] = {
    "find_colleague": _obj({"name": _S}),
    "find_task": _obj({"title": _S}),
    "find_document": _obj({"title": _S}),
    "list_rooms": _obj({}),
    "list_events": _obj({"date": _DATE}),
    "list_bookings": _obj({"date": _DATE}),
    "send_message": _obj({"to": _S, "subject": _S, "body": _S}),
    "schedule_meeting": _obj({"attendees": {"type": "array", "items": _S, "minItems": 1}, "title": _S,
                              "date": _DATE, "time": _S}),
    "cancel_event": _obj({"event_id": _S}),
    "book_room": _obj({"room": _S, "date": _DATE, "time": _S}),
    "cancel_booking": _obj({"booking_id": _S}),
    "add_attendee": _obj({"event_id": _S, "email": _S}),
    "create_task": _obj({"assignee": _S, "title": _S, "due": _DATE}),
    "complete_task": _obj({"task_id": _S}),
    "reassign_task": _obj({"task_id": _S, "assignee": _S}),
    "share_document": _obj({"doc_id": _S, "email": _S, "role": {"type": "string", "enum": ROLES}}),
    "archive_document": _obj({"doc_id": _S}),
    "move_document": _obj({"doc_id": _S, "folder": _S}),
    "rename_document": _obj({"doc_id": _S, "new_title": _S}),
    "create_document": _obj({"title": _S, "folder": _S}),
    "delete_document": _obj({"doc_id": _S}),
    "comment_on_document": _obj({"doc_id": _S, "text": _S}),
    "submit_expense": _obj({"amount": {"type": "number", "minimum": 0}, "category": _S, "note": _S}),
    "request_leave": _obj({"start": _DATE, "end": _DATE, "kind": {"type": "string", "enum": LEAVE_KINDS}}),
    "set_out_of_office": _obj({"until": _DATE, "message": _S}),
    "order_supplies": _obj({"item": _S, "quantity": {"type": "integer", "minimum": 1}}),
    "create_ticket": _obj({"category": {"type": "string", "enum": TICKET_CATEGORIES}, "summary": _S}),
    "post_to_channel": _obj({"channel": _S, "text": _S}),
    "join_channel": _obj({"channel": _S}),
    "leave_channel": _obj({"channel": _S}),
    "set_reminder": _obj({"text": _S, "at": _S}),
    "add_contact": _obj({"name": _S, "email": _S}),
    "update_phone": _obj({"phone": _S}),
}

#: the tools factory of ``skills evaluate --world benchmarks.worlds.office:factory``
factory = evaluation_factory(OfficeWorld)
