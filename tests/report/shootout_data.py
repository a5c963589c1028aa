"""Recorded results shaped like seed 004's load-balancer shootout, recorded through the real
ResultStore: concurrency × balancer, 3 repetitions, iperf3 throughput with per-interval
samples, ping per-packet rtt; nginx fails every run at 1000 and haproxy one run at 100."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from netrig.base.sample import Sample
from netrig.results.store import ResultStore

CONCURRENCY = [1, 10, 100, 1000]
BALANCERS = ["pen", "haproxy", "nginx"]
FILE_TEXT = """# Seed 004: no line means the load balancer failed. <b>not bold</b> & escaped
name: shootout
topology: {kind: star, leaves: 4}
measure:
  - iperf3: {client: n2, server: n1, parallel: "{concurrency}", duration: 5}
  - ping: {src: n2, dst: n1, count: 10}
vary:
  concurrency: [1, 10, 100, 1000]
  balancer: [pen, haproxy, nginx]
repeat: 3
"""
HOST = {
    "kernel": "6.1.0-18-amd64",
    "cpu_model": "Intel(R) Xeon(R) E5-2650",
    "cpu_count": 8,
    "netrig_version": "0.1.0",
    "tool_versions": {"iperf3": "iperf 3.12 (cJSON 1.7.15)", "ping": "ping from iputils 20221126"},
}
NGINX_REASON = "iperf3: unable to connect to server: Connection refused"


def base_rate(concurrency: int, balancer: str) -> float:
    """bit/s: rises with concurrency, then flattens; each balancer its own ceiling."""
    ceiling = {"pen": 9.4e9, "haproxy": 8.1e9, "nginx": 7.2e9}[balancer]
    return ceiling * concurrency / (concurrency + 8)


def record_shootout(store: ResultStore, seed: int = 4) -> int:
    rng = random.Random(seed)
    eid = store.begin_experiment("shootout", FILE_TEXT, HOST)
    t0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    for rep in range(3):
        for concurrency in CONCURRENCY:
            for balancer in BALANCERS:
                point = {"concurrency": concurrency, "balancer": balancer}
                started = t0 + timedelta(seconds=10 * (len(store.runs(eid)) + 1))
                ended = started + timedelta(seconds=6)
                if (balancer == "nginx" and concurrency == 1000) or (
                    balancer == "haproxy" and concurrency == 100 and rep == 1
                ):
                    store.record_run(
                        eid,
                        point,
                        rep,
                        "failed",
                        reason=NGINX_REASON,
                        stderr="iperf3: error - unable to connect\n",
                        started=started,
                        ended=ended,
                    )
                    continue
                rate = base_rate(concurrency, balancer) * rng.uniform(0.97, 1.03)
                iperf = [Sample("throughput", rate, "bit/s")]
                iperf += [
                    Sample("throughput", rate * rng.uniform(0.9, 1.1), "bit/s", float(t))
                    for t in range(5)
                ]
                rtts = [0.04 + 0.002 * concurrency * rng.lognormvariate(0, 0.5) for _ in range(10)]
                ping = [Sample("rtt_avg", sum(rtts) / len(rtts), "ms")]
                ping += [Sample("rtt", r, "ms", 0.2 * k) for k, r in enumerate(rtts)]
                store.record_run(
                    eid,
                    point,
                    rep,
                    "ok",
                    {"iperf3": iperf, "ping": ping},
                    started=started,
                    ended=ended,
                )
    store.finish_experiment(eid, "failed")
    return eid
