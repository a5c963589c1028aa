"""The plan: pure data computed from the model without root: names, ifindexes, MACs,
addresses, routes, per-node configuration, the list of runs; JSON out and back."""
