"""Exec nodes: the versioned units a compiled plan is made of.

Each node class declares one or more ``ExecNodeMetadata`` entries with the ``@exec_node`` decorator. The
registry maps ``(name, version)`` to the class: compilation always writes the newest version, restore
accepts every registered one (DESIGN §3). A node's JSON is its common fields plus its own fields, each
declared with ``json_field`` so serialization is generic and deterministic (declaration order, never class
or module names).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from planengine.errors import InternalError
from planengine.ir.changelog import INSERT_ONLY, ChangelogMode
from planengine.ir.expressions import SELF_CONTAINED, ExprJson
from planengine.ir.types import DataType, parse_type


@dataclass(frozen=True)
class ExecNodeMetadata:
    name: str  # "stream-exec-group-aggregate"
    version: int
    consumed_options: tuple[str, ...] = ()
    # Operator kinds this node version may create; they appear in operator uids.
    produced_operators: tuple[str, ...] = ()
    min_plan_version: str = "0.1"  # engine version that first wrote this JSON shape
    min_state_version: str = "0.1"  # engine version that first wrote this state layout

    @property
    def type_name(self) -> str:
        return f"{self.name}_{self.version}"


_REGISTRY: dict[tuple[str, int], type[ExecNode]] = {}
# (name, version) pairs that were registered once but are no longer restorable without migration.
_DROPPED: dict[tuple[str, int], str] = {}

N = TypeVar("N", bound="type[ExecNode]")


def exec_node(*metadata: ExecNodeMetadata) -> Callable[[N], N]:
    """Register a node class under each of its ``(name, version)`` metadata entries."""

    def register(cls: N) -> N:
        existing = list(getattr(cls, "METADATA", ()))
        cls.METADATA = tuple(existing + [m for m in metadata if m not in existing])  # type: ignore[attr-defined]
        for m in metadata:
            key = (m.name, m.version)
            if key in _REGISTRY and _REGISTRY[key] is not cls:
                raise InternalError(f"exec node {m.type_name} registered twice")
            _REGISTRY[key] = cls
        return cls

    return register


def unregister(name: str, version: int, *, migrate_hint: str | None = None) -> None:
    """Drop a node version (tests use this to prove migration; engines do it when a version retires)."""
    cls = _REGISTRY.pop((name, version), None)
    if cls is not None:
        cls.METADATA = tuple(m for m in cls.METADATA if (m.name, m.version) != (name, version))
    _DROPPED[(name, version)] = migrate_hint or ""


def restore_registration(cls: type[ExecNode], metadata: ExecNodeMetadata) -> None:
    _DROPPED.pop((metadata.name, metadata.version), None)
    exec_node(metadata)(cls)


def registered() -> dict[tuple[str, int], type[ExecNode]]:
    return dict(sorted(_REGISTRY.items()))


def lookup(name: str, version: int) -> type[ExecNode] | None:
    return _REGISTRY.get((name, version))


def dropped(name: str, version: int) -> bool:
    return (name, version) in _DROPPED


def newest_metadata(cls: type[ExecNode]) -> ExecNodeMetadata:
    return max(cls.METADATA, key=lambda m: m.version)


def split_type_name(type_name: str) -> tuple[str, int]:
    name, _, version = type_name.rpartition("_")
    if not name or not version.isdigit():
        raise ValueError(f"not an exec node type: {type_name!r} (expected '<name>_<version>')")
    return name, int(version)


# --- JSON fields -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NodeJson:
    """Everything a node's fields need to be written or read, handed in by the plan serializer.

    Node classes stay plain data: how expressions imply their input types and whether user-function classes
    are written (``exprs``), and how tables are stored (``encode_table`` / ``decode_table``: the catalog-object
    strategies of ``planengine.plan.catalog_objects``) come from here, never from ambient state.
    """

    exprs: ExprJson = SELF_CONTAINED
    encode_table: Callable[[Any], dict[str, Any]] | None = None  # TableSpec -> JSON (writing)
    decode_table: Callable[[dict[str, Any]], Any] | None = None  # JSON -> TableSpec (reading)

    def table_to_json(self, spec: Any) -> dict[str, Any]:
        if self.encode_table is None:
            raise InternalError("a node with a table was written without the plan writer's table strategy")
        return self.encode_table(spec)

    def table_from_json(self, data: dict[str, Any]) -> Any:
        if self.decode_table is None:
            raise InternalError("a node with a table was read without the plan reader's table strategy")
        return self.decode_table(data)


# Expressions with all their types, no table strategies: node fields outside a plan (tests, inspection).
SELF_CONTAINED_NODE = NodeJson()


@dataclass(frozen=True)
class Codec:
    """How one node field becomes JSON and back; both functions receive the node's ``NodeJson``."""

    encode: Callable[[Any, NodeJson], Any]
    decode: Callable[[Any, NodeJson], Any]

    @staticmethod
    def plain(encode: Callable[[Any], Any], decode: Callable[[Any], Any]) -> Codec:
        """A codec that needs no context (numbers, strings, value classes without expressions)."""
        return Codec(lambda value, _ctx: encode(value), lambda data, _ctx: decode(data))


def json_field(key: str, codec: Codec, default: Any = dataclasses.MISSING, *, omit_empty: bool = False) -> Any:
    """A node field written into the plan JSON under ``key``."""
    meta = {"json": key, "codec": codec, "omit_empty": omit_empty}
    if default is dataclasses.MISSING:
        return field(metadata=meta)
    if isinstance(default, list | dict | set):
        raise InternalError("use tuples for node field defaults")
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class InputProperty:
    """How a node needs its input delivered: any partitioning, hash-partitioned by keys, or one partition."""

    distribution: str = "ANY"  # ANY | HASH | SINGLETON | BROADCAST
    keys: tuple[int, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"distribution": self.distribution}
        if self.distribution == "HASH":
            out["keys"] = list(self.keys)
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> InputProperty:
        return InputProperty(data.get("distribution", "ANY"), tuple(data.get("keys", ())))


@dataclass(frozen=True)
class StateDeclaration:
    """A named piece of operator state; the name is part of the contract with the runtime."""

    name: str
    ttl_ms: int = 0
    operator: str = ""  # the operator kind owning it, when a node has several

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ttl": f"{self.ttl_ms} ms"}
        if self.operator:
            out["operator"] = self.operator
        return out

    @staticmethod
    def from_json(data: dict[str, Any]) -> StateDeclaration:
        return StateDeclaration(data["name"], int(str(data.get("ttl", "0 ms")).split()[0]), data.get("operator", ""))


@dataclass(frozen=True, eq=False)
class ExecNode:
    """Common fields of every exec node. Node classes add their own ``json_field``s.

    Instances are immutable; passes build new ones with ``dataclasses.replace`` (see ``rebuild``).
    """

    METADATA: ClassVar[tuple[ExecNodeMetadata, ...]] = ()
    # State names this node keeps when it is stateful (the runtime's named state variables).
    STATE_NAMES: ClassVar[tuple[str, ...]] = ()

    inputs: tuple[ExecNode, ...]
    output_type: DataType
    description: str = ""
    changelog_mode: ChangelogMode = INSERT_ONLY
    configuration: tuple[tuple[str, str], ...] = ()
    input_properties: tuple[InputProperty, ...] = ()
    state: tuple[StateDeclaration, ...] = ()
    version: int = 0  # 0 = newest registered version; set when restored from an older plan
    # Operator uids as recorded in the plan; kept verbatim on restore and migration, because state is
    # addressed by uid: a node migrated to a new version must keep the uids (and so the state) it had.
    uids: tuple[str, ...] = ()

    @property
    def metadata(self) -> ExecNodeMetadata:
        versions = {m.version: m for m in type(self).METADATA}
        if not versions:
            raise InternalError(f"{type(self).__name__} is not a registered exec node")
        return versions[self.version] if self.version else versions[max(versions)]

    @property
    def type_name(self) -> str:
        return self.metadata.type_name

    @property
    def field_names(self) -> list[str]:
        return self.output_type.field_names()

    @property
    def field_types(self) -> list[DataType]:
        return [f.type for f in self.output_type.fields]

    def node_fields(self) -> list[dataclasses.Field[Any]]:
        return [f for f in dataclasses.fields(self) if "json" in f.metadata]

    def specific_json(self, ctx: NodeJson = SELF_CONTAINED_NODE) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in self.node_fields():
            value = getattr(self, f.name)
            if f.metadata["omit_empty"] and (value is None or value == () or value == {} or value is False):
                continue
            out[f.metadata["json"]] = f.metadata["codec"].encode(value, ctx)
        return out

    @classmethod
    def decode_specific(cls, data: dict[str, Any], ctx: NodeJson = SELF_CONTAINED_NODE) -> dict[str, Any]:
        kwargs = {}
        for f in dataclasses.fields(cls):
            if "json" not in f.metadata:
                continue
            key = f.metadata["json"]
            if key in data:
                kwargs[f.name] = f.metadata["codec"].decode(data[key], ctx)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"missing field {key!r}")
        return kwargs

    def explain_terms(self) -> str:
        parts = []
        for f in self.node_fields():
            value = getattr(self, f.name)
            if value in (None, (), False):
                continue
            parts.append(f"{f.metadata['json']}=[{_short(value)}]")
        return ", ".join(parts)


def _short(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(str(v) for v in value)
    return str(value)


def rebuild(roots: list[ExecNode], fn: Callable[[ExecNode, tuple[ExecNode, ...]], ExecNode]) -> list[ExecNode]:
    """Bottom-up rewrite of a DAG that keeps shared nodes shared: ``fn(node, new_inputs)`` → new node."""
    memo: dict[int, ExecNode] = {}

    def visit(node: ExecNode) -> ExecNode:
        key = id(node)
        if key not in memo:
            new_inputs = tuple(visit(i) for i in node.inputs)
            memo[key] = fn(node, new_inputs)
        return memo[key]

    return [visit(r) for r in roots]


def topological(roots: list[ExecNode]) -> list[ExecNode]:
    """Nodes in dependency order (inputs first), each once, deterministic for a given DAG."""
    order: list[ExecNode] = []
    seen: set[int] = set()

    def visit(node: ExecNode) -> None:
        if id(node) in seen:
            return
        for i in node.inputs:
            visit(i)
        seen.add(id(node))
        order.append(node)

    for r in roots:
        visit(r)
    return order


# --- codecs ------------------------------------------------------------------------------------------------
def _identity(v: Any) -> Any:
    return v


RAW = Codec.plain(_identity, _identity)
INT = Codec.plain(_identity, int)
STR = Codec.plain(_identity, str)
BOOL = Codec.plain(_identity, bool)
INTS = Codec.plain(lambda v: list(v), lambda v: tuple(int(x) for x in v))
STRS = Codec.plain(lambda v: list(v), lambda v: tuple(str(x) for x in v))
TYPE = Codec.plain(lambda v: None if v is None else str(v), lambda v: None if v is None else parse_type(v))
PAIRS = Codec.plain(lambda v: dict(v), lambda v: tuple(sorted((str(k), str(x)) for k, x in v.items())))


def optional(codec: Codec) -> Codec:
    return Codec(lambda v, ctx: None if v is None else codec.encode(v, ctx),
                 lambda v, ctx: None if v is None else codec.decode(v, ctx))


def of_json(cls: Any) -> Codec:
    """For value classes with ``to_json()`` / ``from_json(data)`` that hold no expressions."""
    return Codec.plain(lambda v: v.to_json(), cls.from_json)


def of_expr_json(cls: Any) -> Codec:
    """For value classes with ``to_json(ExprJson)`` / ``from_json(data, ExprJson)`` (they hold expressions)."""
    return Codec(lambda v, ctx: v.to_json(ctx.exprs), lambda d, ctx: cls.from_json(d, ctx.exprs))


def tuple_of(codec: Codec) -> Codec:
    return Codec(lambda v, ctx: [codec.encode(x, ctx) for x in v],
                 lambda v, ctx: tuple(codec.decode(x, ctx) for x in v))
