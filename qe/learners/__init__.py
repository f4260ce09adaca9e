"""Learners: the factory and its records (``factory``), our M5P model tree (``m5p``), the fast SVR, the
Gaussian process, ensembles and auxiliary-target stacking, grid searches and their progress."""
