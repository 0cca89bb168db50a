import pytest

from planengine_operator.models import JobSpec, JobStatus
from planengine_operator.specdiff import Change, classify, config_hash, program_hash

BASE = {"plan": {"sql": "INSERT INTO s SELECT * FROM t"}, "engineVersion": "0.1"}


def running_status(spec: JobSpec, **over):
    status = {"planId": "p", "runId": "r1", "phase": "Running", "engineVersion": "0.1",
              "specHash": program_hash(spec), "driver": {"configHash": config_hash(spec)}}
    status.update(over)
    return JobStatus.model_validate(status)


@pytest.mark.parametrize("change,expected", [
    ({}, Change.NONE),
    ({"engineVersion": "0.2"}, Change.UPGRADE),
    ({"sparkConf": {"spark.sql.shuffle.partitions": "4"}}, Change.RESTART),
    ({"driver": {"memory": "2Gi"}}, Change.RESTART),
    ({"podTemplate": {"metadata": {"labels": {"a": "b"}}}}, Change.RESTART),
    ({"restartNonce": 7}, Change.RESTART),
    ({"snapshotNonce": 3}, Change.SNAPSHOT),
    ({"plan": {"sql": "INSERT INTO s SELECT a FROM t"}}, Change.PLAN_CHANGED),
    ({"plan": {"sql": "INSERT INTO s SELECT a FROM t"}, "upgradeMode": "stateless"}, Change.RECOMPILE),
    ({"planOptions": {"table.plan.restore.catalog-objects": "ALL_ENFORCED"}}, Change.PLAN_CHANGED),
    ({"state": "suspended"}, Change.SUSPEND),
])
def test_classification(change, expected):
    original = JobSpec.model_validate(BASE)
    edited = JobSpec.model_validate({**BASE, **change})
    assert classify(edited, running_status(original), "0.1") is expected


def test_never_started_job_starts_and_suspended_resumes():
    spec = JobSpec.model_validate(BASE)
    assert classify(spec, JobStatus(), "0.1") is Change.START
    assert classify(spec, running_status(spec, phase="Suspended"), "0.1") is Change.RESUME


def test_jobs_without_engine_version_follow_the_default():
    spec = JobSpec.model_validate({"plan": BASE["plan"]})
    status = running_status(spec)
    assert classify(spec, status, "0.1") is Change.NONE
    assert classify(spec, status, "0.2") is Change.UPGRADE


@pytest.mark.parametrize("step", ["Refused", "RolledBack"])
def test_a_refused_or_rolled_back_target_is_not_retried(step):
    original = JobSpec.model_validate(BASE)
    edited = JobSpec.model_validate({**BASE, "engineVersion": "0.2"})
    status = running_status(original, upgrade={"to": "0.2", "step": step})
    assert classify(edited, status, "0.1") is Change.UPGRADE_BLOCKED
    assert classify(JobSpec.model_validate({**BASE, "engineVersion": "0.3"}), status, "0.1") is Change.UPGRADE
