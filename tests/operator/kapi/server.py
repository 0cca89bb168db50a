"""A stateful Kubernetes API on 127.0.0.1 for kopf and kubectl: kmock 0.8 behind an aiohttp middleware.

kmock 0.8's ``KubernetesEmulator`` crashes on ``/api/v1/namespaces``, sets no ``resourceVersion``, answers
creates with 200, has no PUT, selectors, Table output or watch-from-resourceVersion. This middleware
serves the Kubernetes semantics the operator, kopf and ``kubectl`` rely on, from its own store:
discovery, CRUD with 201/404/409/422, ``uid``/``resourceVersion``/``generation`` (bumped on spec changes
only; status-subresource writes do not bump it, main-resource writes cannot change the status), merge /
strategic (as merge) / JSON patches, PUT with optimistic concurrency, finalizers and ``deletionTimestamp``,
owner-reference cascading deletion, list and watch streams (``?watch=true&resourceVersion=``), label and
field selectors, and ``meta.k8s.io`` Tables with a CRD's printer columns. Custom resources come from CRD
objects (preloaded from YAML or created through the API). Anything else (``/version``, and any
reaction a test declares on the ``kmock`` handler) falls through to kmock.

Writes are admitted as the API server admits them (``schema.py``, ``cel.py``, ``meta.py``): a custom
resource is pruned to its CRD's structural schema, defaulted, validated against the openAPIV3Schema and its
CEL rules (422 ``Invalid`` with ``details.causes``); built-in kinds get their names, labels and OpenAPI
schema checked; ``?fieldValidation=Strict|Warn|Ignore`` decides whether an unknown field is an error, a
``Warning`` header or silently dropped; an update of a custom resource without ``metadata.resourceVersion``
is refused, a stale one is a 409.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import dataclasses
import json
import re
import threading
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import kmock
import yaml
from aiohttp import web

from tests.operator.kapi import meta, schema
from tests.operator.kapi.errors import ApiError, FieldError, bad_request, invalid

BUILTIN = [  # (group, version, plural, kind, namespaced, short names)
    ("", "v1", "namespaces", "Namespace", False, ["ns"]),
    ("", "v1", "pods", "Pod", True, ["po"]),
    ("", "v1", "services", "Service", True, ["svc"]),
    ("", "v1", "configmaps", "ConfigMap", True, ["cm"]),
    ("", "v1", "secrets", "Secret", True, []),  # a job's driver API token (<job>-control-token)
    ("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"]),  # the test kubelet: bound at once
    ("", "v1", "events", "Event", True, ["ev"]),
    ("coordination.k8s.io", "v1", "leases", "Lease", True, []),
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False, ["crd"]),
]
VERBS = ["create", "delete", "get", "list", "patch", "update", "watch"]


@dataclasses.dataclass
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    short_names: list[str] = dataclasses.field(default_factory=list)
    categories: list[str] = dataclasses.field(default_factory=list)
    status_subresource: bool = False
    columns: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    schema: dict[str, Any] | None = None  # a custom resource's openAPIV3Schema

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# ------------------------------------------------------------------------------------- pure helpers
def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add/remove/replace/test; a failed test or a bad path is HTTP 422 (kopf retries on it)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        parts = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        parent: Any = doc
        try:
            for part in parts[:-1]:
                parent = parent[int(part)] if isinstance(parent, list) else parent[part]
            last = parts[-1]
            if op["op"] == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent.get(last)
                if current != op.get("value"):
                    raise ApiError(422, "Invalid", f"test failed at {op['path']}: {current!r} != {op.get('value')!r}")
            elif op["op"] == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif op["op"] in ("add", "replace"):
                if isinstance(parent, list):
                    index = len(parent) if last == "-" else int(last)
                    if op["op"] == "add":
                        parent.insert(index, op["value"])
                    else:
                        parent[index] = op["value"]
                else:
                    parent[last] = op["value"]
            else:
                raise ApiError(422, "Invalid", f"unsupported JSON patch op {op['op']!r}")
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            raise ApiError(422, "Invalid", f"JSON patch {op}: {exc!r}") from exc
    return doc


def _with_warnings(response: web.Response, warnings: list[str]) -> web.Response:
    """``Warning: 299 - "..."`` headers, which kubectl prints as ``Warning: ...``."""
    for text in warnings:
        response.headers.add("Warning", f"299 - {json.dumps(text)}")
    return response


def _drop_path(obj: Any, path: str) -> bool:
    """Remove the field at a dotted path with ``[i]`` indexes (an unknown field of a built-in kind)."""
    parts = [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", path)]
    parent = obj
    try:
        for part in parts[:-1]:
            parent = parent[part]
        del parent[parts[-1]]
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _split_selector(text: str) -> list[str]:
    return [t.strip() for t in re.split(r",(?![^(]*\))", text) if t.strip()]


def label_match(labels: dict[str, str], selector: str) -> bool:
    for term in _split_selector(selector):
        if m := re.fullmatch(r"([\w./-]+)\s+(in|notin)\s+\(([^)]*)\)", term):
            values = {v.strip() for v in m.group(3).split(",")}
            if (labels.get(m.group(1)) in values) != (m.group(2) == "in"):
                return False
        elif m := re.fullmatch(r"([\w./-]+)\s*(!=|==|=)\s*([\w./-]*)", term):
            equal = labels.get(m.group(1)) == m.group(3)
            if equal != (m.group(2) != "!="):
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def field_match(obj: dict[str, Any], selector: str) -> bool:
    for term in _split_selector(selector):
        m = re.fullmatch(r"([\w.]+)\s*(!=|==|=)\s*(.*)", term)
        if not m:
            raise ApiError(400, "BadRequest", f"bad field selector {term!r}")
        value: Any = obj
        for part in m.group(1).split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if (str(value or "") == m.group(3)) != (m.group(2) != "!="):
            return False
    return True


def _age(stamp: Any) -> str:
    """Date cells are ages, as the API server renders them (kubectl prints cells verbatim)."""
    if not isinstance(stamp, str):
        return "<unknown>"
    seconds = int((datetime.now(UTC) - datetime.fromisoformat(stamp.replace("Z", "+00:00"))).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size * 2:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def jsonpath(obj: Any, path: str) -> Any:
    """The subset printer columns use: ``.a.b``, ``[0]`` and ``[?(@.type=="Ready")]``."""
    for m in re.finditer(r'\.([\w-]+)|\[\?\(@\.([\w.]+)\s*==\s*"([^"]*)"\)\]|\[(\d+)\]', path):
        if m.group(1):
            obj = obj.get(m.group(1)) if isinstance(obj, dict) else None
        elif m.group(2):
            obj = next((i for i in obj or [] if isinstance(i, dict) and i.get(m.group(2)) == m.group(3)), None)
        else:
            obj = obj[int(m.group(4))] if isinstance(obj, list) and len(obj) > int(m.group(4)) else None
    return obj


# ------------------------------------------------------------------------------------- the API
class KubeApi:
    """The store and the middleware; one asyncio loop owns it (see :func:`run_in_thread`)."""

    def __init__(self) -> None:
        self.kmock = kmock.KubernetesEmulator()
        self.resources: dict[tuple[str, str], Resource] = {}
        self.objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}  # (group, plural, ns, name)
        self.rv = 0
        self.log: list[tuple[int, tuple[str, str], str, dict[str, Any]]] = []  # (rv, (group, plural), type, obj)
        # What GET .../pods/<name>/log answers: a kubelet (the test's pod runner) appends its containers' output.
        self.pod_logs: dict[tuple[str, str], str] = {}
        self._changed = asyncio.Event()
        for group, version, plural, kind, namespaced, short in BUILTIN:
            self.resources[(group, plural)] = Resource(group, version, plural, kind, namespaced, short,
                                                       status_subresource=plural in ("pods", "namespaces"))
        # Owner-reference garbage collection is the kube-controller-manager's job, not the API server's: a
        # harness that runs its own collector (tests/operator/kubelet/gc.py) turns this immediate one off.
        self.garbage_collection = True
        # Subresources a node agent serves itself (the test kubelet's ``pods/log`` with container, previous and
        # tailLines): (group, plural, name) -> async handler(request, object) -> response. Without one,
        # ``pods/log`` answers ``pod_logs``.
        self.subresource_handlers: dict[tuple[str, str, str], Any] = {}
        self._create(self.resources[("", "namespaces")], None, {"metadata": {"name": "default"}})

    # ---------------------------------------------------------------------------- store
    def _emit(self, res: Resource, type_: str, obj: dict[str, Any]) -> None:
        self.log.append((int(obj["metadata"]["resourceVersion"]), (res.group, res.plural), type_, copy.deepcopy(obj)))
        self._changed.set()
        self._changed = asyncio.Event()

    def _next_rv(self) -> str:
        self.rv += 1
        return str(self.rv)

    def register_crd(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        for version in spec.get("versions") or []:
            if version.get("served", True):
                self.resources[(spec["group"], spec["names"]["plural"])] = Resource(
                    spec["group"], version["name"], spec["names"]["plural"], spec["names"]["kind"],
                    spec.get("scope", "Namespaced") == "Namespaced", list(spec["names"].get("shortNames") or []),
                    list(spec["names"].get("categories") or []), "status" in (version.get("subresources") or {}),
                    list(version.get("additionalPrinterColumns") or []),
                    (version.get("schema") or {}).get("openAPIV3Schema"),
                )

    def load_crds(self, paths: Iterable[str | Path]) -> None:
        for path in paths:
            for doc in yaml.safe_load_all(Path(path).read_text()):
                if doc and doc.get("kind") == "CustomResourceDefinition":
                    self._create(self.resources[("apiextensions.k8s.io", "customresourcedefinitions")], None, doc)

    def _admit(self, res: Resource, obj: dict[str, Any], old: dict[str, Any] | None, *,
               field_validation: str = "Ignore", warnings: list[str] | None = None) -> None:
        """Prune, default and validate ``obj`` in place as the API server would; 400/422 on a bad object."""
        unknown: list[str] = []
        if res.schema is not None:
            unknown = schema.prune(obj, res.schema, root=True)
        elif res.group == "" or res.kind in meta.SCHEMA_CHECKED:
            unknown = meta.unknown_builtin_fields(res.kind, obj)
            for path in sorted(unknown, key=len, reverse=True):
                _drop_path(obj, path)
        if unknown and field_validation == "Strict":
            raise bad_request("strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown))
        if unknown and field_validation != "Ignore" and warnings is not None:
            warnings += [f'unknown field "{p}"' for p in unknown]
        errors: list[FieldError] = []
        md, old_md = obj.get("metadata") or {}, (old or {}).get("metadata") or {}
        if old is None:
            errors += meta.metadata_errors(res.kind, md)
        elif (md.get("labels"), md.get("annotations")) != (old_md.get("labels"), old_md.get("annotations")):
            errors += [e for e in meta.metadata_errors(res.kind, md) if e.field != "metadata.name"]
        if res.schema is not None:
            schema.apply_defaults(obj, res.schema)
            body = {k: v for k, v in obj.items() if k != "metadata"}
            before = {k: v for k, v in old.items() if k != "metadata"} if old is not None else schema.MISSING
            errors += schema.validate(body, res.schema, old=before)
        else:
            errors += meta.builtin_errors(res.kind, obj)
        if res.plural == "customresourcedefinitions":
            for version in (obj.get("spec") or {}).get("versions") or []:
                found = (version.get("schema") or {}).get("openAPIV3Schema") or {}
                errors += [dataclasses.replace(e, field=f"spec.validation.openAPIV3Schema{e.field}")
                           for e in schema.structural_errors(found) + schema.compile_rules(found)]
        if errors:
            raise invalid(res.kind, res.group, str(md.get("name") or ""), errors)

    def _create(self, res: Resource, namespace: str | None, body: dict[str, Any], *,
                field_validation: str = "Ignore", warnings: list[str] | None = None) -> dict[str, Any]:
        md = body.setdefault("metadata", {})
        while not md.get("name") and md.get("generateName"):
            candidate = md["generateName"] + uuid.uuid4().hex[:5]
            if (res.group, res.plural, namespace or md.get("namespace") or "default", candidate) not in self.objects:
                md["name"] = candidate
        if not md.get("name"):
            raise ApiError(422, "Invalid", "metadata.name: Required value")
        namespace = (namespace or md.get("namespace") or "default") if res.namespaced else ""
        key = (res.group, res.plural, namespace, md["name"])
        if key in self.objects:
            raise ApiError(409, "AlreadyExists", f'{res.plural} "{md["name"]}" already exists')
        if res.status_subresource:
            body.pop("status", None)
        body.update(apiVersion=res.api_version, kind=res.kind)
        self._admit(res, body, None, field_validation=field_validation, warnings=warnings)
        md.update(uid=str(uuid.uuid4()), resourceVersion=self._next_rv(), creationTimestamp=now_iso(), generation=1)
        md.pop("deletionTimestamp", None)
        if res.namespaced:
            md["namespace"] = namespace
        self.objects[key] = body
        if res.plural == "customresourcedefinitions":
            self.register_crd(body)
        self._emit(res, "ADDED", body)
        return body

    def _write(self, res: Resource, key: tuple[str, str, str, str], new: dict[str, Any],
               subresource: str | None, *, field_validation: str = "Ignore",
               warnings: list[str] | None = None) -> dict[str, Any]:
        old = self.objects[key]
        if subresource == "status":
            new = {**old, "status": new.get("status")}
        else:
            new = dict(new)
            if res.status_subresource:
                new.pop("status", None)
                if "status" in old:
                    new["status"] = old["status"]
        md = new["metadata"] = dict(new.get("metadata") or {})
        for field in ("uid", "creationTimestamp", "name", "namespace", "deletionTimestamp", "generation",
                      "deletionGracePeriodSeconds"):
            if field in old["metadata"]:
                md[field] = old["metadata"][field]
            else:
                md.pop(field, None)
        new.update(apiVersion=old["apiVersion"], kind=old["kind"])
        md["resourceVersion"] = old["metadata"]["resourceVersion"]
        new = copy.deepcopy(new)
        self._admit(res, new, old, field_validation=field_validation, warnings=warnings)
        md = new["metadata"]
        if new == old:
            return old  # a no-op write: no new resourceVersion, no watch event (like the API server)
        spec_keys = set(new) | set(old)
        spec_keys -= {"metadata", "status", "apiVersion", "kind"}
        if subresource is None and any(new.get(k) != old.get(k) for k in spec_keys):
            md["generation"] = int(old["metadata"].get("generation") or 1) + 1
        md["resourceVersion"] = self._next_rv()
        self.objects[key] = new
        graceful = res.plural == "pods" and md.get("deletionGracePeriodSeconds") is not None  # its kubelet ends it
        if md.get("deletionTimestamp") and not md.get("finalizers") and not graceful:
            return self._remove(res, key)
        self._emit(res, "MODIFIED", new)
        return new

    def _remove(self, res: Resource, key: tuple[str, str, str, str]) -> dict[str, Any]:
        obj = self.objects.pop(key)
        obj["metadata"]["resourceVersion"] = self._next_rv()
        self._emit(res, "DELETED", obj)
        uid = obj["metadata"]["uid"]
        if not self.garbage_collection:
            return obj
        for dep_key, dep in list(self.objects.items()):  # garbage collection of dependents
            owners = dep["metadata"].get("ownerReferences") or []
            if dep_key in self.objects and any(ref.get("uid") == uid for ref in owners):
                self._delete(self.resources[dep_key[:2]], dep_key)
        return obj

    def _delete(self, res: Resource, key: tuple[str, str, str, str], grace: int | None = None) -> dict[str, Any]:
        obj = self.objects[key]
        if res.plural == "pods" and (obj.get("spec") or {}).get("nodeName"):
            return self._delete_pod_gracefully(res, key, grace)
        if not obj["metadata"].get("finalizers"):
            return self._remove(res, key)
        if not obj["metadata"].get("deletionTimestamp"):
            obj = copy.deepcopy(obj)
            obj["metadata"]["deletionTimestamp"] = now_iso()
            obj["metadata"]["resourceVersion"] = self._next_rv()
            self.objects[key] = obj
            self._emit(res, "MODIFIED", obj)
        return obj

    def _delete_pod_gracefully(self, res: Resource, key: tuple[str, str, str, str],
                               grace: int | None) -> dict[str, Any]:
        """A pod bound to a node stays, Terminating, until its kubelet confirmed the containers dead (its
        delete with grace 0); a second delete may shorten the grace period, never lengthen it."""
        obj = self.objects[key]
        md = obj["metadata"]
        if grace is None:
            grace = int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30))
        current = md.get("deletionGracePeriodSeconds")
        if grace == 0 and current is not None and not md.get("finalizers"):
            return self._remove(res, key)
        if current is not None and grace >= int(current):
            return obj
        obj = copy.deepcopy(obj)
        obj["metadata"]["deletionTimestamp"] = md.get("deletionTimestamp") or now_iso()
        obj["metadata"]["deletionGracePeriodSeconds"] = grace
        obj["metadata"]["resourceVersion"] = self._next_rv()
        self.objects[key] = obj
        self._emit(res, "MODIFIED", obj)
        return obj

    def select(self, res: Resource, namespace: str | None, query: Any) -> list[dict[str, Any]]:
        found = []
        for (group, plural, ns, _), obj in sorted(self.objects.items()):
            if (group, plural) != (res.group, res.plural) or (namespace and ns != namespace):
                continue
            if query.get("labelSelector") and not label_match(obj["metadata"].get("labels") or {},
                                                               query["labelSelector"]):
                continue
            if query.get("fieldSelector") and not field_match(obj, query["fieldSelector"]):
                continue
            found.append(obj)
        return found

    # ---------------------------------------------------------------------------- HTTP
    @web.middleware
    async def middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            response = await self.dispatch(request)
        except ApiError as exc:
            return exc.response()
        return await handler(request) if response is None else response

    async def dispatch(self, request: web.Request) -> web.StreamResponse | None:
        parts = [p for p in request.path.split("/") if p]
        if parts == ["api"]:
            return web.json_response({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if parts == ["apis"]:
            return web.json_response({"kind": "APIGroupList", "apiVersion": "v1", "groups": self._groups()})
        if parts[:1] == ["openapi"]:
            raise ApiError(404, "NotFound", "no OpenAPI documents in the emulator")
        if len(parts) == 2 and parts[0] == "apis":
            group = next((g for g in self._groups() if g["name"] == parts[1]), None)
            if group is None:
                raise ApiError(404, "NotFound", f"group {parts[1]} not found")
            return web.json_response({"kind": "APIGroup", "apiVersion": "v1", **group})
        if parts[:2] == ["api", "v1"]:
            group, version, rest = "", "v1", parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            return None  # not ours: kmock answers (/version, declared reactions, 404s)
        if not rest:
            return web.json_response(self._resource_list(group, version))
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, rest[2]) in self.resources:
            namespace, rest = rest[1], rest[2:]
        res = self.resources.get((group, rest[0]))
        if res is None or res.version != version:
            raise ApiError(404, "NotFound", f"the server could not find the requested resource {request.path}")
        name = rest[1] if len(rest) > 1 else None
        subresource = rest[2] if len(rest) > 2 else None
        key = (res.group, res.plural, (namespace or "") if res.namespaced else "", name or "")
        served_by = self.subresource_handlers.get((res.group, res.plural, subresource or ""))
        if served_by is not None and request.method == "GET":
            if key not in self.objects:
                raise ApiError(404, "NotFound", f'{res.plural}.{res.group or "core"} "{name}" not found')
            return await served_by(request, self.objects[key])
        if subresource == "log" and res.plural == "pods" and request.method == "GET":
            if key not in self.objects:
                raise ApiError(404, "NotFound", f'pods "{name}" not found')
            return web.Response(text=self.pod_logs.get((key[2], key[3]), ""), content_type="text/plain")
        if subresource not in (None, "status"):
            raise ApiError(404, "NotFound", f"subresource {subresource} is not served")
        if request.method == "GET" and name is None:
            if request.query.get("watch") in ("true", "1"):
                return await self._watch(request, res, namespace)
            items = self.select(res, namespace, request.query)
            if "as=Table" in request.headers.get("Accept", ""):
                return web.json_response(self._table(res, items))
            return web.json_response({"apiVersion": res.api_version, "kind": f"{res.kind}List",
                                      "metadata": {"resourceVersion": str(self.rv)}, "items": items})
        field_validation = request.query.get("fieldValidation") or "Warn"
        if field_validation not in ("Strict", "Warn", "Ignore"):
            raise bad_request(f"fieldValidation: Unsupported value: {field_validation!r}: supported values: "
                              '"Ignore", "Strict", "Warn"')
        warnings: list[str] = []
        if request.method == "POST" and name is None:
            if "protobuf" in request.content_type:
                raise ApiError(415, "UnsupportedMediaType", "send JSON: the emulator speaks no protobuf")
            created = self._create(res, namespace, await request.json(), field_validation=field_validation,
                                   warnings=warnings)
            return _with_warnings(web.json_response(created, status=201), warnings)
        if name is None:
            raise ApiError(405, "MethodNotAllowed", f"{request.method} needs an object name")
        if key not in self.objects:
            raise ApiError(404, "NotFound", f'{res.plural}.{res.group or "core"} "{name}" not found')
        old = self.objects[key]
        if request.method == "GET":
            if "as=Table" in request.headers.get("Accept", ""):
                return web.json_response(self._table(res, [old]))
            return web.json_response(old)
        if request.method == "DELETE":
            return web.json_response(self._delete(res, key, _grace_period(request, await request.text())))
        body = json.loads(await request.text() or "null")
        if request.method == "PUT":
            if res.schema is not None and not ((body or {}).get("metadata") or {}).get("resourceVersion"):
                raise invalid(res.kind, res.group, name, [FieldError(
                    "Invalid", "metadata.resourceVersion", "must be specified for an update", 0)])
            self._precondition(res, old, body)
            written = self._write(res, key, body, subresource, field_validation=field_validation, warnings=warnings)
            return _with_warnings(web.json_response(written), warnings)
        if request.method == "PATCH":
            ctype = request.content_type
            if ctype == "application/json-patch+json":
                new = json_patch(old, body)
            elif ctype in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                self._precondition(res, old, body)
                new = merge_patch(old, body)
            else:
                raise ApiError(415, "UnsupportedMediaType", f"patch type {ctype} is not supported")
            written = self._write(res, key, new, subresource, field_validation=field_validation, warnings=warnings)
            return _with_warnings(web.json_response(written), warnings)
        raise ApiError(405, "MethodNotAllowed", f"{request.method} is not supported")

    @staticmethod
    def _precondition(res: Resource, old: dict[str, Any], body: Any) -> None:
        """Optimistic concurrency: a write naming another resourceVersion than the stored one is a 409."""
        wanted = ((body or {}).get("metadata") or {}).get("resourceVersion") if isinstance(body, dict) else None
        if wanted and wanted != old["metadata"]["resourceVersion"]:
            qualified = f"{res.plural}.{res.group}" if res.group else res.plural
            name = old["metadata"]["name"]
            raise ApiError(409, "Conflict", f'Operation cannot be fulfilled on {qualified} "{name}": the object has '
                                            "been modified; please apply your changes to the latest version and try "
                                            "again",
                           {"name": old["metadata"]["name"], "group": res.group, "kind": res.plural})

    async def _watch(self, request: web.Request, res: Resource, namespace: str | None) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + float(request.query.get("timeoutSeconds") or 1800)
        since = request.query.get("resourceVersion") or "0"
        try:
            if since == "0":
                for obj in self.select(res, namespace, request.query):
                    await response.write(json.dumps({"type": "ADDED", "object": obj}).encode() + b"\n")
                position = len(self.log)
            else:
                position = bisect.bisect_right(self.log, int(since), key=lambda entry: entry[0])
            while loop.time() < deadline:
                while position < len(self.log):
                    _, resource, type_, obj = self.log[position]
                    position += 1
                    if resource != (res.group, res.plural):
                        continue
                    if namespace and obj["metadata"].get("namespace") != namespace:
                        continue
                    if request.query.get("labelSelector") and not label_match(
                            obj["metadata"].get("labels") or {}, request.query["labelSelector"]):
                        continue
                    if request.query.get("fieldSelector") and not field_match(obj, request.query["fieldSelector"]):
                        continue
                    await response.write(json.dumps({"type": type_, "object": obj}).encode() + b"\n")
                changed = self._changed
                if position >= len(self.log):
                    try:
                        await asyncio.wait_for(changed.wait(), max(0.0, deadline - loop.time()))
                    except TimeoutError:
                        break
            # Inside the try: a client that gave up at its own timeout closes as the server ends the stream, and
            # an API server does not log a traceback for that either.
            await response.write_eof()
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        return response

    def _groups(self) -> list[dict[str, Any]]:
        groups: dict[str, Resource] = {}
        for res in self.resources.values():
            if res.group:
                groups.setdefault(res.group, res)
        return [{"name": g, "versions": [{"groupVersion": r.api_version, "version": r.version}],
                 "preferredVersion": {"groupVersion": r.api_version, "version": r.version}}
                for g, r in sorted(groups.items())]

    def _resource_list(self, group: str, version: str) -> dict[str, Any]:
        listed = []
        for res in self.resources.values():
            if (res.group, res.version) != (group, version):
                continue
            listed.append({"name": res.plural, "singularName": res.kind.lower(), "namespaced": res.namespaced,
                           "kind": res.kind, "verbs": VERBS, "shortNames": res.short_names,
                           "categories": res.categories})
            if res.status_subresource:
                listed.append({"name": f"{res.plural}/status", "singularName": "", "namespaced": res.namespaced,
                               "kind": res.kind, "verbs": ["get", "patch", "update"]})
            if res.plural == "pods":
                listed.append({"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod",
                               "verbs": ["get"]})
        if not listed:
            raise ApiError(404, "NotFound", f"{group}/{version} is not served")
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{group}/{version}".lstrip("/"),
                "resources": listed}

    def _table(self, res: Resource, items: list[dict[str, Any]]) -> dict[str, Any]:
        columns = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}]
        columns += [{"name": c["name"], "type": c.get("type", "string"), "format": c.get("format", ""),
                     "description": c.get("description", ""), "priority": c.get("priority", 0)}
                    for c in res.columns if c["name"] != "Age"]
        columns.append({"name": "Age", "type": "date", "format": "", "description": "Age", "priority": 0})
        rows = []
        for obj in items:
            cells = [obj["metadata"]["name"]]
            cells += [jsonpath(obj, c["jsonPath"]) for c in res.columns if c["name"] != "Age"]
            cells.append(obj["metadata"].get("creationTimestamp"))
            cells = [_age(c) if col["type"] == "date" else c for c, col in zip(cells, columns, strict=True)]
            rows.append({"cells": [c if c is not None else "" for c in cells], "object": obj})
        return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": str(self.rv)},
                "columnDefinitions": columns, "rows": rows}


def _grace_period(request: web.Request, body: str) -> int | None:
    """``gracePeriodSeconds`` of a DELETE: the query parameter, else the DeleteOptions body."""
    if "gracePeriodSeconds" in request.query:
        return int(request.query["gracePeriodSeconds"])
    try:
        options = json.loads(body) if body.strip() else {}
    except ValueError:
        return None
    value = options.get("gracePeriodSeconds") if isinstance(options, dict) else None
    return int(value) if value is not None else None


# ------------------------------------------------------------------------------------- running it
class RunningApi:
    """The emulator serving on 127.0.0.1 from a thread of its own (tests and kopf stay independent)."""

    def __init__(self, crds: Iterable[str | Path] = ()) -> None:
        self._crds = list(crds)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="kapi", daemon=True)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.api: KubeApi | None = None
        self.url = ""

    def _main(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self.api = KubeApi()
        self.api.load_crds(self._crds)
        self._stop = asyncio.Event()
        async with self.api.kmock:
            # Bodies up to the API server's 3 MiB request limit (aiohttp's default is 1 MiB).
            app = web.Application(middlewares=[self.api.middleware], client_max_size=3 * 1024 * 1024)
            kmock_handler = self.api.kmock

            async def fall_through(request: web.Request) -> web.StreamResponse:
                return await kmock_handler(request)

            app.router.add_route("*", "/{tail:.*}", fall_through)
            runner = web.AppRunner(app, handle_signals=False, shutdown_timeout=0.5)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = runner.addresses[0][1]
            self.url = f"http://127.0.0.1:{port}"
            self._ready.set()
            await self._stop.wait()
            await runner.cleanup()

    def start(self) -> RunningApi:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the Kubernetes API emulator did not start")
        return self

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(api, *args)`` on the emulator's loop (the store is not thread-safe) and return a copy."""
        async def run() -> Any:
            return copy.deepcopy(fn(self.api, *args))
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def get(self, group: str, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.call(lambda api: api.objects.get((group, plural, namespace, name)))

    def list(self, group: str, plural: str, namespace: str | None = None) -> list[dict[str, Any]]:
        return self.call(lambda api: [o for (g, p, ns, _), o in sorted(api.objects.items())
                                      if (g, p) == (group, plural) and namespace in (None, ns)])

    def write_kubeconfig(self, path: str | Path) -> Path:
        return write_kubeconfig(self.url, path)


def write_kubeconfig(url: str, path: str | Path) -> Path:
    """A kubeconfig for kubectl and kopf's ``login_with_kubeconfig`` (a token: kopf wants credentials)."""
    path = Path(path)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "kapi",
        "clusters": [{"name": "kapi", "cluster": {"server": url}}],
        "users": [{"name": "kapi", "user": {"token": "kapi-test-token"}}],
        "contexts": [{"name": "kapi", "context": {"cluster": "kapi", "user": "kapi", "namespace": "default"}}],
    }))
    return path


def run_in_thread(crds: Iterable[str | Path] = ()) -> RunningApi:
    return RunningApi(crds).start()


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.operator.kapi.server --crd F --url-file U``: serve until SIGTERM/SIGINT (benchmarks
    run the API in its own process so it does not share the operator's interpreter lock)."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--crd", action="append", default=[])
    parser.add_argument("--url-file", required=True)
    args = parser.parse_args(argv)
    api = run_in_thread(args.crd)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    Path(args.url_file).write_text(api.url)
    done.wait()
    api.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
