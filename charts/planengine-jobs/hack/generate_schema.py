#!/usr/bin/env python3
"""Write the chart's values.schema.json from the SparkPlanJob CRD (the one source of the spec's shape).

    python charts/planengine-jobs/hack/generate_schema.py     # after changing crds/

``jobs.<name>.spec`` and ``jobDefaults`` are the CRD's ``spec`` schema as JSON Schema draft-07 with every object
closed (``additionalProperties: false``), so a typo in a job fails ``helm install`` the way an unknown field
fails ``kubectl apply --validate=strict``. CEL rules cannot run in helm: the ones that are a plain regex become
``pattern``; the rest (one plan source, storage immutability, ...) are enforced by the API server when the
rendered objects are applied. tests/chart/test_jobs_chart.py fails when the checked-in file is stale.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
CHART = HERE.parent
CRD = CHART.parents[1] / "crds" / "sparkplanjobs.planengine.io.yaml"
KEPT = ("type", "description", "enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "required",
        "default")
# Fields a default for every job cannot sensibly hold: one job root and one program per job.
PER_JOB_ONLY = ("plan", "storage", "initialSnapshot")
# A job's name becomes metadata.name and <name>-driver, the Service of its status API (a DNS label, <= 63).
JOB_NAME = {"type": "string", "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$", "maxLength": 56}


def convert(node: dict[str, Any]) -> dict[str, Any]:
    out = {key: node[key] for key in KEPT if key in node}
    for rule in node.get("x-kubernetes-validations") or []:
        match = re.fullmatch(r"self\.matches\('(.*)'\)", rule["rule"])
        if match and "pattern" not in out:
            out["pattern"] = match.group(1).replace("\\\\", "\\")
    if "properties" in node:
        out["properties"] = {key: convert(child) for key, child in node["properties"].items()}
        out["additionalProperties"] = False
    elif isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = convert(node["additionalProperties"])
    if isinstance(node.get("items"), dict):
        out["items"] = convert(node["items"])
    return out


def schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    job_spec = convert(spec)
    job_spec.pop("required", None)  # the plan may come from `script`; the template insists on one
    job_spec["description"] = "The SparkPlanJob's spec (crds/sparkplanjobs.planengine.io.yaml); over jobDefaults."
    defaults = json.loads(json.dumps(job_spec))
    for key in PER_JOB_ONLY:
        defaults["properties"].pop(key)
    defaults["description"] = ("Spec fields every job gets unless it sets them itself (objects merge key by key, the "
                               "job's value wins); plan, storage and initialSnapshot are per job only.")
    string_map = {"type": "object", "additionalProperties": {"type": "string"}}
    job = {
        "type": "object",
        "additionalProperties": False,
        "description": "One SparkPlanJob, named by its key.",
        "properties": {
            "enabled": {"type": "boolean", "description": "Render this job (false: helm deletes it)."},
            "namespace": {"type": "string", "description": "Namespace of the job; empty: the release namespace.",
                          "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$", "maxLength": 63},
            "labels": {**string_map, "description": "Extra labels of the SparkPlanJob."},
            "annotations": {**string_map, "description": "Extra annotations of the SparkPlanJob."},
            "script": {"type": "string", "minLength": 1,
                       "description": "SQL script: rendered into the ConfigMap <name>-sql (key script.sql) that "
                                      "spec.plan.configMapRef names; leave spec.plan out."},
            "catalog": {"type": "string", "minLength": 1,
                        "description": "Catalog script (CREATE TABLE ...): rendered into <name>-sql (key "
                                       "catalog.sql) that spec.catalog names; leave spec.catalog out."},
            "spec": {"$ref": "#/definitions/jobSpec"},
        },
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "planengine-jobs values",
        "description": "Generated from crds/ by hack/generate_schema.py; every object rejects unknown keys.",
        "type": "object",
        "additionalProperties": False,
        "definitions": {"jobSpec": job_spec, "jobDefaults": defaults, "job": job},
        "properties": {
            "global": {"type": "object", "description": "Reserved by Helm for parent charts."},
            "nameOverride": {"type": "string", "description": "Replaces the chart name in labels."},
            "commonLabels": {**string_map, "description": "Labels of every object this release renders."},
            "commonAnnotations": {**string_map, "description": "Annotations of every SparkPlanJob."},
            "jobDefaults": {"$ref": "#/definitions/jobDefaults"},
            "jobs": {"type": "object", "description": "The SparkPlanJobs, by name.", "propertyNames": JOB_NAME,
                     "additionalProperties": {"$ref": "#/definitions/job"}},
        },
    }


def render() -> str:
    return json.dumps(schema(), indent=2) + "\n"


if __name__ == "__main__":
    (CHART / "values.schema.json").write_text(render())
    sys.exit(0)
