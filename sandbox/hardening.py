"""Process-level defence in depth for the worker (Linux).

Applied by the worker to itself after it has imported everything it will ever need and
before it reads any skill code. Every step is best effort and reported, because which
ones hold depends on the platform and on whether the host runs as root; see
``sandbox/README.md``. None of these steps is the primary barrier (the restricted
language is); they bound what an escape from the language could do.
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
from typing import Any

NOBODY = 65534

PR_SET_DUMPABLE = 4
PR_SET_SECCOMP = 22
PR_SET_NO_NEW_PRIVS = 38
SECCOMP_MODE_FILTER = 2
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000

# x86_64 system calls the worker never needs once it runs skill code. An escaped attacker
# gets EPERM for each: no files opened, created, removed or re-permissioned, no sockets,
# no new processes or programs, no signals or ptrace to other processes, no namespace,
# mount, privilege, kernel-module or clock changes.
_DENIED_X86_64 = {
    "open": 2, "openat": 257, "creat": 85, "openat2": 437, "open_by_handle_at": 304,
    "name_to_handle_at": 303, "socket": 41, "connect": 42, "accept": 43, "accept4": 288,
    "bind": 49, "listen": 50, "socketpair": 53, "clone": 56, "fork": 57, "vfork": 58,
    "clone3": 435, "execve": 59, "execveat": 322, "kill": 62, "tkill": 200, "tgkill": 234,
    "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "ptrace": 101,
    "process_vm_readv": 310, "process_vm_writev": 311, "unlink": 87, "unlinkat": 263,
    "rename": 82, "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258,
    "rmdir": 84, "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266, "chmod": 90,
    "fchmod": 91, "fchmodat": 268, "chown": 92, "fchown": 93, "lchown": 94,
    "fchownat": 260, "truncate": 76, "ftruncate": 77, "mknod": 133, "mknodat": 259,
    "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261, "setxattr": 188,
    "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
    "fremovexattr": 199, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "unshare": 272, "setns": 308, "open_tree": 428, "move_mount": 429, "fsopen": 430,
    "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442, "setuid": 105,
    "setgid": 106, "setreuid": 113, "setregid": 114, "setresuid": 117, "setresgid": 119,
    "setgroups": 116, "setfsuid": 122, "setfsgid": 123, "capset": 126, "bpf": 321,
    "perf_event_open": 298, "userfaultfd": 323, "keyctl": 250, "add_key": 248,
    "request_key": 249, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "kexec_load": 246, "kexec_file_load": 320, "reboot": 169, "swapon": 167,
    "swapoff": 168, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "acct": 163, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    "clock_adjtime": 305, "quotactl": 179, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "memfd_create": 319, "prctl": 157, "personality": 135,
    "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438,
    "process_madvise": 440, "fanotify_init": 300, "vhangup": 153, "lookup_dcookie": 212,
}
_NR_PRLIMIT64 = 302  # allowed only on the calling process (pid 0): per-run limits
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_JGE_K = 0x35
_BPF_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_EPERM = 1


class _SockFilter(ctypes.Structure):
    _fields_ = [
        ("code", ctypes.c_ushort),
        ("jt", ctypes.c_ubyte),
        ("jf", ctypes.c_ubyte),
        ("k", ctypes.c_uint),
    ]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(_SockFilter))]


def _libc() -> Any:
    # The running interpreter already links libc: no find_library (it spawns processes).
    return ctypes.CDLL(None, use_errno=True)


def _assemble(program: list[tuple[int, Any, Any, int | str]]) -> list[tuple[int, int, int, int]]:
    labels: dict[str, int] = {}
    body: list[tuple[int, Any, Any, int]] = []
    for item in program:
        if item[0] == -1:  # label marker
            labels[str(item[3])] = len(body)
        else:
            body.append(item)  # type: ignore[arg-type]
    out = []
    for i, (code, jt, jf, k) in enumerate(body):
        def off(target: Any) -> int:
            if isinstance(target, str):
                delta = labels[target] - i - 1  # noqa: B023 - called at once, in this iteration
                if not 0 <= delta <= 255:
                    raise ValueError("seccomp jump out of range")
                return delta
            return int(target)
        out.append((code, off(jt), off(jf), int(k)))
    return out


#: What the zygote may still do that its children may not: create processes (the zygote
#: forks one child per run) and open a pidfd for each (the host signals a child through
#: it, so a recycled pid is never hit). Children add a second filter denying these too.
ZYGOTE_ALLOWED = frozenset({"clone", "fork", "vfork", "pidfd_open"})
_NR_SECCOMP = 317  # children install their filter with seccomp(2): prctl is denied
_SECCOMP_SET_MODE_FILTER = 1


def zygote_denied() -> frozenset[int]:
    return frozenset(nr for name, nr in _DENIED_X86_64.items() if name not in ZYGOTE_ALLOWED)


def child_denied() -> frozenset[int]:
    return frozenset(_DENIED_X86_64.values())


def seccomp_program(denied: frozenset[int] | None = None) -> list[tuple[int, int, int, int]]:
    p: list[tuple[int, Any, Any, Any]] = [
        (_BPF_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_BPF_JEQ_K, 0, "kill", _AUDIT_ARCH_X86_64),
        (_BPF_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (_BPF_JGE_K, "deny", 0, _X32_SYSCALL_BIT),
        (_BPF_JEQ_K, 0, "list", _NR_PRLIMIT64),
        (_BPF_LD_W_ABS, 0, 0, 16),  # args[0], low half
        (_BPF_JEQ_K, 0, "deny", 0),
        (_BPF_LD_W_ABS, 0, 0, 20),  # args[0], high half
        (_BPF_JEQ_K, "allow", "deny", 0),
        (-1, 0, 0, "list"),
        (_BPF_LD_W_ABS, 0, 0, 0),
    ]
    for nr in sorted(child_denied() if denied is None else denied):
        p.append((_BPF_JEQ_K, "deny", 0, nr))
    p += [
        (-1, 0, 0, "allow"),
        (_BPF_RET_K, 0, 0, _RET_ALLOW),
        (-1, 0, 0, "deny"),
        (_BPF_RET_K, 0, 0, _RET_ERRNO | _EPERM),
        (-1, 0, 0, "kill"),
        (_BPF_RET_K, 0, 0, _RET_KILL_PROCESS),
    ]
    return _assemble(p)


_PROGRAMS: dict[Any, Any] = {}


def _program(denied: frozenset[int] | None) -> Any:
    """The compiled filter (cached: the zygote builds the children's once, before forking)."""
    prog = _PROGRAMS.get(denied)
    if prog is None:
        insns = seccomp_program(denied)
        arr = (_SockFilter * len(insns))(*[_SockFilter(*i) for i in insns])
        prog = _SockFprog(len(insns), ctypes.cast(arr, ctypes.POINTER(_SockFilter)))
        prog._keep = arr  # type: ignore[attr-defined]
        _PROGRAMS[denied] = prog
    return prog


_LIBC: Any = None


def prepare_child() -> None:
    """Load libc and build the children's filter in the zygote, so a child pays neither."""
    global _LIBC
    if platform.system() == "Linux":
        _LIBC = _libc()
        if platform.machine() in ("x86_64", "AMD64"):
            _program(child_denied())


def install_seccomp(libc: Any, denied: frozenset[int] | None = None,
                    via_syscall: bool = False) -> str:
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"unsupported on {platform.system()}/{platform.machine()}"
    prog = _program(denied)
    if via_syscall:
        rc = libc.syscall(_NR_SECCOMP, _SECCOMP_SET_MODE_FILTER, 0, ctypes.byref(prog))
    else:
        rc = libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0)
    if rc != 0:
        return f"failed: {os.strerror(ctypes.get_errno())}"
    return "on"


def _set(limit: int, soft: int, hard: int) -> None:
    resource.setrlimit(limit, (soft, hard))


def _fd_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


#: The zygote's RLIMIT_NOFILE. It holds few descriptors itself, but the kernel caps the
#: descriptors a user (nobody, for every zygote on the machine) has in flight on Unix
#: sockets by the sender's RLIMIT_NOFILE: with 13, handing children's pipes to the host
#: failed (ETOOMANYREFS) as soon as a few Sandboxes were open.
ZYGOTE_NOFILE = 4096


def harden(root_dir: str, *, keep_fds: tuple[int, ...], seccomp: bool = True) -> dict[str, Any]:
    """Lock the zygote down (stage 1). Returns what was applied (for the host to report).

    Everything but the two limits that would stop it forking its per-run children:
    ``RLIMIT_NPROC`` and the fork/clone system calls. Each child then applies
    :func:`harden_child` (stage 2) before it reads any skill code.
    ``seccomp=False`` exists only so the tests can probe the other layers on their own.
    """
    report: dict[str, Any] = {}
    try:  # before chroot: /proc is not visible afterwards
        open_fds: list[int] | None = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
    except OSError:
        open_fds = None
    libc = _libc() if platform.system() == "Linux" else None
    is_root = os.geteuid() == 0

    # Namespaces (root only): an empty network namespace means no network at all.
    if libc is not None and is_root:
        rc = libc.unshare(CLONE_NEWNET | CLONE_NEWIPC)
        report["netns"] = "on" if rc == 0 else f"failed: {os.strerror(ctypes.get_errno())}"
    else:
        report["netns"] = "skipped (not root)" if libc is not None else "unsupported"

    # Filesystem view: chroot into an empty directory (root only), else just cwd there.
    try:
        if is_root:
            os.chroot(root_dir)
            os.chdir("/")
            report["chroot"] = "on"
        else:
            os.chdir(root_dir)
            report["chroot"] = "skipped (not root); cwd is an empty temp dir"
    except OSError as exc:
        report["chroot"] = f"failed: {exc}"
        try:
            os.chdir(root_dir)
        except OSError:
            pass
    os.umask(0o777)

    # Identity: root drops to nobody with no supplementary groups.
    if is_root:
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            report["uid"] = os.getuid()
        except OSError as exc:
            report["uid"] = f"drop failed: {exc}"
    else:
        report["uid"] = os.getuid()
    report["gid"] = os.getgid()
    report["groups"] = os.getgroups()

    if libc is not None:
        report["no_new_privs"] = (
            "on" if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 else "failed"
        )
        libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)

    # Static limits (hard = soft: cannot be raised again).
    top_fd = max(keep_fds) if keep_fds else 2
    static = {
        "RLIMIT_FSIZE": 0,
        "RLIMIT_CORE": 0,
        "RLIMIT_MEMLOCK": 0,
        "RLIMIT_MSGQUEUE": 0,
        "RLIMIT_NOFILE": max(top_fd + 1, min(ZYGOTE_NOFILE, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1])),
    }
    applied: dict[str, object] = {}
    for name, value in static.items():
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            _set(limit, value, value)
            applied[name] = value
        except (OSError, ValueError) as exc:
            applied[name] = f"failed: {exc}"
    report["rlimits"] = applied

    report["fds"] = [fd for fd in (open_fds or []) if _fd_open(fd)]
    if not seccomp:
        report["seccomp"] = "off (test only)"
    else:
        report["seccomp"] = (
            install_seccomp(libc, zygote_denied()) if libc is not None else "unsupported"
        )
    return report


def harden_child(keep_fds: tuple[int, ...], *, seccomp: bool = True) -> dict[str, Any]:
    """Stage 2, in each per-run child right after the fork: no new processes (``NPROC=0``
    and a second seccomp filter denying fork/clone), no file descriptors beyond those it
    holds. Filters stack: the child is bound by the zygote's filter and its own."""
    report: dict[str, Any] = {}
    applied: dict[str, Any] = {}
    static = {"RLIMIT_NPROC": 0, "RLIMIT_NOFILE": (max(keep_fds) if keep_fds else 2) + 1}
    for name, value in static.items():
        limit = getattr(resource, name, None)
        if limit is None:
            continue
        try:
            _set(limit, value, value)
            applied[name] = value
        except (OSError, ValueError) as exc:
            applied[name] = f"failed: {exc}"
    report["rlimits"] = applied
    if not seccomp:
        report["seccomp"] = "off (test only)"
    elif platform.system() == "Linux":
        libc = _LIBC if _LIBC is not None else _libc()
        report["seccomp"] = install_seccomp(libc, child_denied(), via_syscall=True)
    else:
        report["seccomp"] = "unsupported"
    return report
