"""RankNetwork: every rank of a local job in a network namespace of its own, and a link to cut.

    with RankNetwork(4) as net:
        launch = [*net.hub_exec, "ppu-launch", "--rank-wrapper", net.wrapper, ...]
        net.cut(2); ...; net.restore(2)

Contract: entering creates K + 1 namespaces, all named "<tag>-..." with a tag unique to this
process and object: a hub, where ppu-launch and ppu-rendezvous run (`hub_exec`), holding a
bridge with address HUB_ADDR, and one per rank whose eth0 is a veth to that bridge
(10.79.0.<rank+1>). `wrapper` is the ppu-launch --rank-wrapper that runs rank r in its own
namespace with MASTER_ADDR = HUB_ADDR and Gloo on eth0. `cut(r)` sets the bridge's end of rank
r's link down (a network blip: the rank's sockets stay open, its packets go nowhere) and
`restore(r)` sets it up again. `partition(a, b)` makes ranks a and b unable to reach each other
while both still reach the hub and every other rank (each sends the other's packets to a MAC
nobody has: the bridge floods them and every namespace drops them, as a silent link does);
`heal(a, b)` ends it. Nothing is made outside these namespaces; leaving (also on an
exception, and at interpreter exit) ends the processes still in them and deletes them, and with
them every veth and the bridge. Needs root and iproute2 (scripts/install-deps.sh --test).
"""

import atexit
import itertools
import os
import signal
import subprocess

HUB_ADDR = "10.79.0.254"
_serial = itertools.count()


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


class RankNetwork:
    def __init__(self, ranks):
        self.ranks = ranks
        self.tag = f"ppu-blip-{os.getpid()}-{next(_serial)}"
        self.hub = f"{self.tag}-hub"
        self.hub_exec = ["ip", "netns", "exec", self.hub]
        self.wrapper = f"ip netns exec {self.tag}-r{{rank}} env MASTER_ADDR={HUB_ADDR} GLOO_SOCKET_IFNAME=eth0"
        self._made = []

    def rank_ns(self, rank):
        return f"{self.tag}-r{rank}"

    def __enter__(self):
        atexit.register(self.remove)
        try:
            self._add_ns(self.hub)
            _ip("-n", self.hub, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.hub, "addr", "add", f"{HUB_ADDR}/24", "dev", "br0")
            _ip("-n", self.hub, "link", "set", "br0", "up")
            for r in range(self.ranks):
                ns = self.rank_ns(r)
                self._add_ns(ns)
                _ip("-n", self.hub, "link", "add", f"p{r}", "type", "veth", "peer", "name", "eth0", "netns", ns)
                _ip("-n", self.hub, "link", "set", f"p{r}", "master", "br0")
                _ip("-n", self.hub, "link", "set", f"p{r}", "up")
                _ip("-n", ns, "addr", "add", f"10.79.0.{r + 1}/24", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *_exc):
        self.remove()

    def _add_ns(self, name):
        _ip("netns", "add", name)
        self._made.append(name)
        _ip("-n", name, "link", "set", "lo", "up")

    def cut(self, rank):
        _ip("-n", self.hub, "link", "set", f"p{rank}", "down")

    def restore(self, rank):
        _ip("-n", self.hub, "link", "set", f"p{rank}", "up")

    def partition(self, a, b):
        for here, there in ((a, b), (b, a)):
            _ip(
                "-n",
                self.rank_ns(here),
                "neigh",
                "replace",
                f"10.79.0.{there + 1}",
                "lladdr",
                "02:00:00:00:00:fe",
                "nud",
                "permanent",
                "dev",
                "eth0",
            )

    def heal(self, a, b):
        for here, there in ((a, b), (b, a)):
            _ip("-n", self.rank_ns(here), "neigh", "del", f"10.79.0.{there + 1}", "dev", "eth0", check=False)

    def remove(self):
        """Ends every process left in our namespaces, then deletes them (veths and bridge go too)."""
        for ns in reversed(self._made):
            for pid in _ip("netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("netns", "del", ns, check=False)
        self._made.clear()

    def leftovers(self):
        """Names of our namespaces that still exist (empty after remove())."""
        listed = _ip("netns", "list", check=False).stdout.split()
        return [n for n in listed if n.startswith(self.tag + "-")]
