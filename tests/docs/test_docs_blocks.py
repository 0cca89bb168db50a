"""The docs' blocks, checked without a cluster or Spark: what a reader copies names files that exist, parses, and
where it is cheap, runs (issue 22: a README command named an example that did not exist).

What runs here (fast tier: in-process, no JVM, no CLI subprocess): every ``planengine`` command line is parsed by
the CLI's own argument parser; ``compile``, ``explain`` and ``check`` run in-process in a temporary directory with
the files the doc defines (a ``sql`` block whose first line is ``-- job.sql``); ``run``, ``sql``, ``snapshots``
and ``migrate`` start Spark and are only parsed here (README's tour runs them: tests/runtime/test_readme_tour.py).
Every ``helm install|upgrade|template`` line and every chart-values block renders with ``helm template``; every
manifest block is valid against the CRD or the Kubernetes schemas; ``kubectl get spj`` comments list the CRD's
printer columns. The kubectl and helm lines run against a real API server in test_docs_on_cluster.py (e2e tier).
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from collections import Counter
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

from planengine import cli
from planengine_operator.config import OperatorConfig
from tests.chart.test_examples import crd_validator
from tests.docs.blocks import (
    COMMAND_LANGUAGES,
    DOCS,
    REPO,
    Block,
    Command,
    all_blocks,
    all_commands,
    doc_blocks,
    repository_paths,
)

HELM = REPO / ".tools" / "bin" / "helm"
CHART = REPO / "charts" / "planengine-operator"
CRD = yaml.safe_load((REPO / "crds" / "sparkplanjobs.planengine.io.yaml").read_text())
KUBERNETES_VERSION = "1.35.0"
# What the docs tests know how to run or check; a command of another program fails test_every_command_is_known
# until it is taught here (and in test_docs_on_cluster.py) or its block is marked.
PROGRAMS = {"planengine", "kubectl", "helm", "make"}
RUN_IN_PROCESS = {"compile", "explain", "check"}  # no Spark: cheap enough for the fast tier
SUBCOMMANDS = set(cli.build_parser()._subparsers._group_actions[0].choices)  # type: ignore[union-attr]

COMMANDS = all_commands()
PLANENGINE = [c for c in COMMANDS if c.argv[0] == "planengine"]
HELM_RENDERED = [c for c in COMMANDS if c.argv[:2] in (["helm", "install"], ["helm", "upgrade"], ["helm", "template"])]
GET_SPJ = [c for c in COMMANDS if c.argv[0] == "kubectl" and re.search(r"\bget (spj|sparkplanjobs?)\b", c.shell)
           and c.columns is not None]
YAML_BLOCKS = [b for b in all_blocks() if b.language == "yaml"]


def ids(items: list[Command] | list[Block]) -> list[str]:
    return [item.where for item in items]


# ------------------------------------------------------------------------------------------------ the blocks
def test_the_covered_docs_have_blocks_and_every_block_is_handled() -> None:
    """Each block is a command block (run), yaml (checked below), or a kind another test runs or a sample of
    output; an unlabelled block that holds commands would escape every check, so it fails."""
    handled = COMMAND_LANGUAGES | {"yaml", "sql", "python", ""}
    counts = Counter(block.path for block in all_blocks())
    assert set(counts) == set(DOCS), f"covered docs without any block: {set(DOCS) - set(counts)}"
    for block in all_blocks():
        assert block.language in handled, f"{block.where}: the docs tests do not know ```{block.language} blocks"
        if block.language in ("", "sql", "python"):
            for line in block.text.splitlines():
                words = line.split()
                looks_like_command = words[:1] in (["kubectl"], ["helm"], ["make"]) or (
                    words[:1] == ["planengine"] and len(words) > 1 and words[1] in SUBCOMMANDS)
                assert not looks_like_command, f"{block.where}: {line!r} is a command in a ```{block.language} " \
                                               "block: fence it as ```bash so the docs tests run it"


def test_every_command_is_known_and_every_marker_matches_a_command() -> None:
    for command in COMMANDS:
        for stage in command.stages():
            assert stage[0] in PROGRAMS, f"{command.where}: the docs tests cannot run `{stage[0]}`: teach " \
                                         "tests/docs or mark the block (docs/testing.md, 'The docs' commands')"
    for block in all_blocks():
        for marker in block.markers:
            assert marker.reason, f"{block.where}: a marker says why"
            if marker.prefix is not None:
                assert any(c.shell.startswith(marker.prefix) for c in block.commands()), \
                    f"{block.where}: no command starts with the marker's `{marker.prefix}`"
        if block.alternative:
            assert block.commands() and doc_blocks(block.path).index(block) > 0, block.where


@pytest.mark.parametrize("doc", list(DOCS))
def test_every_repository_path_in_code_exists(doc: str) -> None:
    """A path a reader copies (``examples/k8s/...``, ``crds/``, ``charts/...``): in blocks and inline code."""
    missing = [f"{doc}:{line}: {path}" for line, path in repository_paths(doc) if not (REPO / path).exists()]
    assert not missing, "\n".join(missing)


# ------------------------------------------------------------------------------------------------ planengine
@pytest.mark.parametrize("command", PLANENGINE, ids=ids(PLANENGINE))
def test_planengine_command_lines_parse(command: Command, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        cli.build_parser().parse_args(command.argv[1:])
    except SystemExit as exit_:
        pytest.fail(f"{command.where}: `{command.shell}` does not parse (exit {exit_.code}): "
                    f"{capsys.readouterr().err}")


CLI_BLOCKS = [b for b in all_blocks() if any(c.argv[:2] == ["planengine", sub] for c in b.commands()
                                             for sub in RUN_IN_PROCESS)]


@pytest.mark.parametrize("block", CLI_BLOCKS, ids=ids(CLI_BLOCKS))
def test_planengine_compile_explain_and_check_run_as_written(block: Block, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """In a directory holding the files the doc defines (``-- job.sql`` as a sql block's first line), in the
    block's order: each command must succeed (exit 0), and ``--json`` must print JSON."""
    for other in doc_blocks(block.path):
        first = other.text.splitlines()[0] if other.text.strip() else ""
        if other.language == "sql" and (named := re.fullmatch(r"--\s*(\S+\.sql)", first.strip())):
            (tmp_path / named.group(1)).write_text(other.text)
    monkeypatch.chdir(tmp_path)
    ran = 0
    for command in block.commands():
        if command.argv[1] not in RUN_IN_PROCESS or command.marker():
            continue
        capsys.readouterr()
        code = cli.main(command.argv[1:])
        out, err = capsys.readouterr()
        assert code == 0, f"{command.where}: `{command.shell}` exited {code}: {err}"
        if "--json" in command.argv:
            json.loads(out)
        ran += 1
    assert ran


# ------------------------------------------------------------------------------------------------ make
def test_make_targets_exist() -> None:
    targets = set(re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), flags=re.MULTILINE))
    for command in COMMANDS:
        if command.argv[0] == "make":
            assert set(command.argv[1:]) <= targets, f"{command.where}: no such make target"


# ------------------------------------------------------------------------------------------------ kubectl
def printer_columns(wide: bool) -> list[str]:
    (version,) = [v for v in CRD["spec"]["versions"] if v["name"] == "v1alpha1"]
    columns = [c for c in version["additionalPrinterColumns"] if wide or not c.get("priority")]
    names = [c["name"].upper() for c in columns]
    return ["NAME", *names]


@pytest.mark.parametrize("command", GET_SPJ, ids=ids(GET_SPJ))
def test_kubectl_get_spj_lists_the_crds_printer_columns(command: Command) -> None:
    """The columns a doc promises (issue 22: ENGINE had become DESIRED and RUNNING, LAST SNAPSHOT had moved to
    ``-o wide``); the cluster test compares them with what kubectl prints."""
    assert command.columns == printer_columns(wide="wide" in command.argv), f"{command.where}: {command.comment}"


# ------------------------------------------------------------------------------------------------ helm
VALUE_FLAGS = {"--set", "--set-json", "--set-string", "--set-file", "-f", "--values"}
DROPPED_FLAGS = {"--create-namespace", "--reuse-values", "--reset-then-reuse-values", "--wait", "--atomic"}


def template_args(command: Command) -> list[str]:
    """The ``helm template`` that renders what a doc's ``helm install|upgrade|template`` line installs: the same
    release, chart, namespace and values (a ``--reuse-values`` upgrade: its own values over the defaults; the
    cluster test runs it as written on the installed release)."""
    args = command.argv[2:]
    positional: list[str] = []
    kept: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in VALUE_FLAGS | {"-n", "--namespace"}:
            kept += [arg, args[index + 1]]
            index += 2
            continue
        if arg in DROPPED_FLAGS or arg == "--include-crds":
            kept += [arg] if arg == "--include-crds" else []
        elif arg.startswith("-"):
            pytest.fail(f"{command.where}: the docs tests do not know helm's {arg}: teach template_args()")
        else:
            positional.append(arg)
        index += 1
    assert len(positional) == 2, f"{command.where}: release and chart expected, got {positional}"
    return ["template", *positional, *kept, "--kube-version", KUBERNETES_VERSION]


@pytest.fixture(scope="module")
def helm() -> Path:
    if not HELM.is_file():
        pytest.skip(f"{HELM} is missing: run `bash tests/setup/prepare.sh` (make test does) to install helm")
    return HELM


def render(helm: Path, args: list[str]) -> list[dict]:
    done = subprocess.run([str(helm), *args], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"helm {shlex.join(args)}: {done.stderr}"
    return [d for d in yaml.load_all(done.stdout, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]


@pytest.mark.parametrize("command", HELM_RENDERED, ids=ids(HELM_RENDERED))
def test_helm_lines_render(command: Command, helm: Path) -> None:
    manifests = render(helm, template_args(command))
    assert any(m["kind"] == "Deployment" for m in manifests), command.where


# ------------------------------------------------------------------------------------------------ yaml blocks
def yaml_kind(block: Block) -> str:
    """manifest (apiVersion and kind), chart values (keys of the chart's values.yaml) or operator config."""
    document = yaml.safe_load(block.text)
    if isinstance(document, dict) and {"apiVersion", "kind"} <= set(document):
        return "manifest"
    if set(document) <= set(yaml.safe_load((CHART / "values.yaml").read_text())):
        return "chart values"
    if set(document) <= set(OperatorConfig.model_fields):
        return "operator config"
    pytest.fail(f"{block.where}: a yaml block the docs tests do not know (manifest, chart values, operator config)")


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=ids(YAML_BLOCKS))
def test_yaml_blocks_are_valid(block: Block, helm: Path, tmp_path: Path) -> None:
    """A manifest is valid against the CRD (or Kubernetes); chart values render; the operator's configuration is
    what the chart renders from its defaults (docs/helm.md says so)."""
    kind = yaml_kind(block)
    document = yaml.safe_load(block.text)
    if kind == "manifest" and document["kind"] == CRD["spec"]["names"]["kind"]:
        errors = list(crd_validator().iter_errors(document))
        assert not errors, f"{block.where}: " + "; ".join(f"{list(e.path)}: {e.message}" for e in errors)
    elif kind == "manifest":
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)
    elif kind == "chart values":
        (tmp_path / "values.yaml").write_text(block.text)
        render(helm, ["template", "planengine", str(CHART), "-f", str(tmp_path / "values.yaml")])
    else:
        OperatorConfig.model_validate(document)
        (configmap,) = [m for m in render(helm, ["template", "planengine", str(CHART)])
                        if m["kind"] == "ConfigMap" and "config.yaml" in m.get("data", {})]
        assert yaml.safe_load(configmap["data"]["config.yaml"]) == document, \
            f"{block.where}: the chart's default operator configuration differs from the doc's"


def test_the_crd_validator_is_strict() -> None:
    """The manifest check would pass anything if the schema were open: a misspelled field must fail."""
    broken = {"apiVersion": "planengine.io/v1alpha1", "kind": "SparkPlanJob", "metadata": {"name": "x"},
              "spec": {"plan": {"sql": "INSERT INTO t SELECT 1"}, "engineVersoin": "0.1"}}
    assert any(isinstance(e, jsonschema.ValidationError) for e in crd_validator().iter_errors(broken))
