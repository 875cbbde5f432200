"""The review console: a local web app for the human side of governance and transparency.

``skills ui --dir D`` (:func:`serve`) starts it on loopback and prints a one-time login
URL; the pages (Skills, a skill, Review queue, Canaries, Subjects) call the library's
facade only, as the actor who started it. Needs the ``console`` extra (starlette,
uvicorn, pygments) and ``plot`` (matplotlib, for the charts).
"""

from __future__ import annotations

from skill_library.console.app import Console, create_app
from skill_library.console.server import DEFAULT_HOST, DEFAULT_PORT, is_loopback, login_url, serve

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "Console", "create_app", "is_loopback", "login_url", "serve"]
