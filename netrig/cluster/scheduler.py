"""A Dask scheduler process for a netrig cluster (started by `netrig cluster local up`).

    python -m netrig.cluster.scheduler --host 127.0.0.1 --scheduler-file FILE

It listens on the given address only, writes its address to FILE once it listens, and
stops on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal


async def serve(host: str, port: int, scheduler_file: str) -> None:
    from distributed import Scheduler

    from netrig.cluster.host import quiet_dask

    quiet_dask()
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping.set)
    async with Scheduler(
        host=host, port=port, scheduler_file=scheduler_file, dashboard=False,
        dashboard_address=f"{host}:0",  # its HTTP endpoint (health, metrics): same address
    ) as scheduler:
        finished = asyncio.ensure_future(scheduler.finished())
        stopper = asyncio.ensure_future(stopping.wait())
        await asyncio.wait([finished, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--scheduler-file", required=True)
    args = parser.parse_args()
    logging.getLogger("distributed").setLevel(logging.WARNING)
    asyncio.run(serve(args.host, args.port, args.scheduler_file))


if __name__ == "__main__":
    main()
