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
