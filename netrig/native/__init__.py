"""netrig's own native code (C and BPF), compiled at first use; see build.py."""
