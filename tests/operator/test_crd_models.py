"""The CRD is the source of truth; the pydantic models must name exactly its fields."""

from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from planengine_operator import models

CRD = Path(__file__).resolve().parents[2] / "crds" / "sparkplanjobs.planengine.io.yaml"


def schema():
    return yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


def _walk(model: type[BaseModel], node: dict, path: str, problems: list[str]) -> None:
    crd_fields = set(node.get("properties", {}))
    model_fields = {(f.alias or name) for name, f in model.model_fields.items()}
    for missing in sorted(crd_fields - model_fields):
        problems.append(f"{path}.{missing}: in the CRD, not in {model.__name__}")
    for extra in sorted(model_fields - crd_fields):
        problems.append(f"{path}.{extra}: in {model.__name__}, not in the CRD")
    for name, field in model.model_fields.items():
        key = field.alias or name
        child = node.get("properties", {}).get(key)
        if child is None:
            continue
        annotation = field.annotation
        for candidate in getattr(annotation, "__args__", (annotation,)):
            inner = getattr(candidate, "__args__", None)
            target = inner[0] if inner and child.get("type") == "array" else candidate
            if isinstance(target, type) and issubclass(target, BaseModel):
                sub = child["items"] if child.get("type") == "array" else child
                _walk(target, sub, f"{path}.{key}", problems)


@pytest.mark.parametrize("model,section", [(models.JobSpec, "spec"), (models.JobStatus, "status")])
def test_models_and_crd_name_the_same_fields(model, section):
    problems: list[str] = []
    _walk(model, schema()["properties"][section], section, problems)
    assert problems == []


def test_every_field_has_a_description():
    undocumented = []

    def visit(node, path):
        if path.count(".") > 0 and "description" not in node and not path.endswith("metadata"):
            undocumented.append(path)
        for key, child in (node.get("properties") or {}).items():
            visit(child, f"{path}.{key}")
        if isinstance(node.get("items"), dict):
            visit(node["items"], f"{path}[]")

    visit(schema(), "root")
    assert [p for p in undocumented if not p.endswith(".metadata")] == []


def test_crd_contract_points():
    crd = yaml.safe_load(CRD.read_text())
    version = crd["spec"]["versions"][0]
    assert crd["spec"]["names"]["shortNames"] == ["spj"]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Engine", "Phase", "Ready", "Last snapshot", "Age"]
    spec = schema()["properties"]["spec"]
    assert "storage is immutable" in spec["x-kubernetes-validations"][0]["message"]
    assert spec["properties"]["upgradeMode"]["enum"] == ["snapshot", "last-checkpoint", "stateless"]
    assert spec["properties"]["upgradeMode"]["default"] == "snapshot"


def test_engine_version_rule_accepts_and_rejects_like_the_cel_regex():
    import re

    rule = schema()["properties"]["spec"]["properties"]["engineVersion"]["x-kubernetes-validations"][0]["rule"]
    pattern = re.search(r"matches\('(.*)'\)", rule).group(1).replace("\\\\", "\\")
    assert re.match(pattern, "0.2") and re.match(pattern, "1.10.3")
    assert not re.match(pattern, "latest") and not re.match(pattern, "0.x")
