"""Shell completion (click's): commands, lab names from the ledger, node names from the
lab's saved plan, as bash asks for them."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import requires_root


def complete(line: str) -> list[str]:
    """What `netrig` offers for the last word of line (bash's protocol: type,value lines)."""
    words = line.split()
    cword = len(words) if line.endswith(" ") else len(words) - 1
    env = dict(os.environ, COMP_WORDS=line, COMP_CWORD=str(cword), _NETRIG_COMPLETE="bash_complete")
    done = subprocess.run([sys.executable, "-m", "netrig"], env=env, capture_output=True,
                          text=True, check=True)  # fmt: skip
    return [item.split(",", 1)[1] for item in done.stdout.split()]


def test_commands_complete() -> None:
    assert {"up", "down", "exec", "run", "trace", "status"} <= set(complete("netrig "))
    offered = complete("netrig ex")
    assert "exec" in offered and all(c.startswith("ex") for c in offered)
    assert complete("netrig sh") == ["shell"]
    assert complete("netrig results ex") == ["export"]


@requires_root
def test_lab_and_node_names_complete(make_lab) -> None:  # type: ignore[no-untyped-def]
    lab = make_lab({"topology": {"kind": "chain", "nodes": 3}}, check=False)
    assert lab.name in complete("netrig exec ")
    offered = complete(f"netrig exec {lab.name[:-1]}")
    assert lab.name in offered and all(n.startswith(lab.name[:-1]) for n in offered)
    assert lab.name in complete(f"netrig down {lab.name[:-1]}")
    assert complete(f"netrig exec {lab.name} ") == ["n1", "n2", "n3"]
    assert complete(f"netrig trace {lab.name} n1 n") == ["n1", "n2", "n3"]
    assert complete(f"netrig link {lab.name} n") == ["n1", "n2", "n3"]
    assert complete(f"netrig logs {lab.name} n2") == ["n2"]
    assert lab.name not in complete(f"netrig down {lab.name} ")  # named once is enough
    assert complete("netrig exec no-such-lab ") == []
