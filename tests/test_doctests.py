"""Every docstring example in the engine runs (STYLE: examples in docstrings are doctests, and they pass).

pytest collects only ``tests/``, so the engine's own modules are walked here, one test per module.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import planengine

# ``__main__`` modules run their program when imported.
MODULES = sorted(m.name for m in pkgutil.walk_packages(planengine.__path__, "planengine.")
                 if not m.name.endswith(".__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples of {name} failed " \
                               f"(run: python -m doctest -v {module.__file__})"
