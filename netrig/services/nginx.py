"""nginx: a web server of fixed-size files, or (with `backends:`) a reverse-proxy balancer.

    - {nginx: {files: {1k: 1024, 100k: 102400}}}         # GET /1k → 1024 bytes
    - {nginx: {backends: [web1, web2], port: 80}}        # round robin, keep-alive upstreams

Files are written into `<node dir>/www`; the config, pid file, temp directories and
`access.log` (one line per request, which tests count) live in the node's directory too,
so nothing is shared between nodes. One worker process by default (`workers:`), so a
balancer shootout compares single-core balancers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, model_validator

from netrig.lab import daemons
from netrig.services import (
    BalancerOptions,
    KeyPath,
    Service,
    backend_address,
    register,
    serves_ipv6,
)

if TYPE_CHECKING:
    from netrig.lab.runtime import LabRuntime as Lab
    from netrig.plan.model import LabPlan

SIZE_UNITS = {"": 1, "k": 1024, "m": 1024**2}


def _size(value: Any) -> int:
    """Bytes: 1024, '1k', '10M' (k = 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip().lower().removesuffix("b")
    unit = text[-1:] if text[-1:] in ("k", "m") else ""
    number = text[: len(text) - len(unit)]
    if not number.isdigit():
        raise ValueError(f"{value!r} is not a size; write e.g. 1024, 1k or 1M")
    return int(number) * SIZE_UNITS[unit]


Size = Annotated[int, BeforeValidator(_size), Field(ge=0, le=1 << 30)]


class NginxOptions(BalancerOptions):
    files: dict[str, Size] = Field(
        {}, description="file name → size in bytes, served from / (web server mode)"
    )
    backends: list[str] = Field([], description="nodes to balance over (balancer mode)")
    workers: int = Field(1, ge=1, le=64, description="worker processes")
    access_log: bool = Field(True, description="log every request to access.log")
    keepalive: int = Field(64, ge=0, le=10000, description="idle upstream connections kept")

    @model_validator(mode="after")
    def _one_mode(self) -> NginxOptions:
        if self.files and self.backends:
            raise ValueError("files (web server) and backends (balancer) exclude each other")
        for name in self.files:
            if not name or "/" in name or name.startswith("."):
                raise ValueError(f"file name {name!r}: a plain name, no '/' and no leading '.'")
        return self


@register
class Nginx(Service[NginxOptions]):
    name = "nginx"
    summary = "nginx web server of fixed-size files, or reverse-proxy load balancer"
    Options = NginxOptions

    programs: ClassVar[dict[str, str]] = {"nginx": "nginx"}  # the program (nginx-light adds only a module)

    def check(self, options: NginxOptions, plan: LabPlan, node: str) -> list[tuple[KeyPath, str]]:
        return super().check(options, plan, node) if options.backends else []

    def config(self, lab: Lab, node: str, o: NginxOptions) -> str:
        where = lab.node_dir(node)
        log = f"access_log {where}/access.log;" if o.access_log else "access_log off;"
        listen = f"listen {o.port} backlog=4096;"
        if serves_ipv6(lab.plan, node):
            listen += f"\n        listen [::]:{o.port} ipv6only=on backlog=4096;"
        if o.backends:
            servers = "\n".join(
                f"        server {backend_address(lab.plan, node, b)}:{o.backend_port};"
                for b in o.backends
            )
            site = f"""    upstream backends {{
{servers}
        keepalive {o.keepalive};
    }}
    server {{
        {listen}
        location / {{
            proxy_pass http://backends;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}"""
        else:
            site = f"""    server {{
        {listen}
        root {where}/www;
    }}"""
        temps = "\n".join(
            f"    {kind}_temp_path {where}/tmp/{kind};"
            for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
        )
        return f"""# nginx for {lab.name}/{node}, written by netrig
daemon off;
master_process on;
worker_processes {o.workers};
worker_rlimit_nofile {4 * o.max_connections + 64};
pid {where}/nginx.pid;
error_log stderr warn;
events {{
    worker_connections {2 * o.max_connections + 32};
}}
http {{
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 1000000;
    {log}
{temps}
{site}
}}
"""

    def start(self, lab: Lab, node: str, options: NginxOptions) -> None:
        o = options
        where = lab.node_dir(node)
        os.makedirs(os.path.join(where, "tmp"), exist_ok=True)
        www = os.path.join(where, "www")
        os.makedirs(www, exist_ok=True)
        for name, size in o.files.items():
            with open(os.path.join(www, name), "wb") as fh:
                fh.write(os.urandom(size))
        conf = daemons.write_file(lab, node, "nginx.conf", self.config(lab, node, o))
        daemons.start(lab, node, "nginx", ["nginx", "-e", "stderr", "-p", where, "-c", conf])
