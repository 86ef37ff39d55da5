"""Operations 3 and 4 as a request asks them: who may have an explanation, and the answer.

The web layer decodes a match request into a :class:`MatchAsk` and makes one call,
:func:`answer_match`, which refuses an explanation the caller may not have (the
``explain`` scope, then the explain rate limit), finds the person
(:func:`~ridercrm.matching.service.find_match`) and answers the interface's body, with
the whole explanation for the audit record and only its disclosed part for the caller
(docs/decisions.md, "Operations 3 and 4 (matching)").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from ridercrm.audit.call import Caller
from ridercrm.keys import service as keys
from ridercrm.matching import score, service
from ridercrm.matching.disclosure import disclosed
from ridercrm.people.models import CONTACT
from ridercrm.ratelimit import KeyRateLimiter

NOT_FOUND = "Match not found."
EXPLAIN_SCOPE = "explain"


@dataclass
class MatchAsk:
    """A match request: the validated details (operation 3's with ``assets``), whether
    only unconverted leads may answer (operation 4), whether to explain, the audit id,
    who asks with the limiter of their explanations (None: no limit), and the app's
    thresholds (RIDERCRM_MATCH_*).

    ``explain_allowed`` notes that the explanation was allowed and counted: made once per
    request, the ask outlives a transaction that a deadlock makes run again, and such a
    retry does not count the explanation a second time
    (docs/decisions.md, "The house (issue 13)").
    """

    details: Any
    leads_only: bool
    explain: bool
    audit_id: str
    caller: Caller
    explain_limiter: KeyRateLimiter | None = None
    thresholds: score.Thresholds = service.DEFAULT_THRESHOLDS
    explain_allowed: bool = False


class ExplainRefused(Exception):
    """The caller may not have the explanation it asked for; nothing was looked up."""

    def __init__(self, status: int, reason: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.headers = headers or {}


@dataclass(frozen=True)
class MatchAnswer:
    """The interface's body, and the whole explanation the audit record keeps."""

    body: dict[str, Any]
    explanation: dict[str, Any]


def answer_match(session: Session, ask: MatchAsk) -> MatchAnswer:
    """Find the person ``ask`` describes and answer in the interface's shape."""
    if ask.explain and not ask.explain_allowed:
        _allow_explain(ask)
        ask.explain_allowed = True
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


def _allow_explain(ask: MatchAsk) -> None:
    """Refuse an explanation to a key without the explain scope, or over its explain limit
    (checked in that order: a key without the scope does not count against the limit)."""
    if not keys.allows(ask.caller.scopes, EXPLAIN_SCOPE):
        raise ExplainRefused(
            403, f'API key lacks scope {EXPLAIN_SCOPE!r}, which "explain": true needs'
        )
    limiter = ask.explain_limiter
    refusal = limiter.check(ask.caller.key_id) if limiter is not None else None
    if refusal is not None:
        raise ExplainRefused(429, refusal.reason, {"Retry-After": str(refusal.retry_after)})
