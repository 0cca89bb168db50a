"""The CRD is the schema the API server enforces; the pydantic models must be that schema: the same fields,
types and enums, both ways (a status field only the model has is pruned by the API server)."""

import types
import typing
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from planengine_operator import models

CRD = Path(__file__).resolve().parents[2] / "crds" / "sparkplanjobs.planengine.io.yaml"


def schema():
    return yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


JSON_TYPES = {str: "string", int: "integer", bool: "boolean", float: "number", dict: "object", list: "array"}


def _json_type(annotation) -> tuple[str | None, list | None]:
    """(CRD type, enum values) of a field annotation, ``Optional`` unwrapped."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType) and len(args) == 1:
        return _json_type(args[0])
    if typing.get_origin(annotation) is typing.Literal:
        values = list(typing.get_args(annotation))
        return JSON_TYPES[type(values[0])], values
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "object", None
    return JSON_TYPES.get(typing.get_origin(annotation) or annotation), None


def _check_type(field, child: dict, where: str, problems: list[str]) -> None:
    wanted, enum = _json_type(field.annotation)
    if child.get("x-kubernetes-preserve-unknown-fields") and "type" not in child:
        return
    if wanted != child.get("type"):
        problems.append(f"{where}: the CRD says {child.get('type')}, the model {wanted}")
    if sorted(map(str, enum or [])) != sorted(map(str, child.get("enum") or [])):
        problems.append(f"{where}: the CRD's enum {child.get('enum')} differs from the model's {enum}")


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
        _check_type(field, child, f"{path}.{key}", problems)
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
        "Desired", "Running", "Phase", "Upgrade", "Ready", "Last snapshot", "Age"]
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


def test_the_upgrade_step_description_names_every_upgrade_step():
    from planengine_operator.protocol import STEPS

    described = schema()["properties"]["status"]["properties"]["upgrade"]["properties"]["step"]["description"]
    missing = [step for type_, step in STEPS if type_ == "Upgrade" and step not in described]
    assert missing == [], f"status.upgrade.step's description misses {missing}"
