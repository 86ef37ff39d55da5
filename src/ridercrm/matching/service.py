"""Operations 3 and 4: find the contact or lead a set of identifying details describes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.ids import RecordKind, canonical_id
from ridercrm.matching import model_store, repository, score
from ridercrm.people.blocking import Identity, query_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import CONTACT, LEAD, Person
from ridercrm.people.service import survivor_of

EXPLAINED_CANDIDATES = 10
# Built once: SQLAlchemy coerces every element of a literal IN list on each call.
_PEOPLE = select(Person).where(Person.id.in_(bindparam("ids", expanding=True)))

_thresholds = score.Thresholds()


def configure(thresholds: score.Thresholds) -> None:
    """Use these thresholds from now on (the app sets them from its settings)."""
    global _thresholds
    _thresholds = thresholds


@dataclass
class MatchResult:
    """The person found (or None) and the explanation kept in the audit trail."""

    person: Person | None
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


def find_match(session: Session, *, details: Any, leads_only: bool) -> MatchResult:
    """Find the person that a request's validated details describe (operations 3 and 4).

    ``details`` has the interface's identifying fields (``first_name`` … ``postcode``,
    ``mobile_phone``) and, for operation 3, ``assets``: ids of courses the person booked.
    """
    identity = Identity.of(
        first_name=details.first_name,
        last_name=details.last_name,
        date_of_birth=details.date_of_birth,
        email=details.email,
        phones=(details.mobile_phone,),
        drivers_license=details.drivers_license,
        street=details.street,
        postcode=details.postcode,
        city=details.city,
    )
    assets = getattr(details, "assets", None) or []
    return match_identity(session, query=identity, assets=assets, leads_only=leads_only)


def match_identity(
    session: Session, *, query: Identity, assets: list[str], leads_only: bool
) -> MatchResult:
    """Find the one stored person the query describes; ties and households give no guess."""
    model = model_store.current(session)
    ids = repository.candidate_ids(session, query_keys(query))
    asset_owners = _asset_owners(session, assets)
    ids |= asset_owners
    if not ids:
        return MatchResult(
            person=None,
            decision="no candidates share a key with the request",
            model_version=model.version,
        )
    people = session.scalars(_PEOPLE, {"ids": list(ids)}).all()
    best: dict[str, tuple[Person, Identity, score.Verdict]] = {}
    for stored in people:
        if stored.kind == LEAD and stored.converted_contact_id:
            continue
        # A merged record is never the answer: its survivor is, found by the values the
        # record still holds (the one the request's details matched).
        person = survivor_of(session, stored) if stored.merged_into else stored
        if person is None or (leads_only and person.kind != LEAD):
            continue
        identity = identity_of(stored)
        verdict = score.evaluate(
            query, identity, model=model, thresholds=_thresholds, asset=stored.id in asset_owners
        )
        kept = best.get(person.id)
        if kept is None or _rank(person, verdict) < _rank(person, kept[2]):
            best[person.id] = (person, identity, verdict)
    scored = list(best.values())
    scored.sort(key=lambda entry: _rank(entry[0], entry[2]))
    candidates = [_candidate(person, verdict) for person, _identity, verdict in scored]
    candidates = candidates[:EXPLAINED_CANDIDATES]
    result = MatchResult(person=None, candidates=candidates, model_version=model.version)
    accepted = [entry for entry in scored if entry[2].accepted]
    if not accepted:
        result.decision = "no candidate passes the rule"
        return result
    best_person, best_identity, best_verdict = accepted[0]
    for person, identity, verdict in accepted[1:]:
        if best_verdict.total - verdict.total >= _thresholds.ambiguity:
            break
        if not score.same_person(best_identity, identity):
            result.decision = f"ambiguous: {best_person.id} and {person.id} both fit and look like different people"
            return result
    result.person = best_person
    result.decision = f"matched: {best_verdict.rule}"
    return result


def _candidate(person: Person, verdict: score.Verdict) -> dict[str, Any]:
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


def _rank(person: Person, verdict: score.Verdict) -> tuple[Any, ...]:
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
