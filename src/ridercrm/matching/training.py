"""Training the model from the stored people, without labels (``ridercrm match train``).

- u: the share of each comparison level among random pairs of stored people (two
  random people are almost never one person).
- Term frequencies: the share of people holding each common given name, family name
  and postcode.
- m: expectation-maximisation over blocked pairs, as Splink does it: pairs sharing a
  date of birth and postcode estimate m for the other fields, pairs sharing both name
  sounds estimate m for the rest; the blocked-on fields are left out of each run
  (they agree by construction). u stays fixed.

Every estimate is blended with the shipped default as a prior worth a few hundred
pairs (``PRIOR_PAIRS``): a small store, or one with few duplicates to learn m from,
keeps the default's values rather than noise.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence

import jellyfish
from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.matching import score
from ridercrm.matching.compare import LEVELS, MISSING
from ridercrm.matching.model import TF_FIELDS, Model, TermFrequencies, default_model
from ridercrm.people.blocking import Identity

# At most this many people are compared (a uniform sample): bounds time and memory.
SAMPLE = 300_000
RANDOM_PAIRS = 150_000
PRIOR_PAIRS = 300.0
BLOCK_CAP = 20
MAX_BLOCKED_PAIRS = 100_000
TF_VALUES = 2000
TF_MIN_PEOPLE = 1000
EM_ROUNDS = 25


def train(
    identities: Sequence[Identity], *, seed: int = 0, random_pairs: int = RANDOM_PAIRS
) -> Model:
    """Estimate a model from stored people's identities."""
    prior = default_model()
    rng = random.Random(seed)
    u = _estimate_u(identities, prior, rng, random_pairs)
    m: dict[str, dict[str, float]] = {
        name: {level: mu[0] for level, mu in levels.items()}
        for name, levels in prior.levels.items()
    }
    for blocked_on, pairs in (
        (("date_of_birth", "postcode"), _blocked_pairs(identities, _dob_postcode, rng)),
        (("given_name", "family_name"), _blocked_pairs(identities, _name_sounds, rng)),
    ):
        patterns = Counter(_pattern(identities[a], identities[b]) for a, b in pairs)
        fields = [name for name in LEVELS if name not in blocked_on]
        estimated = _em(patterns, fields, m, u)
        for name in fields:
            m[name] = estimated[name]
    levels = {
        name: {level: (m[name][level], u[name][level]) for level in prior.levels[name]}
        for name in prior.levels
    }
    _floor_disagreements(levels, prior)
    return Model(levels=levels, tf=_term_frequencies(identities), people=len(identities))


# The household's tells: a birth date or a licence that differs. A store full of
# households teaches EM that these are cheap (its blocked pairs are mostly relatives
# sharing address and e-mail, which EM reads as duplicates), so a trained model never
# weighs them lighter than the shipped default does. Heavier is allowed: a store may
# show them rarer among duplicates (docs/decisions.md, "Matching on real CRM traffic").
FLOORED = (
    ("date_of_birth", "different"),
    ("date_of_birth", "two_digits"),
    ("licence", "different"),
)


def _floor_disagreements(levels: dict[str, dict[str, tuple[float, float]]], prior: Model) -> None:
    for name, level in FLOORED:
        m, u = levels[name][level]
        ceiling = prior.weights[name][level]
        if m > 0 and u > 0 and math.log2(m / u) > ceiling:
            levels[name][level] = (u * 2.0**ceiling, u)


def _values(identity: Identity) -> dict[str, str | None]:
    return {
        "given_name": "".join(identity.first) or None,
        "family_name": "".join(identity.last) or None,
        "postcode": identity.postcode,
    }


def _pattern(query: Identity, stored: Identity) -> tuple[tuple[str, str], ...]:
    return tuple(score.levels(query, stored).items())


def _estimate_u(
    identities: Sequence[Identity], prior: Model, rng: random.Random, random_pairs: int
) -> dict[str, dict[str, float]]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    n = len(identities)
    pairs = 0
    if n >= 2:
        for _ in range(min(random_pairs, n * (n - 1) // 2)):
            a, b = rng.randrange(n), rng.randrange(n)
            if a == b:
                continue
            pairs += 1
            for name, level in score.levels(identities[a], identities[b]).items():
                counts[name][level] += 1
    u: dict[str, dict[str, float]] = {}
    for name, levels in prior.levels.items():
        seen = pairs - counts[name][MISSING]
        u[name] = {
            level: (counts[name][level] + PRIOR_PAIRS * mu[1]) / (seen + PRIOR_PAIRS)
            for level, mu in levels.items()
        }
    return u


def _dob_postcode(identity: Identity) -> str | None:
    if identity.date_of_birth and identity.postcode:
        return f"{identity.date_of_birth.isoformat()}|{identity.postcode}"
    return None


def _name_sounds(identity: Identity) -> str | None:
    if identity.first and identity.last:
        first = jellyfish.metaphone("".join(identity.first))
        last = jellyfish.metaphone("".join(identity.last))
        return f"{first}|{last}"
    return None


def _blocked_pairs(
    identities: Sequence[Identity], block: Callable[[Identity], str | None], rng: random.Random
) -> list[tuple[int, int]]:
    blocks: dict[str, list[int]] = defaultdict(list)
    for number, identity in enumerate(identities):
        key = block(identity)
        if key:
            blocks[key].append(number)
    pairs = [
        (members[i], members[j])
        for members in blocks.values()
        if 1 < len(members) <= BLOCK_CAP
        for i in range(len(members))
        for j in range(i + 1, len(members))
    ]
    if len(pairs) > MAX_BLOCKED_PAIRS:
        pairs = rng.sample(pairs, MAX_BLOCKED_PAIRS)
    return pairs


def _em(
    patterns: Counter[tuple[tuple[str, str], ...]],
    fields: Iterable[str],
    prior_m: dict[str, dict[str, float]],
    u: dict[str, dict[str, float]],
) -> dict[str, dict[str, float]]:
    """m for the given fields by EM with u fixed, each blended with its prior."""
    fields = list(fields)
    m = {name: dict(prior_m[name]) for name in fields}
    total = sum(patterns.values())
    share = 0.01
    for _ in range(EM_ROUNDS):
        expected: dict[str, dict[str, float]] = {name: defaultdict(float) for name in fields}
        matches = 0.0
        for pattern, count in patterns.items():
            log_ratio = math.log(share / (1 - share))
            for name, level in pattern:
                if name in m and level != MISSING:
                    log_ratio += math.log(m[name][level] / u[name][level])
            posterior = 1 / (1 + math.exp(-max(-50.0, min(50.0, log_ratio))))
            weight = posterior * count
            matches += weight
            for name, level in pattern:
                if name in expected and level != MISSING:
                    expected[name][level] += weight
        share = min(0.99, max(1e-6, matches / max(1, total)))
        for name in fields:
            seen = sum(expected[name].values())
            m[name] = {
                level: (expected[name][level] + PRIOR_PAIRS * prior_m[name][level])
                / (seen + PRIOR_PAIRS)
                for level in prior_m[name]
            }
    return m


def _term_frequencies(identities: Sequence[Identity]) -> dict[str, TermFrequencies]:
    if len(identities) < TF_MIN_PEOPLE:
        return {}
    counts: dict[str, Counter[str]] = {name: Counter() for name in TF_FIELDS}
    for identity in identities:
        for name, value in _values(identity).items():
            if value:
                counts[name][value] += 1
    return _frequencies(counts, len(identities))


def _frequencies(counts: dict[str, Counter[str]], people: int) -> dict[str, TermFrequencies]:
    tf: dict[str, TermFrequencies] = {}
    for name, counter in counts.items():
        holders = max(1, sum(counter.values()))  # the people who have a value at all
        common = dict(counter.most_common(TF_VALUES))
        others = len(counter) - len(common)
        rest = holders - sum(common.values())
        rare = rest / others / holders if others else 1 / max(1, people)
        tf[name] = TermFrequencies(
            values={value: count / holders for value, count in common.items()}, rare=rare
        )
    return tf


def stored_sample(session: Session, *, seed: int = 0) -> tuple[list[Identity], int]:
    """A uniform sample of at most SAMPLE stored people, and how many there are.

    Read in one streamed pass; the sample bounds training's time and memory at a
    million people (term frequencies come from everyone: ``term_frequencies``).
    """
    from ridercrm.people.identity import IDENTITY_COLUMNS
    from ridercrm.people.index import identity_of
    from ridercrm.people.models import Person

    columns = select(*(Person.__table__.c[name] for name in IDENTITY_COLUMNS))
    rng = random.Random(seed)
    sample: list[Identity] = []
    seen = 0
    for row in session.execute(columns.execution_options(yield_per=10_000)):
        seen += 1
        if len(sample) < SAMPLE:
            sample.append(identity_of(row))
        else:
            slot = rng.randrange(seen)  # reservoir sampling: each person kept alike
            if slot < SAMPLE:
                sample[slot] = identity_of(row)
    return sample, seen


def term_frequencies(session: Session) -> dict[str, TermFrequencies]:
    """Term frequencies of given names, family names and postcodes of every stored person."""
    from ridercrm.people import normalize
    from ridercrm.people.models import Person

    counts: dict[str, Counter[str]] = {name: Counter() for name in TF_FIELDS}
    columns = select(Person.first_name, Person.last_name, Person.postcode)
    people = 0
    for first, last, postcode in session.execute(columns.execution_options(yield_per=20_000)):
        people += 1
        for name, value in (
            ("given_name", normalize.name(first)),
            ("family_name", normalize.name(last)),
            ("postcode", normalize.postcode(postcode)),
        ):
            if value:
                counts[name][value] += 1
    return _frequencies(counts, people)


def train_store(session: Session, *, seed: int = 0) -> Model:
    """Train on the stored people and store the model as the newest version."""
    from ridercrm.matching import model_store

    sample, people = stored_sample(session, seed=seed)
    model = train(sample, seed=seed)
    model.people = people
    model.tf = term_frequencies(session) if people >= TF_MIN_PEOPLE else {}
    return model_store.save(session, model)
