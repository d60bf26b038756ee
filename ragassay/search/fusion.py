"""Rank fusion of several result lists."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

# The constant of reciprocal-rank fusion (Cormack et al. found 60 good across collections).
RRF_K = 60


def reciprocal_rank_fusion(rankings: Sequence[Sequence[Hashable]], k: int = RRF_K) -> list[tuple[Hashable, float]]:
    """Fuse ranked lists with reciprocal-rank fusion (Cormack et al., 2009).

    score(d) = sum over lists L containing d of 1 / (k + rank_L(d)), rank starting at 1.
    A document missing from a list gets nothing from it. Ties are broken by the order of first
    appearance (earlier list, then earlier rank), so the result is deterministic.

    Returns (item, fused score) pairs, best first.
    """
    if k < 1:
        raise ValueError(f"rrf k must be at least 1, got {k}")
    scores: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    first_seen = {item: position for position, item in enumerate(scores)}
    return sorted(scores.items(), key=lambda pair: (-pair[1], first_seen[pair[0]]))
