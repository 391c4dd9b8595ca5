"""coded_agreement (labels read once, clusters as integer codes) gives the very row of
clustered_agreement, whatever integers name the clusters."""

import numpy as np
import pandas as pd

from annotation.stats.clustered import clustered_agreement, coded_agreement


def test_coded_agreement_is_clustered_agreement():
    rng = np.random.default_rng(3)
    n = 600
    labels = np.array(["yes", "no", "cant_tell", None], dtype=object)
    judge = labels[rng.integers(0, 4, n)]
    ref = labels[rng.integers(0, 3, n)]
    outputs = np.array([f"out{i:03d}" for i in rng.integers(0, 80, n)], dtype=object)
    expected = clustered_agreement(judge, ref, outputs, n_boot=200, seed=5)
    # clusters named by arbitrary integers (here: reversed sorted order of the ids)
    codes = 1000 - pd.factorize(outputs, sort=True)[0] * 7
    decided = np.array([v in ("yes", "no") for v in judge]) & np.array(
        [v in ("yes", "no") for v in ref])
    got = coded_agreement(judge == "yes", ref == "yes", decided, codes, n_boot=200, seed=5)
    pd.testing.assert_frame_equal(got, expected)
