"""bench/late.py's score: each question piece's best match among a memory's pieces, weighed."""

import numpy as np
import pytest

from bench.late import late_scores


def _unit(rows: list[list[float]]) -> np.ndarray:
    a = np.array(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_a_memory_holding_the_rare_piece_scores_higher_when_pieces_are_weighed() -> None:
    question = (np.array([1, 2]), _unit([[1, 0, 0], [0, 1, 0]]))  # piece 1 common, 2 rare
    common = (np.array([1]), _unit([[1, 0, 0]]))  # matches only the common piece
    rare = (np.array([2]), _unit([[0, 1, 0]]))  # matches only the rare piece
    idf = {1: 0.1, 2: 3.0}
    plain_common, weighed_common = late_scores(question, common, idf)
    plain_rare, weighed_rare = late_scores(question, rare, idf)
    # unweighed, each matches one of the two pieces
    assert plain_common == pytest.approx(0.5) == plain_rare
    assert weighed_rare > 0.9 > 0.1 > weighed_common


def test_the_best_match_counts_not_the_mean_over_the_memory() -> None:
    question = (np.array([5]), _unit([[1, 1, 0]]))
    memory = (np.array([7, 8, 9]), _unit([[1, 1, 0], [0, 0, 1], [0, 0, 1]]))
    assert late_scores(question, memory, {})[0] == pytest.approx(1.0)
