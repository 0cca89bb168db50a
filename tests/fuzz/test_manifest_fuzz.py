"""Manifest fuzzing kept in the suite: seeded SparkPlanJob mutations through the CRD schema (with CEL), the
admission webhook and the builders (tests/fuzz/manifests.py). Bounded for ``make test`` (a few hundred manifests,
well under a minute); benchmarks/fuzz/manifest_campaign.py runs the long campaign.

What must hold for every manifest: nothing raises outside the validation errors, and no manifest that both the
API server and the webhook admit yields a pod with a privileged setting or a hostPath outside the allowed list.
"""

from __future__ import annotations

import pytest

from planengine_operator import podpolicy
from tests.fuzz import manifests

SEEDS = [20261128, 7, 4242]
PER_SEED = 150


@pytest.mark.timeout(120)
@pytest.mark.parametrize("seed", SEEDS)
def test_no_admitted_manifest_yields_a_privileged_pod_and_nothing_raises(seed: int) -> None:
    outcome = manifests.campaign(seed, PER_SEED)
    assert outcome.manifests == PER_SEED
    assert outcome.exceptions == [], outcome.exceptions[0][1]
    assert outcome.privileged == [], outcome.privileged[:3]
    # the generator reaches all three outcomes, so the properties above are not vacuous
    assert outcome.admitted and outcome.crd_refused and outcome.webhook_refused, outcome
    assert outcome.reasons[podpolicy.PRIVILEGED] and outcome.reasons[podpolicy.JVM]


def test_the_judge_finds_a_hole_in_the_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    """With hostNetwork and privileged containers let through, the same campaign admits privileged pods."""
    monkeypatch.setattr(podpolicy, "_POD_SPEC_PRIVILEGED",
                        {k: v for k, v in podpolicy._POD_SPEC_PRIVILEGED.items() if k != "hostNetwork"})
    monkeypatch.setattr(podpolicy, "_POD_SPEC", (*podpolicy._POD_SPEC, "hostNetwork"))
    outcome = manifests.campaign(SEEDS[0], 300)
    assert any("hostNetwork" in what for _, what in outcome.privileged), outcome.privileged[:3]
