"""Jars from Maven Central, pinned by ``jars.lock`` and checked by sha256 before anything may load them.

Why a lock and not ``spark.jars.packages``: Spark's Ivy resolution runs when a session starts, so every driver
would need the network and would trust whatever the repository serves that day. Here the jars are fetched once,
at set-up (``tests/setup/prepare.d/25-kafka.sh``, ``27-s3a.sh``) or image build (the Dockerfile's
``connector-jars`` stage), both from the same committed list, and a file whose sha256 differs from the lock is
refused, never used.

``jars.lock`` (next to this module) has one jar per line, ``<group> <groupId:artifactId:version[:classifier]>
<sha256>``; a group is what one consumer needs (``kafka-connector``: the engine's Spark Kafka connector;
``s3a``: Hadoop's S3A filesystem for ``s3a://`` paths; ``kafka-broker``: the tests' single-node broker).
Commands (stdlib only, so the image's jar stage runs this file by path without installing planengine)::

    python -m planengine.runtime.connectors.maven_jars fetch kafka-connector [--dest DIR]   # idempotent
    python -m planengine.runtime.connectors.maven_jars lock kafka-broker org.apache.kafka:kafka_2.13:4.1.1 --transitive

``lock`` (a maintainer's command, needs Maven) resolves coordinates, checks each jar against the repository's
published SHA-1 and prints lock lines to paste: that is how a version is bumped.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

LOCK = Path(__file__).with_name("jars.lock")
REPOSITORY = os.environ.get("PLANENGINE_MAVEN_REPOSITORY", "https://repo1.maven.org/maven2")
#: Where the set-up keeps fetched jars, one folder per group: ``<checkout>/.tools/jars/<group>/`` (git-ignored).
CACHE = Path(__file__).resolve().parent.parent.parent.parent / ".tools" / "jars"  # no IndexError when run from /
_TIMEOUT_S = 120


class JarCheckFailed(Exception):
    """A downloaded or cached jar is not the one the lock pins (or could not be had at all)."""


@dataclass(frozen=True)
class Artifact:
    """One pinned jar: its group in the lock, its Maven coordinate and the sha256 it must have."""

    group: str
    coordinate: str  # groupId:artifactId:version[:classifier]
    sha256: str

    @property
    def file_name(self) -> str:
        """``artifactId-version[-classifier].jar``, as Maven names it.

        >>> Artifact("g", "org.apache.kafka:kafka-clients:3.9.2", "0" * 64).file_name
        'kafka-clients-3.9.2.jar'
        """
        parts = self.coordinate.split(":")
        classifier = f"-{parts[3]}" if len(parts) > 3 else ""
        return f"{parts[1]}-{parts[2]}{classifier}.jar"

    @property
    def path(self) -> str:
        """The jar's path in a Maven repository.

        >>> Artifact("g", "org.apache.kafka:kafka-clients:3.9.2", "0" * 64).path
        'org/apache/kafka/kafka-clients/3.9.2/kafka-clients-3.9.2.jar'
        """
        group_id, artifact_id, version = self.coordinate.split(":")[:3]
        return f"{group_id.replace('.', '/')}/{artifact_id}/{version}/{self.file_name}"


def parse_lock(text: str, source: str = "jars.lock") -> list[Artifact]:
    """The lock's jars in file order; a malformed line is an error naming it.

    >>> parse_lock("# comment\\nbroker org.x:y:1 " + "a" * 64)[0].coordinate
    'org.x:y:1'
    """
    artifacts = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 3 or not re.fullmatch(r"[0-9a-f]{64}", fields[2]) or fields[1].count(":") not in (2, 3):
            raise JarCheckFailed(f"{source}:{number}: expected '<group> <groupId:artifactId:version> <sha256>', "
                                 f"got {line!r}")
        artifacts.append(Artifact(*fields))
    return artifacts


def read_lock(group: str | None = None, lock: Path = LOCK) -> list[Artifact]:
    """The jars of ``group`` (all when None); an unknown group is an error listing the known ones."""
    artifacts = parse_lock(lock.read_text(encoding="utf-8"), str(lock))
    if group is None:
        return artifacts
    chosen = [a for a in artifacts if a.group == group]
    if not chosen:
        known = sorted({a.group for a in artifacts})
        raise JarCheckFailed(f"{lock}: no jars in group '{group}' (groups: {', '.join(known)})")
    return chosen


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verified(path: Path, artifact: Artifact) -> bool:
    """Whether ``path`` exists and is exactly the pinned jar."""
    return path.is_file() and sha256_of(path) == artifact.sha256


def _download(url: str, target: Path) -> None:
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response, open(target, "wb") as out:
        while block := response.read(1 << 20):
            out.write(block)


def fetch(artifacts: Iterable[Artifact], dest: Path, repository: str = REPOSITORY,
          say: bool = True) -> list[Path]:
    """Each jar into ``dest`` (downloaded only when missing or different), checked against its sha256.

    A file is written under a temporary name and renamed only once its checksum matched, so a reader (a
    session starting, a second set-up) never sees a half-written or unchecked jar."""
    dest.mkdir(parents=True, exist_ok=True)
    paths = []
    for artifact in artifacts:
        target = dest / artifact.file_name
        paths.append(target)
        if verified(target, artifact):
            continue
        url = f"{repository.rstrip('/')}/{artifact.path}"
        if say:
            print(f"fetching {artifact.coordinate} from {url}", file=sys.stderr)
        fd, name = tempfile.mkstemp(prefix=f".{artifact.file_name}.", dir=dest)
        os.close(fd)
        partial = Path(name)
        try:
            try:
                _download(url, partial)
            except OSError as error:
                raise JarCheckFailed(f"cannot download {artifact.coordinate} from {url}: {error}") from None
            got = sha256_of(partial)
            if got != artifact.sha256:
                raise JarCheckFailed(
                    f"{artifact.coordinate} from {url} has sha256 {got}, but {LOCK.name} pins {artifact.sha256}: "
                    "the repository served a different file. Nothing was installed; if the change is intended, "
                    "regenerate the lock line with `python -m planengine.runtime.connectors.maven_jars lock "
                    f"{artifact.group} {artifact.coordinate}`")
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
    return paths


def cached(group: str, lock: Path = LOCK, cache: Path | None = None) -> list[Path] | None:
    """The group's jars in the set-up's cache (``CACHE`` unless given) when every one is there (by name; ``fetch``
    checked them), else None."""
    paths = [(cache or CACHE) / group / a.file_name for a in read_lock(group, lock)]
    return paths if all(p.is_file() for p in paths) else None


# --- lock (maintainers) ----------------------------------------------------------------------------------------
_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>io.planengine.lock</groupId><artifactId>resolve</artifactId><version>1</version>
<dependencies>{deps}</dependencies></project>"""


def _dependency(coordinate: str) -> str:
    parts = coordinate.split(":")
    classifier = f"<classifier>{parts[3]}</classifier>" if len(parts) > 3 else ""
    return (f"<dependency><groupId>{parts[0]}</groupId><artifactId>{parts[1]}</artifactId>"
            f"<version>{parts[2]}</version>{classifier}</dependency>")


def resolve(coordinates: Sequence[str], transitive: bool) -> list[tuple[str, Path]]:
    """``(coordinate, local file)`` of each jar Maven resolves for ``coordinates`` (runtime scope)."""
    with tempfile.TemporaryDirectory() as work:
        pom, listing = Path(work) / "pom.xml", Path(work) / "deps.txt"
        pom.write_text(_POM.format(deps="".join(_dependency(c) for c in coordinates)))
        subprocess.run(["mvn", "-q", "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:list",
                        "-DincludeScope=runtime", f"-DexcludeTransitive={'false' if transitive else 'true'}",
                        f"-DoutputFile={listing}", "-DoutputAbsoluteArtifactFilename=true"],
                       check=True, stdout=sys.stderr)  # the printed lock lines stay the only stdout
        found = []
        for line in listing.read_text().splitlines():
            fields = line.strip().split(":")
            if len(fields) < 6 or fields[2] != "jar":
                continue
            classifier = fields[3] if len(fields) == 7 else None
            version = fields[4] if classifier else fields[3]
            coordinate = ":".join([fields[0], fields[1], version] + ([classifier] if classifier else []))
            found.append((coordinate, Path(fields[-1])))
        return sorted(found)


def lock_lines(group: str, coordinates: Sequence[str], transitive: bool) -> list[str]:
    """Lock lines for ``coordinates``, each jar checked against the SHA-1 Maven Central publishes next to it."""
    lines = []
    for coordinate, path in resolve(coordinates, transitive):
        artifact = Artifact(group, coordinate, "0" * 64)
        with urllib.request.urlopen(f"{REPOSITORY}/{artifact.path}.sha1", timeout=_TIMEOUT_S) as r:
            published = r.read().decode().split()[0].strip()
        if hashlib.sha1(path.read_bytes()).hexdigest() != published:  # Maven Central publishes SHA-1 beside each jar
            raise JarCheckFailed(f"{coordinate}: the resolved jar does not match the repository's SHA-1")
        lines.append(f"{group} {coordinate} {sha256_of(path)}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planengine.runtime.connectors.maven_jars", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    get = commands.add_parser("fetch", help="download a group's jars (when missing) and check them")
    get.add_argument("group")
    get.add_argument("--dest", type=Path, help=f"folder for the jars (default {CACHE}/<group>)")
    get.add_argument("--quiet", action="store_true", help="no summary line")
    make = commands.add_parser("lock", help="print lock lines for Maven coordinates (needs mvn)")
    make.add_argument("group")
    make.add_argument("coordinates", nargs="+")
    make.add_argument("--transitive", action="store_true", help="with their runtime dependencies")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            artifacts = read_lock(args.group)
            dest = args.dest or CACHE / args.group
            fetch(artifacts, dest)  # names each jar it downloads: silent when the cache is complete
            if not args.quiet:
                print(f"{len(artifacts)} jars of '{args.group}' verified in {dest}", file=sys.stderr)
        else:
            print("\n".join(lock_lines(args.group, args.coordinates, args.transitive)))
    except JarCheckFailed as error:
        print(f"maven_jars: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
