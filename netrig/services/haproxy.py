"""haproxy: an HTTP load balancer (round robin, keep-alive to clients and backends).

    - {haproxy: {backends: [web1, web2, web3], port: 80}}

Runs in the foreground (`-db`) with one thread by default (`threads:`), so a shootout
compares single-core balancers; the config is `<node dir>/haproxy.cfg`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from netrig.lab import daemons
from netrig.services import BalancerOptions, Service, backend_address, register, serves_ipv6

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab


class HaproxyOptions(BalancerOptions):
    threads: int = Field(1, ge=1, le=64, description="worker threads (nbthread)")
    balance: Literal["roundrobin", "leastconn", "source", "first"] = Field(
        "roundrobin", description="how a backend is chosen"
    )


@register
class Haproxy(Service[HaproxyOptions]):
    name = "haproxy"
    summary = "haproxy HTTP load balancer"
    Options = HaproxyOptions

    programs: ClassVar[dict[str, str]] = {"haproxy": "haproxy"}

    def config(self, lab: Lab, node: str, o: HaproxyOptions) -> str:
        servers = "\n".join(
            f"    server {b} {backend_address(lab.plan, node, b)}:{o.backend_port}"
            for b in o.backends
        )
        binds = f"    bind :{o.port}"
        if serves_ipv6(lab.plan, node):
            binds += f"\n    bind :::{o.port} v6only"
        return f"""# haproxy for {lab.name}/{node}, written by netrig
global
    maxconn {o.max_connections}
    nbthread {o.threads}
defaults
    mode http
    timeout connect 5s
    timeout client 30s
    timeout server 30s
frontend web
{binds}
    default_backend servers
backend servers
    balance {o.balance}
{servers}
"""

    def start(self, lab: Lab, node: str, options: HaproxyOptions) -> None:
        conf = daemons.write_file(lab, node, "haproxy.cfg", self.config(lab, node, options))
        daemons.start(lab, node, "haproxy", ["haproxy", "-db", "-f", conf])
