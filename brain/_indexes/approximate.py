"""Approximate vectors: an inverted-file faiss index above a measured size, and its rebuild."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# Below this many vectors the exact scan is cheap enough and an IVF index buys nothing
# (docs/lab/scale.md, "approximate vectors": flat and IVF cross over near 20k at 384 dims).
THRESHOLD = 20_000
# Lists probed per query, with nlist = 2·√n. MiniLM's vectors of 100k memories (bench/scale.py,
# 300 queries) against exact search: recall@10 0.969 at 24 lists, 0.985 at 48, 0.990 at 64,
# at 0.19 / 0.36 / 0.45 ms a query; synthetic vectors gave 0.99 at 24 from 20k to 1M
# (bench/vectors.py). 64 keeps ≥ 0.98 with room (docs/lab/scale.md, issue 15 at 100k).
NPROBE = 64
# k-means learns from at most this many vectors per list (faiss warns below 39).
TRAIN_PER_LIST = 40
FLAT, IVF = "flat", "ivf"
# Vectors are stored in half precision (faiss's fp16 scalar quantiser): half the disk and
# memory of float32, the same neighbours (recall@10 against float32 ≥ 0.999, and a faster
# scan: docs/lab/scale.md, "disk"). Indexes saved before in float32 are read as they are.


def kind(index: Any) -> str:
    """`ivf` for an inverted-file index, `flat` for the exact `IndexIDMap2` over all."""
    import faiss

    return IVF if isinstance(index, faiss.IndexIVF) else FLAT


def lists_for(count: int) -> int:
    """How many inverted lists for this many vectors: 2·√n, each with vectors enough to learn."""
    return max(1, min(int(2 * math.sqrt(count)), count // TRAIN_PER_LIST))


def wanted(index: Any) -> str:
    """The kind of index this many vectors should be in, with some slack against flapping."""
    count = int(index.ntotal)
    if kind(index) == IVF:
        if count < THRESHOLD // 2:
            return FLAT
        trained_for = int(index.nlist)
        # Lists trained for a quarter of today's vectors (or four times them) fit badly.
        return f"{IVF}-retrain" if not 0.5 <= lists_for(count) / trained_for <= 2 else IVF
    return IVF if count >= THRESHOLD else FLAT


def contents(index: Any) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """Every vector in the index with its faiss id (a copy: the index may change after)."""
    import faiss
    import numpy as np

    dim = int(index.d)
    if kind(index) == FLAT:
        count = int(index.ntotal)
        fids = faiss.vector_to_array(index.id_map).astype(np.int64)
        matrix = index.index.reconstruct_n(0, count) if count else np.zeros((0, dim), np.float32)
        return np.ascontiguousarray(matrix, dtype=np.float32), fids
    lists = index.invlists
    half = int(index.code_size) == 2 * dim  # fp16 codes; float32 in an index saved before
    rows, ids = [], []
    for number in range(int(index.nlist)):
        size = lists.list_size(number)
        if not size:
            continue
        ids.append(faiss.rev_swig_ptr(lists.get_ids(number), size).copy())
        codes = faiss.rev_swig_ptr(lists.get_codes(number), size * int(index.code_size)).copy()
        vectors = codes.view(np.float16 if half else np.float32).reshape(size, dim)
        rows.append(vectors.astype(np.float32))
    if not rows:
        return np.zeros((0, dim), np.float32), np.zeros(0, np.int64)
    return np.vstack(rows), np.concatenate(ids).astype(np.int64)


def difference(
    old: tuple[NDArray[np.float32], NDArray[np.int64]],
    new: tuple[NDArray[np.float32], NDArray[np.int64]],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float32]]:
    """What turns the contents `old` into `new`: ids to remove, and ids with their rows to
    (re)add (new ids and ids whose vector changed)."""
    import numpy as np

    (old_rows, old_ids), (new_rows, new_ids) = old, new
    gone = old_ids[~np.isin(old_ids, new_ids)]
    common, at_old, at_new = np.intersect1d(old_ids, new_ids, return_indices=True)
    moved = at_new[np.any(old_rows[at_old] != new_rows[at_new], axis=1)]
    fresh = np.flatnonzero(~np.isin(new_ids, common))
    take = np.concatenate([moved, fresh]).astype(np.int64)
    return gone, new_ids[take], np.ascontiguousarray(new_rows[take])


def ids_of(index: Any) -> set[int]:
    """The faiss ids in the index."""
    import faiss

    if kind(index) == FLAT:
        return set(faiss.vector_to_array(index.id_map).tolist())
    lists, found = index.invlists, set()
    for number in range(int(index.nlist)):
        size = lists.list_size(number)
        if size:
            found.update(faiss.rev_swig_ptr(lists.get_ids(number), size).tolist())
    return found


def build(matrix: NDArray[np.float32], fids: NDArray[np.int64], target: str) -> Any:
    """A new index of this kind holding these vectors; training reads a fixed sample."""
    import faiss
    import numpy as np

    dim = int(matrix.shape[1])
    if target == FLAT:
        flat = new_flat(dim)
        if len(fids):
            flat.add_with_ids(matrix, fids)
        return flat
    nlist = lists_for(len(fids))
    quantizer = faiss.IndexFlatIP(dim)
    index = faiss.IndexIVFScalarQuantizer(
        quantizer, dim, nlist, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT, False
    )  # not by residual: the codes are the vectors themselves, in half precision
    sample = min(len(fids), nlist * TRAIN_PER_LIST)
    # A fixed seed: the same vectors give the same lists, so tests and reruns agree.
    pick = np.random.default_rng(0).choice(len(fids), size=sample, replace=False)
    index.cp.seed = 1234
    index.cp.niter = 10
    index.train(np.ascontiguousarray(matrix[np.sort(pick)]))
    by_id(index)
    index.add_with_ids(matrix, fids)
    index.nprobe = NPROBE
    return index


def new_flat(dim: int) -> Any:
    """An empty exact index: every vector scanned, each kept in half precision."""
    import faiss

    sq = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    return faiss.IndexIDMap2(sq)


def by_id(index: Any) -> Any:
    """The index, able to hand back a vector by its id (neighbour context reads them): an IVF
    index keeps a hash table of id → list and offset, which add and remove keep up to date."""
    import faiss

    maps = faiss.DirectMap  # type: ignore[attr-defined]  # missing from faiss's stubs
    if kind(index) == IVF and index.direct_map.type == maps.NoMap:
        index.set_direct_map_type(maps.Hashtable)
    return index


def search_params(index: Any, selector: Any, allowed: int | None) -> Any:
    """Search parameters: a selector if given; an IVF index probes `NPROBE` lists, or all of
    them when the allowed ids are few (a filter to a small set must stay exact)."""
    import faiss

    if kind(index) == FLAT:
        if selector is None:
            return None
        params = faiss.SearchParameters()
        params.sel = selector
        return params
    params = faiss.SearchParametersIVF()
    if selector is not None:
        params.sel = selector
    few = allowed is not None and allowed * 4 < int(index.ntotal)
    params.nprobe = int(index.nlist) if few else min(NPROBE, int(index.nlist))
    return params
