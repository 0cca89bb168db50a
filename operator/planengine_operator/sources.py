"""The hash of a job's program *text*: what the referenced ConfigMaps hold, not only which ones they are.

``specdiff.program_hash`` covers the spec (inline SQL, ConfigMap names and keys, planOptions), so editing the
SQL script inside a ``plan.configMapRef`` ConfigMap (what a GitOps tool does on every commit) would go
unnoticed. The Compile step records :func:`source_hash` of the texts it compiled in ``status.sourceHash``;
every reconcile compares it with :func:`observed_hash` of what the ConfigMaps hold now, read from the
operator's in-memory index of ConfigMap digests (``main.configmap_digests``, fed by a watch), so the check
is level-based and costs no API call. Both sides hash the same per-text digests, so they agree exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

from planengine_operator.models import JobSpec

# (ConfigMap name, key) -> digest of that key's text, or None when the ConfigMap or key is not known.
DigestLookup = Callable[[str, str], str | None]


def text_digest(text: str) -> str:
    """Digest of one text (a ConfigMap value or an inline script).

    >>> text_digest("INSERT INTO s SELECT 1")[:12]
    'c0eccfe35663'
    """
    return hashlib.sha256(text.encode()).hexdigest()


def source_hash(program: str | None, catalog: str | None) -> str:
    """Hash of the program's text digest and the catalog's (None: no catalog), 16 hex characters."""
    body = json.dumps({"program": program, "catalog": catalog}, sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def program_ref(spec: JobSpec) -> tuple[str, str] | None:
    """The ConfigMap (name, key) holding the program, or None for inline SQL and ``compiledPlanRef.uri``."""
    plan = spec.plan
    if plan.configMapRef is not None:
        return plan.configMapRef.name, plan.configMapRef.key or "script.sql"
    if plan.compiledPlanRef is not None and plan.compiledPlanRef.name:
        return plan.compiledPlanRef.name, plan.compiledPlanRef.key or "plan.json"
    return None


def catalog_ref(spec: JobSpec) -> tuple[str, str] | None:
    if spec.catalog is None:
        return None
    return spec.catalog.configMapRef.name, spec.catalog.configMapRef.key or "catalog.sql"


def observed_hash(spec: JobSpec, lookup: DigestLookup) -> str | None:
    """:func:`source_hash` of what the spec's ConfigMaps hold now; None when any of them is not known.

    >>> spec = JobSpec.model_validate({"plan": {"configMapRef": {"name": "etl"}}})
    >>> digests = {("etl", "script.sql"): text_digest("v1")}
    >>> observed_hash(spec, lambda name, key: digests.get((name, key))) == source_hash(text_digest("v1"), None)
    True
    >>> observed_hash(spec, lambda name, key: None) is None
    True
    """
    if spec.plan.sql is not None:
        program: str | None = text_digest(spec.plan.sql)
    else:
        ref = program_ref(spec)
        if ref is None:
            return None  # compiledPlanRef.uri: a file the operator does not watch
        program = lookup(*ref)
        if program is None:
            return None
    catalog = None
    ref = catalog_ref(spec)
    if ref is not None:
        catalog = lookup(*ref)
        if catalog is None:
            return None
    return source_hash(program, catalog)
