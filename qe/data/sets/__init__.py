"""The known datasets, one module per source (``qe.data.registry`` imports them all): each module
registers its ``RegisteredDataset`` records, with every file's path, sha256 and upstream URL."""
