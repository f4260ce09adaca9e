"""numpy predictors for every estimator qe saves, built from checked arrays (:mod:`qe.predictors.reader`).

Each builder reads its object's attributes through :class:`qe.predictors.check.PlainObject` (dtype, shape
against the other arrays and the number of input features, ranges, finiteness), so whatever it
returns can only compute; an estimator class without a builder is refused. Predictions equal
scikit-learn's up to floating-point summation order (``tests/test_plainmodel.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from qe.predictors.check import F8, I4, BadModel, PlainObject, check_array, check_object
from qe.predictors.rank_vote import rank_average
from qe.predictors.trees import Forest, added_in_order, hgb_tree, m5p_tree, sklearn_tree

Predict = Callable[[np.ndarray], np.ndarray]
Builder = Callable[[PlainObject, int], Predict]

BLOCK = 4 << 20  # values in one block of a pairwise computation (32 MB of float64)


def predictor(obj: object, n_features: int) -> Predict:
    """A numpy function ``X (rows, n_features) -> predictions`` for a fitted estimator of the file."""
    if not isinstance(obj, PlainObject):
        raise BadModel(f"the estimator is a {type(obj).__name__}, not a fitted model")
    build = PREDICTORS.get(obj.cls)
    if build is None:
        raise BadModel(f"qe does not predict with a {obj.name}")
    predict = build(obj, n_features)
    obj.done()
    return predict


def _check_finite(X: np.ndarray, *, allow_nan: bool = False) -> np.ndarray:
    """``X``, or the ValueError scikit-learn's input check raises for missing or infinite values."""
    if not np.isfinite(X).all():
        if np.isinf(X).any():
            raise ValueError("Input X contains infinity or a value too large for dtype('float64').")
        if not allow_nan:
            raise ValueError("Input X contains NaN.")
    return X


def _block_rows(width: int) -> int:
    """Rows per block of a pairwise computation needing ``width`` values per row (:data:`BLOCK` in all)."""
    return max(1, BLOCK // max(1, width))


def _squared_differences(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances summed from the differences (as libsvm and scipy's cdist do)."""
    out = np.empty((X.shape[0], Y.shape[0]))
    step = _block_rows(Y.size)
    for begin in range(0, X.shape[0], step):
        difference = X[begin : begin + step, None, :] - Y[None, :, :]
        out[begin : begin + step] = np.einsum("ijk,ijk->ij", difference, difference)
    return out


def _absolute_differences(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Manhattan distances (scipy's cdist ``cityblock``, which scikit-learn's laplacian kernel uses)."""
    out = np.empty((X.shape[0], Y.shape[0]))
    step = _block_rows(Y.size)
    for begin in range(0, X.shape[0], step):
        out[begin : begin + step] = np.abs(X[begin : begin + step, None, :] - Y[None, :, :]).sum(axis=2)
    return out


def _in_blocks(predict: Predict, width: int) -> Predict:
    """``predict`` on blocks of rows that each need about :data:`BLOCK` values (``width`` per row), so
    that a kernel matrix never takes more memory than a block and a SIGTERM is handled between
    blocks, not after one long computation."""

    def blocked(X: np.ndarray) -> np.ndarray:
        step = _block_rows(width)
        if X.shape[0] <= step:
            return predict(X)
        return np.concatenate([predict(X[begin : begin + step]) for begin in range(0, X.shape[0], step)])

    return blocked


def _expanded_distances(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Squared distances as scikit-learn's ``euclidean_distances`` computes them (x.x - 2 x.y + y.y)."""
    distances = -2.0 * (X @ Y.T)
    distances += np.einsum("ij,ij->i", X, X)[:, None]
    distances += np.einsum("ij,ij->i", Y, Y)[None, :]
    return np.maximum(distances, 0.0, out=distances)


# ---------------------------------------------------------------------- pipelines and scaling


def _pipeline(obj: PlainObject, n: int) -> Predict:
    steps = obj.items("steps")
    if not steps or obj.raw("transform_input") is not None:
        raise BadModel("a Pipeline without steps or with transformed inputs")
    estimators = []
    for step in steps:
        if not (isinstance(step, list | tuple) and len(step) == 2 and isinstance(step[0], str)):
            raise BadModel("a Pipeline step that is not a name and an estimator")
        estimators.append(step[1])
    transforms = [_transformer(step, n) for step in estimators[:-1]]
    final = predictor(estimators[-1], n)

    def predict(X: np.ndarray) -> np.ndarray:
        for transform in transforms:
            X = transform(X)
        return final(X)

    return predict


def _transformer(step: object, n: int) -> Callable[[np.ndarray], np.ndarray]:
    if step is None or step == "passthrough":
        return lambda X: X
    obj = check_object(step, "a Pipeline step", ["sklearn.preprocessing._data.StandardScaler"])
    obj.features("n_features_in_", n)
    mean = obj.array("mean_", F8, (n,), finite=True) if obj.flag("with_mean") else None
    scale = obj.array("scale_", F8, (n,), finite=True) if obj.flag("with_std") else None
    if scale is not None and (scale <= 0).any():
        raise BadModel("StandardScaler.scale_ holds a value that is not positive")
    obj.inert("mean_", "scale_", "var_", "n_samples_seen_")
    obj.done()

    def standardize(X: np.ndarray) -> np.ndarray:
        _check_finite(X, allow_nan=True)
        if mean is not None:
            X = X - mean
        if scale is not None:
            X = X / scale
        return X

    return standardize


# ---------------------------------------------------------------------- kernels and linear models


def _svr(obj: PlainObject, n: int) -> Predict:
    """libsvm's decision value: sum of dual coefficients times kernel values, plus the intercept."""
    if obj.flag("_sparse"):
        raise BadModel("a sparse SVR")
    kernel = obj.choice("kernel", ("rbf", "linear", "poly", "sigmoid"))
    obj.features("n_features_in_", n)
    vectors = obj.array("support_vectors_", F8, (None, n), finite=True)
    k = len(vectors)
    if k == 0:
        raise BadModel("an SVR without support vectors")
    fitted = obj.items("shape_fit_", 2)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in fitted) or fitted[1] != n:
        raise BadModel("SVR.shape_fit_ is not the training rows and features")
    support = obj.array("support_", I4, (k,))
    if ((support < 0) | (support >= fitted[0])).any():
        raise BadModel("SVR.support_ names a training row outside the training set")
    if obj.array("_n_support", I4, (2,)).tolist() != [k, k]:
        raise BadModel("SVR._n_support does not count its support vectors")
    coef = obj.array("_dual_coef_", F8, (1, k), finite=True)[0]
    intercept = float(obj.array("_intercept_", F8, (1,), finite=True)[0])
    obj.array("dual_coef_", F8, (1, k), finite=True)
    obj.array("intercept_", F8, (1,), finite=True)
    for key in ("_probA", "_probB"):
        obj.array(key, F8, (0,))
    gamma, coef0 = obj.number("_gamma", 0.0), obj.number("coef0")
    degree = obj.integer("degree", 0)
    obj.inert("_num_iter")
    if kernel == "rbf":

        def gram(X: np.ndarray) -> np.ndarray:
            return np.exp(-gamma * _squared_differences(X, vectors))
    elif kernel == "linear":

        def gram(X: np.ndarray) -> np.ndarray:
            return X @ vectors.T
    elif kernel == "poly":

        def gram(X: np.ndarray) -> np.ndarray:
            return (gamma * (X @ vectors.T) + coef0) ** degree
    else:

        def gram(X: np.ndarray) -> np.ndarray:
            return np.tanh(gamma * (X @ vectors.T) + coef0)

    return _in_blocks(lambda X: gram(_check_finite(X)) @ coef + intercept, vectors.size)


def _intercept(obj: PlainObject) -> float:
    """A linear model's intercept: a number, or an array of one."""
    value = obj.raw("intercept_")
    if isinstance(value, np.ndarray) and value.shape != ():
        return float(check_array(value, f"{obj.name}.intercept_", F8, (1,), finite=True)[0])
    return obj.number("intercept_")


def _linear(obj: PlainObject, n: int) -> Predict:
    """``X @ coef_ + intercept_`` (RidgeCV, LinearSVR)."""
    obj.features("n_features_in_", n)
    coef = obj.array("coef_", F8, (n,), finite=True)
    offset = _intercept(obj)
    obj.inert("alphas", "alpha_", "best_score_", "cv_results_", "n_iter_")
    return lambda X: _check_finite(X) @ coef + offset


def _dummy(obj: PlainObject, n: int) -> Predict:
    constant = float(obj.array("constant_", F8, (1, 1), finite=True)[0, 0])
    obj.integer("n_outputs_", 1, 1)
    obj.inert("_strategy", "constant")
    return lambda X: np.full(X.shape[0], constant)


# kernel name -> (uses gamma, function of (X, Y, gamma, degree, coef0)), as scikit-learn's pairwise_kernels
KERNELS: dict[str, Callable[[np.ndarray, np.ndarray, float, float, float], np.ndarray]] = {
    "linear": lambda X, Y, g, d, c: X @ Y.T,
    "poly": lambda X, Y, g, d, c: (g * (X @ Y.T) + c) ** d,
    "polynomial": lambda X, Y, g, d, c: (g * (X @ Y.T) + c) ** d,
    "sigmoid": lambda X, Y, g, d, c: np.tanh(g * (X @ Y.T) + c),
    "rbf": lambda X, Y, g, d, c: np.exp(-g * _expanded_distances(X, Y)),
    "laplacian": lambda X, Y, g, d, c: np.exp(-g * _absolute_differences(X, Y)),
    "cosine": lambda X, Y, g, d, c: _unit_rows(X) @ _unit_rows(Y).T,
}


def _unit_rows(X: np.ndarray) -> np.ndarray:
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    norms[norms == 0.0] = 1.0
    return X / norms[:, None]


def _kernel_ridge(obj: PlainObject, n: int) -> Predict:
    kernel = obj.choice("kernel", KERNELS)
    if obj.raw("kernel_params") is not None:
        raise BadModel("a KernelRidge with kernel parameters")
    obj.features("n_features_in_", n)
    rows = obj.array("X_fit_", F8, (None, n), finite=True)
    coef = obj.array("dual_coef_", F8, (len(rows),), finite=True)
    gamma = 1.0 / n if obj.raw("gamma") is None else obj.number("gamma")
    degree, coef0 = obj.number("degree", 0.0), obj.number("coef0")
    obj.inert("alpha")
    function = KERNELS[kernel]
    return _in_blocks(lambda X: function(_check_finite(X), rows, gamma, degree, coef0) @ coef, rows.size)


def _nystroem_svr(obj: PlainObject, n: int) -> Predict:
    """Nyström map (RBF kernel against the landmarks, times the normalisation) then the linear SVR."""
    obj.features("n_features_in_", n)
    landmarks = obj.obj("map_", "sklearn.kernel_approximation.Nystroem")
    landmarks.choice("kernel", ("rbf",))
    if landmarks.raw("kernel_params") is not None:
        raise BadModel("a Nystroem map with kernel parameters")
    landmarks.features("n_features_in_", n)
    components = landmarks.array("components_", F8, (None, n), finite=True)
    k = len(components)
    normalization = landmarks.array("normalization_", F8, (k, k), finite=True)
    gamma = landmarks.number("gamma", 0.0)
    landmarks.inert("component_indices_")
    landmarks.done()
    linear = predictor(obj.obj("svr_", "sklearn.svm._classes.LinearSVR"), k)
    offset = obj.number("offset_")
    obj.number("gamma_", 0.0)

    def predict(X: np.ndarray) -> np.ndarray:
        # the expanded x.x - 2 x.y + y.y of scikit-learn's euclidean_distances, which Nystroem uses
        kernel = np.exp(-gamma * _expanded_distances(_check_finite(X), components))
        return linear(kernel @ normalization.T) + offset

    return predict


# ---------------------------------------------------------------------- Gaussian processes


def _kernel(obj: object, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A fitted scikit-learn kernel ``k(X, Y)`` for ``X`` other than the training rows ``Y``."""
    module = "sklearn.gaussian_process.kernels."
    kernel = check_object(obj, "a Gaussian process kernel", [module + k for k in GP_KERNELS])
    made = GP_KERNELS[kernel.name](kernel, n)
    kernel.done()
    return made


def _combined(kernel: PlainObject, n: int, combine: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    first, second = _kernel(kernel.raw("k1"), n), _kernel(kernel.raw("k2"), n)
    return lambda X, Y: combine(first(X, Y), second(X, Y))


def _rbf(kernel: PlainObject, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    raw = kernel.raw("length_scale")
    if isinstance(raw, np.ndarray) and raw.shape != ():
        scale = check_array(raw, "RBF.length_scale", F8, (n,), finite=True)
    else:
        scale = kernel.number("length_scale")
    if np.any(np.asarray(scale) <= 0):
        raise BadModel("RBF.length_scale is not positive")
    return lambda X, Y: np.exp(-0.5 * _squared_differences(X / scale, Y / scale))


def _constant(kernel: PlainObject, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    value = kernel.number("constant_value")
    return lambda X, Y: np.full((X.shape[0], Y.shape[0]), value)


def _white(kernel: PlainObject, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    kernel.number("noise_level", 0.0)
    return lambda X, Y: np.zeros((X.shape[0], Y.shape[0]))  # noise only on the training rows themselves


def _dot(kernel: PlainObject, n: int) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    sigma = kernel.number("sigma_0")
    return lambda X, Y: X @ Y.T + sigma**2


GP_KERNELS = {
    "Sum": lambda kernel, n: _combined(kernel, n, np.add),
    "Product": lambda kernel, n: _combined(kernel, n, np.multiply),
    "RBF": _rbf,
    "ConstantKernel": _constant,
    "WhiteKernel": _white,
    "DotProduct": _dot,
}


def _scalar(obj: PlainObject, key: str) -> float:
    """A finite number stored as a number or as a 0-d array."""
    value = obj.raw(key)
    if isinstance(value, np.ndarray):
        return float(check_array(value, f"{obj.name}.{key}", F8, (), finite=True)[()])
    return obj.number(key)


def _gaussian_process(obj: PlainObject, n: int) -> Predict:
    """The posterior mean: kernel against the training rows times ``alpha_``, un-normalized."""
    obj.features("n_features_in_", n)
    rows = obj.array("X_train_", F8, (None, n), finite=True)
    alpha = obj.array("alpha_", F8, (len(rows),), finite=True)
    kernel = _kernel(obj.raw("kernel_"), n)
    mean, std = _scalar(obj, "_y_train_mean"), _scalar(obj, "_y_train_std")
    obj.array("y_train_", F8, (len(rows),))
    obj.array("L_", F8, (len(rows), len(rows)))
    obj.inert("kernel", "log_marginal_likelihood_value_", "_rng", "alpha")
    return _in_blocks(lambda X: std * (kernel(_check_finite(X), rows) @ alpha) + mean, rows.size)


def _gp_regressor(obj: PlainObject, n: int) -> Predict:
    obj.features("n_features_in_", n)
    gp = predictor(obj.obj("gp_", "sklearn.gaussian_process._gpr.GaussianProcessRegressor"), n)
    obj.inert("kernel_")  # the same kernel as gp_.kernel_, which predicts
    return gp


# ---------------------------------------------------------------------- trees


def _forest(tree_class: str) -> Builder:
    def build(obj: PlainObject, n: int) -> Predict:
        """The mean of the trees' leaf values; rows are compared as float32, as scikit-learn does."""
        obj.features("n_features_in_", n)
        obj.integer("n_outputs_", 1, 1)
        trees = []
        for item in obj.items("estimators_"):
            estimator = check_object(item, f"a tree of {obj.name}", [tree_class])
            estimator.features("n_features_in_", n)
            estimator.integer("n_outputs_", 1, 1)
            trees.append(sklearn_tree(estimator.obj("tree_", "sklearn.tree._tree.Tree"), n))
            estimator.done()
        if not trees:
            raise BadModel(f"a {obj.name} without trees")
        obj.inert("estimator", "estimator_", "oob_prediction_", "oob_score_", "_sample_weight")

        forest = Forest.of(trees)

        def predict(X: np.ndarray) -> np.ndarray:
            narrow = _check_finite(X, allow_nan=True).astype(np.float32)
            return added_in_order(np.zeros(X.shape[0]), forest.leaf_values(narrow)) / len(trees)

        return predict

    return build


LINKS = {  # histogram gradient boosting loss -> (its link, the inverse link applied to the raw sum)
    "sklearn._loss.loss.HalfSquaredError": ("sklearn._loss.link.IdentityLink", None),
    "sklearn._loss.loss.AbsoluteError": ("sklearn._loss.link.IdentityLink", None),
    "sklearn._loss.loss.PinballLoss": ("sklearn._loss.link.IdentityLink", None),
    "sklearn._loss.loss.HalfPoissonLoss": ("sklearn._loss.link.LogLink", np.exp),
}


def _hist_gradient_boosting(obj: PlainObject, n: int) -> Predict:
    """The baseline plus every tree's leaf value, added tree by tree, through the loss's inverse link."""
    loss = obj.obj("_loss", *LINKS)
    link, inverse = LINKS[loss.cls]
    loss.obj("link", link)
    loss.inert("closs", "interval_y_true", "interval_y_pred", "link")
    loss.done()
    for key in ("_preprocessor", "is_categorical_"):
        if obj.raw(key) is not None:
            raise BadModel("gradient boosting with categorical features")
    obj.integer("n_trees_per_iteration_", 1, 1)
    obj.features("n_features_in_", n)
    obj.features("_n_features", n)
    mapper = obj.obj("_bin_mapper", "sklearn.ensemble._hist_gradient_boosting.binning._BinMapper")
    if mapper.array("is_categorical_", np.dtype("u1"), (n,)).any():
        raise BadModel("gradient boosting with categorical features")
    mapper.inert("bin_thresholds_", "n_bins_non_missing_", "known_categories", "is_categorical")
    mapper.done()
    trees = []
    for iteration in obj.items("_predictors"):
        if not isinstance(iteration, list) or len(iteration) != 1:
            raise BadModel("gradient boosting with other than one tree per iteration")
        kind = "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor"
        trees.append(hgb_tree(check_object(iteration[0], "a gradient-boosting tree", [kind]), n))
    baseline = float(obj.array("_baseline_prediction", F8, (1, 1), finite=True)[0, 0])
    obj.inert("_feature_subsample_rng", "train_score_", "validation_score_", "_random_seed")

    forest = Forest.of(trees) if trees else None

    def predict(X: np.ndarray) -> np.ndarray:
        raw = np.full(X.shape[0], baseline)
        X = _check_finite(X, allow_nan=True)
        if forest is not None:
            raw = added_in_order(raw, forest.leaf_values(X))
        return raw if inverse is None else inverse(raw)

    return predict


def _m5p(obj: PlainObject, n: int) -> Predict:
    """The linear model of the leaf each row reaches (missing values: the training means)."""
    obj.features("n_features_in_", n)
    tree, coef, intercept = m5p_tree(obj.raw("tree_"), "M5P.tree_", n)
    fill = obj.array("fill_values_", F8, (n,), finite=True)
    obj.inert("n_models_", "global_sd_")

    def predict(X: np.ndarray) -> np.ndarray:
        X = np.where(np.isnan(_check_finite(X, allow_nan=True)), fill[None, :], X)
        leaf = tree.leaves(X)
        return np.einsum("ij,ij->i", X, coef[leaf]) + intercept[leaf]

    return predict


# ---------------------------------------------------------------------- ensembles


def _members(obj: PlainObject, n: int) -> list[Predict]:
    members = [predictor(member, n) for member in obj.items("estimators_")]
    if not members:
        raise BadModel(f"a {obj.name} without members")
    obj.inert("estimators")  # the unfitted templates
    return members


def _averaging(obj: PlainObject, n: int) -> Predict:
    combine = obj.choice("combine", ("mean", "rank"))
    obj.features("n_features_in_", n)
    members = _members(obj, n)
    weights = obj.array("weights_", F8, (len(members),), finite=True)
    if (weights < 0).any():
        raise BadModel("AveragingRegressor.weights_ holds a negative weight")

    def predict(X: np.ndarray) -> np.ndarray:
        predictions = np.column_stack([member(X) for member in members])
        if combine == "mean":
            return predictions @ weights
        return rank_average(predictions, weights)  # the learner's own numpy code

    return predict


def _stacked(obj: PlainObject, n: int) -> Predict:
    obj.features("n_features_in_", n)
    members = _members(obj, n)
    coef = obj.array("coef_", F8, (len(members),), finite=True)
    intercept = obj.number("intercept_")
    return lambda X: np.column_stack([member(X) for member in members]) @ coef + intercept


def _aux_stack(obj: PlainObject, n: int) -> Predict:
    """Aux targets predicted from the features, then the final estimators' mean from both."""
    obj.features("n_features_in_", n)
    n_aux = obj.integer("n_aux_", 0)
    aux_models = [predictor(model, n) for model in obj.items("aux_models_", n_aux)]
    mean = obj.array("aux_mean_", F8, (n_aux,), finite=True)
    scale = obj.array("aux_scale_", F8, (n_aux,), finite=True)
    passthrough = obj.flag("passthrough")
    if not passthrough and not n_aux:
        raise BadModel("an AuxTargetStack without inputs for its final estimator")
    width = n + n_aux if passthrough else n_aux
    finals = [predictor(final, width) for final in obj.items("finals_")]
    if not finals:
        raise BadModel("an AuxTargetStack without final estimators")
    predictor(obj.raw("final_"), width)  # the first of finals_, checked as well
    obj.inert("final_estimator", "aux_estimator")

    def predict(X: np.ndarray) -> np.ndarray:
        aux = np.empty((X.shape[0], n_aux))
        for j, model in enumerate(aux_models):
            aux[:, j] = model(X)
        aux = aux * scale + mean
        inputs = np.hstack([X, aux]) if passthrough else aux
        return np.mean([final(inputs) for final in finals], axis=0)

    return predict


PREDICTORS: dict[str, Builder] = {
    "sklearn.pipeline.Pipeline": _pipeline,
    "sklearn.svm._classes.SVR": _svr,
    "sklearn.svm._classes.LinearSVR": _linear,
    "sklearn.linear_model._ridge.RidgeCV": _linear,
    "sklearn.dummy.DummyRegressor": _dummy,
    "sklearn.kernel_ridge.KernelRidge": _kernel_ridge,
    "sklearn.gaussian_process._gpr.GaussianProcessRegressor": _gaussian_process,
    "sklearn.ensemble._forest.RandomForestRegressor": _forest("sklearn.tree._classes.DecisionTreeRegressor"),
    "sklearn.ensemble._forest.ExtraTreesRegressor": _forest("sklearn.tree._classes.ExtraTreeRegressor"),
    "sklearn.ensemble._hist_gradient_boosting.gradient_boosting.HistGradientBoostingRegressor": (
        _hist_gradient_boosting
    ),
    "qe.learners.m5p.M5P": _m5p,
    "qe.learners.fast.NystroemSVR": _nystroem_svr,
    "qe.learners.gp.GPRegressor": _gp_regressor,
    "qe.learners.ensemble.AveragingRegressor": _averaging,
    "qe.learners.ensemble.StackedRegressor": _stacked,
    "qe.learners.aux.AuxTargetStack": _aux_stack,
}
