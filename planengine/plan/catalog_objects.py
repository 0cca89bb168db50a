"""How much of a catalog table a plan stores, and how restore gets the rest (DESIGN §3, Flink's options).

Compile (``table.plan.compile.catalog-objects``): ``ALL`` writes identifier, schema and options; ``SCHEMA``
identifier and schema; ``IDENTIFIER`` the identifier only. Temporary tables are always identifier-only:
they must be re-declared before restore. Secrets are never written (``******``).

Restore (``table.plan.restore.catalog-objects``): ``ALL`` takes what the plan has and looks up the rest in
the catalog; ``ALL_ENFORCED`` uses the plan only; ``IDENTIFIER`` the catalog only. With
``table.plan.restore.enrich-table-options`` (default true) catalog options are merged over plan options;
only a connector's ``mutable_options`` may differ, anything else would change the topology and is refused.

The strategies are applied while a plan is written or read, through a context variable, so exec nodes
stay plain data and do not need to know about catalogs.
"""

from __future__ import annotations

import contextlib
import contextvars
import fnmatch
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from planengine.catalog.objects import CatalogTable, ObjectIdentifier
from planengine.errors import PlanIncompatible, ValidationError
from planengine.ir.schema import ResolvedSchema

log = logging.getLogger("planengine.restore")

COMPILE_CATALOG_OBJECTS = "table.plan.compile.catalog-objects"
RESTORE_CATALOG_OBJECTS = "table.plan.restore.catalog-objects"
ENRICH_TABLE_OPTIONS = "table.plan.restore.enrich-table-options"
FORCE_RECOMPILE = "table.plan.force-recompile"
COMPILE_STRATEGIES = ("ALL", "SCHEMA", "IDENTIFIER")
RESTORE_STRATEGIES = ("ALL", "ALL_ENFORCED", "IDENTIFIER")
MASK = "******"
_SECRET = re.compile(r"password|secret|token|credential", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    return bool(_SECRET.search(key))


def mask_options(options: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if is_secret_key(k) else v) for k, v in sorted(options.items())}


def _choice(config: dict[str, str], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = str(config.get(key, default)).strip().upper()
    if value not in allowed:
        raise ValidationError(f"invalid value {config.get(key)!r} for '{key}'",
                              hint=f"use one of {', '.join(allowed)}")
    return value


def _flag(config: dict[str, str], key: str, default: bool) -> bool:
    value = str(config.get(key, str(default))).strip().lower()
    if value not in ("true", "false"):
        raise ValidationError(f"invalid value {config.get(key)!r} for '{key}'", hint="use 'true' or 'false'")
    return value == "true"


@dataclass(frozen=True)
class CompileStrategy:
    catalog_objects: str = "ALL"

    @staticmethod
    def from_config(config: dict[str, str]) -> CompileStrategy:
        return CompileStrategy(_choice(config, COMPILE_CATALOG_OBJECTS, COMPILE_STRATEGIES, "ALL"))


@dataclass
class RestoreContext:
    catalog_objects: str = "ALL"
    enrich: bool = True
    catalogs: Any = None  # CatalogManager-like: get_table(identifier) raising CatalogError when missing
    decisions: list[str] = field(default_factory=list)
    # id() of each table dict of the plan JSON -> the id of the node holding it, so decisions name the node.
    table_nodes: dict[int, int] = field(default_factory=dict)
    current_node: int | None = None

    def index_plan(self, plan: dict[str, Any]) -> None:
        for node in plan.get("nodes", []):
            for key in ("table", "temporalTable"):
                if isinstance(node.get(key), dict):
                    self.table_nodes[id(node[key])] = node["id"]

    @staticmethod
    def from_config(config: dict[str, str], catalogs: Any) -> RestoreContext:
        return RestoreContext(
            _choice(config, RESTORE_CATALOG_OBJECTS, RESTORE_STRATEGIES, "ALL"),
            _flag(config, ENRICH_TABLE_OPTIONS, True),
            catalogs,
        )

    def note(self, message: str) -> None:
        if self.current_node is not None:
            message = f"node {self.current_node}: {message}"
        self.decisions.append(message)
        log.info(message)


_COMPILE: contextvars.ContextVar[CompileStrategy | None] = contextvars.ContextVar("compile", default=None)
_RESTORE: contextvars.ContextVar[RestoreContext | None] = contextvars.ContextVar("restore", default=None)


@contextlib.contextmanager
def compiling(strategy: CompileStrategy) -> Iterator[None]:
    token = _COMPILE.set(strategy)
    try:
        yield
    finally:
        _COMPILE.reset(token)


@contextlib.contextmanager
def restoring(ctx: RestoreContext) -> Iterator[RestoreContext]:
    token = _RESTORE.set(ctx)
    try:
        yield ctx
    finally:
        _RESTORE.reset(token)


# --- writing -------------------------------------------------------------------------------------------------
def encode_table(spec: Any) -> dict[str, Any]:
    strategy = (_COMPILE.get() or CompileStrategy()).catalog_objects
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
    if strategy in ("ALL", "SCHEMA"):
        resolved: dict[str, Any] = {"schema": table.schema.to_json()}
        if table.partition_keys:
            resolved["partitionKeys"] = list(table.partition_keys)
        if strategy == "ALL":
            resolved["options"] = mask_options(table.options_dict)
        if table.comment:
            resolved["comment"] = table.comment
        out["resolvedTable"] = resolved
    if ref.hint_options:
        out["hintOptions"] = mask_options(dict(ref.hint_options))
    return out


# --- reading -------------------------------------------------------------------------------------------------
def decode_table(data: dict[str, Any]) -> Any:
    from planengine.catalog.objects import TableRef
    from planengine.exec.nodes import TableSpec

    identifier_text = data["identifier"]
    identifier = ObjectIdentifier.parse(identifier_text)
    temporary = bool(data.get("temporary", False))
    hint_options = tuple(sorted((data.get("hintOptions") or {}).items()))
    ctx = _RESTORE.get()
    plan_table = _plan_table(data)
    if ctx is None:
        # Reading without a catalog (inspection, explain): what the plan has is all there is.
        ref = TableRef(identifier, plan_table, temporary, hint_options) if plan_table is not None else None
        return TableSpec(identifier_text, ref, temporary)
    ctx.current_node = ctx.table_nodes.get(id(data))
    try:
        table = _resolve(ctx, identifier, plan_table, temporary, data)
    finally:
        ctx.current_node = None
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
    if ctx.catalogs is None:
        return None
    try:
        entry = ctx.catalogs.get_table(identifier)
    except ValidationError:
        return None
    obj = getattr(entry, "object", entry)
    return obj if isinstance(obj, CatalogTable) else None


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
    from planengine.connectors.discovery import load_factory

    plan_opts = plan_table.options_dict
    cat_opts = catalog_table.options_dict
    connector = plan_opts.get("connector") or cat_opts.get("connector")
    factory = load_factory(connector) if connector else None
    mutable = set(factory.mutable_options()) if factory is not None else set()
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
