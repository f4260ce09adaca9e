"""What `qe init` gives a user who brings their own files (issue 31), beside the project's best configs.

For each MLQE-PE pair and label (``da``: z_mean of the direct assessments, ``hter``), the pair's train,
dev and test20 splits are copied out as plain files, as a user's own (source, MT, labels, post-edits,
and the NMT model's log-probabilities, tokens and sentence scores as ``--*-input`` files), then
``qe init`` and ``qe run`` run on them as the README's short path says, twice: the default config and
``qe init --light``. The test20 Pearson of each and the default's wall time (``qe init`` and ``qe run``,
the resource bundle built from the training split included) are recorded with the run signatures,
beside the best config's Pearson from ``docs/mlqe-table.json``. ``--wmt12`` adds WMT12 en-es from
plain files (train, test, post-edits, and as ``--corpus`` the parallel corpora wmt12-best-rawtext's
resources are built from) beside ``wmt12-best-rawtext`` (``docs/wmt12-table.json``).

    python benchmarks/init_table.py [--pairs et-en,ro-en] [--labels da,hter] [--wmt12]
        [--work DIR] [--save FILE] [--resume]      # measure (resumable: rows in FILE are kept)
    python benchmarks/init_table.py --from docs/init-table.json
        # prints {"<da|hter>-<pair>": {"init", "best", "light", "seconds"}}
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from mlqe_table import git_commit  # noqa: E402

from qe.data.sets.wmt20_mlqe import MLQE_PAIRS  # noqa: E402

LABELS = {"da": "mlqe-da", "hter": "mlqe-pe"}
INPUTS = ("nmt_logprobs", "nmt_tokens", "nmt_score")
SPLITS = {"train": "train", "dev": "dev", "test": "test"}  # registered split -> file prefix


def write_lines(path: Path, lines: list) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


def copy_out(dataset: str, folder: Path, data_dir: str | None) -> dict[str, dict[str, Path]]:
    """A registered dataset's splits as plain files in ``folder``: split -> role -> file."""
    from qe.data import load_registered

    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Path]] = {}
    for split in SPLITS:
        data = load_registered(dataset, split, data_dir)
        roles = {"src": data.src, "mt": data.mt, "labels": [f"{x:.10g}" for x in data.labels]}
        if data.post_edits is not None and split == "train":
            roles["post_edits"] = data.post_edits
        roles.update({name: data.inputs[name] for name in INPUTS if name in data.inputs})
        files[split] = {role: write_lines(folder / f"{split}.{role}", lines) for role, lines in roles.items()}
    return files


def init_arguments(files: dict[str, dict[str, Path]], pair: str, bounds: tuple | None) -> list[str]:
    """``qe init``'s arguments for the files: splits, languages, inputs, the declared label range."""
    src, tgt = pair.split("-")
    args = ["--src-lang", src, "--tgt-lang", tgt]
    flags = {"train": "--", "dev": "--dev-", "test": "--test-"}
    roles = {"src": "src", "mt": "mt", "labels": "labels", "post_edits": "post-edits"}
    for split, roles_files in files.items():
        for role, path in roles_files.items():
            if role in roles:
                args += [f"{flags[split]}{roles[role]}", str(path)]
            else:
                args += [f"--{split}-input", f"{role}={path}"]
    if bounds:
        args += ["--label-range", *(f"{b:g}" for b in bounds)]
    return args


def run_qe(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    """``python -m qe ARGS`` in ``cwd``; its output kept, a failure raised with its last lines."""
    done = subprocess.run(
        [sys.executable, "-m", "qe", *args], cwd=cwd, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"qe {' '.join(args[:2])} failed in {cwd}:\n{done.stderr[-2000:]}")
    return done


def measure(
    name: str,
    files: dict,
    pair: str,
    bounds: tuple | None,
    work: Path,
    light: bool,
    corpora: list[tuple[Path, Path]] = (),
) -> dict:
    """``qe init`` (``--light`` or not, each of ``corpora`` as ``--corpus SRC TGT``) + ``qe run`` on the
    files: test Pearson, seconds, signature."""
    folder = work / ("light" if light else "init")
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "QE_CACHE_DIR": str(work / "cache")}
    if light:
        files = {split: roles for split, roles in files.items() if split != "dev"}
        files = {
            split: {r: p for r, p in roles.items() if not r.startswith("nmt_")}
            for split, roles in files.items()
        }
    started = time.perf_counter()
    config = folder / f"{name}.toml"
    run_qe(
        [
            "init",
            *init_arguments(files, pair, bounds),
            *(str(path) for corpus in corpora for path in ("--corpus", *corpus)),
            *(["--light"] if light else []),
            "--out",
            str(config),
            "--force",
        ],
        folder,
        env,
    )
    run_qe(["run", str(config), "--output-dir", str(folder / "run"), "--quiet", "--overwrite"], folder, env)
    seconds = time.perf_counter() - started
    metrics = json.loads((folder / "run" / "metrics.json").read_text(encoding="utf-8"))
    return {
        "pearson": round(metrics["test"]["Pearson"], 4),
        "MAE": round(metrics["test"]["MAE"], 4),
        "DeltaAvg": round(metrics["test"].get("DeltaAvg", float("nan")), 4),
        "seconds": round(seconds, 1),
        "signature": metrics["signature"],
    }


def mlqe_rows(pairs: list[str], labels: list[str], work: Path, data_dir: str | None, saved: dict) -> dict:
    """The MLQE-PE rows not in ``saved``, each measured and recorded as it finishes."""
    best = json.loads((REPO / "docs" / "mlqe-table.json").read_text(encoding="utf-8"))
    for label in labels:
        for pair in pairs:
            key = f"{label}-{pair}"
            if key in saved:
                continue
            dataset = f"{LABELS[label]}/{pair}"
            files = copy_out(dataset, work / key / "files", data_dir)
            bounds = (0.0, 1.0) if label == "hter" else None
            row = {
                "dataset": dataset,
                "best": best[pair][label]["pearson"],
                "init": measure(key, files, pair, bounds, work / key, light=False),
                "light": measure(key, files, pair, bounds, work / key, light=True),
            }
            saved[key] = row
            yield key, row


def wmt12_row(work: Path, data_dir: str | None) -> dict:
    """WMT12 en-es from plain files (train with post-edits, test, and the corpora wmt12-best-rawtext's
    resources are built from), beside wmt12-best-rawtext."""
    from qe.data import load_registered, resolve_data_dir

    folder = work / "wmt12-en-es" / "files"
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[str, dict[str, Path]] = {}
    for split in ("train", "test"):
        data = load_registered("wmt12-en-es", split, data_dir)
        roles = {"src": data.src, "mt": data.mt, "labels": [f"{x:g}" for x in data.labels]}
        if split == "train":
            roles["post_edits"] = data.post_edits
        files[split] = {role: write_lines(folder / f"{split}.{role}", lines) for role, lines in roles.items()}
    best = json.loads((REPO / "docs" / "wmt12-table.json").read_text(encoding="utf-8"))["systems"][
        "best-rawtext"
    ]
    corpora = wmt12_corpora(data_dir)
    folder = work / "wmt12-en-es"
    return {
        "dataset": "wmt12-en-es",
        "commit": git_commit(),
        "corpora": [[str(path.relative_to(resolve_data_dir(data_dir))) for path in pair] for pair in corpora],
        "best": {"MAE": best["test"]["MAE"], "DeltaAvg": best["test"]["DeltaAvg"]},
        "init": measure("wmt12-en-es", files, "en-es", (1.0, 5.0), folder, light=False, corpora=corpora),
    }


def wmt12_corpora(data_dir: str | None) -> list[tuple[Path, Path]]:
    """The parallel corpora wmt12-best-rawtext's bundle reads (configs/resources-wmt12-en-es.toml), as
    the plain files a user would name with ``--corpus SRC TGT``."""
    import tomllib

    from qe.data import resolve_data_dir

    config = tomllib.loads((REPO / "configs" / "resources-wmt12-en-es.toml").read_text(encoding="utf-8"))
    root = resolve_data_dir(data_dir)
    return [(root / table["src"], root / table["tgt"]) for table in config["corpora"].values()]


def summary(record: dict) -> dict:
    """The printed dict: each MLQE-PE row's Pearson (init, best, light) and the default's seconds."""
    return {
        key: {
            "init": row["init"]["pearson"],
            "best": row["best"],
            "light": row["light"]["pearson"],
            "seconds": row["init"]["seconds"],
        }
        for key, row in record["rows"].items()
    }


def markdown(record: dict) -> str:
    """The table docs/own-data.md shows: each MLQE-PE row's test20 Pearson for ``qe init``'s default,
    the best config and ``--light``, the default's wall time, then WMT12 beside wmt12-best-rawtext."""
    lines = [
        "| data (test20) | `qe init` + `qe run` | best config | gap | `--light` | time (init + run) |",
        "|---|---|---|---|---|---|",
    ]
    for key, row in record["rows"].items():
        label, pair = key.split("-", 1)
        init, gap = row["init"]["pearson"], row["init"]["pearson"] - row["best"]
        lines.append(
            f"| {pair} {label.upper()} | {init:.3f} | {row['best']:.3f} | {gap:+.3f} | "
            f"{row['light']['pearson']:.3f} | {_minutes(row['init']['seconds'])} |"
        )
    wmt12 = record.get("wmt12")
    if wmt12:
        init, best = wmt12["init"], wmt12["best"]
        lines += [
            "",
            "| WMT12 en-es (test, 422) | MAE | DeltaAvg | Pearson | time (init + run) |",
            "|---|---|---|---|---|",
            f"| `qe init` + `qe run` | {init['MAE']:.3f} | {init['DeltaAvg']:.3f} | {init['pearson']:.3f} | "
            f"{_minutes(init['seconds'])} |",
            f"| wmt12-best-rawtext | {best['MAE']:.3f} | {best['DeltaAvg']:.3f} | | |",
        ]
    return "\n".join(lines)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {round(seconds % 60):02d} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=",".join(MLQE_PAIRS))
    parser.add_argument("--labels", default="da,hter")
    parser.add_argument("--wmt12", action="store_true", help="also WMT12 en-es from plain files")
    parser.add_argument("--work", type=Path, default=Path("runs/init-table"))
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--save", type=Path, help="write the record here after every row")
    parser.add_argument("--resume", action="store_true", help="keep the rows --save already holds")
    parser.add_argument("--from", dest="saved", type=Path, help="print the summary of a saved record")
    args = parser.parse_args(argv)
    if args.saved is not None:
        print(json.dumps(summary(json.loads(args.saved.read_text(encoding="utf-8"))), indent=2))
        return 0
    if args.resume and args.save is None:
        print("init_table: --resume needs --save FILE (the record to continue)", file=sys.stderr)
        return 2
    record = {"commit": git_commit(), "rows": {}, "wmt12": None}
    if args.resume and args.save.is_file():
        record = json.loads(args.save.read_text(encoding="utf-8"))
    pairs, labels = args.pairs.split(","), args.labels.split(",")
    for key, _row in mlqe_rows(pairs, labels, args.work, args.data_dir, record["rows"]):
        print(f"init_table: {key} done", file=sys.stderr, flush=True)
        if args.save is not None:
            args.save.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if args.wmt12 and not record.get("wmt12"):
        record["wmt12"] = wmt12_row(args.work, args.data_dir)
    if args.save is not None:
        args.save.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(summary(record), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
