"""Build the JVM operator library (``planengine-jvm``) against the installed PySpark's own jars.

    python -m planengine.runtime.jvm [--force] [--quiet]

The Java 17 sources under ``planengine/runtime/jvm/java/`` are compiled with the JDK's ``javac`` against
``pyspark/jars/*`` of the interpreter running this module (no Maven, nothing downloaded), so each engine venv
builds its own jar: ``.venv/bin/python -m planengine.runtime.jvm`` for Spark 4.3,
``.venv-spark42/bin/python -m planengine.runtime.jvm`` for the second engine on Spark 4.2. ``make venv``
runs it; the session (``planengine.runtime.engine.session``) calls ``ensure_jar`` before starting the JVM, so an
editable checkout whose Java sources changed gets a fresh jar on its next start.

A jar is named after the Spark version it was compiled against (``planengine-jvm-spark4.3.0.jar``) and has a
stamp beside it: the SHA-256 of the sources and that version. A jar is reused only when its stamp matches;
two venvs sharing one editable checkout therefore keep two jars side by side. Jars are written to the
package's ``jars/`` directory (shipped in the wheel: ``[tool.hatch.build.targets.wheel] artifacts``) or, when
that is read-only (an installed wheel run by another user), to ``$PLANENGINE_JVM_CACHE`` (default
``~/.cache/planengine/jvm``). Concurrent builders serialise on ``.build/lock``; the jar appears by atomic rename.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from planengine.errors import PlanEngineError

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "java"
PACKAGE_JARS = HERE / "jars"
JAVA_RELEASE = "17"
# Every lint on and every warning an error, as Spark's own build: a raw type or an unchecked cast fails the
# build where it is written, not at run time on an executor. A warning that must stay is suppressed in the
# source with a comment saying why (docs/jvm-operators.md, "Building").
JAVAC_CHECKS = ("-Xlint:all", "-Werror")
REMEDY = ("install a JDK 17 (Debian/Ubuntu: `apt-get install openjdk-17-jdk-headless`; or point JAVA_HOME at "
          "a JDK), then run `make venv` or `python -m planengine.runtime.jvm` with the engine's Python")


class JvmLibraryUnavailable(PlanEngineError):
    """The JVM operator library is neither built for this Spark nor buildable here (the message says why)."""

    exit_code = 1


@dataclass(frozen=True)
class Target:
    """What a jar is built for: the PySpark installation of this interpreter."""

    spark_version: str
    jars_dir: Path

    @property
    def jar_name(self) -> str:
        return f"planengine-jvm-spark{self.spark_version}.jar"


def current_target() -> Target:
    import pyspark  # noqa: PLC0415 — pyspark is an optional extra

    return Target(pyspark.__version__, Path(pyspark.__file__).resolve().parent / "jars")


def source_files() -> list[Path]:
    return sorted(SOURCES.rglob("*.java"))


def source_digest(target: Target) -> str:
    """SHA-256 over every source (path and bytes) and the target Spark version: the jar's identity."""
    h = hashlib.sha256(f"spark={target.spark_version};release={JAVA_RELEASE};checks={' '.join(JAVAC_CHECKS)}\n"
                       .encode())
    for path in source_files():
        h.update(str(path.relative_to(SOURCES)).encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def cache_dir() -> Path:
    configured = os.environ.get("PLANENGINE_JVM_CACHE")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "planengine" / "jvm"


def _candidate_dirs() -> list[Path]:
    return [PACKAGE_JARS, cache_dir()]


def _stamp(jar: Path) -> Path:
    return jar.with_suffix(".stamp")


def find_jar(target: Target | None = None) -> Path | None:
    """The up-to-date jar for ``target`` (default: this interpreter's PySpark), or None."""
    target = target or current_target()
    digest = source_digest(target)
    for directory in _candidate_dirs():
        jar = directory / target.jar_name
        try:
            if jar.is_file() and _stamp(jar).read_text().strip() == digest:
                return jar
        except OSError:
            continue
    return None


def compile_classpath(jars_dir: Path) -> str:
    """PySpark's jars that ``javac`` can read without a warning, joined for ``-cp``.

    A jar whose manifest ``Class-Path`` names jars PySpark does not ship (Derby's locale jars, the Scala
    compiler's unversioned ``scala-library.jar``) makes ``-Xlint:path`` warn about each missing name; nothing
    here compiles against those jars, so they stay off the compile class path (the run-time one is Spark's).
    """
    usable = []
    for jar in sorted(jars_dir.glob("*.jar")):
        missing = [name for name in _manifest_class_path(jar) if not (jars_dir / name).exists()]
        if not missing:
            usable.append(str(jar))
    return os.pathsep.join(usable)


def _manifest_class_path(jar: Path) -> list[str]:
    """The relative jar names of ``jar``'s manifest ``Class-Path`` (continuation lines joined)."""
    try:
        with zipfile.ZipFile(jar) as archive:
            text = archive.read("META-INF/MANIFEST.MF").decode("utf-8", errors="replace")
    except (KeyError, OSError, zipfile.BadZipFile):
        return []
    joined = re.sub(r"\r?\n ", "", text)  # a manifest line continues on lines that start with one space
    for line in joined.splitlines():
        if line.startswith("Class-Path:"):
            return line.removeprefix("Class-Path:").split()
    return []


def find_javac() -> tuple[str | None, str]:
    """(path of ``javac`` or None, where it was looked for)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate), f"$JAVA_HOME/bin ({java_home})"
    found = shutil.which("javac")
    return found, "$JAVA_HOME/bin and PATH"


def _writable_dir() -> Path:
    for directory in _candidate_dirs():
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(directory, os.W_OK):
            return directory
    raise JvmLibraryUnavailable(f"no writable directory for the JVM operator library (tried "
                                f"{', '.join(map(str, _candidate_dirs()))})",
                                hint="set PLANENGINE_JVM_CACHE to a writable directory")


def ensure_jar(target: Target | None = None, *, force: bool = False, log=None) -> Path:  # type: ignore[no-untyped-def]
    """The jar for ``target``, built first when missing or stale. Raises ``JvmLibraryUnavailable``."""
    target = target or current_target()
    if not force:
        jar = find_jar(target)
        if jar is not None:
            return jar
    if not source_files():
        raise JvmLibraryUnavailable(f"the JVM operator library for Spark {target.spark_version} is not installed "
                                    f"and its sources are missing ({SOURCES})", hint="reinstall planengine")
    javac, where = find_javac()
    if javac is None:
        raise JvmLibraryUnavailable(
            f"the JVM operator library for Spark {target.spark_version} is not built for this installation and "
            f"cannot be built here: no `javac` in {where}", hint=REMEDY)
    directory = _writable_dir()
    work = directory / ".build"  # lock and scratch space, never shipped (pyproject: wheel exclude)
    work.mkdir(exist_ok=True)
    with open(work / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not force:
            jar = find_jar(target)
            if jar is not None:
                return jar
        return _build(target, javac, directory, work, log)


def _build(target: Target, javac: str, directory: Path, work: Path, log) -> Path:  # type: ignore[no-untyped-def]
    digest = source_digest(target)
    if not target.jars_dir.is_dir():
        raise JvmLibraryUnavailable(f"PySpark's jars directory {target.jars_dir} does not exist",
                                    hint="reinstall pyspark in this environment")
    jar_tool = str(Path(javac).with_name("jar"))
    if not os.access(jar_tool, os.X_OK):
        jar_tool = shutil.which("jar") or ""
    if not jar_tool:
        raise JvmLibraryUnavailable(f"`jar` not found next to {javac}", hint=REMEDY)
    if log:
        log(f"planengine-jvm: compiling {len(source_files())} Java sources against Spark {target.spark_version}")
    with tempfile.TemporaryDirectory(prefix="planengine-jvm-", dir=work) as tmp:
        classes = Path(tmp) / "classes"
        classes.mkdir()
        (Path(tmp) / "sources.txt").write_text("\n".join(str(p) for p in source_files()) + "\n")
        compile_cmd = [javac, "--release", JAVA_RELEASE, "-encoding", "UTF-8", *JAVAC_CHECKS,
                       "-cp", compile_classpath(target.jars_dir), "-d", str(classes), f"@{Path(tmp) / 'sources.txt'}"]
        done = subprocess.run(compile_cmd, capture_output=True, text=True)
        if done.returncode != 0:
            raise JvmLibraryUnavailable(
                f"compiling the JVM operator library against Spark {target.spark_version} failed:\n"
                f"{(done.stdout + done.stderr)[-6000:]}",
                hint="a Spark API this library uses differs in this PySpark version; see docs/jvm-operators.md")
        info = classes / "io" / "planengine" / "jvm" / "build-info.properties"
        info.write_text(f"sparkVersion={target.spark_version}\nsourceDigest={digest}\n")
        staged = Path(tmp) / target.jar_name
        done = subprocess.run([jar_tool, "--create", "--file", str(staged), "-C", str(classes), "."],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise JvmLibraryUnavailable(f"packing the JVM operator library failed:\n{done.stderr[-2000:]}")
        jar = directory / target.jar_name
        os.replace(staged, jar)
        stamp_tmp = Path(tmp) / "stamp"
        stamp_tmp.write_text(digest + "\n")
        os.replace(stamp_tmp, _stamp(jar))
    if log:
        log(f"planengine-jvm: wrote {jar}")
    return jar


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build planengine's JVM operator library for this Python's PySpark.")
    ap.add_argument("--force", action="store_true", help="rebuild even when the jar is up to date")
    ap.add_argument("--quiet", action="store_true", help="print nothing when the jar is up to date")
    args = ap.parse_args(argv)
    target = current_target()
    up_to_date = None if args.force else find_jar(target)
    if up_to_date is not None:
        if not args.quiet:
            print(f"planengine-jvm: up to date: {up_to_date}")
        return 0
    try:
        jar = ensure_jar(target, force=args.force, log=lambda m: print(m, file=sys.stderr))
    except JvmLibraryUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(jar)
    return 0


if __name__ == "__main__":
    sys.exit(main())
