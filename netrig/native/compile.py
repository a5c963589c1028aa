"""Compile netrig's C and BPF sources at first use, into a cache keyed by their content.

    helper = build.helper()             # path of the netrig-xdp program
    obj = build.bpf_object("xdp_stamp") # path of xdp_stamp.bpf.o

The file names carry a hash of the source (and of the compiler command), so an edited source
is rebuilt and two versions never overwrite each other; a build writes a temporary file and
renames it, so parallel first uses never see half a file. BPF programs use only UAPI headers
(linux/bpf.h, libbpf's bpf_helpers.h): XDP needs no kernel type layouts, so no BTF or CO-RE.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

SRC_DIR = os.path.dirname(os.path.abspath(__file__))
CACHE_DIR = os.environ.get("NETRIG_CACHE", "/var/cache/netrig/native")
PACKAGES = {"clang": "clang", "libbpf": "libbpf-dev", "headers": "linux-libc-dev"}
BPF_FLAGS = ["-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"]
HELPER_FLAGS = ["-O2", "-Wall"]
HELPER_LIBS = ["-lbpf"]


class BuildError(Exception):
    """The native code could not be built (a missing compiler or header names its package)."""


def missing() -> list[str]:
    """Debian packages needed to build the native code that this host lacks."""
    out = []
    if shutil.which("clang") is None:
        out.append(PACKAGES["clang"])
    if not os.path.exists("/usr/include/bpf/bpf_helpers.h"):
        out.append(PACKAGES["libbpf"])
    if not os.path.exists("/usr/include/linux/bpf.h"):
        out.append(PACKAGES["headers"])
    return out


def _cached(source: str, suffix: str, flags: list[str], libs: list[str]) -> str:
    path = os.path.join(SRC_DIR, source)
    with open(path, "rb") as fh:
        digest = hashlib.sha256(fh.read() + " ".join(flags + libs).encode()).hexdigest()[:16]
    stem = source.split(".")[0]
    target = os.path.join(CACHE_DIR, f"{stem}-{digest}{suffix}")
    if os.path.exists(target):
        return target
    lacking = missing()
    if lacking:
        raise BuildError(
            f"building {source} needs {', '.join(lacking)}; install with: "
            f"apt-get install {' '.join(lacking)}"
        )
    os.makedirs(CACHE_DIR, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=CACHE_DIR, prefix=f".{stem}-")
    os.close(fd)
    try:
        argv = ["clang", *flags, path, "-o", tmp, *libs]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise BuildError(f"clang failed on {source}:\n{done.stderr[-4000:]}")
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def bpf_object(name: str) -> str:
    """Path of the compiled `name.bpf.c` (an ELF object that libbpf loads)."""
    return _cached(f"{name}.bpf.c", ".o", BPF_FLAGS, [])


def helper() -> str:
    """Path of the compiled netrig-xdp program (libbpf loader, UDP sender and receiver)."""
    return _cached("netrig_xdp.c", "", HELPER_FLAGS, HELPER_LIBS)
