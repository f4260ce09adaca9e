"""A saved model read as plain data and scored with numpy, without scikit-learn: the reader and checker of
a model file (``reader``, ``check``) and the predictors of every estimator qe saves (``estimators``,
``trees``, ``m5p_tree``, ``rank_vote``)."""
