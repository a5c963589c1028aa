"""Switch nodes that are not Linux bridges: one module per kind.

A Linux-bridge switch node is built over netlink with everything else (netrig.lab.build);
an Open vSwitch node (`switch: ovs`) needs daemons in its namespace, so it is started
after the links exist and before routing starts (netrig.switch.ovs).
"""
