"""frr: Debian's FRR in a node, configured by the node's own /etc/frr (as the FRR image is).

    - {name: r1, services: [frr], binds: ["/lab/r1/daemons:/etc/frr/daemons",
                                        "/lab/r1/frr.conf:/etc/frr/frr.conf"]}

What a containerlab node with an FRR image (frrouting/frr) becomes. The daemons file the
node sees says which daemons run (`bgpd=yes`, with `bgpd_options`); zebra and staticd
always run. Each daemon is supervised by netrig (ledger, log `<node dir>/frr-<daemon>.log`),
with the node's private /run holding their sockets and pid files, so several FRR nodes
never meet; `watchfrr` watches them as in the image (the service's own daemon, `frr`).
Once every daemon answers, `vtysh -b` loads the node's /etc/frr/frr.conf.

The node's /etc/frr is its own, never the host's: a folder of its private /run
(`<node dir>/run/etc/frr`, see netrig.lab.run) seen at /etc/frr by every program netrig runs
there, `netrig exec NODE -- vtysh` too. It starts as the FRR image's: a `daemons` file that
runs only zebra and staticd, `vtysh.conf` with the integrated config, and an `frr.conf` with
the node's hostname; the binds' files are mounted over these. So a `write` in vtysh saves the
node's own frr.conf (or the bound file), which `netrig node N start` loads again.
"""

from __future__ import annotations

import os
import pwd
import shlex
from typing import TYPE_CHECKING

from pydantic import Field

from netrig.lab import daemons
from netrig.lab.build import LabError
from netrig.lab.run import ETC_VIEWS
from netrig.services import Service, ServiceOptions, register

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab

FRR_DIR = "/usr/lib/frr"
ALWAYS = ("zebra", "staticd")  # as frrcommon.sh: these run whatever the daemons file says
ETC = "/etc/frr"
LOAD = ["vtysh", "-b"]  # what loads the node's /etc/frr/frr.conf into its running daemons
DEFAULTS = {  # the node's /etc/frr before its binds (as the FRR image ships it)
    "daemons": "# FRR's daemons for a netrig node (no bind gave one): zebra and staticd only\n"
               "vtysh_enable=yes\n",
    "vtysh.conf": "service integrated-vtysh-config\n",
}  # fmt: skip
KNOWN = ("zebra", "bgpd", "ospfd", "ospf6d", "ripd", "ripngd", "isisd", "pimd", "pim6d", "ldpd",
         "nhrpd", "eigrpd", "babeld", "sharpd", "pbrd", "staticd", "bfdd", "fabricd", "vrrpd",
         "pathd")  # fmt: skip


class FrrOptions(ServiceOptions):
    port: int = Field(2601, ge=1, le=65535, description="zebra's vty port (informational)")


def parse_daemons(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The daemons file: which daemons run (zebra first) and each one's options.

    >>> parse_daemons('bgpd=yes\\nbgpd_options="  -A 127.0.0.1"\\nospfd=no\\n')[0]
    ['zebra', 'bgpd', 'staticd']
    """
    enabled: dict[str, bool] = {}
    options: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if "=" not in line:
            continue
        key, value = (part.strip() for part in line.split("=", 1))
        try:
            words = shlex.split(" ".join(shlex.split(value)))  # a shell variable's words
        except ValueError:
            continue
        if key.endswith("_options") and key.removesuffix("_options") in KNOWN:
            options[key.removesuffix("_options")] = words
        elif key in KNOWN:
            enabled[key] = words[:1] == ["yes"]
    order = [d for d in KNOWN if d in ALWAYS or enabled.get(d)]
    return ["zebra", *[d for d in order if d != "zebra"]], options


@register
class Frr(Service[FrrOptions]):
    name = "frr"
    summary = "Debian's FRR with the node's /etc/frr (daemons, frr.conf), as the FRR image"
    Options = FrrOptions
    private_run = True  # zebra's socket, the vty sockets and pid files: per node

    def tools(self, options: FrrOptions) -> dict[str, str]:
        return {f"{FRR_DIR}/zebra": "frr", f"{FRR_DIR}/watchfrr": "frr", "vtysh": "frr"}

    def start(self, lab: Lab, node: str, options: FrrOptions) -> None:
        own_etc(lab, node)
        shown = lab.exec(node, ["cat", "/etc/frr/daemons"], capture_output=True)
        if shown.returncode != 0:
            raise LabError(f"{node}: frr: cannot read /etc/frr/daemons: {shown.stderr.strip()}")
        names, opts = parse_daemons(shown.stdout)
        run_dir = lab.private_run_dir(node)
        assert run_dir is not None
        frr_run = os.path.join(run_dir, "frr")
        os.makedirs(frr_run, exist_ok=True)
        try:
            user = pwd.getpwnam("frr")
            os.chown(frr_run, user.pw_uid, user.pw_gid)
        except KeyError:
            pass  # no frr user: the daemons keep running as root
        for name in names:  # zebra first: the others connect to its socket
            argv = [f"{FRR_DIR}/{name}", "--log", "stdout", *opts.get(name, [])]
            needs = [] if name == "zebra" else [os.path.join(frr_run, "zserv.api")]
            daemons.start(lab, node, f"frr-{name}", argv, needs)
        # watchfrr restarts, as its own, every daemon it finds not answering on its vty
        # socket (a restart's old socket files stay): it starts once they all answer
        vty = [os.path.join(frr_run, f"{n}.vty") for n in names]
        # then `vtysh -b` loads /etc/frr/frr.conf into the daemons, as frrinit.sh does; it
        # is remembered with watchfrr, so `netrig node N start` loads it too (it had
        # restarted the daemons with no configuration: no `router ospf`, no routes)
        daemons.start(lab, node, "frr", [f"{FRR_DIR}/watchfrr", *names], vty, LOAD)

    def ready(self, lab: Lab, node: str, options: FrrOptions, pid: int) -> bool:
        return True  # start() returns once every daemon answers and frr.conf is loaded


def own_etc(lab: Lab, node: str) -> str:
    """The node's own /etc/frr (on the host: `<node dir>/run/etc/frr`), made on first start
    with the image's defaults and a file or folder where each bind into /etc/frr mounts, so
    nothing the node's FRR writes reaches the host's /etc/frr. What it holds already (a
    `write` in vtysh, before `netrig node N stop|start`) is kept. Returns its host path."""
    run_dir = lab.private_run_dir(node)
    assert run_dir is not None, "the frr service sets private_run"
    etc = os.path.join(run_dir, ETC_VIEWS, "frr")
    made = not os.path.isdir(etc)
    os.makedirs(etc, mode=0o750, exist_ok=True)
    paths = [etc]
    if made:
        own = f"! frr.conf of {node} (no bind gave one)\nhostname {node}\n"
        texts = {**DEFAULTS, "frr.conf": own}
        for name, text in texts.items():
            with open(os.path.join(etc, name), "w") as fh:
                fh.write(text)
            paths.append(fh.name)
    for source, target, _read_only in lab.plan.node(node).binds:
        inside = os.path.relpath(os.path.normpath(target), ETC)
        if inside == "." or inside.startswith(".."):
            continue  # all of /etc/frr (the bind hides the node's folder), or elsewhere
        where = os.path.join(etc, inside)
        if os.path.lexists(where):
            continue
        os.makedirs(os.path.dirname(where), exist_ok=True)
        if os.path.isdir(source):
            os.makedirs(where, exist_ok=True)
        else:
            open(where, "a").close()
    try:
        user = pwd.getpwnam("frr")
    except KeyError:
        return etc  # no frr user: the daemons keep running as root
    for path in paths:
        os.chown(path, user.pw_uid, user.pw_gid)
    return etc
