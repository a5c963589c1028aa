"""Named network namespaces made in-process, the way `ip netns add` makes them.

A namespace is created by a worker thread calling unshare(CLONE_NEWNET) (or entering one
of the SpareNamespaces made ahead) and bind-mounting /proc/thread-self/ns/net onto
/run/netns/NAME, so `ip netns`, `ip -n` and `nsenter` see it; the names of a lab are hard
links of one file (make_mount_points). No process is spawned per namespace (that costs
~10 ms each; this costs ~0.5 ms).

Namespaces are entered only from worker threads (setns is per thread for the network
namespace); the main thread never leaves the host's namespace.
"""

from __future__ import annotations

import ctypes
import errno
import os
import queue
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, TypeVar, cast

from netrig.base import forked, stopsignals

if TYPE_CHECKING:
    from concurrent.futures import Future

NETNS_RUN_DIR = "/run/netns"
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_SLAVE = 1 << 19
MS_SHARED = 1 << 20
MNT_DETACH = 0x2

# the C library this process already has (ctypes.util.find_library would import tempfile,
# shutil and subprocess to look for it: ~4 ms of every start)
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_char_p,
    ctypes.c_ulong,
    ctypes.c_void_p,
]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.setns.argtypes = [ctypes.c_int, ctypes.c_int]

T = TypeVar("T")


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def umount(target: str) -> None:
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def setns(fd: int, nstype: int = CLONE_NEWNET) -> None:
    _check(_libc.setns(fd, nstype), "setns")


def ns_path(name: str) -> str:
    return os.path.join(NETNS_RUN_DIR, name)


def exists(name: str) -> bool:
    return os.path.exists(ns_path(name))


def list_names() -> list[str]:
    try:
        return sorted(os.listdir(NETNS_RUN_DIR))
    except FileNotFoundError:
        return []


def ns_inode(name: str) -> int | None:
    """The namespace's identity (nsfs inode) if NAME is a mounted namespace, else None."""
    try:
        st = os.stat(ns_path(name))
    except OSError:
        return None
    return st.st_ino if st.st_ino and _is_nsfs(st.st_dev) else None


_NSFS_DEV: int | None = None


def _is_nsfs(dev: int) -> bool:
    global _NSFS_DEV
    if _NSFS_DEV is None:
        _NSFS_DEV = os.stat("/proc/self/ns/net").st_dev
    return dev == _NSFS_DEV


def prepare_run_dir() -> None:
    """Make /run/netns a shared mount point, as iproute2 does, so mounts propagate."""
    os.makedirs(NETNS_RUN_DIR, mode=0o755, exist_ok=True)
    try:
        mount("", NETNS_RUN_DIR, "none", MS_SHARED | MS_REC)
    except OSError:
        mount(NETNS_RUN_DIR, NETNS_RUN_DIR, "none", MS_BIND | MS_REC)
        mount("", NETNS_RUN_DIR, "none", MS_SHARED | MS_REC)


def name_cost(samples: int = 5) -> float:
    """Median seconds to create (and remove) a file in NETNS_RUN_DIR now, as naming a
    namespace does: on a disk filesystem (not a tmpfs) 0.05-0.9 ms on this VM kind's ext4,
    rising for a few seconds after many names were removed."""
    import time

    took = []
    for i in range(samples):
        path = os.path.join(NETNS_RUN_DIR, f".netrig-probe-{os.getpid()}-{i}")
        start = time.perf_counter()
        os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
        took.append(time.perf_counter() - start)
        os.unlink(path)
    return sorted(took)[samples // 2]


def create_here(name: str) -> None:
    """Called in a worker thread: move that thread into a new namespace and name it."""
    path = ns_path(name)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0)
    os.close(fd)
    try:
        unshare(CLONE_NEWNET)
        mount("/proc/thread-self/ns/net", path, "none", MS_BIND)
    except OSError:
        os.unlink(path)
        raise


LINKS_PER_FILE = 4096  # names per file (ext4 allows 65,000 links to one inode)


def make_mount_points(names: list[str], made: list[str] | None = None) -> None:
    """The files under /run/netns that these namespaces will be mounted on (mount_here),
    every one a new name (hard link) of one empty file. Why: creating a file makes ext4
    allocate an inode, 0.1-0.5 ms each right after a lab's were removed (it steps over
    recently freed inodes one by one; measured 100 files 13-41 ms), where a link only adds
    a directory entry (100 in 0.7-1.2 ms). A mount sits on a name, not on the file, so each
    name is a mount point of its own; `ip netns del` and our teardown unmount and unlink it
    as any other. FileExistsError if a name is taken; `made` gets each name once its file
    is there (what a failure left made)."""
    anchor = ""
    for i, name in enumerate(names):
        path = ns_path(name)
        if i % LINKS_PER_FILE == 0:
            os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL, 0))
            anchor = path
        else:
            os.link(anchor, path)
        if made is not None:
            made.append(name)


def mount_here(name: str) -> None:
    """Called in a worker thread: name its namespace, on a file make_mount_points made."""
    mount("/proc/thread-self/ns/net", ns_path(name), "none", MS_BIND)


def adopt(fd: int) -> None:
    """Move the calling (worker) thread into the namespace fd holds, and close fd."""
    try:
        setns(fd)
    finally:
        os.close(fd)


class SpareNamespaces:
    """Unnamed network namespaces made ahead by a thread of their own while `netrig up`
    still imports its model, reads and plans the file. That is Python's work, and making a
    namespace is the kernel's (~0.35 ms each): on a second core the two overlap, and the
    build names these (adopt, mount_here) instead of making new ones. Measured: a 100-node
    ring's 100 all ready when its build starts; its namespace phase 40-55 -> 14-21 ms.

    Nothing is named, mounted or recorded here: each namespace is held only by a
    descriptor of this process and has nothing but a loopback that is down, so every one
    not adopted, all of them when the file turns out wrong or the process is killed (-9
    too), is freed by the kernel with its last descriptor. `count` is a hint (read from the
    file, or the last run of this command line's: netrig.rig.ahead; unchecked): at most
    MAX, and a quarter of the descriptors the process may open."""

    MAX = 1024  # bounds the work thrown away when a large file turns out wrong
    # while the thread runs: it needs the GIL for a moment between two system calls, and at
    # Python's default 5 ms a busy main thread (importing) let it make 53-63 of 100
    SWITCH_INTERVAL = 0.0002

    def __init__(self, count: int) -> None:
        import resource

        self._allowed = resource.getrlimit(resource.RLIMIT_NOFILE)[0] // 4
        self.count = max(0, min(count, self.MAX, self._allowed))
        self.error: OSError | None = None  # why it stopped early (the build makes the rest)
        self._made = 0  # by the thread (taken ones included)
        self._ready: list[int] = []  # descriptors (list.append and pop are atomic)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def retarget(self, count: int) -> None:
        """Make `count` in all (bounded as in the constructor), also while the thread runs:
        it stops when it has made that many; those made beyond are freed by `close`. A
        thread that had already finished is started again for the rest (a hint too small);
        should it be just finishing, the build makes what is missing."""
        self.count = max(0, min(count, self.MAX, self._allowed))
        thread = self._thread
        if (
            thread is not None
            and not thread.is_alive()
            and self.error is None
            and not self._stop.is_set()
            and self._made < self.count
        ):
            self._thread = None
            self.start()

    def start(self) -> SpareNamespaces:
        if not self.count or self._thread is not None:
            return self
        # the thread keeps the signals that end `up` blocked (it inherits the mask), so the
        # kernel hands them to the main thread
        try:
            with stopsignals.held():
                self._thread = forked.quiet(
                    threading.Thread(target=self._make, name="netrig-spare", daemon=True)
                )
                self._thread.start()
        except BaseException:  # a signal delivered as they were released: __exit__ won't run
            self.close()
            raise
        return self

    def _make(self) -> None:  # system calls only (forked.quiet): no imports, no locks
        interval = sys.getswitchinterval()
        sys.setswitchinterval(self.SWITCH_INTERVAL)
        try:
            while self._made < self.count:  # read each time: retarget() may change it
                if self._stop.is_set():
                    return
                self._made += 1
                unshare(CLONE_NEWNET)
                self._ready.append(os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC))
        except OSError as exc:  # e.g. out of namespaces: the build makes what it lacks
            self.error = exc
        finally:
            sys.setswitchinterval(interval)

    def wait(self) -> int:
        """Wait until all `count` are made (or making failed); how many are ready."""
        if self._thread is not None:
            self._thread.join()
        return len(self._ready)

    def stop(self) -> int:
        """Make no more (waits for the one being made); how many are ready."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        return len(self._ready)

    def take(self) -> int | None:
        """The descriptor of a ready namespace (the taker closes it), or None."""
        try:
            return self._ready.pop()
        except IndexError:
            return None

    def close(self) -> None:
        """Stop, and let go of every namespace not taken (the kernel frees them)."""
        self.stop()
        while (fd := self.take()) is not None:
            os.close(fd)

    def __enter__(self) -> SpareNamespaces:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def delete(name: str) -> bool:
    """Unmount and remove a named namespace; the kernel frees it once nothing holds it."""
    path = ns_path(name)
    with suppress(OSError):
        umount(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def open_fd(name: str) -> int:
    return os.open(ns_path(name), os.O_RDONLY | os.O_CLOEXEC)


def run_in_thread(fn: Callable[[], T], cancel: threading.Event | None = None) -> T:
    """Run fn in a fresh thread (so it may setns/unshare freely) and return its result.

    If the caller is interrupted (Ctrl-C) while waiting, `cancel` is set and the thread is
    waited for before the interruption goes on, so nothing is created behind the back of
    the clean-up that follows.
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller
            box["error"] = exc

    thread = threading.Thread(target=target, name="netrig-netns")
    thread.start()
    try:
        thread.join()
    except BaseException:
        if cancel is not None:
            cancel.set()
        thread.join()
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@contextmanager
def entered(fd_or_name: int | str) -> Iterator[None]:
    """Inside a worker thread: enter a namespace, and go back to the previous one after."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    fd = open_fd(fd_or_name) if isinstance(fd_or_name, str) else fd_or_name
    try:
        setns(fd)
        yield
    finally:
        setns(home)
        os.close(home)
        if isinstance(fd_or_name, str):
            os.close(fd)


def in_netns(name: str, fn: Callable[[], T]) -> T:
    """Run fn inside namespace NAME, from a worker thread; return its result."""

    def inside() -> T:
        with entered(name):
            return fn()

    return run_in_thread(inside)


def write_sysctl(key: str, value: str | int) -> None:
    """Write a sysctl of the calling thread's network namespace (net.* keys are per-ns)."""
    with open("/proc/sys/" + key.replace(".", "/"), "w") as fh:
        fh.write(str(value))


class SysctlWriter:
    """Writes sysctls of the calling thread's namespace (per thread: its own instance) in
    many new namespaces, through a private procfs that no mount table shows.

    Why: the first lookup of /proc/sys/net/ipv4 (or ipv6, core…) in a new namespace walks
    one dentry hash chain holding that directory of every namespace looked up before on the
    same procfs, comparing each under the kernel's sysctl lock: ~0.36 µs per namespace,
    1.3 ms a write at 4,000 namespaces. A procfs of our own (fsopen/fsmount, detached: never
    attached to a mount table, gone with its descriptor; what it shows under sys/net is the
    calling thread's namespace, as /proc/sys does) renewed every RENEW namespaces keeps that
    chain short: ~40 µs a namespace at any count (measured 4,000 namespaces: 1.28 ms -> 33
    µs a write in the last thousand). Where the new mount API is refused (a kernel before
    5.2, a seccomp filter), it writes through /proc/sys."""

    RENEW = 32  # namespaces per procfs: its mount and unmount (~0.15 ms) against the chain

    def __init__(self) -> None:
        self._root: int | None = None  # descriptor of the detached procfs
        self._namespaces = 0
        self._fallback = False

    def new_namespace(self) -> None:
        """The calling thread is in a namespace not written to before."""
        self._namespaces += 1
        if self._namespaces > self.RENEW:
            self.close()
            self._namespaces = 1

    def write(self, key: str, value: str | int) -> None:
        path = "sys/" + key.replace(".", "/")
        if self._root is None and not self._fallback:
            self._root = _detached_proc()
            self._fallback = self._root is None
        try:
            if self._root is None:
                fd = os.open("/proc/" + path, os.O_WRONLY)
            else:
                fd = os.open(path, os.O_WRONLY, dir_fd=self._root)
            try:
                os.write(fd, str(value).encode())
            finally:
                os.close(fd)
        except OSError as exc:  # which key: "[Errno 22] Invalid argument" said nothing
            why = exc.strerror or str(exc)
            if exc.errno in (errno.EACCES, errno.EPERM):  # e.g. net.core.rmem_max
                why += " (a key the kernel keeps for the host, not per network namespace)"
            raise OSError(exc.errno, f"sysctl {key} = {value}: {why}") from None

    def close(self) -> None:
        if self._root is not None:
            os.close(self._root)
            self._root = None


SYS_FSOPEN, SYS_FSCONFIG, SYS_FSMOUNT = 430, 431, 432  # every architecture numbers these alike
FSCONFIG_CMD_CREATE = 6


def _detached_proc() -> int | None:
    """A descriptor of a new procfs instance mounted nowhere, or None where refused."""
    fs = _libc.syscall(SYS_FSOPEN, b"proc", 1)  # FSOPEN_CLOEXEC
    if fs < 0:
        return None
    try:
        if _libc.syscall(SYS_FSCONFIG, fs, FSCONFIG_CMD_CREATE, None, None, 0) < 0:
            return None
        root = _libc.syscall(SYS_FSMOUNT, fs, 1, 0)  # FSMOUNT_CLOEXEC
        return root if root >= 0 else None
    finally:
        os.close(fs)


def read_sysctl(key: str) -> str:
    with open("/proc/sys/" + key.replace(".", "/")) as fh:
        return fh.read().strip()


class Worker:
    """A thread that runs submitted calls; namespace switches stay inside it."""

    def __init__(self, name: str = "netrig-worker") -> None:
        from concurrent.futures import Future  # (imports logging: only for the doctor's probes)

        self._future = Future
        self._calls: queue.Queue[tuple[Callable[[], object], Future[object]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (item := self._calls.get()) is not None:
            fn, fut = item
            try:
                fut.set_result(fn())
            except BaseException as exc:
                fut.set_exception(exc)

    def call(self, fn: Callable[[], T]) -> T:
        fut: Future[object] = self._future()
        self._calls.put((fn, fut))
        return cast("T", fut.result())  # what fn() returned

    def close(self) -> None:
        self._calls.put(None)
        self._thread.join()


@contextmanager
def scratch() -> Iterator[Worker]:
    """An unnamed throwaway namespace owned by one worker thread, for probes.

    It has no name in /run/netns, so a crash or kill -9 cannot leave it behind: the
    kernel frees it when the thread (and every socket opened in it) is gone.
    Child processes can enter it through `worker_ns_path`.
    """
    worker = Worker("netrig-scratch")
    try:
        worker.call(lambda: unshare(CLONE_NEWNET))
        yield worker
    finally:
        worker.close()


def worker_ns_path(worker: Worker) -> str:
    """A path to the worker thread's namespace, for nsenter-style use by a child process."""
    tid = worker.call(threading.get_native_id)
    return f"/proc/{os.getpid()}/task/{tid}/ns/net"
