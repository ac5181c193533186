"""The name a user probably meant: the one lookup behind every "did you mean" of a bad-name
message (init's --label, the config's keys, the features' columns)."""
from __future__ import annotations

import difflib
from typing import Optional, Sequence

TYPO_CUTOFF = 0.8  # difflib's ratio: 'occupaton' -> 'occupation' (0.95) yes, 'trip_seconds' -> 'trip_miles' (0.64) no


def closest(name: str, candidates: Sequence[str], cutoff: float = TYPO_CUTOFF) -> Optional[str]:
    """A candidate equal to ``name`` but for case, else difflib's closest at ``cutoff`` or better;
    None where there is none."""
    same = [c for c in candidates if c.lower() == name.lower()]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, list(candidates), 1, cutoff=cutoff)
    return close[0] if close else None


def did_you_mean(names: Sequence[str], candidates: Sequence[str]) -> str:
    """`` (did you mean 'occupation'?)`` for the names with a close candidate (``'a' -> 'b'`` each,
    for more than one name), else ''."""
    close = [(n, closest(n, candidates)) for n in names]
    hints = [f"{n!r} -> {c!r}" if len(names) > 1 else repr(c) for n, c in close if c]
    return f" (did you mean {', '.join(hints)}?)" if hints else ""
