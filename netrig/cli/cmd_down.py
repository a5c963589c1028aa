"""netrig down / clean: remove labs, exactly what the ledger says netrig made."""

from __future__ import annotations

import click

from netrig.cli.common import (
    complete_lab,
    console,
    counted,
    err_console,
    reports_errors,
    require_root,
)
from netrig.cli.group import cli
from netrig.cli.removal import after_signal, down_labs
from netrig.experiment.interrupt import StopSignal
from netrig.lab.ledger import Ledger
from netrig.lab.teardown import teardown


@cli.command("down")
@click.argument("labs", nargs=-1, required=True, shell_complete=complete_lab)
@click.option("--cluster", metavar="tcp://HOST:PORT", help="Remove the labs' parts on every "
              "host of this Dask scheduler (labs built with `netrig up --cluster`).")
@reports_errors
def down(labs: tuple[str, ...], cluster: str | None) -> None:
    """Remove LABS: their processes, namespaces, links. Removing a lab twice is fine.

    Returns once every process of the lab has exited (SIGTERM, SIGKILL after 2 s) and its
    namespaces are gone.
    """
    if cluster:
        from netrig.cluster import labs as spread

        for name in labs:
            removed = spread.down(name, cluster)
            hosts = [f"{host}: {n} namespaces" for host, n in removed if n]
            asked = ", ".join(host for host, _n in removed) or "none"
            console.print(f"lab {name}: " + ("; ".join(hosts) or (
                f"on none of the hosts connected now ({asked}), nothing to remove there; "
                "a host that has left the cluster keeps its part until `netrig clean` runs "
                "on it (`netrig cluster local down` for a local cluster)")), soft_wrap=True)
        return
    down_labs(labs)


@cli.command("clean")
@click.argument("labs", nargs=-1, shell_complete=complete_lab)
@click.option("--force", is_flag=True, help="Also remove labs whose netrig process still runs.")
@reports_errors
def clean(labs: tuple[str, ...], force: bool) -> None:
    """Remove everything netrig created on this host that is still there (or of LABS only).

    Works after a crash or kill -9 mid-build: the ledger records each object before it
    exists. Namespaces and processes netrig did not create are never touched. A lab
    whose building process is still running (an experiment in progress) is kept unless
    --force is given.
    """
    require_root("clean")
    ledger = Ledger()
    names = []
    known = ledger.all_lab_names()
    for name in labs:
        if name not in known:
            err_console.print(f"lab {name}: not in the ledger, nothing to clean")
    for name in [n for n in known if not labs or n in labs]:
        record = ledger.lab(name)
        if not force and record is not None and record.builder_alive():
            console.print(f"[yellow]kept lab {name}: netrig process {record.pid} is using it[/]")
        else:
            names.append(name)
    total_ns = total_proc = 0
    with StopSignal() as stop:
        for name in names:
            report = teardown(ledger, name)
            total_ns += report.namespaces
            total_proc += report.processes
            for skipped in report.skipped or []:
                console.print(f"[yellow]kept {skipped}: it is not the namespace netrig created[/]")
    console.print(
        f"clean: {counted(len(names), 'lab')}, {counted(total_ns, 'namespace')}, "
        f"{counted(total_proc, 'process', 'processes')} removed"
    )
    after_signal(stop)
