"""`netrig down LABS` on this host: remove exactly what the ledger says netrig made. Without
click: the click command (cmd_down) and the quick path (netrig.cli.quick) both run this."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from netrig.cli.output import counted, reports_errors, require_root
from netrig.experiment.interrupt import StopSignal
from netrig.lab.ledger import Ledger
from netrig.lab.teardown import teardown


@reports_errors
def down_labs(labs: Sequence[str]) -> None:
    """Remove each of LABS that is up; one line for each; a lab that is not up is said to
    be so and is no error (removing twice is fine)."""
    require_root("down")
    ledger = Ledger()
    known = set(ledger.all_lab_names())
    unknown = [name for name in labs if name not in known]
    with StopSignal() as stop:  # a removal half done helps nobody: a signal waits for it
        for name in labs:
            if name in known:
                report = teardown(ledger, name)
                print(  # plain lines: `down` does not wait for rich to import
                    f"lab {name}: removed {counted(report.namespaces, 'namespace')}, "
                    f"{counted(report.processes, 'process', 'processes')}",
                    flush=True,
                )
    for name in unknown:
        print(f"lab {name}: not up, nothing to remove", file=sys.stderr)
    after_signal(stop)


def after_signal(stop: StopSignal) -> None:
    """A signal came while labs were removed: said, and exit 128 + its number, now that
    they are (SIGTERM had killed `down` midway: 105 of 200 namespaces left, status 'up')."""
    if stop.requested:
        print(f"netrig: {stop.name} came while removing; finished removing first", file=sys.stderr)
        sys.exit(stop.exit_code)
