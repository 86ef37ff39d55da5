"""Sessions' rosters: what changes sessions and their courses together (cancelling a
session's bookings, moving riders between sessions, backfilling sessions from courses)."""
