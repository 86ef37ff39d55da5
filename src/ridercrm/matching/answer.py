"""Operations 3 and 4 as a request asks them: the answer, in the interface's shape.

The web layer decodes a match request into a :class:`MatchAsk` (its decoder decides
whether the caller may have an explanation: the ``explain`` scope, then the explain rate
limit) and makes one call, :func:`answer_match`, which finds the person
(:func:`~ridercrm.matching.service.find_match`) and answers the interface's body, with
the whole explanation for the audit record and only its disclosed part for the caller
(docs/decisions.md, "Operations 3 and 4 (matching)"). Nothing here knows HTTP.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from ridercrm.matching import score, service
from ridercrm.matching.disclosure import disclosed
from ridercrm.people.models import CONTACT

NOT_FOUND = "Match not found."


@dataclass(frozen=True)
class MatchAsk:
    """A match request: the validated details (operation 3's with ``assets``), whether
    only unconverted leads may answer (operation 4), whether to explain (already allowed
    and counted by the web layer's decoder), the audit id, and the thresholds
    (RIDERCRM_MATCH_*, ``service.thresholds_of``)."""

    details: Any
    leads_only: bool
    explain: bool
    audit_id: str
    thresholds: score.Thresholds = service.DEFAULT_THRESHOLDS


@dataclass(frozen=True)
class MatchAnswer:
    """The interface's body, and the whole explanation the audit record keeps."""

    body: dict[str, Any]
    explanation: dict[str, Any]


def answer_match(session: Session, ask: MatchAsk) -> MatchAnswer:
    """Find the person ``ask`` describes and answer in the interface's shape."""
    result = service.find_match(
        session, details=ask.details, leads_only=ask.leads_only, thresholds=ask.thresholds
    )
    person = result.person
    if person is None:
        body: dict[str, Any] = {"delivery": "false", "receipt": NOT_FOUND, "ID": ""}
    else:
        receipt = "Contact found." if person.kind == CONTACT else "Lead found."
        body = {"delivery": "true", "receipt": receipt, "ID": person.id}
    body["audit_ID"] = ask.audit_id
    if ask.explain:
        body["match"] = disclosed(result.explanation())
    return MatchAnswer(body, result.explanation())
