"""The docs' kubectl and helm blocks run as written against the test session's real API server (issue 22).

Each doc's blocks run in order, each command through ``bash -o pipefail`` from the repository root (so pipes and
relative paths work as for a reader), with the session's kubectl and helm first on ``PATH`` and a kubeconfig whose
context namespace stands for the reader's ``default``. An example manifest is thus applied and admitted by the
CRD's schema and CEL rules on the server, ``kubectl get spj`` prints the columns its comment promises, ``helm
install|upgrade|uninstall`` work on the chart with the documented values, and a manifest block of the doc is
applied too. After each block every SparkPlanJob present is checked against what the installed operator needs
to start it: a job root on a claim that exists (the default Kubernetes launcher refuses others, StorageRequired),
the drivers' ServiceAccount in its namespace, an engine from the installed catalog, a watched namespace. Nothing
runs a job here (no operator pod starts: no node runs its image); tests/operator/e2e do that.

Only names are substituted, so docs and test share one session with other tests (each doc gets fresh names):

| in the docs | here |
| --- | --- |
| the context's namespace (``default``, ``driverRbac.namespaces={default}``) | the test's namespace, which exists |
| ``streaming`` (the walkthrough's job namespace) | ``<test namespace>-streaming``: the doc must create it |
| ``planengine-system`` | ``<test namespace>-system``: the doc must create it |

What does not run is said in the doc itself (tests/docs/blocks.py: ``not run``, ``dry run``, ``alternative to
the block above``); a watch (``-w``) runs for a few seconds and is then stopped. Afterwards the docs' release is
uninstalled, its cluster-wide objects (label ``app.kubernetes.io/instance=planengine``) and namespaces deleted.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from planengine_operator.builders import DRIVER_SERVICE_ACCOUNT, storage_problem
from tests.cluster.client import ApiError
from tests.docs.blocks import COMMAND_LANGUAGES, DOCS, REPO, Block, Command, doc_blocks

pytestmark = [pytest.mark.timeout(600)]

TOOLS = REPO / ".tools" / "bin"
RELEASE = "planengine"  # the docs' release; its cluster-wide objects carry app.kubernetes.io/instance=planengine
WATCH_SECONDS = 3.0
COMMAND_TIMEOUT = 120


@dataclass(frozen=True)
class Names:
    """The namespaces that stand for the docs' ones in one test."""

    default: str
    streaming: str
    system: str

    def substitute(self, text: str) -> str:
        text = re.sub(r"\bplanengine-system\b", self.system, text)
        text = re.sub(r"\bstreaming\b", self.streaming, text)
        return re.sub(r"(namespaces=\{|-n |--namespace[ =]|namespace: )default\b", rf"\g<1>{self.default}", text)


def cluster_blocks(path: str) -> list[Block]:
    """The blocks of a doc that touch a cluster: a command block with kubectl or helm, or a manifest."""
    def touches(block: Block) -> bool:
        if block.language == "yaml":
            return {"apiVersion", "kind"} <= set(yaml.safe_load(block.text) or {})
        return block.language in COMMAND_LANGUAGES and any(c.argv[0] in ("kubectl", "helm") for c in block.commands())

    return [block for block in doc_blocks(path) if touches(block)]


def sequences() -> list[tuple[str, list[Block]]]:
    """Per doc, its blocks in order without the alternatives; each alternative on its own, after the blocks that
    came before the one it replaces."""
    found: list[tuple[str, list[Block]]] = []
    for path in DOCS:
        blocks = cluster_blocks(path)
        main = [b for b in blocks if not b.alternative]
        if main:
            found.append((path, main))
        everything = doc_blocks(path)
        for number, alternative in enumerate((b for b in blocks if b.alternative), start=1):
            replaced = everything[everything.index(alternative) - 1]
            before = main[:main.index(replaced)] if replaced in main else main
            found.append((f"{path} (alternative {number})", [*before, alternative]))  # no line: a stable id
    return found


SEQUENCES = sequences()


@pytest.mark.parametrize("blocks", [s for _, s in SEQUENCES], ids=[name for name, _ in SEQUENCES])
def test_the_docs_kubectl_and_helm_blocks_run_on_a_cluster(blocks: list[Block], control_plane: Any,
                                                           sparkplanjob_crd: dict[str, Any], cluster_namespace: str,
                                                           tmp_path: Path) -> None:
    names = Names(cluster_namespace, f"{cluster_namespace}-streaming", f"{cluster_namespace}-system")
    kubeconfig = control_plane.admin.write_kubeconfig(tmp_path / "kubeconfig", namespace=names.default)
    environ = {**os.environ, "PATH": f"{TOOLS}{os.pathsep}{os.environ['PATH']}", "KUBECONFIG": str(kubeconfig),
               "KUBECACHEDIR": str(tmp_path / "kube-cache"), "HELM_CACHE_HOME": str(tmp_path / "helm-cache"),
               "HELM_CONFIG_HOME": str(tmp_path / "helm-config"), "HELM_DATA_HOME": str(tmp_path / "helm-data")}
    report: list[str] = []
    try:
        for block in blocks:
            if block.not_run:
                report.append(f"{block.where}: not run ({block.not_run})")
                continue
            if block.language == "yaml":
                done = run(["kubectl", "apply", "-f", "-"], environ, stdin=names.substitute(block.text))
                assert done.returncode == 0, f"{block.where}: kubectl apply of the manifest: {done.stderr}"
                report.append(f"{block.where}: manifest applied")
            for command in block.commands():
                report.append(run_command(command, names, environ))
            assert_jobs_can_start(control_plane.admin, names, block)
    finally:
        print("\n".join(report))
        clean_up(control_plane.admin, names, environ)


def run(argv: list[str], environ: dict[str, str], *, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=REPO, env=environ, input=stdin, capture_output=True, text=True,
                          timeout=COMMAND_TIMEOUT)


def run_command(command: Command, names: Names, environ: dict[str, str]) -> str:
    """Run one command of a doc as written (names substituted, a marker obeyed); what was done, for the report."""
    marker = command.marker()
    if command.argv[0] not in ("kubectl", "helm") or (marker and marker.kind == "not run"):
        return f"{command.where}: not run here ({marker.reason if marker else 'no cluster'}): {command.shell}"
    shell = names.substitute(command.shell)
    if marker and marker.kind == "dry run":
        assert "|" not in shell, f"{command.where}: a dry run applies to one command, not a pipeline"
        shell += " --dry-run=server"
    argv = ["bash", "-o", "pipefail", "-c", shell]
    if re.search(r"\s(-w|--watch)\b", shell):
        with subprocess.Popen(argv, cwd=REPO, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) as watch:
            try:
                out, err = watch.communicate(timeout=WATCH_SECONDS)
                assert watch.returncode == 0, f"{command.where}: `{shell}` ended with {watch.returncode}: {err}"
            except subprocess.TimeoutExpired:
                watch.terminate()
                out, err = watch.communicate(timeout=30)
        assert out.startswith("NAME"), f"{command.where}: `{shell}` printed {out!r} {err!r}"
        return f"{command.where}: watched {WATCH_SECONDS:.0f} s: {shell}"
    done = run(argv, environ)
    assert done.returncode == 0, f"{command.where}: `{shell}` exited {done.returncode}:\n{done.stderr}{done.stdout}"
    columns = command.columns
    if columns is not None:
        header = re.split(r"\s{2,}", done.stdout.splitlines()[0].strip())
        assert header == columns, f"{command.where}: the doc says {columns}, kubectl printed {header}"
    return f"{command.where}: {'dry run' if marker else 'ran'}: {shell}"


def _sparkplanjobs(api: Any, namespace: str, patience: float = 30) -> list[dict[str, Any]]:
    """The namespace's SparkPlanJobs. A doc that (re)applies the CRD (``kubectl apply --server-side -f crds/``) makes
    the API server re-initialise the resource's storage for a moment, answering 429 "storage is (re)initializing";
    a reader's next kubectl retries, and so does this."""
    deadline = time.monotonic() + patience
    while True:
        try:
            return list(api.list("planengine.io", "sparkplanjobs", namespace))
        except ApiError as error:
            if error.code != 429 or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def assert_jobs_can_start(api: Any, names: Names, block: Block) -> None:
    """What the installed operator (its configuration in the release's ConfigMap) needs before it can start each
    SparkPlanJob present: the first five minutes of a reader who follows the doc to here."""
    config: dict[str, Any] | None = None
    for configmap in api.list("", "configmaps", names.system, labels=f"app.kubernetes.io/instance={RELEASE}"):
        if "config.yaml" in (configmap.get("data") or {}):
            config = yaml.safe_load(configmap["data"]["config.yaml"])
    for namespace in (names.default, names.streaming):
        for job in _sparkplanjobs(api, namespace):
            where = f"{block.where}: SparkPlanJob {job['metadata']['name']} in {namespace}"
            spec = job["spec"]
            problem = storage_problem(spec)
            assert problem is None, f"{where}: the Kubernetes launcher refuses it: {problem}"
            claim = spec["storage"]["pvc"]["claimName"]
            assert api.get("", "persistentvolumeclaims", namespace, claim), f"{where}: no claim {claim}"
            if config is None or config.get("launcher", "kubernetes") != "kubernetes":
                continue
            assert api.get("", "serviceaccounts", namespace, DRIVER_SERVICE_ACCOUNT), \
                f"{where}: no ServiceAccount {DRIVER_SERVICE_ACCOUNT} for its drivers (driverRbac.namespaces)"
            engine = spec.get("engineVersion") or config["defaultEngineVersion"]
            assert engine in config["engines"], f"{where}: engine {engine} is not in the installed catalog"
            watched = config.get("watchNamespaces") or []
            assert not watched or namespace in watched, f"{where}: the operator watches only {watched}"


def clean_up(api: Any, names: Names, environ: dict[str, str]) -> None:
    """Leave the session's cluster as the test found it: the release, the chart's cluster-wide objects, the
    namespaces the doc created (the test's own is deleted by its fixture)."""
    for namespace in (names.system, names.default, names.streaming):
        listed = run(["helm", "list", "-n", namespace, "-q"], environ)
        for release in listed.stdout.split():
            run(["helm", "uninstall", release, "-n", namespace], environ)
    for group, plural in (("rbac.authorization.k8s.io", "clusterroles"),
                          ("rbac.authorization.k8s.io", "clusterrolebindings"),
                          ("admissionregistration.k8s.io", "validatingwebhookconfigurations")):
        for item in api.list(group, plural, labels=f"app.kubernetes.io/instance={RELEASE}"):
            api.delete(group, plural, None, item["metadata"]["name"])
    for namespace in (names.system, names.streaming):
        api.delete("", "namespaces", None, namespace)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and api.list("rbac.authorization.k8s.io", "clusterroles",
                                                   labels=f"app.kubernetes.io/instance={RELEASE}"):
        time.sleep(0.2)
