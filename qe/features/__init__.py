"""Feature families: each module registers one family (see ``base.FeatureFamily``)."""
