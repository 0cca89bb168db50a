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
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h|d)\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str | int | float) -> float:
    """Seconds from ``"120s"``, ``"5m"``, ``"7d"`` (or a bare number of seconds).

    >>> parse_duration("2m"), parse_duration("0s"), parse_duration(1.5)
    (120.0, 0.0, 1.5)
    """
    if isinstance(text, int | float):
        return float(text)
    match = _DURATION.match(text)
    if not match:
        raise ValueError(f"bad duration {text!r}: use a number and a unit ms|s|m|h|d, e.g. 120s")
    return float(match.group(1)) * _UNIT_SECONDS[match.group(2)]


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
    toolTimeout: float = 300.0
    stopTimeout: float = 120.0


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
