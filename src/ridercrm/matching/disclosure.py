"""What a match explanation may tell the API client that asked (docs/decisions.md, "Operations 3 and 4 (matching)").

The audit record keeps the whole explanation: the ten best candidates the matcher
scored, each with its score and reasons. A client learns only about the person its query
matched, the answer it is given anyway; about candidates its query did not match it
learns nothing, not even that they exist, so a "Match not found." explains nothing at all.
"""

from __future__ import annotations

from typing import Any

NO_MATCH: dict[str, Any] = {"decision": "no match", "id": None, "candidates": []}


def disclosed(explanation: dict[str, Any]) -> dict[str, Any]:
    """The part of an explanation its caller may see: the matched candidate only."""
    found = explanation.get("id")
    if found is None:
        return dict(NO_MATCH, candidates=[])
    return {
        "decision": explanation.get("decision", ""),
        "id": found,
        "model_version": explanation.get("model_version"),
        "candidates": [
            candidate
            for candidate in explanation.get("candidates", [])
            if candidate.get("id") == found
        ],
    }
