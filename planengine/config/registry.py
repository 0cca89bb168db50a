"""The registry of session options: every key a ``SET``, ``-D`` or ``TableEnvironment(config)`` may hold.

One declaration per key says its type, its default (as text, the way plans freeze it), what it does and
how planengine treats it, so that

* ``SET 'table.exec.state.tll' = '1 h'`` fails with "did you mean 'table.exec.state.ttl'?" instead of being
  silently kept and ignored;
* ``SET 'table.exec.state.ttl' = 'banana'`` fails at the ``SET`` with the expected form of the value, not
  later with a traceback from deep inside the planner;
* Flink keys planengine does not honour are *reported* (or refused, when honouring them would change
  results) instead of being accepted and ignored;
* exec nodes' ``consumed_options``, the defaults frozen into plans, ``SET`` listings and
  ``docs/options.md`` all come from the same declarations.

Declarations live in ``planengine.config.options`` (engine options) and ``planengine.config.flink``
(Flink's keys). Another part of the engine adds its own with ``register(...)`` at import time; a key may
be declared once.

>>> reg = Registry()
>>> _ = reg.register(Option("x.size", INT, "1", "how many"))
>>> reg.check("x.size", "2").value
'2'
>>> reg.check("x.sise", "2")
Traceback (most recent call last):
...
planengine.errors.ValidationError: unknown option 'x.sise'; did you mean 'x.size'?
  hint: SET lists the options in effect; docs/options.md lists every option planengine knows
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from planengine.config.values import BOOL, DURATION, INT, MEMORY, STRING, OptionType, enum_type
from planengine.errors import ValidationError

log = logging.getLogger("planengine.config")

__all__ = ["BOOL", "DURATION", "INT", "MEMORY", "STRING", "Option", "Registry", "SetResult", "enum_type"]

# How planengine treats a key (docs/options.md; ``planengine.config.flink`` gives each Flink key one):
#  honoured    - the engine reads it (where: ``scope``);
#  ignored     - a Flink key that has no effect here (Flink tunes its own runtime with it, or planengine already
#                behaves that way); kept, validated by its Flink type, and reported once with the reason;
#  mapped      - a Flink key planengine translates into its own (``maps_to``), e.g. result-row limits;
#  unsupported - a Flink key whose non-default values would change results in a way planengine cannot
#                reproduce: the default is accepted, anything else is refused with the reason.
Treatment = Literal["honoured", "ignored", "mapped", "unsupported"]
# Where an honoured option acts: frozen into compiled plans (``plan``: exec-node configuration or the plan
# envelope), read while planning only (``planner``), or by the session / CLI / runtime (``session``).
Scope = Literal["plan", "planner", "session"]


@dataclass(frozen=True)
class Option:
    key: str
    type: OptionType[Any]
    default: str | None  # the default as text ("0 ms"), what a plan freezes when the session does not set it
    description: str
    treatment: Treatment = "honoured"
    scope: Scope = "session"
    note: str = ""  # ignored / unsupported / mapped: why, in one sentence a user reads after SET
    maps_to: str | None = None  # mapped: the planengine key that receives the value
    prefix: bool = False  # the key is a prefix (``spark.``): every key under it is this option
    aliases: tuple[str, ...] = ()  # Flink's deprecated / fallback keys of this option (stored under ``key``)
    flink_version: str | None = None  # a Flink key: the Flink release its declaration comes from

    def parse(self, value: str) -> Any:
        return self.type.parse(value)

    def is_default(self, value: str) -> bool:
        if self.default is None:
            return False
        try:
            return bool(self.parse(value) == self.parse(self.default))
        except ValueError:
            return False


@dataclass(frozen=True)
class SetResult:
    """What a validated ``SET`` does: the key/value to store (a mapped key stores under its target) and a
    note for the user when planengine does not simply honour the key."""

    key: str
    value: str
    note: str = ""


class Registry:
    def __init__(self) -> None:
        self._options: dict[str, Option] = {}
        self._prefixes: list[Option] = []
        self._aliases: dict[str, str] = {}  # Flink's deprecated / fallback key -> the key it names

    # -- declaring ---------------------------------------------------------------------------------------
    def register(self, option: Option) -> Option:
        if option.key in self._options or any(p.key == option.key for p in self._prefixes):
            raise ValueError(f"option {option.key!r} is declared twice")
        if option.treatment == "mapped" and not option.maps_to:
            raise ValueError(f"mapped option {option.key!r} needs maps_to")
        if option.prefix:
            self._prefixes.append(option)
        else:
            self._options[option.key] = option
            self._aliases.pop(option.key, None)  # a key of its own is never also another key's alias
        for alias in option.aliases:
            self.alias(alias, option.key)
        return option

    def alias(self, old: str, key: str) -> None:
        """``old`` (a deprecated Flink key) means ``key``; the first option to claim it keeps it."""
        if old not in self._options:
            self._aliases.setdefault(old, key)

    def register_all(self, options: Iterable[Option]) -> None:
        for option in options:
            self.register(option)

    # -- looking up --------------------------------------------------------------------------------------
    def find(self, key: str) -> Option | None:
        found = self._options.get(self._aliases.get(key, key))
        if found is not None:
            return found
        return next((p for p in self._prefixes if key.startswith(p.key)), None)

    def get(self, key: str) -> Option:
        option = self.find(key)
        if option is None:
            raise self._unknown(key)
        return option

    def canonical(self, key: str) -> str:
        """The key a value is stored under: an alias's key, else ``key`` itself."""
        return self._aliases.get(key, key)

    def aliases(self) -> dict[str, str]:
        return dict(sorted(self._aliases.items()))

    def options(self) -> list[Option]:
        return sorted([*self._options.values(), *self._prefixes], key=lambda o: o.key)

    def default(self, key: str) -> str | None:
        option = self.find(key)
        return None if option is None else option.default

    def value(self, config: Mapping[str, str], key: str) -> Any:
        """The parsed value of an honoured option in ``config``, else its parsed default."""
        option = self.get(key)
        raw = config.get(key, option.default)
        return None if raw is None else option.parse(str(raw))

    # -- validating --------------------------------------------------------------------------------------
    def check(self, key: str, value: str) -> SetResult:
        """Validate one ``key = value``; raises ValidationError saying what is wrong and how to fix it."""
        option = self.get(key)
        stored = self.canonical(key)
        renamed = f"'{key}' is Flink's deprecated name of '{stored}'" if stored != key else ""
        try:
            option.parse(value)
        except ValueError as error:
            raise ValidationError(f"invalid value {value!r} for option '{key}': expected {error} "
                                  f"(type {option.type.name})", hint=self._describe(option)) from None
        if option.treatment == "unsupported" and not option.is_default(value):
            raise ValidationError(f"planengine does not support '{key}' = '{value}': {option.note}",
                                  hint=f"remove the SET, or set it to its default '{option.default}'"
                                  if option.default is not None else "remove the SET")
        if option.treatment == "mapped":
            assert option.maps_to is not None
            target = self.get(option.maps_to)
            try:
                target.parse(value)
            except ValueError as error:
                raise ValidationError(f"invalid value {value!r} for option '{key}' (planengine's "
                                      f"'{target.key}'): expected {error}") from None
            return SetResult(target.key, value, f"'{key}' is planengine's '{target.key}': {option.note}")
        if option.treatment in ("ignored", "unsupported"):
            return SetResult(stored, value, f"'{key}' has no effect in planengine: {option.note}")
        return SetResult(stored, value, renamed)

    def check_all(self, config: Mapping[str, str], report: Callable[[str], None] | None = None) -> dict[str, str]:
        """Validate a whole configuration; returns it with mapped keys moved to their targets."""
        out: dict[str, str] = {}
        for key, value in config.items():
            result = self.check(key, str(value))
            out[result.key] = result.value
            if result.note and report is not None:
                report(result.note)
        return out

    def check_reset(self, key: str) -> str:
        """``RESET 'key'``: the key to remove (a mapped key resets its target)."""
        option = self.get(key)
        return option.maps_to if option.treatment == "mapped" and option.maps_to else self.canonical(key)

    def _unknown(self, key: str) -> ValidationError:
        keys = [*self._options, *(p.key for p in self._prefixes)]
        guess = difflib.get_close_matches(key, keys, n=1, cutoff=0.75)
        if not guess:  # a typo in one segment of a long key: compare the last segments too
            tail = key.rsplit(".", 1)[-1]
            same_tail = [k for k in keys if k.rsplit(".", 1)[-1] == tail]
            guess = same_tail[:1] or difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
        suggestion = f"; did you mean '{guess[0]}'?" if guess else ""
        return ValidationError(f"unknown option '{key}'{suggestion}",
                               hint="SET lists the options in effect; docs/options.md lists every option planengine "
                                    "knows")

    @staticmethod
    def _describe(option: Option) -> str:
        default = f" (default '{option.default}')" if option.default is not None else ""
        return f"'{option.key}'{default}: {option.description}"
