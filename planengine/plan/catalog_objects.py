"""How much of a catalog table a plan stores, and how restore gets the rest (DESIGN §3, Flink's options).

Compile (``table.plan.compile.catalog-objects``): ``ALL`` writes identifier, schema and options; ``SCHEMA``
identifier and schema; ``IDENTIFIER`` the identifier only. Temporary tables are always identifier-only:
they must be re-declared before restore. Secrets are never written (``******``).

Restore (``table.plan.restore.catalog-objects``): ``ALL`` takes what the plan has and looks up the rest in
the catalog; ``ALL_ENFORCED`` uses the plan only; ``IDENTIFIER`` the catalog only. With
``table.plan.restore.enrich-table-options`` (default true) catalog options are merged over plan options;
only a connector's ``mutable_options`` may differ, anything else would change the topology and is refused.

The plan serializer hands ``CompileStrategy.encode_table`` / ``RestoreContext.decode_table`` to the nodes'
table codecs (``planengine.exec.base.NodeJson``), so exec nodes stay plain data and know nothing about
catalogs. What restore needs from the session comes in as explicit functions (``CatalogLookup``), built by
the API from its catalogs and the connector factories: this layer imports neither.
"""

from __future__ import annotations

import fnmatch
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from planengine.catalog.objects import CatalogFunction, CatalogTable, ObjectIdentifier, TableRef
from planengine.catalog.secret_options import is_reference
from planengine.config.secrets import MASK, is_secret_key
from planengine.errors import PlanIncompatible, ValidationError
from planengine.exec.nodes import TableSpec
from planengine.ir.schema import ResolvedSchema

log = logging.getLogger("planengine.restore")

COMPILE_CATALOG_OBJECTS = "table.plan.compile.catalog-objects"
RESTORE_CATALOG_OBJECTS = "table.plan.restore.catalog-objects"
ENRICH_TABLE_OPTIONS = "table.plan.restore.enrich-table-options"
FORCE_RECOMPILE = "table.plan.force-recompile"
COMPILE_STRATEGIES = ("ALL", "SCHEMA", "IDENTIFIER")
RESTORE_STRATEGIES = ("ALL", "ALL_ENFORCED", "IDENTIFIER")


def mask_options(options: dict[str, str]) -> dict[str, str]:
    """Secret values become ``******``; an ``${env:NAME}`` reference is no secret and is kept, so a plan restores
    without its catalog wherever the variable is set."""
    return {k: (MASK if is_secret_key(k) and not is_reference(v) else v) for k, v in sorted(options.items())}


def _choice(config: Mapping[str, str], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = str(config.get(key, default)).strip().upper()
    if value not in allowed:
        raise ValidationError(f"invalid value {config.get(key)!r} for '{key}'",
                              hint=f"use one of {', '.join(allowed)}")
    return value


def _flag(config: Mapping[str, str], key: str, default: bool) -> bool:
    value = str(config.get(key, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"invalid value {config.get(key)!r} for '{key}'", hint="use 'true' or 'false'")
    return value == "true"


def _no_table(identifier: ObjectIdentifier) -> CatalogTable | None:
    return None


def _no_function(path: tuple[str, ...]) -> CatalogFunction | None:
    return None


def _nothing_mutable(connector: str) -> Collection[str]:
    return ()


@dataclass(frozen=True)
class CatalogLookup:
    """What restoring a plan needs from the session it is restored in, as explicit functions.

    ``table`` finds a catalog table (None when there is none), ``function`` a catalog or temporary function by
    its path (``(name,)`` for a system function), ``mutable_options`` the option keys (or ``prefix.*``
    patterns) a connector lets change without a topology change. The default finds nothing: the plan alone.
    """

    table: Callable[[ObjectIdentifier], CatalogTable | None] = _no_table
    function: Callable[[tuple[str, ...]], CatalogFunction | None] = _no_function
    mutable_options: Callable[[str], Collection[str]] = _nothing_mutable


PLAN_ONLY = CatalogLookup()


@dataclass(frozen=True)
class PlanSession:
    """The session a plan is restored and run in: its options and its catalog lookups."""

    config: Mapping[str, str] = field(default_factory=dict)
    catalog: CatalogLookup = PLAN_ONLY


@dataclass(frozen=True)
class CompileStrategy:
    catalog_objects: str = "ALL"

    @staticmethod
    def from_config(config: Mapping[str, str]) -> CompileStrategy:
        return CompileStrategy(_choice(config, COMPILE_CATALOG_OBJECTS, COMPILE_STRATEGIES, "ALL"))

    @property
    def writes_function_classes(self) -> bool:
        return self.catalog_objects == "ALL"

    def encode_table(self, spec: TableSpec) -> dict[str, Any]:
        out: dict[str, Any] = {"identifier": spec.identifier}
        ref = spec.resolved
        if spec.temporary:
            out["temporary"] = True
            if ref is not None and ref.hint_options:
                out["hintOptions"] = mask_options(dict(ref.hint_options))
            return out
        if ref is None:
            return out
        table: CatalogTable = ref.table
        if self.catalog_objects in ("ALL", "SCHEMA"):
            resolved: dict[str, Any] = {"schema": table.schema.to_json()}
            if table.partition_keys:
                resolved["partitionKeys"] = list(table.partition_keys)
            if self.catalog_objects == "ALL":
                resolved["options"] = mask_options(table.options_dict)
            if table.comment:
                resolved["comment"] = table.comment
            out["resolvedTable"] = resolved
        if ref.hint_options:
            out["hintOptions"] = mask_options(dict(ref.hint_options))
        return out


def read_plan_table(data: dict[str, Any]) -> TableSpec:
    """A table as the plan alone describes it (inspection and explain: no catalog, no checks)."""
    identifier = ObjectIdentifier.parse(data["identifier"])
    temporary = bool(data.get("temporary", False))
    hint_options = tuple(sorted((data.get("hintOptions") or {}).items()))
    plan_table = _plan_table(data)
    ref = TableRef(identifier, plan_table, temporary, hint_options) if plan_table is not None else None
    return TableSpec(data["identifier"], ref, temporary)


@dataclass
class RestoreContext:
    """Restores the tables of one plan under the restore strategies, recording every decision it takes."""

    catalog_objects: str = "ALL"
    enrich: bool = True
    lookup: CatalogLookup = PLAN_ONLY
    decisions: list[str] = field(default_factory=list)
    current_node: int | None = None

    @staticmethod
    def from_session(session: PlanSession) -> RestoreContext:
        return RestoreContext(
            _choice(session.config, RESTORE_CATALOG_OBJECTS, RESTORE_STRATEGIES, "ALL"),
            _flag(session.config, ENRICH_TABLE_OPTIONS, True),
            session.catalog,
        )

    def note(self, message: str) -> None:
        if self.current_node is not None:
            message = f"node {self.current_node}: {message}"
        self.decisions.append(message)
        log.info(message)

    def decode_table(self, data: dict[str, Any], node_id: int | None = None) -> TableSpec:
        """The table of plan node ``node_id``, resolved as the strategies say (decisions name the node)."""
        identifier_text = data["identifier"]
        identifier = ObjectIdentifier.parse(identifier_text)
        temporary = bool(data.get("temporary", False))
        hint_options = tuple(sorted((data.get("hintOptions") or {}).items()))
        plan_table = _plan_table(data)
        self.current_node = node_id
        try:
            table = _resolve(self, identifier, plan_table, temporary, data)
        finally:
            self.current_node = None
        if any(v == MASK for _, v in hint_options):
            raise PlanIncompatible(f"table {identifier}: a secret in an OPTIONS hint was masked in the plan",
                                   hint="move the secret into the catalog table's options")
        return TableSpec(identifier_text, TableRef(identifier, table, temporary, hint_options), temporary)


def _plan_table(data: dict[str, Any]) -> CatalogTable | None:
    resolved = data.get("resolvedTable")
    if not resolved:
        return None
    return CatalogTable(
        schema=ResolvedSchema.from_json(resolved["schema"]),
        options=tuple(sorted((resolved.get("options") or {}).items())),
        partition_keys=tuple(resolved.get("partitionKeys", [])),
        comment=resolved.get("comment"),
    ) if "options" in resolved else CatalogTable(
        schema=ResolvedSchema.from_json(resolved["schema"]), options=(),
        partition_keys=tuple(resolved.get("partitionKeys", [])), comment=resolved.get("comment"),
    )


def _lookup(ctx: RestoreContext, identifier: ObjectIdentifier) -> CatalogTable | None:
    return ctx.lookup.table(identifier)


def _resolve(ctx: RestoreContext, identifier: ObjectIdentifier, plan_table: CatalogTable | None, temporary: bool,
             data: dict[str, Any]) -> CatalogTable:
    has_options = bool(data.get("resolvedTable", {}).get("options") is not None)
    strategy = ctx.catalog_objects
    if temporary:
        catalog_table = _lookup(ctx, identifier)
        if catalog_table is None:
            raise PlanIncompatible(
                f"temporary table {identifier} used by the plan is not declared",
                hint="temporary objects are stored in a plan by identifier only; run the CREATE TEMPORARY TABLE "
                     "statement again before EXECUTE PLAN",
            )
        ctx.note(f"table {identifier}: temporary, resolved from the session catalog")
        return catalog_table
    if strategy == "IDENTIFIER":
        catalog_table = _lookup(ctx, identifier)
        if catalog_table is None:
            raise PlanIncompatible(f"table {identifier} is not in the catalog",
                                   hint=f"'{RESTORE_CATALOG_OBJECTS}' = 'IDENTIFIER' reads tables from the catalog "
                                        "only; create the table or restore with 'ALL'")
        _check_schema(identifier, plan_table, catalog_table)
        ctx.note(f"table {identifier}: resolved from the catalog (IDENTIFIER)")
        return catalog_table
    if strategy == "ALL_ENFORCED":
        if plan_table is None or not has_options:
            raise PlanIncompatible(
                f"table {identifier} is not fully stored in the plan",
                hint=f"'{RESTORE_CATALOG_OBJECTS}' = 'ALL_ENFORCED' needs plans compiled with "
                     f"'{COMPILE_CATALOG_OBJECTS}' = 'ALL'; restore with 'ALL' to look the rest up in the catalog",
            )
        masked = [k for k, v in plan_table.options if v == MASK]
        if masked:
            raise PlanIncompatible(
                f"table {identifier}: secret option(s) {', '.join(masked)} are masked in the plan, and "
                f"'{RESTORE_CATALOG_OBJECTS}' = 'ALL_ENFORCED' never reads them from the catalog",
                hint="restore with 'ALL' (or 'IDENTIFIER') so that secrets come from the catalog table",
            )
        ctx.note(f"table {identifier}: taken from the plan (ALL_ENFORCED)")
        return plan_table
    # ALL: plan first, catalog for what is missing, optional enrichment.
    catalog_table = _lookup(ctx, identifier)
    if plan_table is None or not has_options:
        if catalog_table is None:
            raise PlanIncompatible(
                f"table {identifier} is not in the catalog, and the plan stores only "
                f"{'its schema' if plan_table is not None else 'its identifier'}",
                hint="create the table in the catalog before restoring, or compile with "
                     f"'{COMPILE_CATALOG_OBJECTS}' = 'ALL'",
            )
        _check_schema(identifier, plan_table, catalog_table)
        ctx.note(f"table {identifier}: options from the catalog (plan stored "
                 f"{'schema' if plan_table is not None else 'identifier'} only)")
        if plan_table is not None:
            return CatalogTable(plan_table.schema, catalog_table.options, plan_table.partition_keys,
                                plan_table.comment)
        return catalog_table
    if catalog_table is not None:
        # The catalog is consulted under ALL, so it must agree with the plan on the schema (as in Flink).
        _check_schema(identifier, plan_table, catalog_table)
    if ctx.enrich and catalog_table is not None:
        merged = _enrich(identifier, plan_table, catalog_table, ctx)
        _check_no_masked(identifier, merged)
        ctx.note(f"table {identifier}: taken from the plan, options enriched from the catalog")
        return merged
    table = _with_catalog_secrets(identifier, plan_table, catalog_table, ctx)
    _check_no_masked(identifier, table)
    ctx.note(f"table {identifier}: taken from the plan"
             + ("" if catalog_table is not None else " (not in the catalog)")
             + ("" if ctx.enrich or catalog_table is None else "; catalog options not merged (enrichment off)"))
    return table


def _check_schema(identifier: ObjectIdentifier, plan_table: CatalogTable | None, catalog_table: CatalogTable) -> None:
    if plan_table is None:
        return
    plan_cols = [(c.name, str(c.type)) for c in plan_table.schema.columns]
    cat_cols = [(c.name, str(c.type)) for c in catalog_table.schema.columns]
    if plan_cols != cat_cols:
        raise PlanIncompatible(
            f"table {identifier} changed its schema since the plan was compiled",
            hint=f"plan: {plan_cols}; catalog: {cat_cols}. Restore needs the same schema; evolve the query in a "
                 "new job instead",
        )


def _enrich(identifier: ObjectIdentifier, plan_table: CatalogTable, catalog_table: CatalogTable,
            ctx: RestoreContext) -> CatalogTable:
    plan_opts = plan_table.options_dict
    cat_opts = catalog_table.options_dict
    connector = plan_opts.get("connector") or cat_opts.get("connector")
    mutable = set(ctx.lookup.mutable_options(connector)) if connector else set()
    merged = dict(plan_opts)
    for key in sorted(set(plan_opts) | set(cat_opts)):
        if key not in cat_opts:
            continue
        plan_value = plan_opts.get(key)
        cat_value = cat_opts[key]
        if plan_value == cat_value:
            continue
        if plan_value == MASK or is_secret_key(key):
            merged[key] = cat_value
            ctx.note(f"table {identifier}: secret option '{key}' taken from the catalog")
            continue
        if _is_mutable(key, mutable):
            ctx.note(f"table {identifier}: option '{key}' enriched from the catalog "
                     f"({plan_value!r} -> {cat_value!r}, mutable)")
            merged[key] = cat_value
            continue
        if plan_value is None:
            raise PlanIncompatible(
                f"table {identifier}: option '{key}' was added in the catalog since the plan was compiled and is "
                "not mutable", hint="remove it from the catalog table, or recompile the plan in a new job")
        raise PlanIncompatible(
            f"table {identifier}: option '{key}' changed from {plan_value!r} (plan) to {cat_value!r} (catalog); "
            "it is not mutable, so restoring would change the topology",
            hint=f"revert '{key}' in the catalog, or restore with '{ENRICH_TABLE_OPTIONS}' = 'false' to use the "
                 "plan's options",
        )
    return CatalogTable(plan_table.schema, tuple(sorted(merged.items())), plan_table.partition_keys,
                        plan_table.comment)


def _is_mutable(key: str, mutable: set[str]) -> bool:
    """Factories list mutable keys exactly or as prefixes with a wildcard (``lookup.partial-cache.*``)."""
    return any(key == pattern or (("*" in pattern) and fnmatch.fnmatchcase(key, pattern)) for pattern in mutable)


def _with_catalog_secrets(identifier: ObjectIdentifier, plan_table: CatalogTable, catalog_table: CatalogTable | None,
                          ctx: RestoreContext) -> CatalogTable:
    """Without enrichment the plan's options stay as they are, except masked secrets, which only the catalog
    can provide."""
    masked = [k for k, v in plan_table.options if v == MASK]
    if not masked or catalog_table is None:
        return plan_table
    cat_opts = catalog_table.options_dict
    options = plan_table.options_dict
    for key in masked:
        if key in cat_opts and cat_opts[key] != MASK:
            options[key] = cat_opts[key]
            ctx.note(f"table {identifier}: secret option '{key}' taken from the catalog")
    return plan_table.with_options(options)


def _check_no_masked(identifier: ObjectIdentifier, table: CatalogTable) -> None:
    masked = [k for k, v in table.options if v == MASK]
    if not masked:
        return
    raise PlanIncompatible(
        f"table {identifier}: secret option(s) {', '.join(masked)} are masked in the plan and the catalog does not "
        "provide them", hint="register the table (with its secrets, e.g. '${env:VAR}') in the catalog before restore",
    )
