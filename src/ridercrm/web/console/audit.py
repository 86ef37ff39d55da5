"""Console pages: audit."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
