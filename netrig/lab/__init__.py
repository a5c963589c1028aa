"""The lab core: namespaces, batched netlink, the ledger, build, check, teardown, faults,
process and daemon supervision. It knows no plugin: plugins get a `LabRuntime`."""
