"""A container without a container engine: Linux namespaces, an overlay root and bind mounts.

Each container runs in its own mount and UTS namespace (``unshare``), chrooted into an overlay of this
machine's root filesystem (so the programs, Java and the interpreters are there), with:

* the image: the virtualenv of the image name bound at the image's ``VIRTUAL_ENV`` (read-only), the files the
  Dockerfile COPYs from this repository at their image paths, an ``/etc/passwd`` entry for the image's user,
  and the directories the Dockerfile gives that user (its home, ``chown -R`` targets) owned by it;
* the pod: its volumes bound at their ``mountPath`` (``readOnly`` ones read-only), ``/etc/hosts`` with the pod
  IP under the pod name and the cluster names of Services that select the pod, the pod name as host name;
* ``readOnlyRootFilesystem``: the overlay is remounted read-only after the mounts, so the kernel refuses any
  write outside a volume (EROFS), as in the pod; without it writes land in the overlay's upper directory, a
  per-container scratch space like a container's writable layer;
* the user: ``runAsUser``/``runAsGroup`` and ``fsGroup`` as supplementary group (``setpriv``), volumes owned by
  the fsGroup as the kubelet does.

Not emulated: network namespaces (pods share this machine's network; each pod gets its own loopback address
as pod IP, and programs that bind all interfaces share the ports), cgroups (no CPU or memory limits), PID
namespaces, capabilities beyond dropping the user's, seccomp. The user switch and the namespaces need root;
without it the runner is unavailable (``available()`` says why).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import subprocess
from functools import cache
from pathlib import Path

TOOLS = {name: shutil.which(name) for name in ("unshare", "mount", "chroot", "setpriv", "hostname", "mkdir",
                                               "chmod", "chown", "touch")}


@cache
def available() -> str | None:
    """None when containers can run here, else why not (the tests skip with it)."""
    if os.geteuid() != 0:
        return "the pod runner needs root (mount and UTS namespaces, overlay root, user switch)"
    missing = [name for name, path in TOOLS.items() if path is None]
    if missing:
        return f"the pod runner needs {', '.join(missing)} (util-linux, coreutils)"
    probe = subprocess.run([TOOLS["unshare"], "--mount", "--uts", "--", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"unshare --mount --uts fails here: {probe.stderr.strip()}"
    return None


def resolve_in_root(path: str, depth: int = 0) -> str:
    """``path`` with its symlinks resolved as the container sees them (the overlay's lower layer is this machine's
    root): ``/var/run/secrets`` is ``/run/secrets`` on Debian. Mounting at the unresolved path would follow the
    absolute link ``/var/run -> /run`` out of the container's root, onto this machine's ``/run``."""
    if depth > 40:
        raise ValueError(f"too many levels of symbolic links resolving {path}")
    resolved = "/"
    parts = [part for part in path.split("/") if part not in ("", ".")]
    for index, part in enumerate(parts):
        if part == "..":
            resolved = os.path.dirname(resolved.rstrip("/")) or "/"
            continue
        candidate = os.path.join(resolved, part)
        if os.path.islink(candidate):
            link = os.readlink(candidate)
            rest = "/".join(parts[index + 1:])
            base = link if link.startswith("/") else os.path.join(resolved, link)
            return resolve_in_root(f"{base}/{rest}" if rest else base, depth + 1)
        resolved = candidate
    return resolved


@dataclasses.dataclass
class Mount:
    source: Path  # a directory or file on this machine
    target: str  # its path in the container
    read_only: bool = False


@dataclasses.dataclass
class Sandbox:
    """Everything one container process needs; ``command()`` is the argv that starts it."""

    directory: Path  # scratch space of this container (overlay layers, the root mount point)
    hostname: str
    mounts: list[Mount]
    etc_files: dict[str, str]  # path under /etc -> lines appended in the container's copy
    read_only_root: bool
    uid: int | None
    gid: int | None
    groups: list[int]
    working_dir: str
    traversable: list[str]  # directories to make passable (the base interpreter's ancestors)
    owned_dirs: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # the image's chowns

    def command(self, argv: list[str]) -> list[str]:
        root = self.directory / "root"
        upper, work = self.directory / "upper", self.directory / "work"
        for path in (root, upper, work):
            path.mkdir(parents=True, exist_ok=True)
        t = {k: shlex.quote(str(v)) for k, v in TOOLS.items()}
        r = shlex.quote(str(root))
        lines = [
            "set -eu",
            f"{t['mount']} --make-rprivate /",
            f"{t['mount']} -t overlay overlay -o lowerdir=/,upperdir={shlex.quote(str(upper))},"
            f"workdir={shlex.quote(str(work))} {r}",
        ]
        lines += [f"{t['mount']} --rbind /{d} {r}/{d}" for d in ("proc", "sys", "dev")]
        for directory in self.traversable:
            lines.append(f"{t['chmod']} o+x {r}{shlex.quote(directory)}")
        for directory, (uid, gid) in self.owned_dirs.items():
            lines.append(f"{t['mkdir']} -p {r}{shlex.quote(directory)}")
            lines.append(f"{TOOLS['chown']} -R {uid}:{gid} {r}{shlex.quote(directory)}")
        for mount in self.mounts:
            target = f"{r}{shlex.quote(resolve_in_root(mount.target))}"
            if mount.source.is_dir():
                lines.append(f"{t['mkdir']} -p {target}")
            else:
                lines.append(f"{t['mkdir']} -p $(dirname {target}) && {t['touch']} {target}")
            lines.append(f"{t['mount']} --bind {shlex.quote(str(mount.source))} {target}")
            if mount.read_only:
                lines.append(f"{t['mount']} -o remount,bind,ro {target}")
        for relpath, text in self.etc_files.items():
            lines.append(f"printf '%s\\n' {shlex.quote(text)} >> {r}/etc/{shlex.quote(relpath)}")
        lines.append(f"{t['mkdir']} -p {r}{shlex.quote(self.working_dir)}")
        lines.append(f"{t['hostname']} {shlex.quote(self.hostname)}")
        if self.read_only_root:
            lines.append(f"{t['mount']} -o remount,ro {r}")
        switch = ""
        if self.uid is not None:
            groups = ",".join(str(g) for g in self.groups) or str(self.gid if self.gid is not None else self.uid)
            switch = (f"{t['setpriv']} --reuid {self.uid} --regid {self.gid if self.gid is not None else self.uid} "
                      f"--groups {groups} --inh-caps=-all -- ")
        lines.append(f'exec {t["chroot"]} {r} {switch}/bin/sh -c \'cd "$0" && exec "$@"\' '
                     f'{shlex.quote(self.working_dir)} "$@"')
        script = self.directory / "start.sh"
        script.write_text("\n".join(lines) + "\n")
        return [str(TOOLS["unshare"]), "--mount", "--uts", "--", "/bin/sh", str(script), *argv]
