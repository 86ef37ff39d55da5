"""Bodies of the duplicates admin API."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from ridercrm.duplicates.merge import MAX_MEMBERS, MIN_MEMBERS


class MergeRequest(BaseModel):
    """Merge 2 to 20 people into one survivor."""

    model_config = ConfigDict(extra="forbid")

    people: list[str] = Field(
        min_length=MIN_MEMBERS,
        max_length=MAX_MEMBERS,
        description="Ids of the people to merge (old ids stand for their survivor).",
    )
    survivor: str | None = Field(
        None,
        description="The record that remains; default: the contact, then the oldest, "
        "then the one with most courses.",
    )
    fields: dict[str, str] = Field(
        default_factory=dict,
        description="Person field -> id of the member whose value the survivor takes.",
    )
    dry_run: StrictBool = Field(False, description="Only show what the merge would do.")
    force: StrictBool = Field(
        False,
        description="Merge even people the matcher scores as different (else 409 naming them).",
    )


class MergeResult(BaseModel):
    """What a merge did (or, with dry_run, would do)."""

    merge_id: int | None = Field(description="Undo with POST .../merge/{merge_id}/undo.")
    dry_run: bool
    survivor: str
    merged: list[str]
    fields: dict[str, Any] = Field(description="The survivor's fields after the merge.")
    sources: dict[str, str] = Field(description="Field -> the member its value comes from.")
    changed: list[str] = Field(description="The survivor's fields the merge changes.")
    moved: dict[str, list[str]] = Field(description="Related rows re-pointed to the survivor.")


class UndoRequest(BaseModel):
    """No fields: an empty body, or {}, undoes the merge named in the path."""

    model_config = ConfigDict(extra="forbid")


class UndoResult(BaseModel):
    """A merge undone: the members are separate records again."""

    merge_id: int
    survivor: str
    restored: list[str]
    moved_back: dict[str, list[str]]


class ClusterSummary(BaseModel):
    """A cluster of likely duplicates."""

    id: int
    people: list[str]
    score: float = Field(description="The weakest pair's total match weight (bits).")
    status: str = Field(description="open, skipped, merged or dismissed.")
    merge_id: int | None
    created_at: str


class ClusterList(BaseModel):
    """A page of clusters, best score first."""

    clusters: list[ClusterSummary]
    next_before: int | None = Field(description="Ask before=this for the next page; None: no more.")


class ClusterDetail(ClusterSummary):
    """A cluster side by side."""

    records: list[dict[str, Any]] = Field(description="Each person's stored fields.")
    differing: list[str] = Field(description="The fields whose values differ.")
    pairs: list[dict[str, Any]] = Field(description="Each pair's score, levels and weights.")


class DecideRequest(BaseModel):
    """An operator's decision on a cluster."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["merge", "dismiss", "skip"]
    survivor: str | None = None
    fields: dict[str, str] = Field(default_factory=dict)
    dry_run: StrictBool = False
    force: StrictBool = Field(
        False, description="merge: even people the matcher now scores as different."
    )


class DecideResult(BaseModel):
    """What the decision did; a merge adds the fields of a merge's result."""

    model_config = ConfigDict(extra="allow")

    cluster: int
    decision: str
    dry_run: bool
    status: str


MERGE_EXAMPLE: dict[str, Any] = {
    "people": ["003000000000001AAA", "003000000000002AAA"],
    "survivor": "003000000000001AAA",
    "fields": {"email": "003000000000002AAA"},
    "dry_run": True,
}
