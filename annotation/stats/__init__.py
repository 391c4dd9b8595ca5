"""Judge-validation statistics: pure functions, DataFrames or arrays in, tidy DataFrames out.

One module per family, each citing its sources (see ``../shared/stats/METHODS.md`` for what
a judge-validation study must report):

* :mod:`annotation.stats.correlation`: Pearson (PLCC), Spearman (SRCC), Kendall tau-b with
  confidence intervals (Fisher z; cluster bootstrap over items), MAE, bias.
* :mod:`annotation.stats.comparison`: two dependent correlations (Williams' t, Steiger's
  Z, Zou's CI), paired bootstrap, Benjamini-Hochberg/Yekutieli.
* :mod:`annotation.stats.system`: system-level ranking agreement.
* :mod:`annotation.stats.agreement`: two-rater binary agreement (%, Cohen's kappa, Gwet's
  AC1, PABAK, specific agreements, confusion), Wilson intervals, exact McNemar.
* :mod:`annotation.stats.reliability`: Krippendorff's alpha (all levels), Fleiss' kappa,
  multi-rater % agreement and AC1, ICC(A,1) and ICC(A,k).
* :mod:`annotation.stats.alt_test`: the alternative annotator test (Calderon et al., 2025).
* :mod:`annotation.stats.pairwise`: a pairwise judge against the human preference
  (accuracy with unparsed = miss, kappa, ties merged, cluster bootstrap; position bias).
* :mod:`annotation.stats.rankings`: Bradley-Terry strengths with bootstrap intervals,
  Kendall's W with the ties correction.
"""
