"""The parts that made ``judge-audit report`` cost (issue #18 item 1) give the numbers of the
code they replace: string membership against pandas' own ``isin``, the cached cluster
bootstrap weights against a fresh ``default_rng(seed)``, decision keys split in C against
``str.index``. No timing here (benchmarks/report_bench.py measures speed)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from annotation.results.checklist import SEP, _output_of
from annotation.stats import clustered
from annotation.stats.clustered import cluster_counts, cluster_weights, clustered_agreement
from annotation.stats.membership import isin, positions, take

VALUES = ["a", "b", None, "c", "é", "a"]


@pytest.mark.parametrize("candidates", [["a", "c"], {"b"}, frozenset(), ["x"], [None],
                                        pd.Index(["é", None]), ("a", "b", "c", "é"),
                                        {"a": 1}.keys()])
@pytest.mark.parametrize("dtype", ["str", object])
def test_isin_is_pandas_isin(candidates, dtype):
    values = pd.Series(VALUES, dtype=dtype)
    expected = values.isin(list(candidates)).to_numpy()
    assert isin(values, candidates).tolist() == expected.tolist()
    assert isin(pd.Index(values), candidates).tolist() == expected.tolist()


def test_isin_and_positions_on_text_in_several_chunks():
    values = pd.concat([pd.Series(["a", "b", None]), pd.Series(["c", "a"])],
                       ignore_index=True)
    assert pa.array(values).num_chunks == 2
    for candidates in (["a", None], ["c"], []):
        assert isin(values, candidates).tolist() == values.isin(candidates).tolist()
    index = pd.Index(["c", "a"])
    assert positions(values, index).tolist() == index.get_indexer(values).tolist()


@pytest.mark.parametrize("rows", [[4, 0, 3, 1], [0, 1, 2, 3, 4], [], [3, 3, 0], [2]])
def test_take_is_dataframe_take_on_chunked_text(rows):
    chunked = pd.concat([pd.Series(["x", "y", "z"]), pd.Series(["u", None])],
                        ignore_index=True).set_axis([9, 8, 7, 6, 5])
    assert pa.array(chunked).num_chunks == 2
    frame = pd.DataFrame({"text": chunked, "n": [1, 2, 3, 4, 5],
                          "objects": pd.Series(["p", "q", None, "r", "s"], dtype=object),
                          "category": chunked.astype("category")}, index=[9, 8, 7, 6, 5])
    at = np.array(rows, dtype=int)
    pd.testing.assert_frame_equal(take(frame, at), frame.take(at))


def test_isin_other_data_goes_to_pandas():
    assert isin(pd.Index([1, 2, 3]), [2, 5]).tolist() == [False, True, False]
    assert isin(np.array(["a", 1], dtype=object), ["a"]).tolist() == [True, False]
    assert isin(pd.Series([], dtype="str"), ["a"]).tolist() == []


@pytest.mark.parametrize(("n_clusters", "n_boot"), [(10, 7), (1500, 3000), (300_000, 20)])
def test_cluster_weights_are_a_fresh_generators_draws(n_clusters, n_boot):
    clustered._CACHE.clear()
    expected = list(cluster_counts(np.random.default_rng(3), n_clusters, n_boot))
    for _ in range(2):  # drawn, then from the cache
        got = list(cluster_weights(3, n_clusters, n_boot))
        assert len(got) == len(expected)
        cells = np.random.default_rng(0).random((n_clusters, 4))
        for w, e in zip(got, expected, strict=True):
            assert np.array_equal(w, e)
            assert np.array_equal(w @ cells, e @ cells)  # bit for bit
    assert (3, n_clusters, n_boot) in clustered._CACHE


def test_cluster_weights_too_many_for_the_cache_are_drawn_block_by_block(monkeypatch):
    """100,000 outputs x 1,000 resamples do not fit the cache: the blocks are streamed (one
    held at a time), the same numbers as a fresh generator's."""
    monkeypatch.setattr(clustered, "_CACHE_BYTES", 1000)
    clustered._CACHE.clear()
    expected = list(cluster_counts(np.random.default_rng(3), 1500, 3000))
    got = cluster_weights(3, 1500, 3000)
    cells = np.random.default_rng(0).random((1500, 4))
    for e in expected:
        w = next(got)
        assert np.array_equal(w, e) and np.array_equal(w @ cells, e @ cells)
    assert next(got, None) is None
    assert not clustered._CACHE
    monkeypatch.undo()
    rng = np.random.default_rng(2)
    right_a, right_b = rng.random(3000) < 0.7, rng.random(3000) < 0.6
    outputs = rng.integers(0, 1500, 3000)
    clustered._CACHE.clear()
    cached = clustered.clustered_mcnemar(right_a, right_b, outputs, n_boot=300, seed=4)
    monkeypatch.setattr(clustered, "_CACHE_BYTES", 1000)
    clustered._CACHE.clear()
    streamed = clustered.clustered_mcnemar(right_a, right_b, outputs, n_boot=300, seed=4)
    pd.testing.assert_frame_equal(cached, streamed)


@pytest.mark.parametrize("cache_bytes", [1000, 64 << 20])  # streamed, cached
def test_cluster_bootstrap_of_narrow_integer_cells_does_not_wrap(monkeypatch, cache_bytes):
    """The weights are uint8: a product with uint8 cells stayed uint8 and wrapped (300
    clusters of one each summed to 44); the cells are made float64 first, so any integer
    cells give what their float64 values give (found in review, issue #18)."""
    monkeypatch.setattr(clustered, "_CACHE_BYTES", cache_bytes)
    clustered._CACHE.clear()
    cells = np.ones((300, 2), dtype=np.uint8)

    def totals(counts: np.ndarray) -> dict[str, np.ndarray]:
        return {"total": counts[:, 0] + counts[:, 1]}

    args = dict(point={"total": 600.0}, n_boot=200, seed=5, conf=0.95)
    narrow = clustered.cluster_bootstrap(cells, totals, **args)
    clustered._CACHE.clear()
    wide = clustered.cluster_bootstrap(cells.astype(np.float64), totals, **args)
    assert narrow == wide == ({"total": (600.0, 600.0)}, 200)


@pytest.mark.parametrize("labels", [np.array([7, 3, 7, -2, 3, 9]),
                                    np.array([7, 3, 7, 2, 3, 9], dtype=np.uint32)])
def test_integer_clusters_get_the_codes_of_their_objects(labels):
    codes, n = clustered._codes(labels, len(labels))
    objects, n_objects = clustered._codes(list(labels), len(labels))
    assert codes.tolist() == objects.tolist() == [0, 1, 0, 2, 1, 3] and n == n_objects == 4


def test_cluster_weights_without_a_seed_are_not_cached():
    clustered._CACHE.clear()
    assert sum(len(w) for w in cluster_weights(None, 50, 30)) == 30
    assert not clustered._CACHE


def test_clustered_agreement_same_with_and_without_the_cache():
    rng = np.random.default_rng(1)
    judge = rng.choice(["yes", "no"], 2000)
    ref = np.where(rng.random(2000) < 0.8, judge, rng.choice(["yes", "no"], 2000))
    clusters = np.repeat(np.arange(200), 10)
    clustered._CACHE.clear()
    first = clustered_agreement(judge, ref, clusters, n_boot=300, seed=5)
    again = clustered_agreement(judge, ref, clusters, n_boot=300, seed=5)
    pd.testing.assert_frame_equal(first, again)
    clustered._CACHE.clear()
    pd.testing.assert_frame_equal(first, clustered_agreement(judge, ref, clusters, n_boot=300,
                                                             seed=5))


def test_output_of_is_the_part_before_the_separator():
    keys = [f"t{i}/g{i % 3}{SEP}t{i}.q{i % 5}" for i in range(50)] + [f"é{SEP}x{SEP}y"]
    expected = [k[:k.index(SEP)] for k in keys]
    for given in (keys, pd.Index(keys), pd.Index(keys, dtype=object), pd.Series(keys)):
        got = _output_of(given)
        assert got.dtype == object and got.tolist() == expected
    assert _output_of(pd.Index([], dtype="str")).tolist() == []
    with pytest.raises(ValueError):
        _output_of(pd.Index(["no separator"]))


def _query_db(tmp_path):
    # SQLite-only by nature: a column of mixed types (SQLite's dynamic typing) read against
    # pandas' own read_sql_query on a plain sqlite3 connection, not a project
    import sqlite3

    conn = sqlite3.connect(tmp_path / "q.db")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT, n INTEGER, x REAL, m, z TEXT)")
    rng = np.random.default_rng(0)
    rows = []
    for i in range(1000):
        # s: strings, missing only in rows 300-399 (one whole chunk of 100 is missing);
        # n: integers, missing in rows 500-599 (int64 in some chunks, float64 in one);
        # m: mixed types; z: always missing
        rows.append((i, None if 300 <= i < 400 else f"s{i % 7}é",
                     None if 500 <= i < 600 else int(rng.integers(0, 10)),
                     float(rng.random()) if i % 3 else None,
                     [1, "a", 2.5, None][i % 4] if i >= 800 else None, None))
    conn.executemany("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", rows)
    conn.commit()
    return conn


@pytest.mark.parametrize("chunk", [1, 7, 100, 999, 1000, 1001, 5000])
@pytest.mark.parametrize("where", ["", " WHERE id < 300", " WHERE id >= 400 AND id < 500",
                                   " WHERE id < 0"])
def test_read_frame_is_read_sql_query(tmp_path, chunk, where):
    from annotation.store.frames import read_frame

    conn = _query_db(tmp_path)
    sql = f"SELECT s, n, x, m, z, id FROM t{where} ORDER BY id"
    expected = pd.read_sql_query(sql, conn)
    got = read_frame(conn, sql, chunk=chunk)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert list(got.dtypes) == list(expected.dtypes)
    params = read_frame(conn, "SELECT s, n FROM t WHERE id >= ? ORDER BY id", [250], chunk=chunk)
    pd.testing.assert_frame_equal(params, pd.read_sql_query(
        "SELECT s, n FROM t WHERE id >= ? ORDER BY id", conn, params=[250]))


def test_decision_keys_share_one_string_per_decision():
    """Issue #18 (peak memory): every judge answers the same decisions, so the keys of
    ``_keyed`` share one Python string per distinct key instead of one per row; their
    values are output_id + SEP + question_id as before."""
    from annotation.results.checklist import _keyed

    frame = pd.DataFrame({"output_id": pd.Series(["o1", "o2", "o1", "o2", "o1"], dtype="str"),
                          "question_id": pd.Series(["q", "q", "q", "q", "r"], dtype="str")})
    keys = _keyed(frame).key
    assert keys.dtype == object
    assert keys.tolist() == [o + SEP + q for o, q in zip(frame.output_id, frame.question_id)]
    assert len({id(k) for k in keys}) == keys.nunique() == 3


def test_yes_codes_equal_exactly_when_labels_are_equal():
    """``checklist_comparisons.csv`` compares answers as int8 codes; a pair is right
    exactly when the labels are equal and the reference is not missing."""
    from annotation.results.checklist import _yes_codes

    labels = ["yes", "no", None, "cant_tell", "yes"]
    for dtype in ("str", object):
        codes = _yes_codes(pd.Series(labels, dtype=dtype))
        for answer, code_a in zip(("yes", "no"), _yes_codes(pd.Series(["yes", "no"]))):
            expected = [label is not None and answer == label for label in labels]
            assert (codes == code_a).tolist() == expected
