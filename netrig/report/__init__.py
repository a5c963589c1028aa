"""Reports on stored experiments: plots (`plots`), the HTML report (`html`), and the texts
they share (`units` for readable numbers, `verdicts` for comparisons).

Before any of them imports matplotlib: a user whose home cannot be written (`nobody`, whose
home is /nonexistent) gets a matplotlib folder of its own in the temporary directory, kept
between runs (unless that name is another user's: then one for this run); matplotlib itself
warned at every command and made a new one each time.
"""

import os


def _matplotlib_folder() -> None:
    if os.environ.get("MPLCONFIGDIR"):  # set and not empty (as matplotlib reads it)
        return
    home = os.path.expanduser("~")
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    for folder in (config, home):
        if os.path.isdir(folder):
            if os.access(folder, os.W_OK):
                return
            break
    import tempfile

    path = os.path.join(tempfile.gettempdir(), f"netrig-matplotlib-{os.getuid()}")
    try:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            mine = os.lstat(path)
            ours = mine.st_uid == os.getuid() and not mine.st_mode & 0o077
        except FileExistsError:  # a file of that name, someone else's
            ours = False
        if not ours or os.path.islink(path):
            path = tempfile.mkdtemp(prefix="netrig-matplotlib-")  # this run's own, then
    except OSError:
        return  # matplotlib finds its own way, with its warning
    os.environ["MPLCONFIGDIR"] = path


_matplotlib_folder()
