"""Value types and mechanisms every layer shares, importing nothing of netrig: the plugin
registry and the measured sample."""
