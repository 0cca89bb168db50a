"""What the engine image is, read from our ``Dockerfile`` (no Docker engine here): the pod runner runs an
image's containers from these facts and ``tests/chart/test_dockerfile.py`` checks them statically.

An image name maps to a local installation of the same software (``ImageCatalog``): the ``engine`` target's
virtualenv (``VIRTUAL_ENV``, ``/opt/planengine``) is a venv of this checkout (``.venv`` = the Spark 4.3 build,
``.venv-spark42`` = the Spark 4.2 build), mounted where the image has it, so ``PATH`` and ``PYSPARK_PYTHON``
resolve as in the image. A test may give an image another entrypoint (the contract double of the engine CLI,
a wrapper that injects a fault): that is a different image, with its own name.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import shlex
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOCKERFILE = REPO / "Dockerfile"


@dataclasses.dataclass
class Stage:
    name: str
    base: str
    instructions: list[tuple[str, str]] = dataclasses.field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for kw, args in self.instructions if kw == keyword]

    def last(self, keyword: str) -> str | None:
        found = self.all(keyword)
        return found[-1] if found else None


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages, with continuation lines joined and comments dropped."""
    logical, buffer = [], ""
    for raw in text.splitlines():
        if not buffer and (not raw.strip() or raw.lstrip().startswith("#")):
            continue
        if buffer and raw.lstrip().startswith("#"):
            continue
        if raw.rstrip().endswith("\\"):
            buffer += raw.rstrip()[:-1] + " "
            continue
        logical.append(buffer + raw)
        buffer = ""
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line in logical:
        keyword, _, args = line.strip().partition(" ")
        keyword, args = keyword.upper(), args.strip()
        if keyword == "FROM":
            match = re.match(r"^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$", args, re.IGNORECASE)
            assert match, f"cannot parse FROM {args}"
            base = re.sub(r"\$\{(\w+)\}", lambda m: global_args.get(m.group(1), m.group(0)), match.group(1))
            stages.append(Stage(name=match.group(2) or str(len(stages)), base=base))
        elif not stages:
            if keyword == "ARG":
                name, _, default = args.partition("=")
                global_args[name] = default
        else:
            stages[-1].instructions.append((keyword, args))
    return global_args, stages


def _env_pairs(args: str) -> dict[str, str]:
    """``ENV A=1 B=$A:x`` (the ``key=value`` form), with ``$VAR`` references to earlier values expanded."""
    found: dict[str, str] = {}
    for word in shlex.split(args):
        key, _, value = word.partition("=")
        found[key] = value
    return found


@dataclasses.dataclass(frozen=True)
class EngineImage:
    """The facts of the ``engine`` target a container runtime needs."""

    entrypoint: list[str]
    cmd: list[str]
    env: dict[str, str]  # ENV, in order, $PATH-style references left for the runtime to expand
    workdir: str
    uid: int
    gid: int
    user: str  # the account useradd created for uid (None-safe: "" when the image makes none)
    home: str
    virtual_env: str
    installed_files: dict[str, Path]  # path in the image -> file of this repository (COPY from the context)
    owned_dirs: dict[str, tuple[int, int]]  # directories the image gives its user: home, chown -R targets


def _account(stage: Stage, uid: int) -> tuple[str, str]:
    """(name, home) of the account a ``useradd --uid <uid>`` in the stage's RUN lines creates."""
    for run in stage.all("RUN"):
        for command in re.split(r"&&|;", run):
            words = shlex.split(command)
            if not words or words[0] != "useradd":
                continue
            flags = dict(itertools.pairwise(words))
            if flags.get("--uid") == str(uid):
                return words[-1], flags.get("--home-dir", "/")
    return "", "/"


@cache
def engine_image(target: str = "engine") -> EngineImage:
    _, stages = parse_dockerfile(DOCKERFILE.read_text())
    stage = next(s for s in stages if s.name == target)
    env: dict[str, str] = {}
    for args in stage.all("ENV"):
        env.update(_env_pairs(args))
    uid_text, _, gid_text = (stage.last("USER") or "0").partition(":")
    uid, gid = int(uid_text), int(gid_text or uid_text)
    user, home = _account(stage, uid)
    installed: dict[str, Path] = {}
    for args in stage.all("COPY"):
        words = [w for w in args.split() if not w.startswith("--")]
        if any(w.startswith("--from=") for w in args.split()) or len(words) != 2:
            continue
        installed[words[1]] = REPO / words[0]
    owned = {home: (uid, gid)} if user else {}
    for run in stage.all("RUN"):
        for match in re.finditer(r"chown -R (\d+):(\d+) (/\S+)", run):
            owned[match.group(3)] = (int(match.group(1)), int(match.group(2)))
    return EngineImage(
        entrypoint=json.loads(stage.last("ENTRYPOINT") or "[]"), cmd=json.loads(stage.last("CMD") or "[]"),
        env=env, workdir=stage.last("WORKDIR") or "/", uid=uid, gid=gid, user=user, home=home,
        virtual_env=env.get("VIRTUAL_ENV", ""), installed_files=installed, owned_dirs=owned,
    )
