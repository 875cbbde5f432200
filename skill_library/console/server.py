"""Serving the console: loopback by default, the login URL, uvicorn."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skill_library.library import SkillLibrary

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "is_loopback", "login_url", "serve"]

#: where ``skills ui`` listens unless told otherwise
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or address) resolves only to loopback addresses."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos)


def login_url(host: str, port: int, token: str) -> str:
    """The one-time login URL for a console on ``host:port``."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/login?token={token}"


def serve(
    library: "SkillLibrary",
    *,
    actor_id: str,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    allow_remote: bool = False,
    announce: Callable[[str], None] = print,
) -> None:
    """Serve the console over ``library`` until interrupted, acting as ``actor_id``.

    Refuses an actor the library has not registered (:class:`PermissionDenied`: it could
    write nothing) and (``ValueError``) a host that is not loopback unless ``allow_remote``; with it,
    ``announce`` gets a warning first (the console speaks plain HTTP: anyone on the path
    sees the session cookie). ``announce`` then gets the one-time login URL.
    """
    import uvicorn

    from skill_library.console.app import create_app
    from skill_library.governance.actors import check_claimable

    check_claimable(actor_id)  # the console acts for a person, never as the library's own actors
    library.resolve_actor(actor_id)
    if not is_loopback(host):
        if not allow_remote:
            raise ValueError(
                f"refusing to serve the console on {host}, which is not a loopback address: "
                "pass --allow-remote to do it anyway"
            )
        announce(f"warning: serving on {host}, reachable from other machines over plain HTTP; "
                 "anyone who can see the traffic can take the session")
    app = create_app(library, actor_id=actor_id)
    token = app.state.console.sessions.token
    announce(f"review console for {library.location}, acting as {actor_id}")
    announce(f"open this URL to log in (it works once): {login_url(host, port, token)}")
    uvicorn.run(app, host=host, port=port, log_level="warning")
