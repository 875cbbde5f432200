"""Defence-in-depth probe: run by a hardened worker *as trusted code* (``selftest``).

It does what an attacker who had fully escaped the restricted language could try with
the whole of Python, and reports what the operating system allowed. Used by the tests.
"""

from __future__ import annotations

import os
import resource
import socket
from typing import Any


def _try(fn: Any) -> str:
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001
        return f"blocked: {type(exc).__name__}: {exc}"
    return "ALLOWED"


def _open_read() -> None:
    fd = os.open("/etc/passwd", os.O_RDONLY)
    os.close(fd)


def _open_write() -> None:
    fd = os.open("/tmp/sandbox-escape-probe", os.O_WRONLY | os.O_CREAT, 0o666)
    os.close(fd)


def _fork() -> None:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def _exec() -> None:
    os.execv("/bin/true", ["/bin/true"])


def _socket() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.close()


def _kill_init() -> None:
    os.kill(1, 0)


def _raise_nofile() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def _setuid_root() -> None:
    os.setuid(0)


def _unlink() -> None:
    os.unlink("/tmp")


def _listdir_root() -> None:
    os.listdir("/")


def probe() -> dict[str, str]:
    return {
        "open_read_etc_passwd": _try(_open_read),
        "open_write_tmp": _try(_open_write),
        "fork": _try(_fork),
        "exec": _try(_exec),
        "socket": _try(_socket),
        "kill_pid_1": _try(_kill_init),
        "raise_rlimit_nofile": _try(_raise_nofile),
        "setuid_0": _try(_setuid_root),
        "unlink": _try(_unlink),
        "listdir_root": _try(_listdir_root),
    }
