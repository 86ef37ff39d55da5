"""The Fellegi-Sunter model: m and u per comparison level, term frequencies, weights.

A level's match weight is log2(m / u): m is how often a true duplicate's field falls
in that level, u how often two different people's does. For an exact agreement on a
given name, family name or postcode, u is the share of stored people with that value
(term frequency): a shared Smith is weaker evidence than a shared Tschitrpig.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

from ridercrm.matching.compare import LEVELS, MISSING

TF_FIELDS = ("given_name", "family_name", "postcode")
# No level may move the total by more than this: one field never decides alone.
MAX_WEIGHT = 24.0
PARTIAL_BELOW_EXACT = 1.0


@dataclass
class TermFrequencies:
    """The share of stored people holding each common value; ``rare`` for any other."""

    values: dict[str, float] = field(default_factory=dict)
    rare: float = 0.0


@dataclass
class Model:
    """Everything the scorer needs, as trained (or shipped)."""

    levels: dict[str, dict[str, tuple[float, float]]]
    tf: dict[str, TermFrequencies] = field(default_factory=dict)
    version: int = 0
    trained_at: str | None = None
    people: int = 0
    weights: dict[str, dict[str, float]] = field(init=False)

    def __post_init__(self) -> None:
        self.weights = {}
        for name, levels in self.levels.items():
            weights = {level: _log2_ratio(m, u) for level, (m, u) in levels.items()}
            # A partial agreement is weaker evidence than an exact one, whatever a level
            # seen a handful of times among the random pairs makes of its u.
            ceiling = weights.get("exact", MAX_WEIGHT) - PARTIAL_BELOW_EXACT
            self.weights[name] = {
                level: w if level == "exact" else min(w, ceiling) for level, w in weights.items()
            }
        for name in LEVELS:
            self.weights.setdefault(name, {}).setdefault(MISSING, 0.0)

    def weight(self, name: str, level: str, value: str | None = None) -> float:
        """The match weight of one field's level (term-frequency adjusted when exact)."""
        if level == "exact" and value is not None and name in self.tf:
            tf = self.tf[name]
            u = tf.values.get(value, tf.rare)
            if u > 0:
                return _log2_ratio(self.levels[name]["exact"][0], u)
        return self.weights[name].get(level, 0.0)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": self.version,
                "trained_at": self.trained_at,
                "people": self.people,
                "levels": {
                    name: {level: list(mu) for level, mu in levels.items()}
                    for name, levels in self.levels.items()
                },
                "tf": {
                    name: {"rare": tf.rare, "values": tf.values} for name, tf in self.tf.items()
                },
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Model:
        data: dict[str, Any] = json.loads(text)
        return cls(
            levels={
                name: {level: (float(mu[0]), float(mu[1])) for level, mu in levels.items()}
                for name, levels in data["levels"].items()
            },
            tf={
                name: TermFrequencies(values=dict(tf["values"]), rare=float(tf["rare"]))
                for name, tf in data.get("tf", {}).items()
            },
            version=int(data.get("version", 0)),
            trained_at=data.get("trained_at"),
            people=int(data.get("people", 0)),
        )


def _log2_ratio(m: float, u: float) -> float:
    return max(-MAX_WEIGHT, min(MAX_WEIGHT, math.log2(max(m, 1e-9) / max(u, 1e-9))))


@lru_cache(maxsize=1)
def default_model() -> Model:
    """The model shipped with the package, for an empty or small store (read once)."""
    text = resources.files("ridercrm.matching").joinpath("default_model.json").read_text()
    return Model.from_json(text)
