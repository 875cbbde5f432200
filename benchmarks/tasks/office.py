"""The paraphrase suite: 32 office workflows, one train trace each, reworded at test.

Each workflow of the office world (``WORKFLOWS``) has one train request, written the way a
first user of a skill would write it ("Send Amara a message with subject '...' saying
'...'"), and ``QUERIES_PER_WORKFLOW`` test requests that say the same thing in other words
*and share no content word with it* (:func:`content_words`: letters-only words of two or
more letters, less a fixed English stopword list, Snowball-stemmed; digits are values such
as dates and times and are not words). The values differ too: train and test draw people,
titles, rooms, folders, channels and texts from disjoint halves of each pool, so a query
cannot match its skill's trace by a name or a title either. Every query is checked when the
suite is generated (a wording that shares a word is a bug of the suite and stops it) and
again by the tests.

A library learns the 32 train traces (one skill each expected); the protocol
(:mod:`benchmarks.paraphrase`) measures fetch@3 of the right skill on the queries.
"""

from __future__ import annotations

import random
import re
from functools import lru_cache
from typing import Any, Callable

from benchmarks.worlds.base import GoldAction, Task
from benchmarks.worlds.office import (
    DOC_TITLES,
    EVENT_TITLES,
    FOLDERS,
    PEOPLE,
    ROOMS,
    TASK_TITLES,
    OfficeWorld,
)

SUITE_SEED = 0
WORLD_SEED = 7
QUERIES_PER_WORKFLOW = 3
#: tries to draw test values whose words no train word shares, before the suite gives up
MAX_DRAWS = 200

# A standard English stopword list (function words only: articles, pronouns, auxiliaries,
# prepositions, conjunctions, a few adverbs); content words are everything else.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between
both but by can could did do does doing down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up very was we
were what when where which while who whom why will with would you your yours yourself yourselves also
please let us it's i'm i'd we're let's don't won't
""".split())

_WORD = re.compile(r"[^\W\d_]{2,}")


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import snowballstemmer  # type: ignore[import-untyped]

    return snowballstemmer.stemmer("english")


def content_words(text: str) -> set[str]:
    """The stemmed content words of ``text`` (see the module doc)."""
    words = [w.lower() for w in _WORD.findall(text)]
    return set(_stemmer().stemWords([w for w in words if w not in STOPWORDS]))


def shared_content_words(a: str, b: str) -> set[str]:
    """The content words ``a`` and ``b`` share (empty: a paraphrase as this suite needs it)."""
    return content_words(a) & content_words(b)


# -- values: each pool split in a train half and a test half ------------------------------------

def _halves(values: list[Any]) -> dict[str, list[Any]]:
    return {"train": values[: len(values) // 2], "test": values[len(values) // 2:]}


POOLS: dict[str, dict[str, list[Any]]] = {
    "name": _halves(PEOPLE),
    "room": _halves(ROOMS),
    "folder": _halves(FOLDERS),
    "channel": {"train": ["engineering", "sales", "kudos"], "test": ["wellbeing", "events", "random"]},
    "event": _halves(EVENT_TITLES),
    "task": _halves(TASK_TITLES),
    "doc": _halves(DOC_TITLES),
    "role": {"train": ["editor"], "test": ["viewer", "commenter"]},
    "kind": {"train": ["vacation"], "test": ["sick", "parental", "unpaid"]},
    "category": {"train": ["hardware"], "test": ["software", "network", "access"]},
    "expense": {"train": ["travel"], "test": ["meals", "books", "training"]},
    "topic": {"train": ["Offsite logistics", "Intern onboarding", "Catering menu"],
              "test": ["Warehouse move", "Gala seating", "Podcast launch", "Charity run", "Fleet renewal"]},
    "body": {"train": ["The venue confirmed our dates", "Bring your laptop charger"],
             "test": ["Printing finished early", "Keys are at reception", "Invoice arrived twice",
                      "Lunch moves upstairs"]},
    "new_doc": {"train": ["Procurement checklist", "Pitch outline"],
                "test": ["Volunteer roster", "Garden plan", "Recipe collection", "Quiz answers"]},
    "note": {"train": ["taxi from the airport", "dinner with the client"],
             "test": ["parking near stadium", "paperback about negotiation", "workshop ticket",
                      "museum entrance"]},
    "item": {"train": ["staplers", "whiteboard markers"], "test": ["envelopes", "batteries", "notebooks",
                                                                     "scissors"]},
    "summary": {"train": ["my monitor flickers", "keyboard lost keys"],
                "test": ["printer driver crashes", "wifi drops hourly", "badge reader refuses me",
                         "mailbox quota full"]},
    "post": {"train": ["cake in the kitchen", "fire drill tomorrow"],
             "test": ["parcel arrived downstairs", "yoga resumes Thursday", "elevator repaired",
                      "bike shed reopened"]},
    "remind": {"train": ["water the plants", "call the landlord"],
               "test": ["renew my passport", "feed Biscuit", "pay rent", "buy stamps"]},
    "contact": {"train": ["Rosalind", "Teodor"], "test": ["Guillermo", "Anouk", "Evander", "Maribel"]},
    "contact_domain": {"train": ["mailbox.example"], "test": ["post.test", "inbox.invalid"]},
    "ooo": {"train": ["Limited connectivity this week"],
            "test": ["Back soon, reach Farida urgently", "Travelling; answers may lag",
                     "Hiking somewhere remote"]},
    "comment": {"train": ["Looks good to me"], "test": ["Numbers need checking", "Typo in chapter two",
                                                       "Approved by finance"]},
}
DATES = {"train": ["2026-03-09", "2026-03-18", "2026-04-14"], "test": ["2026-05-04", "2026-05-21", "2026-06-02"]}


# -- workflows ----------------------------------------------------------------------------------

Builder = Callable[[dict[str, Any], dict[str, Any]], list[GoldAction]]


def _a(tool: str, **arguments: Any) -> GoldAction:
    return GoldAction(name=tool, arguments=arguments)


def _email(db: dict[str, Any], name: str) -> str:
    return db["people"][name]["email"]


def _event(db: dict[str, Any], title: str) -> dict[str, Any]:
    return next(e for e in db["events"].values() if e["title"] == title)


def _record(db: dict[str, Any], kind: str, title: str) -> dict[str, Any]:
    return next(r for r in db[kind].values() if r["title"] == title)


# workflow -> (slots: param -> pool (or "date"/"time"/...), train request, test rewordings, gold)
WORKFLOWS: dict[str, tuple[dict[str, str], str, list[str], Builder]] = {
    "send_message": (
        {"name": "name", "subject": "topic", "body": "body"},
        "Send {name} a message with subject '{subject}' saying '{body}'",
        ["Write to {name} about {subject}: {body}", "Drop {name} a note titled {subject} — {body}",
         "Email {name} regarding {subject}, text: {body}"],
        lambda db, p: [_a("find_colleague", name=p["name"]),
                       _a("send_message", to=_email(db, p["name"]), subject=p["subject"], body=p["body"])]),
    "schedule_meeting": (
        {"name": "name", "title": "topic", "date": "date", "time": "time"},
        "Schedule a meeting called '{title}' with {name} on {date} at {time}",
        ["Put {title} in the calendar for {name} and me, {date} {time}",
         "Set up a get-together with {name} — {title}, {date}, {time}",
         "Arrange time with {name} {date} {time} to discuss {title}"],
        lambda db, p: [_a("find_colleague", name=p["name"]),
                       _a("schedule_meeting", attendees=[_email(db, p["name"])], title=p["title"], date=p["date"],
                          time=p["time"])]),
    "book_room": (
        {"room": "room", "date": "date", "time": "time"},
        "Book the {room} room on {date} at {time}",
        ["Reserve {room} for {date}, {time}", "Grab {room} {date} {time} for us",
         "Hold the space called {room} {date} from {time}"],
        lambda db, p: [_a("list_rooms"), _a("book_room", room=p["room"], date=p["date"], time=p["time"])]),
    "meeting_with_room": (
        {"name": "name", "title": "topic", "date": "date", "time": "time", "room": "room"},
        "Set up '{title}' with {name} on {date} at {time} and reserve the {room} room for it",
        ["I need {room} booked plus an invite to {name} for {title}, {date} {time}",
         "Get {name} into {title} at {time} {date}, held in {room}",
         "Organise {title} together with {name}: {date}, {time}, location {room}"],
        lambda db, p: [_a("find_colleague", name=p["name"]), _a("list_rooms"),
                       _a("book_room", room=p["room"], date=p["date"], time=p["time"]),
                       _a("schedule_meeting", attendees=[_email(db, p["name"])], title=p["title"], date=p["date"],
                          time=p["time"])]),
    "cancel_event": (
        {"title": "event", "date": "event_date"},
        "Cancel the '{title}' event on {date}",
        ["Call off {title} happening {date}", "{title} on {date} won't take place; remove it from my agenda",
         "Scrap {title} ({date})"],
        lambda db, p: [_a("list_events", date=p["date"]),
                       _a("cancel_event", event_id=_event(db, p["title"])["event_id"])]),
    "add_attendee": (
        {"title": "event", "date": "event_date", "name": "name"},
        "Add {name} to the '{title}' meeting on {date}",
        ["Invite {name} along to {title} ({date})", "Include {name} in {title}, {date}, too",
         "{name} should join {title} happening {date}"],
        lambda db, p: [_a("list_events", date=p["date"]), _a("find_colleague", name=p["name"]),
                       _a("add_attendee", event_id=_event(db, p["title"])["event_id"], email=_email(db, p["name"]))]),
    "create_task": (
        {"name": "name", "title": "topic", "due": "date"},
        "Create a task '{title}' for {name} due {due}",
        ["Assign {name} the to-do {title}, deadline {due}", "{name} should handle {title} by {due}; log it",
         "Give {name} {title} to finish before {due}"],
        lambda db, p: [_a("find_colleague", name=p["name"]),
                       _a("create_task", assignee=_email(db, p["name"]), title=p["title"], due=p["due"])]),
    "complete_task": (
        {"title": "task"},
        "Mark the task '{title}' as done",
        ["{title} is finished, tick it off", "Close out the to-do {title}, it's completed",
         "Check off {title} on my list"],
        lambda db, p: [_a("find_task", title=p["title"]),
                       _a("complete_task", task_id=_record(db, "tasks", p["title"])["task_id"])]),
    "reassign_task": (
        {"title": "task", "name": "name"},
        "Reassign the task '{title}' to {name}",
        ["Hand {title} over to {name}", "{name} takes charge of the to-do {title} now",
         "Transfer ownership of {title} to {name}"],
        lambda db, p: [_a("find_task", title=p["title"]), _a("find_colleague", name=p["name"]),
                       _a("reassign_task", task_id=_record(db, "tasks", p["title"])["task_id"],
                          assignee=_email(db, p["name"]))]),
    "share_document": (
        {"title": "doc", "name": "name", "role": "role"},
        "Share the document '{title}' with {name} as {role}",
        ["Give {name} {role} rights on {title}", "Let {name} open {title} ({role})",
         "Grant {name} {role} permission for {title}"],
        lambda db, p: [_a("find_document", title=p["title"]), _a("find_colleague", name=p["name"]),
                       _a("share_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          email=_email(db, p["name"]), role=p["role"])]),
    "archive_document": (
        {"title": "doc"},
        "Archive the document '{title}'",
        ["Put {title} into cold storage", "{title} is obsolete — file it away",
         "Retire {title} to read-only"],
        lambda db, p: [_a("find_document", title=p["title"]),
                       _a("archive_document", doc_id=_record(db, "documents", p["title"])["doc_id"])]),
    "move_document": (
        {"title": "doc", "folder": "folder"},
        "Move the document '{title}' to the folder {folder}",
        ["Relocate {title} into {folder}", "File {title} under {folder}", "{title} belongs in {folder}; shift it"],
        lambda db, p: [_a("find_document", title=p["title"]),
                       _a("move_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          folder=p["folder"])]),
    "rename_document": (
        {"title": "doc", "new_title": "new_doc"},
        "Rename the document '{title}' to '{new_title}'",
        ["Change what {title} is called: {new_title}", "{title} should be titled {new_title} from now on",
         "Retitle {title} as {new_title}"],
        lambda db, p: [_a("find_document", title=p["title"]),
                       _a("rename_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          new_title=p["new_title"])]),
    "create_document": (
        {"title": "new_doc", "folder": "folder"},
        "Create a new document called '{title}' in {folder}",
        ["Start a blank file named {title} inside {folder}", "Open up a fresh page {title} under {folder}",
         "I want an empty {title} sitting in {folder}"],
        lambda db, p: [_a("create_document", title=p["title"], folder=p["folder"])]),
    "delete_document": (
        {"title": "doc"},
        "Delete the document '{title}' permanently",
        ["Get rid of {title} for good", "Erase {title} completely", "Destroy {title}, no copy kept"],
        lambda db, p: [_a("find_document", title=p["title"]),
                       _a("delete_document", doc_id=_record(db, "documents", p["title"])["doc_id"])]),
    "comment_on_document": (
        {"title": "doc", "text": "comment"},
        "Comment '{text}' on the document '{title}'",
        ["Leave a remark on {title}: {text}", "Note {text} in the margin of {title}",
         "Annotate {title} with: {text}"],
        lambda db, p: [_a("find_document", title=p["title"]),
                       _a("comment_on_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          text=p["text"])]),
    "submit_expense": (
        {"amount": "amount", "category": "expense", "note": "note"},
        "Submit an expense of {amount} EUR for {category}: {note}",
        ["Reimburse me {amount} for {category} — {note}", "Claim back {amount} I spent on {category} ({note})",
         "I paid {amount} out of pocket, {category}, {note}; get it refunded"],
        lambda db, p: [_a("submit_expense", amount=p["amount"], category=p["category"], note=p["note"])]),
    "request_leave": (
        {"start": "date", "end": "date2", "kind": "kind"},
        "Request {kind} leave from {start} to {end}",
        ["I'd like time off ({kind}) between {start} and {end}", "Book me off work {start} through {end}, {kind}",
         "Register an absence, {kind}, {start} – {end}"],
        lambda db, p: [_a("request_leave", start=p["start"], end=p["end"], kind=p["kind"])]),
    "set_out_of_office": (
        {"until": "date", "message": "ooo"},
        "Set my out-of-office reply until {until} saying '{message}'",
        ["Turn on the automatic away response through {until}: {message}",
         "While I'm gone (back {until}) autorespond with {message}",
         "Auto-answer incoming mail with {message} till {until}"],
        lambda db, p: [_a("set_out_of_office", until=p["until"], message=p["message"])]),
    "leave_with_auto_reply": (
        {"start": "date", "end": "date2", "kind": "kind", "message": "ooo"},
        "Request {kind} leave from {start} to {end} and set my out-of-office to '{message}'",
        ["I'm away {start}–{end} ({kind}); file the absence and switch on the autoresponder: {message}",
         "Book time off, {kind}, {start} through {end}, plus an automatic answer: {message}",
         "Register an absence {start} – {end}, {kind}, and have mail answered with {message}"],
        lambda db, p: [_a("request_leave", start=p["start"], end=p["end"], kind=p["kind"]),
                       _a("set_out_of_office", until=p["end"], message=p["message"])]),
    "order_supplies": (
        {"item": "item", "quantity": "quantity"},
        "Order {quantity} {item} from the office supplies catalog",
        ["We're running low on {item}, get {quantity} more", "Purchase {quantity} {item} for the team",
         "Buy {quantity} {item}, stock is nearly gone"],
        lambda db, p: [_a("order_supplies", item=p["item"], quantity=p["quantity"])]),
    "create_ticket": (
        {"category": "category", "summary": "summary"},
        "Open an IT ticket in category {category}: {summary}",
        ["Report a problem to tech support ({category}) — {summary}",
         "Log an issue with the helpdesk about {summary}, type {category}",
         "Raise a {category} fault: {summary}"],
        lambda db, p: [_a("create_ticket", category=p["category"], summary=p["summary"])]),
    "post_to_channel": (
        {"channel": "channel", "text": "post"},
        "Post '{text}' in the {channel} channel",
        ["Announce {text} on {channel}", "Tell everyone over in {channel}: {text}",
         "Broadcast to {channel} that {text}"],
        lambda db, p: [_a("post_to_channel", channel=p["channel"], text=p["text"])]),
    "join_channel": (
        {"channel": "channel"},
        "Join the {channel} channel",
        ["Subscribe me to {channel}", "I want to follow {channel} conversations", "Add me as a member of {channel}"],
        lambda db, p: [_a("join_channel", channel=p["channel"])]),
    "leave_channel": (
        {"channel": "channel"},
        "Leave the {channel} channel",
        ["Unsubscribe me from {channel}", "Stop following {channel}; take me out", "Quit {channel} for me"],
        lambda db, p: [_a("leave_channel", channel=p["channel"])]),
    "set_reminder": (
        {"text": "remind", "at": "time"},
        "Remind me to {text} at {at}",
        ["Ping me {at} about: {text}", "Nudge me {at}: {text}", "At {at} alert me so I {text}"],
        lambda db, p: [_a("set_reminder", text=p["text"], at=p["at"])]),
    "add_contact": (
        {"name": "contact", "email": "contact_email"},
        "Add {name} with email {email} to my contacts",
        ["Save {name} ({email}) in the address book", "Store {email} as {name} among people I know",
         "Keep {name}, reachable at {email}, on file"],
        lambda db, p: [_a("add_contact", name=p["name"], email=p["email"])]),
    "update_phone": (
        {"phone": "phone"},
        "Update my phone number to {phone}",
        ["My new mobile is {phone}; change it on my profile", "Reach me at {phone} from now on; fix the directory entry",
         "Replace the digits people call me on with {phone}"],
        lambda db, p: [_a("update_phone", phone=p["phone"])]),
    "send_document_link": (
        {"title": "doc", "name": "name"},
        "Send {name} the link to the document '{title}'",
        ["Pass the URL of {title} along to {name}", "{name} needs the web address of {title}; forward it",
         "Get {title}'s address over to {name}"],
        lambda db, p: [_a("find_document", title=p["title"]), _a("find_colleague", name=p["name"]),
                       _a("send_message", to=_email(db, p["name"]), subject=p["title"],
                          body=_record(db, "documents", p["title"])["link"])]),
    "cancel_booking": (
        {"room": "room", "date": "booking_date"},
        "Cancel my booking of the {room} room on {date}",
        ["Release {room} for {date}, we don't need it", "Free up {room} on {date}",
         "Give {room} back for {date}"],
        lambda db, p: [_a("list_bookings", date=p["date"]),
                       _a("cancel_booking", booking_id=next(b["booking_id"] for b in db["bookings"].values()
                                                            if b["room"] == p["room"]))]),
    "reschedule_meeting": (
        {"title": "event", "date": "event_date", "new_date": "date", "time": "time"},
        "Move the meeting '{title}' from {date} to {new_date} at {time}",
        ["Push {title} back: instead of {date}, hold it {new_date} {time}",
         "Shift {title} ({date}) over to {new_date}, {time}",
         "{title} can't happen {date}; rebook it for {new_date} {time}"],
        lambda db, p: [_a("list_events", date=p["date"]),
                       _a("cancel_event", event_id=_event(db, p["title"])["event_id"]),
                       _a("schedule_meeting", attendees=_event(db, p["title"])["attendees"], title=p["title"],
                          date=p["new_date"], time=p["time"])]),
    "share_and_comment": (
        {"title": "doc", "name": "name", "role": "role", "text": "comment"},
        "Share the document '{title}' with {name} as {role} and comment '{text}' on it",
        ["Give {name} {role} rights on {title}, then leave the remark {text}",
         "Let {name} into {title} ({role}) and annotate it: {text}",
         "{name} gets {role} permission for {title}; note {text} in its margin"],
        lambda db, p: [_a("find_document", title=p["title"]), _a("find_colleague", name=p["name"]),
                       _a("share_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          email=_email(db, p["name"]), role=p["role"]),
                       _a("comment_on_document", doc_id=_record(db, "documents", p["title"])["doc_id"],
                          text=p["text"])]),
}


def _draw(slot: str, split: str, db: dict[str, Any], rng: random.Random, drawn: dict[str, Any]) -> Any:
    """One value for ``slot`` from ``split``'s half of its pool (or made for the split)."""
    if slot == "date":
        return rng.choice(DATES[split])
    if slot == "date2":  # a later day than the start date
        return rng.choice([d for d in DATES[split] if d > drawn.get("start", "")] or ["2026-06-30"])
    if slot == "time":
        return f"{rng.randrange(9, 17)}:{rng.choice(['00', '30'])}"
    if slot == "amount":
        return round(rng.uniform(8, 400), 2)
    if slot == "quantity":
        return rng.randrange(2, 40)
    if slot == "phone":
        return f"+31 6 {rng.randrange(1000, 9999)} {rng.randrange(1000, 9999)}"
    if slot == "event_date":
        return _event(db, drawn["title"])["date"]
    if slot == "booking_date":
        return next(b["date"] for b in db["bookings"].values() if b["room"] == drawn["room"])
    if slot == "contact_email":
        return f"{drawn['name'].lower()}@{rng.choice(POOLS['contact_domain'][split])}"
    return rng.choice(POOLS[slot][split])


def _params(workflow: str, split: str, db: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    slots = WORKFLOWS[workflow][0]
    params: dict[str, Any] = {}
    for name, slot in slots.items():
        params[name] = _draw(slot, split, db, rng, params)
    return params


def _text(template: str, params: dict[str, Any]) -> str:
    return template.format(**{k: str(v) for k, v in params.items()})


def office_tasks(seed: int = SUITE_SEED) -> list[Task]:
    rng = random.Random(f"office-suite-{seed}")
    world = OfficeWorld()
    world.reset(WORLD_SEED)
    db = world.db
    tasks: list[Task] = []

    def add(split: str, n: int, workflow: str, params: dict[str, Any], text: str) -> None:
        gold = WORKFLOWS[workflow][3](db, params)
        check = OfficeWorld()
        check.reset(WORLD_SEED)
        failed = [r for r in check.replay(gold) if r["error"]]
        if failed:
            raise RuntimeError(f"the gold actions of {workflow} ({split}) fail: {failed[0]['error']}")
        tasks.append(Task(id=f"office-{split}-{n:03d}-{workflow}", world="office", instruction=text, params=params,
                          split=split, workflow=workflow, gold=gold, seed=WORLD_SEED))  # type: ignore[arg-type]

    trains: dict[str, str] = {}
    for n, workflow in enumerate(WORKFLOWS, 1):
        params = _params(workflow, "train", db, rng)
        trains[workflow] = _text(WORKFLOWS[workflow][1], params)
        add("train", n, workflow, params, trains[workflow])
    n = 0
    for workflow, (_slots, _train, queries, _gold) in WORKFLOWS.items():
        for template in queries[:QUERIES_PER_WORKFLOW]:
            n += 1
            for _ in range(MAX_DRAWS):
                params = _params(workflow, "test", db, rng)
                text = _text(template, params)
                if not shared_content_words(text, trains[workflow]):
                    break
            else:
                shared = shared_content_words(text, trains[workflow])
                raise RuntimeError(f"{workflow}: the rewording {template!r} shares {sorted(shared)} with its "
                                   "train request whatever the values; reword it")
            add("test", n, workflow, params, text)
    return tasks
