"""netrig on more than one host, on Dask distributed.

A Dask scheduler hands work to `netrig worker` processes, one per lab host; each host keeps
its own ledger and namespace prefix, so labs of two hosts never collide (even when the
"hosts" are simulated on one machine by `netrig cluster local`).

- `host`: what a worker knows about the host it stands for (name, state dir, prefix);
- `worker`: the Dask worker of one host (`netrig worker`);
- `tasks`: what runs on a worker (one planned run; releasing a lab);
- `sweep`: the client side of `netrig run --cluster` (one writer: the client's SQLite);
- `underlay`, `local`: the simulated cluster on this machine (`netrig cluster local`);
- `ssh`: workers on real hosts over SSH (Dask's SSHCluster).

This package sits beside the experiment runner: it uses the rig and the runner, and only
the CLI uses it.
"""
