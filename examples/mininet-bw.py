"""A Mininet topology netrig runs without Mininet: `netrig up examples/mininet-bw.py`.

Two switches in a row, two hosts on each; the link between the switches is limited to
50 Mbit/s (`bw`, as Mininet's TCLink), the host links to 200 Mbit/s. Hosts are addressed as
Mininet does, in order, but from netrig's pool 198.18.0.0/15 instead of Mininet's
10.0.0.0/8: h1 is 198.18.0.1/15, h2 198.18.0.2/15, and so on.

    netrig up examples/mininet-bw.py --topo dumbbell          # the same, named
    netrig up examples/mininet-bw.py --topo tree,2            # Mininet's own tree, depth 2
"""

from mininet.topo import Topo


class Dumbbell(Topo):
    """h1, h2 — s1 ==50 Mbit/s== s2 — h3, h4."""

    def build(self, per_side=2, core_bw=50):
        left, right = self.addSwitch("s1"), self.addSwitch("s2")
        self.addLink(left, right, bw=core_bw)
        for i in range(1, 2 * per_side + 1):
            host = self.addHost(f"h{i}")
            self.addLink(host, left if i <= per_side else right, bw=200)


topos = {"dumbbell": Dumbbell}
