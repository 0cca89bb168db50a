"""The test node's pod addresses: a block of this machine's own addresses that a real API server accepts.

Pods share the machine's network (no network namespaces, no CNI), so a pod address must be local to the machine
for a container to bind it. Any ``127.x.y.z`` is, but a real API server refuses loopback addresses in an
EndpointSlice ("may not be in the loopback range"), and without endpoints it cannot call a webhook behind a
Service (``--enable-aggregator-routing``: it dials the endpoint's address). So a node first asks for a routable
block made local the way AnyIP works: ``ip route add local 10.B.0.0/16 dev lo`` turns all 65 536 addresses of
the block into this machine's, without one address per pod to add and remove. That needs ``CAP_NET_ADMIN`` (the
test machines run as root); without it the node falls back to ``127.B.0.0/16`` and says so
(:attr:`PodNetwork.routable`), and only the webhook-over-TLS test needs the difference.

The second octet is drawn at random (64-191: clear of the Service range ``10.0.0.0/24`` and the usual cluster
ranges) and a block whose route exists already (another test process's node, or one a killed run left behind)
is not taken: ``ip`` refuses the duplicate route, which makes the route itself the lock.
"""

from __future__ import annotations

import contextlib
import random
import shutil
import subprocess
from dataclasses import dataclass

ATTEMPTS = 12


@dataclass
class PodNetwork:
    """``prefix`` is the block's first two octets; ``route`` the local route this node installed (None: loopback)."""

    prefix: str
    route: str | None = None

    @property
    def routable(self) -> bool:
        return self.route is not None

    def address(self, number: int) -> str:
        """The ``number``-th pod's address (1-based): ``.2`` to ``.251`` of ``prefix.10.*`` onwards."""
        return f"{self.prefix}.{number // 250 + 10}.{number % 250 + 2}"

    def release(self) -> None:
        """Remove the route (idempotent); the addresses stop being this machine's."""
        route, self.route = self.route, None
        if route is not None:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["ip", "route", "del", "local", route, "dev", "lo"], capture_output=True, timeout=10)


def claim(rng: random.Random | None = None, *, routable: bool = True) -> tuple[PodNetwork, str | None]:
    """A routable block when this machine lets us make one local, else a loopback block; and why not, if not."""
    rng = rng or random.SystemRandom()
    why = None
    if routable and shutil.which("ip") is None:
        why = "no `ip` command (iproute2)"
    elif routable:
        for _ in range(ATTEMPTS):
            second = rng.randrange(64, 192)
            route = f"10.{second}.0.0/16"
            done = subprocess.run(["ip", "route", "add", "local", route, "dev", "lo"], capture_output=True,
                                  text=True, timeout=10)
            if done.returncode == 0:
                return PodNetwork(f"10.{second}", route), None
            why = done.stderr.strip() or f"ip route add exited {done.returncode}"
            if "File exists" not in why:
                break  # not a taken block: no permission, say; another block will not do better
    return PodNetwork(f"127.{rng.randrange(1, 255)}"), why
