"""What this host can do: kernel features probed in throwaway namespaces, programs and their
versions, and the facts stored with every run. Lab-core level: it knows no plugin; the
plugins declare what they need and `netrig doctor` and the preflight ask here."""
