"""Operator configuration: the engine catalog and the operator's policies.

The chart mounts a ConfigMap key ``config.yaml`` and points ``PLANENGINE_OPERATOR_CONFIG`` at it; the
engine catalog lives here (not in the CRD) so one place maps engine versions to images and local commands,
and changing ``defaultEngineVersion`` is what triggers a fleet rollout.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

CONFIG_ENV = "PLANENGINE_OPERATOR_CONFIG"
# The one duration grammar of the operator's configuration and of the SparkPlanJob's duration fields: one or more
# <whole number><unit> parts, largest first or not (``90s``, ``1h30m``, ``7d``). The chart's values.schema.json
# and the CRD carry this exact pattern (tests/operator/test_durations.py compares them, and checks samples on
# both sides), so a value Helm or the API server admits is one the operator can read: no crash loop after a
# "successful" upgrade.
DURATION_PATTERN = "^([0-9]+(ms|s|m|h|d))+$"
_DURATION = re.compile(DURATION_PATTERN)
_DURATION_PART = re.compile("([0-9]+)(ms|s|m|h|d)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | int | float) -> float:
    """Seconds from ``"120s"``, ``"5m"``, ``"1h30m"``, ``"7d"`` (or a YAML number of seconds).

    >>> parse_duration("2m"), parse_duration("0s"), parse_duration("1h30m"), parse_duration(1.5)
    (120.0, 0.0, 5400.0, 1.5)
    """
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str) or not _DURATION.fullmatch(text):
        raise ValueError(f"bad duration {text!r}: use whole numbers with a unit ms|s|m|h|d, e.g. 120s, 5m or 1h30m")
    return sum(int(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text))


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class EngineEntry(_Strict):
    """One engine version: its image for Kubernetes and its argv prefix for the local launcher."""

    image: str = ""
    sparkVersion: str = ""
    localCommand: list[str] = Field(default_factory=lambda: ["planengine"])


class Rollout(_Strict):
    maxConcurrent: int = Field(default=1, ge=1)


class Stability(_Strict):
    minBatches: int = Field(default=3, ge=1)
    window: str = "120s"

    @field_validator("window")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value


class Snapshots(_Strict):
    maxCount: int = Field(default=10, ge=1)
    maxAge: str = "7d"
    interval: str = "0s"

    @field_validator("maxAge", "interval")
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value


class Metrics(_Strict):
    port: int = 8080


class Timing(_Strict):
    """Reconcile cadence; small values make the end-to-end tests fast, defaults suit a cluster."""

    interval: float = 5.0
    restartBackoffBase: float = 10.0
    restartBackoffMax: float = 300.0
    # A driver that fails this many times in a row the same way (the same exit code and error, no batch committed
    # between) is left Failed with its error instead of being restarted again: a damaged checkpoint or a plan the
    # engine refuses fails every restart alike. 0: restart forever (a store expected to come back, say).
    restartLimit: int = 5
    toolTimeout: float = 300.0
    stopTimeout: float = 120.0


class Admission(_Strict):
    """What a tenant who may create SparkPlanJobs may ask of the pods the operator builds (docs/operator.md,
    "What a tenant reaches"). The defaults are for tenants the cluster does not trust: each key widens it.

    Both the admission webhook and the operator's own validation read it (a job that breaks it is refused or
    reported, never run), and the builders merge only what it admits.
    """

    # The podTemplate merges as written: privileged containers, host namespaces, any volume, another
    # ServiceAccount. Only for clusters where whoever creates a SparkPlanJob may run privileged pods anyway.
    allowPrivilegedPodTemplate: bool = False
    # hostPath volumes whose path is one of these directories or below one (absolute paths; none by default).
    allowedHostPathPrefixes: list[str] = Field(default_factory=list)
    # spec.image may replace the engine catalog's image (else the catalog decides what code runs in the pods).
    allowImageOverride: bool = False
    # sparkConf keys that load code or change the JVM/Python command line (spark.*.extraJavaOptions,
    # *.extraClassPath, spark.jars, spark.plugins, spark.executorEnv.*, spark.pyspark.*, ...).
    allowJvmOptions: bool = False

    @field_validator("allowedHostPathPrefixes")
    @classmethod
    def _absolute(cls, value: list[str]) -> list[str]:
        for prefix in value:
            if not prefix.startswith("/") or ".." in prefix.split("/"):
                raise ValueError(f"allowedHostPathPrefixes entry {prefix!r} must be an absolute path without '..'")
        return value


class OperatorConfig(_Strict):
    defaultEngineVersion: str = "0.1"
    engines: dict[str, EngineEntry] = Field(default_factory=lambda: {"0.1": EngineEntry()})
    launcher: Literal["kubernetes", "local"] = "kubernetes"
    rollout: Rollout = Field(default_factory=Rollout)
    stability: Stability = Field(default_factory=Stability)
    snapshots: Snapshots = Field(default_factory=Snapshots)
    jobRootBase: str = "/var/lib/planengine/jobs"
    watchNamespaces: list[str] = Field(default_factory=list)
    metrics: Metrics = Field(default_factory=Metrics)
    timing: Timing = Field(default_factory=Timing)
    admission: Admission = Field(default_factory=Admission)

    def engine(self, version: str) -> EngineEntry | None:
        return self.engines.get(version)


def local_defaults() -> OperatorConfig:
    """The embedded configuration of ``planengine-operator --local``: the installed ``planengine``."""
    return OperatorConfig(
        launcher="local",
        jobRootBase=str(Path.home() / ".planengine" / "jobs"),
        engines={"0.1": EngineEntry(localCommand=["planengine"])},
    )


def load_config(path: str | os.PathLike[str] | None = None, *, local: bool = False) -> OperatorConfig:
    """Read the YAML file (``--config`` beats the environment variable); ``--local`` forces the local launcher."""
    path = path or os.environ.get(CONFIG_ENV)
    if path:
        data = yaml.safe_load(Path(path).read_text()) or {}
        config = OperatorConfig.model_validate(data)
    else:
        config = local_defaults() if local else OperatorConfig()
    if local:
        config = config.model_copy(update={"launcher": "local"})
    if config.defaultEngineVersion not in config.engines:
        raise ValueError(
            f"defaultEngineVersion {config.defaultEngineVersion!r} is not in engines "
            f"({', '.join(sorted(config.engines))}); add it to the engine catalog"
        )
    return config
