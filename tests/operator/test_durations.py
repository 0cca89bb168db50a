"""One duration grammar: what the chart's values.schema.json and the CRD admit is what the operator parses.

A value Helm accepted but the operator's parser refused left the operator crash-looping after a "successful"
``helm upgrade`` (``1h30m``); the other way round, a value the parser reads but the schema refuses is an
install error for nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from planengine_operator.config import DURATION_PATTERN, OperatorConfig, parse_duration

REPO = Path(__file__).resolve().parents[2]
VALUES_SCHEMA = json.loads((REPO / "charts/planengine-operator/values.schema.json").read_text())
CRD = yaml.safe_load((REPO / "crds/sparkplanjobs.planengine.io.yaml").read_text())
SPEC = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]

SAMPLES = ["0s", "120s", "5m", "7d", "1h30m", "1d12h", "250ms", "1m500ms", "90s", "2160h",
           "", "1.5h", " 5m", "5m ", "5 m", "5", "h", "-1s", "1w", "1y", "5min", "1H", "P1D", "1h 30m"]


def _parser_accepts(text: str) -> bool:
    try:
        parse_duration(text)
    except ValueError:
        return False
    return True


def _schema_accepts(schema: dict[str, Any], text: str) -> bool:
    return not list(jsonschema.Draft7Validator(schema).iter_errors(text))


@pytest.mark.parametrize("sample", SAMPLES)
def test_the_chart_schema_admits_exactly_what_the_operator_parses(sample: str) -> None:
    duration = {**VALUES_SCHEMA["definitions"]["duration"], "definitions": VALUES_SCHEMA["definitions"]}
    assert _schema_accepts(duration, sample) is _parser_accepts(sample)


@pytest.mark.parametrize("sample", SAMPLES)
def test_a_config_the_schema_admits_loads(sample: str) -> None:
    """The operator's own model of the same keys agrees with the chart (its snapshots/stability sections)."""
    try:
        OperatorConfig.model_validate({"stability": {"window": sample}, "snapshots": {"interval": sample}})
        loads = True
    except ValueError:
        loads = False
    assert loads is _parser_accepts(sample)


def test_the_schemas_carry_the_parsers_pattern() -> None:
    assert VALUES_SCHEMA["definitions"]["duration"]["pattern"] == DURATION_PATTERN
    config = VALUES_SCHEMA["properties"]["config"]["properties"]
    for path in (config["stability"]["properties"]["window"], config["snapshots"]["properties"]["maxAge"],
                 config["snapshots"]["properties"]["interval"]):
        assert path == {"$ref": "#/definitions/duration"}
    crd_fields = [SPEC["snapshots"]["properties"]["interval"], SPEC["snapshots"]["properties"]["maxAge"],
                  SPEC["rollback"]["properties"]["stabilityWindow"]]
    assert [field["pattern"] for field in crd_fields] == [DURATION_PATTERN] * 3


@pytest.mark.parametrize("sample,seconds", [("1h30m", 5400.0), ("1d12h", 129600.0), ("1m500ms", 60.5), ("0s", 0.0)])
def test_compound_durations_add_up(sample: str, seconds: float) -> None:
    assert parse_duration(sample) == seconds
