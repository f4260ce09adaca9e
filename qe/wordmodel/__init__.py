"""A word-level QE model (issue 32): OK/BAD tags of MT words, gaps and source words predicted from
features of each token (its own form, its neighbours, how often its type was BAD in training,
cross-fitted, its IBM1 alignments both ways and, when given, the NMT model's log-probabilities of
its pieces, ``qe.wordmodel.nmtprobs``), by one gradient-boosting tagger per kind."""
