"""Compare a snapshot's stored state layout with the one this engine would create, the way Spark will.

The rules are Spark's own restore rules (``StateSchemaCompatibilityChecker`` and the operator metadata
check), so ``check`` refuses exactly the handovers a restore would fail on, and no more:

* operators are matched by id (Spark numbers them by position in the query); a missing, extra or renamed
  operator, a state store or column family (``transformWithState`` state variable) that appears or
  disappears, and a changed ``transformWithState`` time mode, output mode or state variable type make
  the snapshot unusable;
* key and value schemas are compared field by field *by position*: a different field count or type is
  fatal, and so is a field that is NOT NULL in the snapshot but nullable here (Spark would have to read
  rows that may hold nulls into a layout promising none; the known Spark 3.5 -> 4.3 stream-stream join
  failure). The other direction (nullable stored, NOT NULL here) is accepted by Spark, and so are field
  names and metadata (Spark ignores them): such differences are reported as notes that do not fail;
* a different partition count is a note: a restored query keeps the partition count of its checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planengine.plan.restore import COMPATIBLE, INCOMPATIBLE

ADVICE = ("keep the job on the engine that wrote the snapshot, or upgrade with upgradeMode: stateless "
          "(the query starts without its state)")


@dataclass(frozen=True)
class Finding:
    status: str  # INCOMPATIBLE, or COMPATIBLE for a note that does not fail the check
    message: str
    hint: str | None = None


def compare_layouts(uid: str, stored: dict[str, Any], expected: dict[str, Any]) -> list[Finding]:
    """Everything that differs between the snapshot's layout of query ``uid`` and this engine's."""
    out: list[Finding] = []
    old_ops, new_ops = stored.get("operators", {}), expected.get("operators", {})
    for op_id in sorted(set(old_ops) | set(new_ops), key=int):
        where = f"query {uid}, Spark operator {op_id}"
        old, new = old_ops.get(op_id), new_ops.get(op_id)
        if new is None:
            out.append(Finding(INCOMPATIBLE, f"{where} ({old.get('name') or '?'}) holds state in the snapshot, but "
                                             "this engine's query has no such stateful operator; its state would "
                                             "be dropped or misread", ADVICE))
            continue
        if old is None:
            out.append(Finding(INCOMPATIBLE, f"{where} ({new.get('name')}) is stateful on this engine but has no "
                                             "state in the snapshot; Spark cannot restore it", ADVICE))
            continue
        out.extend(_compare_operator(where, old, new))
    return out


def _compare_operator(where: str, old: dict[str, Any], new: dict[str, Any]) -> list[Finding]:
    out: list[Finding] = []
    if old.get("name") is not None and old.get("name") != new.get("name"):
        out.append(Finding(INCOMPATIBLE, f"{where}: the snapshot holds state of {old['name']}, this engine "
                                         f"runs {new.get('name')} at that position", ADVICE))
        return out
    where = f"{where} ({new.get('name')})"
    out.extend(_compare_properties(where, old.get("properties"), new.get("properties")))
    old_stores, new_stores = old.get("stores", {}), new.get("stores", {})
    for store in sorted(set(old_stores) | set(new_stores)):
        at = f"{where}, state store {store}"
        if store not in new_stores:
            out.append(Finding(INCOMPATIBLE, f"{at}: in the snapshot but not created by this engine", ADVICE))
            continue
        if store not in old_stores:
            out.append(Finding(INCOMPATIBLE, f"{at}: created by this engine but not in the snapshot", ADVICE))
            continue
        a, b = old_stores[store], new_stores[store]
        if a.get("partitions") != b.get("partitions"):
            out.append(Finding(COMPATIBLE, f"{at}: {a.get('partitions')} partitions in the snapshot, "
                                           f"{b.get('partitions')} on this engine (a restored query keeps the "
                                           "snapshot's partition count)"))
        out.extend(_compare_families(at, a.get("schemas"), b.get("schemas")))
    return out


def _compare_properties(where: str, old: Any, new: Any) -> list[Finding]:
    """transformWithState: time mode, output mode and state variables (name -> type, TTL) must stay."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return []
    out = []
    for key in ("timeMode", "outputMode"):
        if key in old and old.get(key) != new.get(key):
            out.append(Finding(INCOMPATIBLE, f"{where}: {key} is {old[key]} in the snapshot, {new.get(key)} on "
                                             "this engine", ADVICE))
    variables = {}
    for side, props in (("old", old), ("new", new)):
        for var in props.get("stateVariables") or []:
            variables.setdefault(var.get("stateName"), {})[side] = (var.get("stateVariableType"), var.get("ttlEnabled"))
    for name, sides in sorted(variables.items(), key=lambda kv: str(kv[0])):
        if sides.get("old") != sides.get("new"):
            out.append(Finding(INCOMPATIBLE, f"{where}, state {name}: {_var(sides.get('old'))} in the snapshot, "
                                             f"{_var(sides.get('new'))} on this engine", ADVICE))
    return out


def _var(spec: tuple[Any, Any] | None) -> str:
    if spec is None:
        return "absent"
    kind, ttl = spec
    return f"{kind}{' with TTL' if ttl else ''}"


def _compare_families(where: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Finding]:
    if not old or not new:
        return []  # a store whose schema Spark did not record (older Spark): nothing to compare
    out: list[Finding] = []
    for family in sorted(set(old) | set(new)):
        at = where if family == "default" and len(old) == len(new) == 1 else f"{where}, state {family}"
        if family not in new:
            out.append(Finding(INCOMPATIBLE, f"{at}: in the snapshot but not created by this engine", ADVICE))
        elif family not in old:
            out.append(Finding(INCOMPATIBLE, f"{at}: created by this engine but not in the snapshot", ADVICE))
        else:
            for part in ("key", "value"):
                out.extend(_compare_schema(f"{at}: {part}", old[family][part], new[family][part]))
    return out


def _compare_schema(where: str, stored: Any, ours: Any, path: str = "") -> list[Finding]:
    """Spark's ``equalsIgnoreNameAndCompatibleNullability(ours, stored)``, explained field by field."""
    if isinstance(stored, dict) and isinstance(ours, dict) and stored.get("type") == ours.get("type"):
        kind = stored.get("type")
        if kind == "struct":
            return _compare_struct(where, stored, ours, path)
        if kind == "array":
            return (_nullability(where, f"{path}[]", stored.get("containsNull"), ours.get("containsNull"))
                    + _compare_schema(where, stored.get("elementType"), ours.get("elementType"), f"{path}[]"))
        if kind == "map":
            return (_compare_schema(where, stored.get("keyType"), ours.get("keyType"), f"{path}{{key}}")
                    + _nullability(where, f"{path}{{value}}", stored.get("valueContainsNull"),
                                   ours.get("valueContainsNull"))
                    + _compare_schema(where, stored.get("valueType"), ours.get("valueType"), f"{path}{{value}}"))
    if stored == ours:
        return []
    return [Finding(INCOMPATIBLE, f"{where} field {path or '(whole row)'} has type {_type(stored)} in the snapshot, "
                                  f"{_type(ours)} on this engine", ADVICE)]


def _compare_struct(where: str, stored: dict[str, Any], ours: dict[str, Any], path: str) -> list[Finding]:
    a, b = stored.get("fields", []), ours.get("fields", [])
    if len(a) != len(b):
        return [Finding(INCOMPATIBLE, f"{where}{' field ' + path if path else ''} has {len(a)} fields in the "
                                      f"snapshot ({_names(a)}), {len(b)} on this engine ({_names(b)})", ADVICE)]
    out: list[Finding] = []
    for i, (fa, fb) in enumerate(zip(a, b)):
        name = f"{path}.{fa.get('name')}" if path else str(fa.get("name"))
        if fa.get("name") != fb.get("name"):
            out.append(Finding(COMPATIBLE, f"{where} field {i} is named {name} in the snapshot, {fb.get('name')} on "
                                           "this engine (Spark matches state fields by position)"))
        out.extend(_nullability(where, name, fa.get("nullable"), fb.get("nullable")))
        out.extend(_compare_schema(where, fa.get("type"), fb.get("type"), name))
    return out


def _nullability(where: str, name: str, stored_nullable: Any, ours_nullable: Any) -> list[Finding]:
    if stored_nullable is False and ours_nullable is not False:
        return [Finding(INCOMPATIBLE, f"{where} field {name} is NOT NULL in the snapshot but nullable on this "
                                      "engine; Spark refuses to restore this state", ADVICE)]
    return []


def _names(fields: list[dict[str, Any]]) -> str:
    return ", ".join(str(f.get("name")) for f in fields)


def _type(t: Any) -> str:
    if isinstance(t, dict):
        return str(t.get("type"))
    return str(t)
