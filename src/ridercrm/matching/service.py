"""Operations 3 and 4: find the contact or lead a set of identifying details describes."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.ids import RecordKind, canonical_id
from ridercrm.matching import model_store, repository, score
from ridercrm.memo import memo
from ridercrm.people.blocking import Identity, query_key_tiers
from ridercrm.people.identity import IDENTITY_COLUMNS
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.service import UnresolvableId, resolve

EXPLAINED_CANDIDATES = 10
# Stored identities kept normalised (stored_identity), about 1.7 kB each: a quarter as
# many as a name cache keeps (RIDERCRM_MATCH_CACHE_ENTRIES).
IDENTITY_SHARE = 0.25

DEFAULT_THRESHOLDS = score.Thresholds()


def thresholds_of(settings: Settings) -> score.Thresholds:
    """The decision's thresholds as configured (RIDERCRM_MATCH_*)."""
    return score.Thresholds(
        match=settings.match_threshold,
        personal=settings.match_personal_threshold,
        ambiguity=settings.match_ambiguity_margin,
    )


@dataclass
class MatchResult:
    """The person found (or None) and the explanation kept in the audit trail.

    ``person`` is the candidate as read for matching (its id, kind and identifying
    values), not an ORM object: loading one would cost as much as the whole match.
    Whoever needs the stored person to change it loads it (``people.service.resolve``).
    """

    person: Ranked | None
    candidates: list[dict[str, Any]] = field(default_factory=list)
    decision: str = ""
    model_version: int = 0

    def explanation(self) -> dict[str, Any]:
        return {
            "decision": self.decision,
            "id": self.person.id if self.person else None,
            "model_version": self.model_version,
            "candidates": self.candidates,
        }


def find_match(
    session: Session,
    *,
    details: Any,
    leads_only: bool,
    thresholds: score.Thresholds = DEFAULT_THRESHOLDS,
) -> MatchResult:
    """Find the person that a request's validated details describe (operations 3 and 4).

    ``details`` has the interface's identifying fields (``people.identity.IDENTITY_FIELDS``;
    a query has ``mobile_phone``, no ``home_phone``) and, for operation 3, ``assets``: ids of courses the person booked.
    """
    identity = Identity.of(details)
    assets = getattr(details, "assets", None) or []
    return match_identity(
        session, query=identity, assets=assets, leads_only=leads_only, thresholds=thresholds
    )


def match_identity(
    session: Session,
    *,
    query: Identity,
    assets: list[str],
    leads_only: bool,
    thresholds: score.Thresholds = DEFAULT_THRESHOLDS,
) -> MatchResult:
    """Find the one stored person the query describes; ties and households give no guess.

    ``thresholds`` are the app's RIDERCRM_MATCH_* settings, passed with each call (never
    kept in the module: two apps in one process may be configured differently)."""
    model = model_store.current(session)
    if session.autoflush:
        # The candidates are read as plain rows (no ORM query flushes for them): this
        # session's own unflushed changes are seen, as an ORM query would see them.
        session.flush()
    scorer = score.Scorer(query, model=model, thresholds=thresholds)
    identifiers, others = query_key_tiers(query)
    rows = list(repository.candidates(session, identifiers))
    settles = len(rows) < repository.KEY_CAP  # no identifier's key was cut at its cap
    asset_owners = _asset_owners(session, assets)
    found = {row.id for row in rows}
    rows.extend(repository.people(session, asset_owners - found))
    records = _records(session, scorer, rows, asset_owners, leads_only=leads_only)
    scored = best_of(records)
    if not (rows and settles and settled(scored, scorer.ceiling(IDENTIFIERS), thresholds)):
        found = {row.id for row in rows}
        more = [row for row in repository.candidates(session, others) if row.id not in found]
        rows.extend(more)
        records.extend(_records(session, scorer, more, asset_owners, leads_only=leads_only))
        scored = best_of(records)
    if not rows:
        return MatchResult(
            person=None,
            decision="no candidates share a key with the request",
            model_version=model.version,
        )
    explained = [_candidate(person, verdict) for person, _identity, verdict in scored]
    result = MatchResult(
        person=None, candidates=explained[:EXPLAINED_CANDIDATES], model_version=model.version
    )
    result.person, result.decision = decide(scored, thresholds)
    return result


# The fields whose keys the matcher reads first (blocking.IDENTIFIER_KEYS).
IDENTIFIERS = ("email", "phone", "licence")


def settled(scored: list[Scored], ceiling: float, thresholds: score.Thresholds) -> bool:
    """Whether no candidate scoring at most ``ceiling`` could change ``decide``'s answer.

    Such a candidate is never accepted when the ceiling is under the match threshold.
    Otherwise, if accepted, it ranks under the best accepted candidate (its total is
    lower) and at least the ambiguity margin under it, where ``decide`` stops looking:
    it can neither be the answer nor make the answer ambiguous.
    """
    if ceiling < thresholds.match:
        return True
    if not scored or not scored[0][2].accepted:
        return False
    best = scored[0][2].total
    return ceiling < best and best - ceiling >= thresholds.ambiguity


Scored = tuple["Ranked", Identity, score.Verdict]


def decide(scored: list[Scored], thresholds: score.Thresholds) -> tuple[Ranked | None, str]:
    """The answer among ranked candidates, and the decision in words."""
    accepted = [entry for entry in scored if entry[2].accepted]
    if not accepted:
        return None, "no candidate passes the rule"
    best_person, best_identity, best_verdict = accepted[0]
    for person, identity, verdict in accepted[1:]:
        if best_verdict.total - verdict.total >= thresholds.ambiguity:
            break
        if not score.same_person(best_identity, identity):
            return (
                None,
                f"ambiguous: {best_person.id} and {person.id} both fit and look like different people",
            )
    return best_person, f"matched: {best_verdict.rule}"


def rank(scorer: score.Scorer, candidates: list[tuple[Ranked, Identity, bool]]) -> list[Scored]:
    """Each candidate person's best-ranked record with its verdict, best first.

    ``candidates``: the person each stored record stands for, the record's identity, and
    whether the request named a course the record booked; in the order of the records'
    ids (of two records of one person ranked alike, the first is kept).
    """
    return best_of(
        [
            ("", person, identity, scorer.evaluate(identity, asset=asset))
            for person, identity, asset in candidates
        ]
    )


# A stored record as scored: its id, the person it stands for, its identity, its verdict.
Record = tuple[str, "Ranked", Identity, score.Verdict]


def best_of(records: list[Record]) -> list[Scored]:
    """Each person's best-ranked record with its verdict, best first (of two records of
    one person ranked alike, the one with the lower record id)."""
    best: dict[str, Scored] = {}
    for _record_id, person, identity, verdict in sorted(records, key=lambda r: r[0]):
        kept = best.get(person.id)
        if kept is None or _rank(person, verdict) < _rank(person, kept[2]):
            best[person.id] = (person, identity, verdict)
    return sorted(best.values(), key=lambda entry: _rank(entry[0], entry[2]))


def _records(
    session: Session,
    scorer: score.Scorer,
    rows: list[Any],
    asset_owners: set[str],
    *,
    leads_only: bool,
) -> list[Record]:
    """The rows' records scored, each with the person it stands for (none for a converted
    lead, a lead-only query's contact, or a merged record without a survivor)."""
    records: list[Record] = []
    for stored in rows:
        if stored.kind == LEAD and stored.converted_contact_id:
            continue
        # A merged record is never the answer: its survivor is, found by the values the
        # record still holds (the one the request's details matched).
        try:
            person: Ranked | None = resolve(session, stored.id) if stored.merged_into else stored
        except UnresolvableId:
            continue  # a chain too long to follow (data stored before merges kept one hop)
        if person is None or (leads_only and person.kind != LEAD):
            continue
        identity = stored_identity(stored)
        verdict = scorer.evaluate(identity, asset=stored.id in asset_owners)
        records.append((stored.id, person, identity, verdict))
    return records


class Ranked(Protocol):
    """A candidate person as ranked: its row (repository.CANDIDATE_COLUMNS), or the
    survivor of a merged record (an ORM Person)."""

    id: str
    kind: str
    updated_at: dt.datetime


def stored_identity(row: Any) -> Identity:
    """The identity of a candidate row, from a cache keyed by its identifying values.

    The people under a common key (capped at KEY_CAP) are read again by every query
    that shares it; their normalised values are computed once. The key is the values
    themselves, so a changed person is a new entry, never a stale one.
    """
    return _identity_of_values(tuple(getattr(row, name) for name in IDENTITY_COLUMNS))


@memo(share=IDENTITY_SHARE)
def _identity_of_values(values: tuple[Any, ...]) -> Identity:
    return Identity.of_values(values)


def _candidate(person: Ranked, verdict: score.Verdict) -> dict[str, Any]:
    return {
        "id": person.id,
        "kind": person.kind,
        "score": verdict.total,
        "accepted": verdict.accepted,
        "rule": verdict.rule,
        "reasons": verdict.reasons,
        "weights": verdict.weights,
        "total": verdict.total,
    }


def _rank(person: Ranked, verdict: score.Verdict) -> tuple[Any, ...]:
    """Higher weight, then contact before lead, then most recently updated, then id."""
    return (
        not verdict.accepted,
        -verdict.total,
        person.kind != CONTACT,
        -person.updated_at.timestamp(),
        person.id,
    )


def _asset_owners(session: Session, assets: list[str]) -> set[str]:
    ids = [asset_id for asset_id in (canonical_id(a, RecordKind.ASSET) for a in assets) if asset_id]
    if not ids:
        return set()
    return set(session.scalars(select(Asset.person_id).where(Asset.id.in_(ids))).all())
