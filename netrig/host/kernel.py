"""Small kernel-talking helpers for the feature probes: netlink with error text, bpf(2).

Why not nlwire's RtnlSocket: a probe wants the kernel's own words when it refuses
("Unknown device type"), which arrive as extended-ack attributes nlwire does not read, and
it talks to more than rtnetlink (genetlink, nfnetlink). Each call is one request and its
answer; nothing here is meant for bulk work.

    with Netlink() as nl:                       # opened in a scratch namespace's thread
        reply = nl.send(RTM_NEWLINK, CREATE, ifinfo() + ...)
        if reply.ok: ...
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import platform
import socket
import struct
from dataclasses import dataclass, field

from netrig.lab.nlwire import (
    IFLA_IFNAME,
    IFLA_INFO_DATA,
    IFLA_INFO_KIND,
    IFLA_LINKINFO,
    NLM_F_ACK,
    NLM_F_CREATE,
    NLM_F_DUMP,
    NLM_F_EXCL,
    NLM_F_REQUEST,
    NLMSG_DONE,
    NLMSG_ERROR,
    RTM_GETLINK,
    RTM_NEWLINK,
    Request,
    attr,
    attr_str,
    attr_u32,
    ifinfo,
    parse_attrs,
)

NETLINK_ROUTE, NETLINK_NETFILTER, NETLINK_GENERIC = 0, 12, 16
SOL_NETLINK, NETLINK_EXT_ACK = 270, 11
NLM_F_CAPPED, NLM_F_ACK_TLVS = 0x100, 0x200
NLMSGERR_ATTR_MSG = 1
NLA_F_NESTED, NLA_F_NET_BYTEORDER = 0x8000, 0x4000
CREATE = NLM_F_CREATE | NLM_F_EXCL

IFLA_LINK = 5
IFLA_XDP = 43
IFLA_XDP_FD, IFLA_XDP_ATTACHED, IFLA_XDP_FLAGS, IFLA_XDP_PROG_ID = 1, 2, 3, 4
XDP_FLAGS_SKB_MODE, XDP_FLAGS_DRV_MODE = 2, 4
XDP_ATTACHED_NAMES = {0: "none", 1: "driver", 2: "generic", 3: "hardware", 4: "multi"}
VETH_INFO_PEER = 1

GENL_ID_CTRL, CTRL_CMD_GETFAMILY = 0x10, 3
CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME, CTRL_ATTR_VERSION = 1, 2, 3

_NLMSGHDR = struct.Struct("=IHHII")
_GENLMSGHDR = struct.Struct("=BBH")


@dataclass(frozen=True, slots=True)
class Reply:
    """The kernel's answer to one request: errno (0 = accepted), its message, any data."""

    code: int = 0
    message: str = ""
    data: list[tuple[int, bytes]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.code == 0

    def describe(self) -> str:
        """'EOPNOTSUPP: Operation not supported (Unknown device type)' or 'ok'."""
        if self.ok:
            return "ok"
        text = f"{errno_name(self.code)}: {os.strerror(self.code)}"
        return f"{text} ({self.message})" if self.message else text


class Netlink:
    """One netlink socket of the calling thread's namespace, with extended acks turned on."""

    def __init__(self, protocol: int = NETLINK_ROUTE) -> None:
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, protocol)
        with contextlib.suppress(OSError):  # kernels before 4.12: errno only
            self.sock.setsockopt(SOL_NETLINK, NETLINK_EXT_ACK, 1)
        self.sock.bind((0, 0))
        self.sock.settimeout(5.0)
        self.seq = 0

    def __enter__(self) -> Netlink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()

    def send(self, msg_type: int, flags: int, body: bytes) -> Reply:
        """Send one request with an ack; collect replies up to the ack, error or end of dump."""
        self.seq += 1
        seq = self.seq
        hdr = _NLMSGHDR.pack(16 + len(body), msg_type, NLM_F_REQUEST | NLM_F_ACK | flags, seq, 0)
        self.sock.send(hdr + body)
        data: list[tuple[int, bytes]] = []
        while True:
            buf = self.sock.recv(1 << 20)
            off = 0
            while off + 16 <= len(buf):
                length, mtype, mflags, mseq, _pid = _NLMSGHDR.unpack_from(buf, off)
                payload = buf[off + 16 : off + length]
                off += (length + 3) & ~3 if length else len(buf)
                if mseq != seq:
                    continue
                if mtype == NLMSG_ERROR:
                    code = -struct.unpack_from("=i", payload)[0]
                    return Reply(code, _extack_message(payload, mflags), data)
                if mtype == NLMSG_DONE:
                    return Reply(0, "", data)
                data.append((mtype, payload))

    def submit(self, req: Request) -> Reply:
        """Send an nlwire request (built by its helpers) and wait for its answer."""
        return self.send(req.msg_type, req.flags, req.body)


def _extack_message(payload: bytes, flags: int) -> str:
    """The NLMSGERR_ATTR_MSG text after the echoed request header (or whole request)."""
    if not flags & NLM_F_ACK_TLVS or len(payload) < 20:
        return ""
    echoed_len = _NLMSGHDR.unpack_from(payload, 4)[0]
    off = 4 + (16 if flags & NLM_F_CAPPED else (echoed_len + 3) & ~3)
    msg = parse_attrs(payload, off).get(NLMSGERR_ATTR_MSG, b"")
    return msg.rstrip(b"\0").decode(errors="replace")


def errno_name(code: int) -> str:
    """'EOPNOTSUPP' rather than its alias 'ENOTSUP' (the name iproute2 users know)."""
    if code == errno.EOPNOTSUPP:
        return "EOPNOTSUPP"
    return errno.errorcode.get(code, str(code))


# ----------------------------------------------------------------- links


def link_add(
    nl: Netlink, kind: str, name: str, *, data: bytes = b"", lower: int | None = None
) -> Reply:
    """RTM_NEWLINK of KIND (with its IFLA_INFO_DATA) in the socket's namespace."""
    linkinfo = attr_str(IFLA_INFO_KIND, kind)
    if data:
        linkinfo += attr(IFLA_INFO_DATA | NLA_F_NESTED, data)
    body = ifinfo() + attr_str(IFLA_IFNAME, name)
    if lower is not None:
        body += attr_u32(IFLA_LINK, lower)
    body += attr(IFLA_LINKINFO | NLA_F_NESTED, linkinfo)
    return nl.send(RTM_NEWLINK, CREATE, body)


def veth_add(nl: Netlink, name: str, peer: str) -> Reply:
    """A veth pair with both ends in the socket's namespace."""
    peer_info = ifinfo() + attr_str(IFLA_IFNAME, peer)
    return link_add(nl, "veth", name, data=attr(VETH_INFO_PEER, peer_info))


def link_get(nl: Netlink, name: str) -> tuple[int, dict[int, bytes]]:
    """(ifindex, top-level attributes) of interface NAME; OSError if it is not there."""
    reply = nl.send(RTM_GETLINK, 0, ifinfo() + attr_str(IFLA_IFNAME, name))
    if not reply.ok or not reply.data:
        raise OSError(reply.code or errno.ENODEV, f"{name}: {reply.describe()}")
    body = reply.data[0][1]
    index = struct.unpack_from("=i", body, 4)[0]
    return index, parse_attrs(body, 16)


def link_kind_data(attrs: dict[int, bytes]) -> tuple[str, dict[int, bytes]]:
    """The kind and IFLA_INFO_DATA attributes of a link, as read back from the kernel."""
    info = parse_attrs(attrs.get(IFLA_LINKINFO, b""))
    kind = info.get(IFLA_INFO_KIND, b"").rstrip(b"\0").decode()
    return kind, parse_attrs(info.get(IFLA_INFO_DATA, b""))


def link_names(nl: Netlink) -> list[str]:
    """Names of every interface of the socket's namespace (a RTM_GETLINK dump)."""
    reply = nl.send(RTM_GETLINK, NLM_F_DUMP, ifinfo())
    names = []
    for _mtype, body in reply.data:
        name = parse_attrs(body, 16).get(IFLA_IFNAME, b"")
        names.append(name.rstrip(b"\0").decode())
    return names


def xdp_attach(nl: Netlink, index: int, prog_fd: int, flags: int) -> Reply:
    """Attach an XDP program to a link in the given mode (XDP_FLAGS_DRV/SKB_MODE)."""
    xdp = attr(IFLA_XDP_FD, struct.pack("=i", prog_fd)) + attr_u32(IFLA_XDP_FLAGS, flags)
    body = ifinfo(index) + attr(IFLA_XDP | NLA_F_NESTED, xdp)
    return nl.send(RTM_NEWLINK, 0, body)


def xdp_attached(attrs: dict[int, bytes]) -> str:
    """How an XDP program is attached to a link, from its IFLA_XDP: 'driver', 'generic'…"""
    xdp = parse_attrs(attrs.get(IFLA_XDP, b""))
    mode = xdp.get(IFLA_XDP_ATTACHED, b"\0")[0]
    return XDP_ATTACHED_NAMES.get(mode, str(mode))


# ----------------------------------------------------------------- generic netlink


def genl_family(name: str) -> tuple[int, int]:
    """(id, version) of a generic netlink family; OSError (ENOENT) when none is registered."""
    body = _GENLMSGHDR.pack(CTRL_CMD_GETFAMILY, 1, 0) + attr_str(CTRL_ATTR_FAMILY_NAME, name)
    with Netlink(NETLINK_GENERIC) as nl:
        reply = nl.send(GENL_ID_CTRL, 0, body)
    if not reply.ok or not reply.data:
        code = reply.code or errno.ENOENT
        raise OSError(code, f"no generic netlink family {name} ({reply.describe()})")
    attrs = parse_attrs(reply.data[0][1], _GENLMSGHDR.size)
    family_id = struct.unpack("=H", attrs[CTRL_ATTR_FAMILY_ID][:2])[0]
    version = struct.unpack("=I", attrs.get(CTRL_ATTR_VERSION, b"\0" * 4)[:4])[0]
    return family_id, version


# ----------------------------------------------------------------- bpf(2)

BPF_PROG_LOAD = 5
BPF_PROG_TYPE_XDP = 6
XDP_PASS = 2
_BPF_SYSCALL = {"x86_64": 321, "aarch64": 280, "armv7l": 386, "ppc64le": 361, "s390x": 351,
                "riscv64": 280, "i686": 357}
_libc = ctypes.CDLL(None, use_errno=True)  # the C library this process has


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("=BBhi", code, (src << 4) | dst, off, imm)


# r0 = XDP_PASS (BPF_ALU64 | BPF_MOV | BPF_K); exit (BPF_JMP | BPF_EXIT)
XDP_PASS_PROG = _insn(0xB7, dst=0, imm=XDP_PASS) + _insn(0x95)


def bpf_load_xdp_pass() -> int:
    """Load the two-instruction XDP_PASS program; returns its fd (the caller closes it).

    Raises OSError with the verifier's log when the kernel refuses it.
    """
    nr = _BPF_SYSCALL.get(platform.machine())
    if nr is None:
        raise OSError(errno.ENOSYS, f"bpf(2) number unknown for {platform.machine()}")
    insns = ctypes.create_string_buffer(XDP_PASS_PROG, len(XDP_PASS_PROG))
    license_ = ctypes.create_string_buffer(b"GPL")
    log = ctypes.create_string_buffer(4096)
    battr = ctypes.create_string_buffer(128)
    struct.pack_into(
        "=IIQQIIQII16s", battr, 0,
        BPF_PROG_TYPE_XDP, len(XDP_PASS_PROG) // 8,
        ctypes.addressof(insns), ctypes.addressof(license_),
        1, len(log), ctypes.addressof(log),
        0, 0, b"netrig_probe",
    )
    fd = _libc.syscall(ctypes.c_long(nr), ctypes.c_long(BPF_PROG_LOAD), battr, ctypes.c_uint(128))
    if fd < 0:
        err = ctypes.get_errno()
        detail = log.value.decode(errors="replace").strip().splitlines()
        why = f": {detail[-1]}" if detail else ""
        raise OSError(err, f"BPF_PROG_LOAD: {os.strerror(err)}{why}")
    return fd
