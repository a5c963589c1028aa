"""The hand-packed rtnetlink of the lab core against a real kernel, in a namespace of the
test's own (unnamed: it ends with its thread)."""

from __future__ import annotations

import struct

from netrig.lab import netns, nlwire
from tests.conftest import requires_root


def in_new_namespace(fn):  # type: ignore[no-untyped-def]
    def run():  # type: ignore[no-untyped-def]
        netns.unshare(netns.CLONE_NEWNET)
        return fn()

    return netns.run_in_thread(run)


@requires_root
def test_gets_in_one_round_trip_answer_each_or_say_none() -> None:
    def ask() -> list[tuple[int, bytes] | None]:
        with nlwire.RtnlSocket() as sock:
            sock.request(nlwire.RTM_GETLINK, nlwire.NLM_F_DUMP, nlwire.ifinfo())  # seq 1
            return sock.request_each([(nlwire.RTM_GETLINK, nlwire.ifinfo(i)) for i in (1, 4242, 1)])

    lo, missing, again = in_new_namespace(ask)
    assert missing is None  # no interface 4242: refused, the others still answered
    assert lo is not None and again is not None
    assert lo[0] == again[0] == nlwire.RTM_NEWLINK
    assert struct.unpack_from("=BxHiI", lo[1])[2] == 1  # ifindex of lo


@requires_root
def test_more_gets_than_the_receive_buffer_holds_are_all_answered() -> None:
    """A hub's check asks for 20,000 interfaces' state: sent at once, their replies
    overflowed the socket's 4 MB (ENOBUFS, found building a 10,000-leaf star)."""
    count = 6000  # ~1.5 KB a reply: more than 4 MB
    assert count > nlwire.GETS_AT_ONCE

    def ask() -> list[tuple[int, bytes] | None]:
        with nlwire.RtnlSocket() as sock:
            return sock.request_each([(nlwire.RTM_GETLINK, nlwire.ifinfo(1))] * count)

    answers = in_new_namespace(ask)
    assert len(answers) == count
    assert all(a is not None and struct.unpack_from("=BxHiI", a[1])[2] == 1 for a in answers)


@requires_root
def test_a_packed_batch_is_sent_as_send_batch_sends_it() -> None:
    def add() -> tuple[list[nlwire.NetlinkError], list[nlwire.NetlinkError], int]:
        up = nlwire.set_link(1, up=True, what="lo up")
        good = nlwire.new_addr(1, "192.0.2.1", 32, what="192.0.2.1 on lo")
        bad = nlwire.new_addr(4242, "192.0.2.2", 32, what="192.0.2.2 on no interface")
        chunks = nlwire.pack_batch([up, good, bad, good], chunk_bytes=80)
        assert len(chunks) > 1 and chunks[-1].last_seq == 4
        with nlwire.RtnlSocket() as sock:
            first = sock.send_packed(chunks)
            second = sock.send_batch([good])  # numbered after the packed ones
            replies = sock.request(
                nlwire.RTM_GETADDR, nlwire.NLM_F_DUMP, struct.pack("=BBBBi", 2, 0, 0, 0, 0)
            )
        return first, second, len(replies)

    first, second, addresses = in_new_namespace(add)
    # the unknown interface and the repeated address are refused, each named
    assert [e.what for e in first] == ["192.0.2.2 on no interface", "192.0.2.1 on lo"]
    assert [e.what for e in second] == ["192.0.2.1 on lo"]
    assert addresses == 2  # 127.0.0.1 and 192.0.2.1
