"""A command that does little starts fast: what `netrig --help` and `netrig validate` import
(a property, read from `python -X importtime`, not a time), and the command table that lets
the command line import one command's module only."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import click
import pytest

from netrig.cli import group as cli_package
from tests.conftest import new_lab_name, requires_root

ROOT = Path(__file__).resolve().parents[1]

# never needed to start, to print help or to check a lab file
HEAVY = {
    "numpy", "scipy", "matplotlib", "pandas", "dask", "distributed", "hypothesis",
    "networkx", "graphviz", "pyroute2", "rich",
}  # fmt: skip


# sys.modules at exit: importlib.import_module (plugins, commands) is not in -X importtime
AT_EXIT = (
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write('\\nMODULES ' + ' '.join(sorted(sys.modules))))\n"
    "sys.argv[0] = 'netrig'\n"
    "runpy.run_module('netrig', run_name='__main__', alter_sys=True)\n"
)


def imported(
    *argv: str, cwd: Path | None = None, after: Callable[[], object] | None = None
) -> set[str]:
    """Every module `python -X importtime -m netrig ARGV` imports (it must exit 0): what
    importtime reports, and what sys.modules holds when the same command line exits
    (`after` runs after each of the two, e.g. to take down a lab the command built)."""
    found: set[str] = set()
    for python in (["-X", "importtime", "-m", "netrig"], ["-c", AT_EXIT]):
        try:
            done = subprocess.run(
                [sys.executable, *python, *argv], capture_output=True, text=True, cwd=cwd
            )
        finally:
            if after is not None:
                after()
        assert done.returncode == 0, done.stderr[-2000:]
        for line in done.stderr.splitlines():
            if line.startswith("import time:") and line.count("|") == 2:
                found.add(line.split("|")[2].strip())
            elif line.startswith("MODULES "):
                found.update(line.split()[1:])
    assert "netrig.cli" in found  # both measurements saw netrig at all
    return found - {"package"}


def tops(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def test_help_imports_no_command_and_nothing_heavy() -> None:
    modules = imported("--help")
    assert not {m for m in modules if m.startswith("netrig.cli.cmd_")}
    assert not tops(modules) & (HEAVY | {"pydantic", "yaml"})


def test_validate_of_a_100_node_ring_imports_only_what_the_file_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file new to netrig (no plan remembered: tests/rig/test_plancache.py has those)."""
    monkeypatch.setenv("NETRIG_PLAN_CACHE", "off")
    (tmp_path / "ring.yaml").write_text(
        "name: ring100\ntopology: {kind: ring, nodes: 100}\nrouting: {protocol: static}\n"
    )
    modules = imported("validate", "ring.yaml", cwd=tmp_path)
    assert {"netrig.cli.cmd_validate", "netrig.routing.static", "pydantic"} <= modules
    assert not tops(modules) & HEAVY
    other_commands = {m for m in modules if m.startswith("netrig.cli.cmd_")}
    assert other_commands == {"netrig.cli.cmd_validate"}
    plugins = {m for m in modules if m.split(".")[1:2] in (["routing"], ["services"])}
    assert plugins == {"netrig.routing", "netrig.routing.static"}  # no other protocol's models
    lazy = [
        "netrig.firewall", "netrig.services", "netrig.measure", "netrig.switch",
        "netrig.model.clab", "netrig.model.mininet", "netrig.model.experiment",
        "netrig.plan.experiment", "netrig.plan.routes", "netrig.host", "netrig.lab",
        "netrig.rig.lab", "importlib.metadata",
    ]  # fmt: skip
    assert [m for m in lazy if m in modules] == []


def test_validating_an_experiment_loads_no_lab_runtime(tmp_path: Path) -> None:
    """The measurement plugins the file names are loaded with their options, not the lab
    core that runs them."""
    (tmp_path / "exp.yaml").write_text(
        "name: e\ntopology: {kind: ring, nodes: 6}\nrouting: {protocol: static}\n"
        "measure:\n  - iperf3: {client: n1, server: n4, duration: 1}\n"
    )
    modules = imported("validate", "exp.yaml", cwd=tmp_path)
    assert {"netrig.measure", "netrig.measure.iperf3", "netrig.model.experiment"} <= modules
    assert not tops(modules) & HEAVY
    measurements = {m for m in modules if m.startswith("netrig.measure.")}
    assert measurements == {"netrig.measure.iperf3", "netrig.measure.parse_iperf3"}
    assert not {m for m in modules if m.startswith("netrig.lab.") and m != "netrig.lab.procs"}
    assert not {m for m in modules if m.startswith(("netrig.rig.lab", "netrig.services"))}


def test_other_tools_readers_load_for_their_files_only() -> None:
    examples = Path(__file__).parent.parent / "examples"
    modules = imported("validate", str(examples / "clab-bridge.clab.yml"))
    assert "netrig.model.clab" in modules and "netrig.model.mininet" not in modules


def test_the_command_table_matches_the_command_modules() -> None:
    """cli.COMMANDS names every command of every cmd_ module, with click's short help."""
    modules = [i.name for i in pkgutil.iter_modules(importlib.import_module("netrig.cli").__path__)]
    found: dict[str, tuple[str, str]] = {}
    group = cli_package.cli
    for module in sorted(m for m in modules if m.startswith("cmd_")):
        importlib.import_module(f"netrig.cli.{module}")
    for name, command in group.commands.items():
        module = sys.modules[command.callback.__module__].__name__  # type: ignore[union-attr]
        found[name] = (module.removeprefix("netrig.cli.cmd_"), command.get_short_help_str(10**6))
    assert found == cli_package.COMMANDS
    assert {n for n, c in group.commands.items() if c.short_help} == cli_package.AS_WRITTEN


@pytest.mark.parametrize("width", [60, 80, 200])
def test_help_lists_the_commands_as_click_would(width: int) -> None:
    """The table's help layout equals click's own from the imported commands."""
    cli_package._register()
    group = cli_package.cli
    lazy = click.HelpFormatter(width=width)
    with click.Context(group) as ctx:
        group.format_commands(ctx, lazy)
        eager = click.HelpFormatter(width=width)
        click.Group.format_commands(group, ctx, eager)
    assert lazy.getvalue() == eager.getvalue() and "validate" in lazy.getvalue()


@requires_root
def test_down_imports_the_lab_core_only() -> None:
    """`netrig down` reads the ledger and ends processes: no YAML, pydantic, plugin or rich."""
    modules = imported("down", new_lab_name())  # a lab that is not up: said, and exit 0
    assert "netrig.lab.teardown" in modules
    assert not tops(modules) & (HEAVY | {"pydantic", "yaml"})
    assert not {m for m in modules if m.startswith(("netrig.routing", "netrig.plan", "netrig.rig"))}



def test_down_of_lab_names_loads_neither_click_nor_inspect() -> None:
    """`netrig down LAB…` is read without click (netrig.cli.quick; click's import is ~15 ms
    of `down` of 100 nodes, issue 12's goal 0.1 s), nor dataclasses (its inspect, ~7 ms)."""
    modules = imported("down", new_lab_name(), new_lab_name())
    assert "netrig.cli.quick" in modules and "netrig.lab.teardown" in modules
    assert not {"click", "inspect", "dataclasses"} & modules


def _netrig_both_ways(
    *argv: str, state: Path | None = None, before: Callable[[], object] = lambda: None
) -> list[tuple[int, str, str]]:
    """(exit code, stdout, stderr) of `netrig ARGV` as the command runs it, and through
    click's group (netrig.cli.group.main) as every command line ran before the quick path;
    `before` runs before each."""
    through_click = (
        f"import sys; from netrig.cli.group import main; sys.argv = {['netrig', *argv]!r}; main()"
    )
    env = {**os.environ, "COLUMNS": "200"}
    if state is not None:
        env["NETRIG_STATE_DIR"] = str(state)
    results = []
    for python in ([sys.executable, "-m", "netrig", *argv], [sys.executable, "-c", through_click]):
        before()
        done = subprocess.run(python, capture_output=True, text=True, env=env, timeout=60)
        results.append((done.returncode, done.stdout, done.stderr))
    return results


@requires_root
def test_down_without_click_says_and_exits_as_click_s_command_does(tmp_path: Path) -> None:
    """The quick path and the click command print the same lines and exit the same way: a
    lab that is up and removed, a lab that is not up, and a damaged ledger."""
    from netrig.lab.ledger import Ledger

    name = new_lab_name()

    def record_lab() -> None:  # a lab of no namespace, which each way removes
        ledger = Ledger(str(tmp_path))
        ledger.begin_lab(name, 0, None)
        ledger.close()

    quick, slow = _netrig_both_ways("down", name, "nosuchlab", state=tmp_path, before=record_lab)
    assert quick == slow
    assert quick[0] == 0 and quick[1] == f"lab {name}: removed 0 namespaces, 0 processes\n"
    assert quick[2] == "lab nosuchlab: not up, nothing to remove\n"
    (tmp_path / "ledger.sqlite").write_bytes(b"this is not an SQLite file\n" * 100)
    quick, slow = _netrig_both_ways("down", name, state=tmp_path)
    assert quick == slow and quick[0] == 1 and "cannot be read" in quick[2], quick


@pytest.mark.parametrize("argv", [["down", "--help"], ["down", "x", "--cluster"], ["down"]])
def test_down_with_an_option_or_no_name_is_click_s(argv: list[str]) -> None:
    """Only names go the quick way: help, an option (here missing its value), or no lab at
    all are click's, with its usage and its exit codes."""
    quick, slow = _netrig_both_ways(*argv)
    assert quick == slow and quick[0] == (0 if "--help" in argv else 2), quick
    assert ("Usage: netrig down" if quick[0] == 0 else "Error: ") in quick[1] + quick[2]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["up", "f.yaml"], ("f.yaml", False, False, None)),
        (["up", "-q", "--no-check", "f.yaml"], ("f.yaml", True, True, None)),
        (["up", "f.yaml", "--quiet", "--name", "x1"], ("f.yaml", False, True, "x1")),
        (["up", "--name=x1", "-q", "-q", "f.yaml"], ("f.yaml", False, True, "x1")),
        (["up"], None),  # click's usage error
        (["up", "a.yaml", "b.yaml"], None),
        (["up", "f.yaml", "--help"], None),
        (["up", "-h", "f.yaml"], None),
        (["up", "--cluster", "tcp://h:1", "f.yaml"], None),
        (["up", "--topo", "tree,2", "f.py"], None),
        (["up", "--name", "f.yaml"], None),  # --name takes f.yaml: no FILE
        (["up", "--name", "-q", "f.yaml"], None),
        (["up", "--name=", "f.yaml"], None),
        (["up", "--name", "a", "--name", "b", "f.yaml"], None),
        (["up", "-qv", "f.yaml"], None),
        (["up", "--", "f.yaml"], None),
        (["up", "-"], None),
        (["up", "."], None),  # a folder: click.Path says so
        (["down", "f.yaml"], None),
        (["validate", "f.yaml"], None),
    ],
)
def test_a_plain_up_is_read_without_click(argv: list[str], line: object) -> None:
    from netrig.cli import quick

    assert quick.plain_up(argv) == line


def _without_times(result: tuple[int, str, str]) -> tuple[int, str, str]:
    """A run's output with its seconds left out (two builds take different times)."""
    code, out, err = result
    return code, re.sub(r"\d+\.\d+ s", "T s", out), re.sub(r"\d+\.\d+ s", "T s", err)


@requires_root
def test_up_without_click_says_and_exits_as_click_s_command_does(tmp_path: Path) -> None:
    """The quick path and click's command print the same lines and exit the same way: a lab
    built (under --name, --no-check), a file that is not there, one with a mistake (file:line,
    exit 2), a folder, and no root."""
    name = new_lab_name("qu")
    (tmp_path / "ring.yaml").write_text(STATIC_RING.format(name="unused"))
    (tmp_path / "bad.yaml").write_text("name: b\ntopology: {kind: ring, nodes: 1}\n")

    def down() -> None:
        subprocess.run([sys.executable, "-m", "netrig", "down", name], capture_output=True)

    ring = str(tmp_path / "ring.yaml")
    try:
        quick, slow = (
            _without_times(r)
            for r in _netrig_both_ways("up", "-q", "--no-check", "--name", name, ring, before=down)
        )
    finally:
        down()
    assert quick == slow and quick[0] == 0, quick
    summary = rf"lab {name} is up in T s: 6 nodes, 6 links, \d+ routes \(build T s\)\n"
    assert re.fullmatch(summary, quick[1]), quick
    for argv in (["up", str(tmp_path / "missing.yaml")], ["up", "-q", str(tmp_path / "bad.yaml")]):
        quick, slow = _netrig_both_ways(*argv)
        assert quick == slow and quick[0] == 2 and quick[1] == "", quick
        assert ("missing.yaml" in quick[2]) != ("bad.yaml:2" in quick[2]), quick
    quick, slow = _netrig_both_ways("up", str(tmp_path))
    assert quick == slow and quick[0] == 2 and "is a directory" in quick[2], quick
    # a reader gone before the summary line (`| head -0`): click's exit 1 without a word,
    # the quick path too (it had printed a BrokenPipeError traceback)
    through_click = (
        "import sys; from netrig.cli.group import main; "
        f"sys.argv = {['netrig', 'up', '-q', '--no-check', '--name', name, ring]!r}; main()"
    )
    ways = []
    for python in ([sys.executable, "-m", "netrig", "up", "-q", "--no-check", "--name", name,
                    ring], [sys.executable, "-c", through_click]):  # fmt: skip
        down()
        try:
            done = subprocess.run(
                ["bash", "-c", f"{shlex.join(python)} | (exec 0<&-; true); "
                 "exit ${PIPESTATUS[0]}"], capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            down()
        ways.append((done.returncode, done.stderr))
    assert ways[0] == ways[1] == (1, ""), ways


STATIC_RING = "name: {name}\ntopology: {{kind: ring, nodes: 6}}\nrouting: {{protocol: static}}\n"


def up_static_ring(tmp_path: Path) -> set[str]:
    """What `netrig up -q` of a static ring imports (the lab is taken down after each run)."""
    name = new_lab_name("su")
    (tmp_path / "ring.yaml").write_text(STATIC_RING.format(name=name))

    def down() -> None:
        subprocess.run([sys.executable, "-m", "netrig", "down", name], capture_output=True)

    return imported("up", "-q", "ring.yaml", cwd=tmp_path, after=down)


@requires_root
def test_up_of_a_static_ring_imports_only_what_it_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No services, firewalls, measurements, daemons or exec lines in the file: none of
    their plugins or helpers is loaded, nor rich (-q prints one line), nor the models of
    other routing protocols. (A file new to netrig, each time: no plan remembered, see
    tests/rig/test_plancache.py for one that is.)"""
    monkeypatch.setenv("NETRIG_PLAN_CACHE", "off")
    modules = up_static_ring(tmp_path)
    assert {
        "netrig.cli.bringup",
        "netrig.rig.lab",
        "netrig.lab.build",
        "netrig.lab.check",
    } <= modules
    assert not tops(modules) & (HEAVY | {"click"})  # a plain command line: netrig.cli.quick
    assert not {m for m in modules if m.startswith("netrig.cli.cmd_")}
    plugins = {m for m in modules if m.split(".")[1:2] == ["routing"]}
    assert plugins == {"netrig.routing", "netrig.routing.static"}
    lazy = [
        "netrig.firewall", "netrig.services", "netrig.measure", "netrig.switch",
        "netrig.lab.daemons", "netrig.lab.programs", "netrig.lab.teardown",
        "netrig.model.experiment", "netrig.plan.experiment", "netrig.host",
        "netrig.experiment.runner", "importlib.metadata",
    ]  # fmt: skip
    assert [m for m in lazy if m in modules] == []


@requires_root
def test_exec_in_a_running_lab_loads_no_model_yaml_or_plugin(tmp_path: Path) -> None:
    """`netrig exec LAB NODE -- CMD` (often run in a loop) needs the saved plan and the
    exec helper: none of the file model, YAML, pydantic, plugins or rich."""
    name = new_lab_name("sx")
    (tmp_path / "ring.yaml").write_text(STATIC_RING.format(name=name))
    netrig = [sys.executable, "-m", "netrig"]
    subprocess.run([*netrig, "up", "-q", "--no-check", "ring.yaml"], cwd=tmp_path, check=True)
    try:
        modules = imported("exec", name, "n1", "--", "true")
    finally:
        subprocess.run([*netrig, "down", name], capture_output=True)
    assert {"netrig.cli.cmd_exec", "netrig.lab.runtime"} <= modules
    assert not tops(modules) & (HEAVY | {"pydantic", "yaml"})
    assert not {
        m for m in modules if m.startswith(("netrig.routing", "netrig.rig", "netrig.model."))
    } - {"netrig.model.catalog", "netrig.model.problems"}


@pytest.mark.parametrize("incomplete", ["", "s", "ex", "-"])
def test_completion_offers_what_click_would(incomplete: str) -> None:
    cli_package._register()
    group = cli_package.cli
    with click.Context(group) as ctx:
        ours = [(i.value, i.help) for i in group.shell_complete(ctx, incomplete)]
        theirs = [(i.value, i.help) for i in click.Group.shell_complete(group, ctx, incomplete)]
    assert ours == theirs and ours


@pytest.mark.parametrize("delay", [0.0, 0.03, 0.08, 0.15, 0.3])
def test_ctrl_c_while_netrig_loads_is_no_traceback(delay: float) -> None:
    """Ctrl-C at any moment of netrig's start: exit 130 (or the command's own code if it was
    done), never a KeyboardInterrupt traceback. The moments count from when netrig's own
    code runs (the first import after the netrig package's: before that, Python's own start
    and `-m` machinery report an interrupt themselves)."""
    proc = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "netrig", "validate",
         str(ROOT / "examples" / "ring16.yaml")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stderr is not None
    lines = iter(proc.stderr)
    for line in lines:
        if line.rstrip().endswith("| netrig"):
            next(lines)
            break
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err, err
    assert proc.returncode in (0, 130, -signal.SIGINT), (proc.returncode, err)


def test_an_interrupt_that_comes_out_as_another_error_still_exits_130() -> None:
    """pydantic-core turned a Ctrl-C that came while it built a validator into SchemaError
    (seen in CI: a traceback): an error raised after Ctrl-C ends as Ctrl-C does."""
    program = (
        "import os, signal, sys\n"
        "import netrig.cli.group as cli\n"
        "@cli.cli.command('wraps')\n"
        "def wraps():\n"
        "    try:\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "        signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the handler runs by here\n"
        "    except KeyboardInterrupt:\n"
        "        raise RuntimeError('KeyboardInterrupt, wrapped') from None\n"
        "sys.argv = ['netrig', 'wraps']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "interrupted" in done.stderr
    real = subprocess.run(  # an error without Ctrl-C is still reported as it is
        [
            sys.executable,
            "-c",
            program.replace("os.kill(os.getpid(), signal.SIGINT)", "raise KeyboardInterrupt"),
        ],
        capture_output=True,
        text=True,
    )
    assert real.returncode == 1 and "RuntimeError" in real.stderr


def test_an_interrupt_click_caught_itself_exits_130() -> None:
    """Ctrl-C after the command returned, while click closes its context: click prints
    "Aborted!" and exits 1; netrig's exit is still Ctrl-C's 130 (seen once in the suite, a
    Ctrl-C 0.08 s into `netrig validate` of a small file, under load)."""
    program = (
        "import os, signal, sys\n"
        "import click\n"
        "import netrig.cli.group as cli\n"
        "def interrupt():\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n"
        "    signal.pthread_sigmask(signal.SIG_BLOCK, [])  # the handler runs by here\n"
        "@cli.cli.command('closes')\n"
        "def closes():\n"
        "    click.get_current_context().find_root().call_on_close(interrupt)\n"
        "sys.argv = ['netrig', 'closes']\n"
        "cli.main()\n"
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "interrupted" in done.stderr


@requires_root
def test_a_quick_exit_still_closes_the_ledger(tmp_path: Path) -> None:
    """`status` leaves by os._exit (no tear-down of every object), yet closes its databases
    as Python's exit would: SQLite checkpoints the ledger and removes its -wal file."""
    from netrig.lab.ledger import Ledger

    Ledger(str(tmp_path)).close()  # a ledger in WAL mode, as `up` leaves it
    env = {**os.environ, "NETRIG_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "netrig", "status"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ledger.sqlite").exists()
    assert not (tmp_path / "ledger.sqlite-wal").exists()


def test_the_plugin_loader_stand_in_forwards_what_it_lacks() -> None:
    """The command's stand-in for pydantic's plugin loader finds no plugins, and any other
    name a pydantic version asks of it comes from pydantic's own module."""
    code = (
        "import sys; from netrig.cli.ending import NoPydanticPlugins; "
        "sys.meta_path.insert(0, NoPydanticPlugins()); "
        "from pydantic.plugin._loader import get_plugins, PYDANTIC_ENTRY_POINT_GROUP; "
        "print(tuple(get_plugins()), PYDANTIC_ENTRY_POINT_GROUP)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["()", "pydantic"]
