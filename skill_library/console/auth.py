"""Who is using the console: the one-time login token, sessions, CSRF and the actor.

``skills ui`` prints a login URL holding a random token (as notebook servers do). The
token works once: opening it starts a session (a random id in an HttpOnly, SameSite=Strict
cookie) and is then spent, so a URL seen in a terminal's scrollback or a proxy log is no
key. Each session carries its own CSRF token, which every form sends back as a hidden
field; a POST without it, with a wrong one, or from another origin is refused.

The console acts as one actor, chosen when it starts (``--actor`` / ``SKILLS_ACTOR``,
default the OS user, as the CLI). Every write goes through the library's governance call
with that actor, which checks the actor's permissions and writes the audit event; the
console adds checks only for the writes that have no governance call of their own
(:data:`CONSOLE_PERMISSIONS`).
"""

from __future__ import annotations

import hmac
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from skill_library.errors import SkillLibraryError
from skill_library.governance.actors import ACTOR_ENV, Actor, Permission, os_user

__all__ = [
    "ACTOR_ENV",
    "CONSOLE_PERMISSIONS",
    "COOKIE_NAME",
    "CSRF_FIELD",
    "SESSION_SECONDS",
    "TOKEN_BYTES",
    "ConsoleRefusal",
    "Session",
    "Sessions",
    "default_actor_id",
    "has_permission",
]

#: bytes of randomness in the login token, session ids and CSRF tokens (URL-safe base64)
TOKEN_BYTES = 32
#: a session ends this long after it started (then log in again with a new ``skills ui``)
SESSION_SECONDS = 12 * 3600
#: the session cookie's name
COOKIE_NAME = "skills_console_session"
#: the hidden form field holding the session's CSRF token
CSRF_FIELD = "csrf"
#: console writes with no governance call of their own -> the permission they need, and why:
#: forgetting or opting a subject out changes what the library keeps about a person, outside
#: any skill's lifecycle, so only an administrator may do it from the console
CONSOLE_PERMISSIONS: dict[str, Permission] = {
    "forget": "skill.admin",
    "opt_out": "skill.admin",
}


class ConsoleRefusal(SkillLibraryError):
    """A request the console refuses (no session, bad CSRF token, missing permission); the
    message is shown to the user as it is."""

    def __init__(self, message: str, status_code: int = 403) -> None:
        super().__init__(message)
        self.status_code = status_code


def default_actor_id() -> str:
    """``SKILLS_ACTOR``, else the OS user (as the CLI)."""
    return os.environ.get(ACTOR_ENV) or os_user()


def has_permission(actor: Actor, permission: Permission) -> bool:
    """Whether ``actor`` holds ``permission`` (``skill.admin`` implies the others)."""
    return actor.can(permission)


@dataclass
class Session:
    """One logged-in browser: its id (the cookie), CSRF token and start time."""

    id: str
    csrf: str
    started: float = field(default_factory=time.time)
    #: what the last write did, shown once on the next page (kept here, not in the URL, so a
    #: crafted link cannot put words in the console's mouth)
    notice: str | None = None
    #: the last bulk write's refusals, by (name, version): shown once, each on its row
    refusals: dict[tuple[str, int], str] = field(default_factory=dict)

    def expired(self, now: float | None = None) -> bool:
        return (now if now is not None else time.time()) - self.started > SESSION_SECONDS

    def check_csrf(self, sent: str | None) -> None:
        """Refuse unless ``sent`` is this session's CSRF token."""
        if not sent or not hmac.compare_digest(sent.encode(), self.csrf.encode()):
            raise ConsoleRefusal("the form's CSRF token is missing or wrong: reload the page and try again")


class Sessions:
    """The login token and the sessions it opened (in memory: a restart logs everyone out)."""

    def __init__(self, token: str | None = None) -> None:
        self.token: str | None = token or secrets.token_urlsafe(TOKEN_BYTES)
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def login(self, token: str | None) -> Session:
        """Spend the one-time ``token`` and start a session; refuse a wrong or spent one."""
        with self._lock:
            expected = self.token
            if expected is None or not token or not hmac.compare_digest(token.encode(), expected.encode()):
                raise ConsoleRefusal(
                    "this login link is not valid (wrong, or already used): restart `skills ui` for a new one"
                )
            self.token = None
            session = Session(secrets.token_urlsafe(TOKEN_BYTES), secrets.token_urlsafe(TOKEN_BYTES))
            self._sessions[session.id] = session
            return session

    def get(self, session_id: str | None) -> Session | None:
        """The live session with this id, if any."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and session.expired():
                del self._sessions[session_id]
                return None
            return session

    def end(self, session_id: str) -> None:
        with self._lock:
            self._sessions.pop(session_id, None)


def same_origin(origin: str | None, host: str | None) -> bool:
    """Whether a request's ``Origin`` header (when sent) names the host it was sent to."""
    if not origin:
        return True
    if origin == "null" or not host:
        return False
    return urlsplit(origin).netloc.lower() == host.lower()
