"""How a run's failure reasons read when it has several measurements."""

from __future__ import annotations

from types import SimpleNamespace

from netrig.experiment.runner import RunResult, StepOutcome


def test_a_reason_that_names_its_tool_is_not_named_twice() -> None:
    result = RunResult("ok", {}, {})
    iperf3, ping = SimpleNamespace(name="iperf3"), SimpleNamespace(name="ping")
    result.add(iperf3, StepOutcome([], {}, 0.0, "iperf3: unable to connect"), several=True)  # type: ignore[arg-type]
    result.add(ping, StepOutcome([], {}, 0.0, "no reply from n9"), several=True)  # type: ignore[arg-type]
    assert result.finish().reason == "iperf3: unable to connect; ping: no reply from n9"


def test_which_measurements_failed_a_run() -> None:
    """Only the failing measurements lose their values; `events`, derived from every
    measurement, goes with any of them; a failed event (or lab) fails the whole run."""
    iperf3, cmd = SimpleNamespace(name="iperf3"), SimpleNamespace(name="command")

    def result(cmd_reason: str | None, events: bool = False) -> RunResult:
        r = RunResult("ok", {}, {})
        r.add(iperf3, StepOutcome([], {}, 0.0), several=True)  # type: ignore[arg-type]
        r.add(cmd, StepOutcome([], {}, 0.0, cmd_reason), several=True)  # type: ignore[arg-type]
        if events:
            r.samples["events"] = []
        return r

    assert result(None).finish().failed_measurements is None  # ok
    assert result("exited 1").finish().failed_measurements == ["command"]
    assert result("exited 1", events=True).finish().failed_measurements == ["command", "events"]
    broken = result(None, events=True)
    broken.reasons.append("event link a-b down @ 1s failed: no such link")
    broken.whole_run_failed = True
    assert broken.finish().status == "failed" and broken.failed_measurements is None
    assert RunResult("failed", {}, {}, "lab x could not be built").failed_measurements is None
