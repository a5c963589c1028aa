"""netrig: reproducible network experiments in Linux network namespaces.

Data flow: spec (YAML → typed models) → plan (addresses, routes) → lab (netlink)
→ measure → results → stats/report.
"""

__version__ = "0.1.0"


def _sbin_on_path() -> None:
    """A non-login root shell (su, cron, a CI step) may have the system's bin directories
    on PATH but not the sbin ones where ip, tc, nft, bird and babeld live: netrig, and every
    program it starts, looks there too (appended, so the user's own PATH comes first). A PATH
    without /usr/bin or /bin was narrowed on purpose, and is left as it is."""
    import os

    path = os.environ.get("PATH", os.defpath).split(os.pathsep)
    extra = [d for d in ("/usr/local/sbin", "/usr/sbin", "/sbin") if d not in path]
    if extra and ("/usr/bin" in path or "/bin" in path):
        os.environ["PATH"] = os.pathsep.join([*path, *extra])


_sbin_on_path()
