"""How much of a lab or experiment file anything reads: a few KB is usual, and a topology
generator writes the big labs. Its own module, so a reader that must not import PyYAML (a
remembered plan's lookup: netrig.rig.plancache) bounds its read as the loader does."""

MAX_FILE_BYTES = 1 << 20  # characters of a file the loader takes
READ_BYTES = 4 * (MAX_FILE_BYTES + 1)  # bytes enough for MAX_FILE_BYTES + 1 characters
