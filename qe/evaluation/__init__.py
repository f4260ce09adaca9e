"""Scoring predictions: the metrics as the official WMT12 scorer computes them (``metrics``), the published
WMT12 systems (``published``), and sentence BLEU, chrF and TER (``textmetrics``)."""
