"""The rig: brings a plan up with the lab core and the plugins (the public `Lab` API)."""

from netrig.rig.lab import Lab

__all__ = ["Lab"]
