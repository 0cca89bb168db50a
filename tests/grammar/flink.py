"""Apache Flink's own SQL parser as an oracle: the pinned jars, the small Java harness, one JVM per corpus.

The jars are the lock's group ``flink-sql-parser`` (``planengine/runtime/connectors/jars.lock``), fetched at set-up
by ``tests/setup/prepare.d/26-flink-parser.sh``, never here: a missing or altered jar fails with the command that
fetches it (a skipped guard would read as a passing one). The harness
(``tests/grammar/java/io/planengine/grammar/FlinkGrammar.java``) is compiled with the JDK's ``javac`` into
``.tools/grammar/classes-<digest>/`` (the digest covers its source and the jar set, so a change recompiles and an
unchanged tree reuses the classes: about 3 s of javac saved per run) and reads all statements from one stdin.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from planengine.runtime.connectors import maven_jars

GROUP = "flink-sql-parser"
HERE = Path(__file__).resolve().parent
SOURCES = HERE / "java"
MAIN = "io.planengine.grammar.FlinkGrammar"
FETCH_COMMAND = (f"python -m planengine.runtime.connectors.maven_jars fetch {GROUP}   "
                 "(what `make test`'s set-up runs: bash tests/setup/prepare.d/26-flink-parser.sh)")
# Short-lived JVM: C1 only and the serial collector, as the test drivers (docs/testing.md, "Test JVMs").
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")
_TIMEOUT_S = 300


class FlinkParserUnavailable(Exception):
    """The pinned jars or the JDK are missing: the guard cannot run, and says how to make it run."""


@dataclass(frozen=True)
class FlinkVerdict:
    """Flink's answer for one piece of SQL: accepted (with the parsed node's class) or rejected (with why)."""

    accepted: bool
    node: str | None = None
    error: str | None = None


def jars(cache: Path | None = None) -> list[Path]:
    """The group's jars from the set-up's cache, each checked against the lock's sha256 (~30 MB, well under a
    second): the same check the fetch made, so a jar altered since is refused here too."""
    folder = (cache or maven_jars.CACHE) / GROUP
    problems, paths = [], []
    for artifact in maven_jars.read_lock(GROUP):
        path = folder / artifact.file_name
        paths.append(path)
        if not path.is_file():
            problems.append(f"missing {path}")
        elif not maven_jars.verified(path, artifact):
            problems.append(f"{path} is not the jar jars.lock pins for {artifact.coordinate}")
    if problems:
        raise FlinkParserUnavailable("Flink's SQL parser jars are not ready: " + "; ".join(problems)
                                     + f". Fetch them with `{FETCH_COMMAND}`")
    return paths


def java_tool(name: str) -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / name if home else None
    found = str(candidate) if candidate and candidate.is_file() else shutil.which(name)
    if found is None:
        raise FlinkParserUnavailable(f"no `{name}` in $JAVA_HOME/bin or PATH: install a JDK 17 "
                                     "(Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`)")
    return found


def classes(class_path: list[Path], cache: Path | None = None) -> Path:
    """The harness compiled against ``class_path``, from the cache when its source and jars are unchanged."""
    sources = sorted(SOURCES.rglob("*.java"))
    digest = hashlib.sha256()
    for path in sources:
        digest.update(path.relative_to(SOURCES).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    for jar in class_path:
        digest.update(jar.name.encode() + b"\0")
    root = cache or (maven_jars.CACHE.parent / "grammar")
    target = root / f"classes-{digest.hexdigest()[:16]}"
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".classes-", dir=root))
    try:
        done = subprocess.run([java_tool("javac"), "--release", "17", "-encoding", "UTF-8", "-Xlint:all", "-Werror",
                               "-proc:none", "-cp", os.pathsep.join(map(str, class_path)), "-d", str(work),
                               *map(str, sources)], capture_output=True, text=True, timeout=_TIMEOUT_S)
        if done.returncode != 0:
            raise FlinkParserUnavailable(f"the Flink grammar harness does not compile:\n{done.stdout}{done.stderr}")
        try:
            work.rename(target)
        except OSError:  # another run compiled the same classes first: theirs are as good
            if not target.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def parse(statements: list[str], cache: Path | None = None, class_path: list[Path] | None = None) -> list[FlinkVerdict]:
    """Flink's verdict on each statement, in order, from one JVM (``class_path``: the checked jars unless given).

    A class missing at run time ends the harness with status 3 (it never passes for a rejected statement), and
    any failure of the JVM raises with its stderr."""
    class_path = jars(cache) if class_path is None else class_path
    compiled = classes(class_path, None if cache is None else cache.parent / "grammar")
    stdin = "".join(json.dumps(s) + "\n" for s in statements)
    done = subprocess.run([java_tool("java"), *JVM_OPTIONS, "-cp", os.pathsep.join(map(str, [compiled, *class_path])),
                           MAIN], input=stdin, capture_output=True, text=True, timeout=_TIMEOUT_S)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(statements):
        raise RuntimeError(f"the Flink grammar harness failed (exit status {done.returncode}, "
                           f"{len(lines)} answers for {len(statements)} statements):\n{done.stderr[-4000:]}")
    return [FlinkVerdict(**json.loads(line)) for line in lines]
