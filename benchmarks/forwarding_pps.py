#!/usr/bin/env python3
"""Forwarded packets/s through a diamond of routers: one path against ECMP, netrig_gen
against trafgen, measured in one run.

The lab is seed 003's example (src — r1 — {pa, pb} — r2 — dst), built twice: static
routing (one path) and ECMP (L4 hash, 256 flows). Each case runs the `pps` measurement at
full speed, the cases interleaved round by round so that drift on this shared machine
hits them alike, then:

1. the median rx_pps per case, ECMP / one path (ministat's verdict at 95 %), and
   netrig_gen / trafgen (the real tool, measured in the same rounds);
2. the same with two generator threads (trafgen -P 2): on veth every hop is forwarded in
   the sender's softirq, so one thread keeps one CPU busy with everything;
3. pacing at 20 kpps: the packets sent against rate × duration, and the spread of the
   per-0.1 s rates at the sink (how evenly each generator paces).

Absolute figures depend on the machine; nothing here asserts them.

    sudo python3 benchmarks/forwarding_pps.py            # 5 rounds of 2 s
    sudo python3 benchmarks/forwarding_pps.py --quick    # CI smoke: 2 rounds of 0.3 s
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics

from netrig import measure
from netrig.base.sample import MeasurementFailed, Sample
from netrig.measure.pps import netrig_gen_binary
from netrig.rig import Lab
from netrig.stats.ministat import DEFAULT_CONFIDENCE_INDEX, make_dataset, student_t

TAG = f"{os.getpid() % 10000}"
NODES = ("src", "r1", "pa", "pb", "r2", "dst")
LINKS = [("src", "r1"), ("r1", "pa"), ("r1", "pb"), ("pa", "r2"), ("pb", "r2"), ("r2", "dst")]
PACED = 20000.0


def diamond(protocol: str) -> Lab:
    return Lab.from_spec(
        {
            "name": f"bpps{protocol[:2]}{TAG}",
            "nodes": [{"name": n} for n in NODES],
            "links": [{"a": a, "b": b} for a, b in LINKS],
            "routing": {"protocol": protocol},
        }
    )


def pps(lab: Lab, **options: object) -> list[Sample]:
    plugin = measure.get("pps")
    opts = plugin.Options.model_validate({"src": "src", "dst": "dst", **options})
    return [s for s in plugin.run(lab, opts, plugin.timeout(opts)) if isinstance(s, Sample)]


def total(samples: list[Sample], metric: str) -> float:
    return next(s.value for s in samples if s.metric == metric and s.t is None and not s.stream)


def verdict(a: list[float], b: list[float]) -> str:
    if len(a) < 2 or len(b) < 2:
        return "(too few runs for a verdict)"
    v = student_t(make_dataset(b"b", b), make_dataset(b"a", a), DEFAULT_CONFIDENCE_INDEX)
    return "difference proven at 95 %" if v.proven else "no difference proven at 95 %"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of 0.3 s (CI smoke)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=2.0)
    args = parser.parse_args()
    rounds, duration = (2, 0.3) if args.quick else (args.rounds, args.duration)
    generators = ["netrig"] + (["trafgen"] if shutil.which("trafgen") else [])
    if len(generators) == 1:
        print("trafgen is not installed (apt-get install netsniff-ng): netrig_gen only")

    labs = {"static": diamond("static"), "ecmp": diamond("ecmp")}
    results: dict[tuple[str, str, int], list[float]] = {}
    try:
        for lab in labs.values():
            lab.up()
        netrig_gen_binary()  # built before the clock starts
        for _ in range(rounds):
            for threads in (1, 2):
                for routing, lab in labs.items():
                    if threads == 2 and routing == "static":
                        continue
                    for generator in generators:
                        key = (routing, generator, threads)
                        try:
                            samples = pps(
                                lab,
                                generator=generator,
                                duration=duration,
                                threads=threads,
                                interval=0,
                            )
                        except MeasurementFailed as exc:
                            print(f"{key}: failed: {exc.reason}")
                            continue
                        results.setdefault(key, []).append(total(samples, "rx_pps"))

        print(f"\nforwarded packets/s (rx_pps at dst), median of {rounds} runs of {duration:g} s")
        print(
            f"{'routing':8} {'generator':10} {'threads':>7} {'median':>12} {'min':>12} {'max':>12}"
        )
        for (routing, generator, threads), values in results.items():
            print(
                f"{routing:8} {generator:10} {threads:7d} {statistics.median(values):12.0f} "
                f"{min(values):12.0f} {max(values):12.0f}"
            )

        def med(key: tuple[str, str, int]) -> float:
            return statistics.median(results[key]) if results.get(key) else float("nan")

        for generator in generators:
            one, both = (
                results.get(("static", generator, 1), []),
                results.get(("ecmp", generator, 1), []),
            )
            print(
                f"ECMP / one path ({generator}): {med(('ecmp', generator, 1)) / med(('static', generator, 1)):.3f}"
                f"  ({verdict(one, both)})"
            )
        if "trafgen" in generators:
            for routing, threads in (("static", 1), ("ecmp", 1), ("ecmp", 2)):
                ratio = med((routing, "netrig", threads)) / med((routing, "trafgen", threads))
                print(f"netrig_gen / trafgen ({routing}, {threads} thread(s)): {ratio:.2f}")
        for generator in generators:
            ratio = med(("ecmp", generator, 2)) / med(("ecmp", generator, 1))
            print(f"two threads / one ({generator}, ECMP): {ratio:.2f}")

        pace = 0.5 if args.quick else 2.0
        print(f"\npacing at {PACED:.0f} packets/s for {pace:g} s (ECMP lab):")
        for generator in generators:
            samples = pps(
                labs["ecmp"], generator=generator, rate=PACED, duration=pace, interval=0.1
            )
            sent = total(samples, "tx_packets")
            rates = [s.value for s in samples if s.metric == "rx_pps" and s.t is not None]
            worst = max(abs(r / PACED - 1) for r in rates) if rates else float("nan")
            print(
                f"  {generator:8} sent {sent:.0f} of {PACED * pace:.0f} "
                f"({(sent / (PACED * pace) - 1) * 100:+.2f} %); per-0.1 s rate "
                f"min {min(rates):.0f} max {max(rates):.0f}, worst {worst * 100:.0f} % off"
            )
    finally:
        for lab in labs.values():
            lab.down()


if __name__ == "__main__":
    main()
