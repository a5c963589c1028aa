"""What this host can and cannot do for netrig, and how to fix the gaps: the host probes
(netrig.host) read against what the plugins declare they need.

`report` turns both into what degrades and what is impossible.
"""
