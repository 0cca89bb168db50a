"""Golden plans: checked-in compiled plans of representative programs (DESIGN §8).

A diff fails until the plans are regenerated on purpose with ``python -m tests.golden.compile_programs
--write`` — plans are a contract with running jobs, so every change to them must be a reviewed one.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from planengine.config import REGISTRY
from planengine.exec.base import registered
from planengine.plan.serde import OPTION_DEFAULTS
from tests.golden.compile_programs import PLANS, compile_program, program_names

REPO = PLANS.parents[2]


@pytest.mark.parametrize("name", program_names())
def test_plan_matches_golden(name: str) -> None:
    actual = compile_program(name)
    golden = PLANS / f"{name}.json"
    assert golden.exists(), f"no golden plan for {name}; run: python -m tests.golden.compile_programs --write"
    expected = golden.read_text()
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "golden", "now"))
        pytest.fail(f"plan of {name} changed (regenerate on purpose if intended):\n{diff[:4000]}")


def test_at_least_25_programs_and_several_statement_sets() -> None:
    names = program_names()
    assert len(names) >= 25
    multi_sink = [n for n in names if len(_sinks(json.loads((PLANS / f"{n}.json").read_text()))) > 1]
    assert len(multi_sink) >= 3


def test_every_registered_exec_node_version_has_a_golden_plan() -> None:
    seen = set()
    for path in PLANS.glob("*.json"):
        for node in json.loads(path.read_text())["nodes"]:
            seen.add(node["type"])
    missing = sorted(f"{name}_{version}" for name, version in registered() if f"{name}_{version}" not in seen)
    assert missing == [], f"exec node versions without a golden plan: {missing}"


def test_every_consumed_option_key_exists() -> None:
    """Every option a node consumes is declared in the option registry, frozen into plans, with a default."""
    unknown = sorted({(f"{name}_{version}", key) for (name, version), cls in registered().items()
                      for meta in cls.METADATA if meta.version == version
                      for key in meta.consumed_options
                      if (o := REGISTRY.find(key)) is None or o.scope != "plan" or key not in OPTION_DEFAULTS})
    assert unknown == []


@pytest.mark.usefixtures("engine_process")  # two fresh interpreters running the engine's compiler
def test_plans_are_byte_identical_across_processes() -> None:
    """Compile everything in two fresh interpreters with different hash seeds; the bytes must agree."""
    digests = []
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-m", "tests.golden.compile_programs"], cwd=REPO, env=env,
                             capture_output=True, text=True, check=True).stdout
        digests.append(out)
    assert digests[0] == digests[1]
    on_disk = "".join(f"{n}\t{hashlib.sha256((PLANS / f'{n}.json').read_bytes()).hexdigest()}\n"
                      for n in program_names())
    assert digests[0] == on_disk


def test_plans_have_no_class_or_module_names() -> None:
    for path in PLANS.glob("*.json"):
        text = path.read_text()
        for marker in ("planengine.", "sqlglot", "<class", "__main__"):
            assert marker not in text, f"{path.name} mentions {marker!r}"


def test_secrets_are_never_written() -> None:
    """A secret option holds ``******`` or an environment reference (resolved where the job runs), never a value."""
    seen = 0
    for path in PLANS.glob("*.json"):
        for key, value in re.findall(r'"([^"]*(?:password|secret|token|credential)[^"]*)":"([^"]*)"',
                                     path.read_text(), flags=re.IGNORECASE):
            seen += 1
            assert value == "******" or re.fullmatch(r"\$\{env:[A-Za-z_][A-Za-z0-9_]*\}", value), (path.name, key)
    assert seen  # the prelude's JDBC tables have passwords


def _sinks(plan: dict) -> list[int]:
    sources = {e["source"] for e in plan["edges"]}
    return [n["id"] for n in plan["nodes"] if n["id"] not in sources]
