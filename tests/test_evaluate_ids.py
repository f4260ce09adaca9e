"""`qe evaluate` matches predictions to the gold by id, and refuses duplicate, missing and unknown ids."""

from __future__ import annotations

import json

import pytest

from qe.cli import main
from tests.helpers import write_lines

# Gold efforts of sentences 0..4 and a prediction for each (by id): absolute errors 0.5, 0.5, 0, 0.5, 1.0.
GOLD = ["5", "1", "3", "2", "4"]
PREDICTED = {0: 4.5, 1: 1.5, 2: 3.0, 3: 2.5, 4: 3.0}
MAE = (0.5 + 0.5 + 0.0 + 0.5 + 1.0) / 5
# DeltaAvg with N = 5: only n = 2 quantiles of 2; best predicted first: ids 0 (4.5), then 2 and 4
# (3.0, tie kept in gold order) -> the head {0, 2} has gold mean (5 + 3) / 2 = 4, overall mean 3.
DELTA_AVG = 4.0 - 3.0


def _evaluate(capsys, gold, pred) -> tuple[int, str]:
    code = main(["evaluate", "--gold", str(gold), "--pred", str(pred), "--json"])
    captured = capsys.readouterr()
    return code, captured.out if code == 0 else captured.err.strip()


def _tsv(path, rows):
    return write_lines(path, ["id\tscore", *(f"{i}\t{s}" for i, s in rows)])


@pytest.mark.parametrize("order", [[4, 3, 2, 1, 0], [2, 0, 4, 1, 3]])
def test_tsv_rows_are_matched_by_id_whatever_their_order(tmp_path, capsys, order):
    gold = write_lines(tmp_path / "gold", GOLD)
    pred = _tsv(tmp_path / "pred.tsv", [(i, PREDICTED[i]) for i in order])
    code, out = _evaluate(capsys, gold, pred)
    assert code == 0
    metrics = json.loads(out)
    assert metrics["MAE"] == pytest.approx(MAE) and metrics["DeltaAvg"] == pytest.approx(DELTA_AVG)


def test_wmt12_segids_are_line_numbers_and_plain_scores_go_by_position(tmp_path, capsys):
    gold = write_lines(tmp_path / "gold", GOLD)
    code, out = _evaluate(
        capsys, gold, write_lines(tmp_path / "plain", [str(PREDICTED[i]) for i in range(5)])
    )
    assert code == 0 and json.loads(out)["MAE"] == pytest.approx(MAE)
    code, err = _evaluate(capsys, gold, write_lines(tmp_path / "short", ["1", "2"]))
    assert code == 2 and err.endswith(f"has 2 predictions but {gold} has 5 labels")
    rows = [f"T_A\t{i + 1}\t{PREDICTED[i]}\t0" for i in (3, 0, 4, 2, 1)]
    code, out = _evaluate(capsys, gold, write_lines(tmp_path / "sub", rows))
    assert code == 0 and json.loads(out)["MAE"] == pytest.approx(MAE)
    zero_based = [f"T_A\t{i}\t{PREDICTED[i]}\t0" for i in range(5)]
    code, err = _evaluate(capsys, gold, write_lines(tmp_path / "sub0", zero_based))
    assert code == 2
    assert (
        err == f"qe: error: {tmp_path / 'sub0'}:1: id '0' is not in {gold} (SEGIDs 1 to 5, its line numbers)"
    )


def test_a_gold_tsv_with_its_own_ids(tmp_path, capsys):
    gold = write_lines(
        tmp_path / "gold.tsv", ["id\tsrc\tmt\tscore", *(f"s{i}\ta\tb\t{g}" for i, g in enumerate(GOLD))]
    )
    pred = _tsv(tmp_path / "pred.tsv", [(f"s{i}", PREDICTED[i]) for i in (4, 2, 0, 1, 3)])
    code, out = _evaluate(capsys, gold, pred)
    assert code == 0 and json.loads(out)["MAE"] == pytest.approx(MAE)
    twice = write_lines(tmp_path / "twice.tsv", ["id\tscore", "a\t1", "b\t2", "a\t3", "c\t4"])
    code, err = _evaluate(capsys, twice, pred)
    assert code == 2 and err == f"qe: error: {twice}:4: id 'a' appears twice (also on line 2)"


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([(0, 4.5), (1, 1.5), (2, 3.0), (1, 2.5), (4, 3.0)], 5, "id '1' appears twice (also on line 3)"),
        (
            [(0, 4.5), (1, 1.5), (2, 3.0), (3, 2.5), (5, 3.0)],
            6,
            "id '5' is not in {gold} (ids 0 to 4, its line indices)",
        ),
        (
            [(1, 4.5), (2, 1.5), (3, 3.0), (4, 2.5), (5, 3.0)],
            6,
            "id '5' is not in {gold} (ids 0 to 4, its line indices)",
        ),
        (
            [(0, 4.5), (1, 1.5), ("x", 3.0), (3, 2.5), (4, 3.0)],
            4,
            "id 'x' is not in {gold} (ids 0 to 4, its line indices)",
        ),
        (
            [(4, 4.5), (3, 1.5), (2, 3.0), (1, 2.5)],
            None,
            "no prediction for id '0' of {gold} (1 of 5 missing)",
        ),
        (
            [(i, 3.0) for i in range(5)] + [(5, 1.0)],
            7,
            "id '5' is not in {gold} (ids 0 to 4, its line indices)",
        ),
    ],
)
def test_duplicate_unknown_and_missing_ids_exit_2_naming_the_first(tmp_path, capsys, rows, line, message):
    gold = write_lines(tmp_path / "gold", GOLD)
    pred = _tsv(tmp_path / "pred.tsv", rows)
    code, err = _evaluate(capsys, gold, pred)
    where = f"{pred}:{line}" if line else str(pred)
    assert code == 2 and err == f"qe: error: {where}: {message.format(gold=gold)}"


@pytest.mark.parametrize("n", [1, 3])
def test_fewer_than_four_sentences_is_one_line(tmp_path, capsys, n):
    gold = write_lines(tmp_path / "gold", GOLD[:n])
    pred = _tsv(tmp_path / "pred.tsv", [(i, PREDICTED[i]) for i in range(n)])
    code, err = _evaluate(capsys, gold, pred)
    assert code == 2 and err == f"qe: error: {gold}: has {n} sentence(s): DeltaAvg needs at least 4"


@pytest.mark.data
def test_reversed_wmt12_predictions_score_as_in_order(tmp_path, capsys, data_dir):
    """The hostile tester's case on the real test set: reversing the rows must not change anything."""
    gold = data_dir / "wmt12-qe" / "test_set_annotations" / "target_system.effort"
    labels = [float(v) for v in gold.read_text().split()]
    # a deterministic, imperfect predictor: the gold pulled towards 3.3, plus a pattern by position
    scores = [0.6 * g + 1.3 + 0.4 * ((7 * i) % 5 - 2) / 2 for i, g in enumerate(labels)]
    in_order = _tsv(tmp_path / "in_order.tsv", [(i, f"{s:.6f}") for i, s in enumerate(scores)])
    reverse = _tsv(tmp_path / "reverse.tsv", [(i, f"{s:.6f}") for i, s in reversed(list(enumerate(scores)))])
    first = json.loads(_evaluate(capsys, gold, in_order)[1])
    second = json.loads(_evaluate(capsys, gold, reverse)[1])
    assert first == second and first["n"] == 422
    exact = sum(abs(round(s, 6) - g) for s, g in zip(scores, labels, strict=True)) / len(labels)
    assert first["MAE_exact"] == pytest.approx(exact)


def test_a_ranking_only_submission_gets_ranking_metrics_only(tmp_path, capsys):
    """Every score 0 and ranks given: MAE was computed on minus the ranks (19.09 for the WMT12 test)."""
    gold = write_lines(tmp_path / "gold", GOLD)
    ranking = sorted(range(5), key=lambda i: -PREDICTED[i])  # rank 1 = best, ties in id order
    rows = [f"T_A\t{i + 1}\t0\t{ranking.index(i) + 1}" for i in range(5)]
    code = main(
        ["evaluate", "--gold", str(gold), "--pred", str(write_lines(tmp_path / "ranks", rows)), "--json"]
    )
    captured = capsys.readouterr()
    metrics = json.loads(captured.out)
    assert code == 0 and "MAE" not in metrics and "RMSE" not in metrics
    assert metrics["DeltaAvg"] == pytest.approx(DELTA_AVG) and "ranking-only" in captured.err


def test_a_score_too_large_to_square_is_refused_naming_its_line(tmp_path, capsys):
    """1e308 gave RMSE inf, numpy warnings and 'Infinity' in --json output."""
    gold = write_lines(tmp_path / "gold", GOLD)
    code, err = _evaluate(capsys, gold, write_lines(tmp_path / "plain", ["1", "2", "1e308", "4", "5"]))
    assert code == 2 and err.startswith(f"qe: error: {tmp_path / 'plain'}:3: score 1e+308 is beyond 1e+100")
