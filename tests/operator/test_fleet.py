"""The fleet rollout's pause rule, without kopf: which upgrade outcomes stop the rollout for the others."""

from __future__ import annotations

import pytest

from planengine_operator.fleet import Fleet
from planengine_operator.models import JobStatus

FOLLOWS: dict = {}  # no spec.engineVersion: the job follows defaultEngineVersion


def ended(step: str, to: str = "0.2") -> JobStatus:
    return JobStatus.model_validate(
        {"phase": "Running", "upgrade": {"from": "0.1", "to": to, "step": step, "message": "why"}})


@pytest.mark.parametrize("step", ["RolledBack", "Failed"])
def test_an_upgrade_to_the_default_that_did_not_land_pauses_the_rollout(step: str) -> None:
    fleet = Fleet("0.2", max_concurrent=2)
    fleet.observe("ns", "a", FOLLOWS, ended(step))
    assert fleet.paused
    assert not fleet.allowed("ns", "b")
    message = fleet.take_announcement("ns", "a")
    assert message and step in message and "paused" in message
    assert fleet.take_announcement("ns", "a") is None  # announced once


def test_success_pinned_jobs_and_old_targets_do_not_pause() -> None:
    fleet = Fleet("0.2", max_concurrent=1)
    fleet.observe("ns", "ok", FOLLOWS, ended("Succeeded"))
    fleet.observe("ns", "pinned", {"engineVersion": "0.3"}, ended("RolledBack", to="0.3"))
    fleet.observe("ns", "stale", FOLLOWS, ended("RolledBack", to="0.15"))  # an earlier default's rollout
    fleet.observe("ns", "refused", FOLLOWS, ended("Refused"))  # nothing was stopped; may be this job's plan
    assert not fleet.paused
    assert fleet.allowed("ns", "next")


def test_the_pause_lifts_when_the_job_is_forgotten() -> None:
    fleet = Fleet("0.2", max_concurrent=1)
    fleet.observe("ns", "a", FOLLOWS, ended("Failed"))
    fleet.forget("ns", "a")
    assert not fleet.paused
