"""Static checks of the Dockerfile (no Docker engine on CI): what can be known without building it."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from planengine_operator import builders
from tests.operator.kubelet.image import engine_image, parse_dockerfile

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "Dockerfile"
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
CHART_VALUES = yaml.safe_load((REPO / "charts" / "planengine-operator" / "values.yaml").read_text())
CONSOLE_SCRIPTS = PYPROJECT["project"]["scripts"]
# target -> (console script it runs, extra it installs)
FINAL_TARGETS = {"engine": ("planengine", "spark"), "operator": ("planengine-operator", "operator")}


GLOBAL_ARGS, STAGES = parse_dockerfile(DOCKERFILE.read_text())
BY_NAME = {stage.name: stage for stage in STAGES}


def copy_sources(args: str) -> tuple[str | None, list[str]]:
    """(--from stage or None, sources) of a COPY instruction."""
    words = json.loads(args) if args.startswith("[") else args.split()
    source_stage = None
    flags = [w for w in words if w.startswith("--")]
    for flag in flags:
        if flag.startswith("--from="):
            source_stage = flag.split("=", 1)[1]
    paths = [w for w in words if not w.startswith("--")]
    return source_stage, paths[:-1]


def dockerignore_excludes(path: str) -> bool:
    """True if .dockerignore keeps `path` out of the build context (last matching rule wins)."""
    rules = [
        line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    excluded = False
    for rule in rules:
        negate = rule.startswith("!")
        pattern = rule.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(path.split("/")[0], pattern):
            excluded = not negate
    return excluded


def test_the_targets_exist():
    assert {"builder", "engine", "operator"} <= set(BY_NAME)
    assert len(BY_NAME) == len(STAGES), "stage names must be unique"


def test_every_copy_source_exists_and_is_in_the_build_context():
    for stage in STAGES:
        for args in stage.all("COPY"):
            source_stage, sources = copy_sources(args)
            if source_stage is not None:
                earlier = [s.name for s in STAGES[: STAGES.index(stage)]]
                assert source_stage in earlier, f"{stage.name}: COPY --from={source_stage} is not an earlier stage"
                continue
            assert sources, f"{stage.name}: COPY {args} has no source"
            for source in sources:
                assert (REPO / source).exists(), f"{stage.name}: COPY source {source} does not exist in the repo"
                assert not dockerignore_excludes(source), f".dockerignore excludes {source}, which is COPYed"


def test_dockerignore_keeps_the_context_small():
    assert dockerignore_excludes(".venv") and dockerignore_excludes(".tools") and dockerignore_excludes("tests")
    assert not dockerignore_excludes("planengine")


@pytest.mark.parametrize("target", sorted(FINAL_TARGETS))
def test_final_stages_run_as_the_non_root_user_the_chart_expects(target):
    user = BY_NAME[target].last("USER")
    assert user is not None, f"{target}: no USER, so it runs as root"
    uid = user.split(":")[0]
    assert uid not in {"0", "root"}
    assert uid == str(CHART_VALUES["podSecurityContext"]["runAsUser"])


def test_the_engine_image_user_is_the_one_the_operators_pods_run_as():
    """One uid in both places: a pod running as another uid than the image's owner of /home/planengine and
    /var/lib/planengine (and with no passwd entry: Hadoop's login fails) would not start."""
    image = engine_image()
    assert (image.uid, image.gid) == (builders.ENGINE_UID, builders.ENGINE_UID)
    assert image.user == "planengine" and image.home == image.workdir == "/home/planengine"
    installs = " ".join(BY_NAME["engine"].all("RUN"))
    assert f"chown -R {image.uid}:{image.gid} /var/lib/planengine" in installs


def test_the_engine_image_installs_the_executor_launcher_the_pod_template_runs():
    image = engine_image()
    launcher = builders.EXECUTOR_COMMAND[-1]
    assert launcher in image.installed_files and image.installed_files[launcher].is_file()
    copy = next(a for a in BY_NAME["engine"].all("COPY") if launcher in a)
    assert "--chmod=0755" in copy
    assert builders.EXECUTOR_COMMAND[:2] == image.entrypoint[:2]  # the same tini as the driver


@pytest.mark.parametrize("target", sorted(FINAL_TARGETS))
def test_entrypoints_are_declared_console_scripts(target):
    script, extra = FINAL_TARGETS[target]
    entrypoint = json.loads(BY_NAME[target].last("ENTRYPOINT"))
    if entrypoint[0].endswith("tini"):
        assert entrypoint[1] == "--"
        entrypoint = entrypoint[2:]
    assert entrypoint == [script]
    assert script in CONSOLE_SCRIPTS
    module, _, function = CONSOLE_SCRIPTS[script].partition(":")
    assert importlib.util.find_spec(module) is not None, f"{script} -> {module} is not importable"
    assert f"def {function}(" in Path(importlib.util.find_spec(module).origin).read_text()
    installs = " ".join(BY_NAME[target].all("RUN"))
    extras = re.search(r"planengine-\*\.whl\)\[([a-z0-9,]+)\]", installs)
    assert extras and extra in extras[1].split(","), f"{target} must pip install planengine[{extra}]"
    if target == "engine":
        assert "s3" in extras[1].split(","), "object-store job roots need boto3 (planengine[s3]) in the engine"
    assert extra in PYPROJECT["project"]["optional-dependencies"]


def test_builder_builds_the_wheel_that_final_stages_install():
    builder = " ".join(BY_NAME["builder"].all("RUN"))
    assert "build --wheel" in builder and "/dist" in builder
    for target in FINAL_TARGETS:
        copies = [copy_sources(a) for a in BY_NAME[target].all("COPY")]
        assert ("builder", ["/dist/"]) in copies


def test_engine_has_java_17_python_311_and_pyspark_python():
    engine = BY_NAME["engine"]
    assert "bookworm" in engine.base  # Debian bookworm: python3 is 3.11
    packages = " ".join(engine.all("RUN"))
    assert "openjdk-17-jre-headless" in packages and "python3" in packages
    env = " ".join(engine.all("ENV"))
    venv = re.search(r"VIRTUAL_ENV=(\S+)", env).group(1)
    assert f"PYSPARK_PYTHON={venv}/bin/python" in env
    assert f"PATH={venv}/bin:" in env
    assert PYPROJECT["project"]["requires-python"] == ">=3.11,<3.12"


def test_engine_ships_the_kafka_connector_for_the_pinned_spark():
    """The image's Kafka jars are the lock's kafka-connector group, fetched and checked by the same fetcher as the
    set-up (planengine/runtime/connectors/jars.lock, maven_jars.py): the engine image and the tests run the same
    jars."""
    jars_stage = BY_NAME["connector-jars"]
    copied = [copy_sources(c)[1] for c in jars_stage.all("COPY")]
    assert ["planengine/runtime/connectors/maven_jars.py", "planengine/runtime/connectors/jars.lock"] in copied
    for path in ("planengine/runtime/connectors/maven_jars.py", "planengine/runtime/connectors/jars.lock"):
        assert not dockerignore_excludes(path)
    script = " ".join(jars_stage.all("RUN"))
    assert "for group in kafka-connector s3a;" in script and 'maven_jars.py fetch "$group" --dest /jars' in script
    lock = (REPO / "planengine" / "runtime" / "connectors" / "jars.lock").read_text()
    connector = [line.split()[1] for line in lock.splitlines() if line.startswith("kafka-connector ")]
    for artifact in ("spark-sql-kafka-0-10_2.13:", "spark-token-provider-kafka-0-10_2.13:", "kafka-clients:",
                     "commons-pool2:"):
        assert any(f":{artifact}" in c for c in connector), artifact
    s3a = [line.split()[1] for line in lock.splitlines() if line.startswith("s3a ")]
    assert any(c.startswith("org.apache.hadoop:hadoop-aws:") for c in s3a), "the image's S3A filesystem"
    # The pyspark we test with is built for the connector's Scala binary version.
    spark_pin = next(d for d in PYPROJECT["project"]["optional-dependencies"]["spark"] if d.startswith("pyspark"))
    spec = importlib.util.find_spec("pyspark")
    if spec is not None:
        jars = Path(spec.origin).parent / "jars"
        assert (jars / f"spark-core_2.13-{spark_pin.split('==')[1]}.jar").is_file()
    engine_run = " ".join(BY_NAME["engine"].all("RUN"))
    assert "pyspark" in engine_run and '"jars"' in engine_run and "/tmp/connector-jars/*.jar" in engine_run
