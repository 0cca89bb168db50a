"""The test node's pod addresses (``podnet.py``) with a stand-in ``ip`` command on PATH: which block is taken, the
route as the block's lock, and the loopback fallback when routes cannot be added. The real ``ip`` is used by every
Kubernetes-launcher scenario (the webhook one needs its routable addresses)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.operator.kubelet import podnet

FAKE_IP = """#!/bin/sh
# ip route add|del local <block> dev lo: routes recorded in $ROUTES; "exists" blocks refused as taken.
echo "$@" >> "$CALLS"
block="$4"
case "$2" in
  add)
    if [ -n "$REFUSE" ]; then echo "RTNETLINK answers: Operation not permitted" >&2; exit 2; fi
    if grep -qx "$block" "$ROUTES" 2>/dev/null; then echo "RTNETLINK answers: File exists" >&2; exit 2; fi
    echo "$block" >> "$ROUTES" ;;
  del) grep -vx "$block" "$ROUTES" > "$ROUTES.new"; mv "$ROUTES.new" "$ROUTES" ;;
esac
"""


@pytest.fixture
def fake_ip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "bin").mkdir()
    script = tmp_path / "bin" / "ip"
    script.write_text(FAKE_IP)
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    monkeypatch.setenv("ROUTES", str(tmp_path / "routes"))
    monkeypatch.setenv("CALLS", str(tmp_path / "calls"))
    return tmp_path


def test_a_free_block_is_made_local_and_given_back(fake_ip: Path) -> None:
    network, why = podnet.claim(random.Random(7))
    assert why is None and network.routable
    assert network.route is not None and network.route.startswith(f"{network.prefix}.")
    assert network.address(1) == f"{network.prefix}.10.3" and network.address(250) == f"{network.prefix}.11.2"
    assert (fake_ip / "routes").read_text().split() == [network.route]
    network.release()
    network.release()  # idempotent
    assert (fake_ip / "routes").read_text().split() == [] and not network.routable


def test_a_block_another_node_holds_is_not_taken(fake_ip: Path) -> None:
    first, _ = podnet.claim(random.Random(3))
    second, why = podnet.claim(random.Random(3))  # the same draws: the first block is refused as existing
    assert why is None and second.routable and second.prefix != first.prefix
    assert sorted((fake_ip / "routes").read_text().split()) == sorted([first.route, second.route])


def test_without_permission_the_node_falls_back_to_loopback_and_says_why(fake_ip: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFUSE", "1")
    network, why = podnet.claim(random.Random(1))
    assert not network.routable and network.prefix.startswith("127.")
    assert why is not None and "not permitted" in why
    assert len((fake_ip / "calls").read_text().splitlines()) == 1  # no other block is tried: none would do


def test_without_the_ip_command_the_node_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    network, why = podnet.claim(random.Random(1))
    assert not network.routable and why is not None and "ip" in why
