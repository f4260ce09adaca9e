"""The typed experiment config: frozen sections with the defaults, read-only open tables, and the config
written back (a run's ``config.toml``) in the user's key order with the defaults shown first."""

from __future__ import annotations

import dataclasses

import pytest

from qe.config.document import thaw
from qe.config.experiment import ExperimentConfig
from qe.run.config import apply_overrides, dump_config, load_config

MIXED = """\
description = "keys in an unusual order"
seed = 3

[learner]
grid = "default"
name = "svr"

[cv]
n_jobs = 2

[data]
test_split = "test"
dataset = "wmt12-en-es"
allow_overlap = false

[features]
families = ["surface"]

[features.settings.surface]
style = "wmt12"
"""

# qe run writes the defaults of a section first, then the user's keys in the user's order, then what an
# option added (--data-dir); tomli_w puts a table's plain keys before its sub-tables.
WRITTEN = """\
seed = 3
description = "keys in an unusual order"
name = "mixed"
config_file = "{path}"

[data]
train_split = "train"
test_split = "test"
dataset = "wmt12-en-es"
allow_overlap = false
data_dir = "/data"

[features]
sets = []
families = [
    "surface",
]

[features.settings.surface]
style = "wmt12"

[learner]
scoring = "MAE"
clip = true
grid = "default"
name = "svr"

[learner.params]

[cv]
folds = 5
n_jobs = 4

[report]
published = true
against = []
"""


def test_a_config_is_written_back_in_the_users_order_with_the_defaults_first(tmp_path):
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED)
    config = apply_overrides(load_config(path, check_learner=False), "/data", 4)
    assert dump_config(config) == WRITTEN.format(path=path.resolve())


def test_the_sections_hold_the_defaults_and_cannot_be_changed(tmp_path):
    path = tmp_path / "mixed.toml"
    path.write_text(MIXED)
    config = load_config(path, check_learner=False)
    assert (config.seed, config.cv.folds, config.cv.n_jobs) == (3, 5, 2)
    assert (config.data.train_split, config.data.fit_on, config.data.has_dev) == ("train", "train", False)
    assert (config.learner.scoring, config.learner.clip, config.learner.scale) == ("MAE", True, None)
    assert config.features.families == ("surface",) and config.selection is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.seed = 4  # type: ignore[misc]
    with pytest.raises(TypeError):
        config.features.settings["surface"]["style"] = "moses"  # type: ignore[index]
    # where a table leaves the config (a family, a learner, JSON) it is plain again
    assert thaw(config.features.settings) == {"surface": {"style": "wmt12"}}
    assert type(thaw(config.features.families)) is list


def test_a_system_of_a_run_is_a_changed_copy_and_the_original_stays():
    config = ExperimentConfig.from_document({"name": "a", "learner": {"name": "svr"}, "seed": 1})
    other = config.replace(seed=2)
    assert (config.seed, other.seed) == (1, 2) and other.learner is config.learner
