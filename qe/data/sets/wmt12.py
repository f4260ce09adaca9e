"""WMT12 QE English-Spanish (``wmt12-en-es``): the shared task's training and test sets, with
effort labels (1-5), three annotators' scores, post-edits, references and the official 17 baseline
features (``wmt12-official-bf17``), from Lucia Specia's QualityEstimation repository and QuEst++."""

from __future__ import annotations

from qe.data.registry import RegisteredDataset, RegisteredFile, register_dataset

WMT12_UPSTREAM = "https://raw.githubusercontent.com/lspecia/QualityEstimation/master"
QUESTPP_UPSTREAM = "https://raw.githubusercontent.com/ghpaetzold/questplusplus/master/learning/data/features/wmt2012_qe_baseline"


def _wmt12_file(path: str, sha256: str) -> RegisteredFile:
    folder, base = path.split("/", 1)
    if folder == "baseline_features":
        return RegisteredFile(path, sha256, f"{QUESTPP_UPSTREAM}/{base}")
    return RegisteredFile(path, sha256, f"{WMT12_UPSTREAM}/{folder}.tar.gz#{base}")


BF17_NAMES = [
    "src_tokens",
    "mt_tokens",
    "src_mean_token_length",
    "src_lm_logprob",
    "mt_lm_logprob",
    "mt_type_token_ratio",
    "src_ibm1_translations_p0.2",
    "src_ibm1_translations_p0.01_inv_freq",
    "src_1gram_q1_share",
    "src_1gram_q4_share",
    "src_2gram_q1_share",
    "src_2gram_q4_share",
    "src_3gram_q1_share",
    "src_3gram_q4_share",
    "src_1gram_seen_share",
    "src_punctuation",
    "mt_punctuation",
]

WMT12 = register_dataset(
    RegisteredDataset(
        name="wmt12-en-es",
        languages=("en", "es"),
        label_range=(1.0, 5.0),
        folder="wmt12-qe",
        splits={
            "train": {
                "src": _wmt12_file(
                    "training_set/source.eng",
                    "4fd0ac297c4a60e39ac22c81e5b0f6870b10f4db4912e5736dff56a47e4469c9",
                ),
                "mt": _wmt12_file(
                    "training_set/target_system.spa",
                    "d00906a84df36e1dcf02f979c1f71d0243c63fb09395f4cf4d23ad1abf942172",
                ),
                "labels": _wmt12_file(
                    "training_set_annotations/target_system.effort",
                    "338dadbff1a553f9a9dc70f55798b7cda57ee8bfdc0a76ee91040e2494f0b726",
                ),
                "annotator_scores": _wmt12_file(
                    "training_set_annotations/target_system.effort3scores",
                    "c36034ad09133762192afde102d29cf375237cd21337d29bde12591c223ad2b6",
                ),
                "post_edits": _wmt12_file(
                    "training_set_annotations/target_postedited.spa",
                    "f7e1e66c0fae26e92d6e5075b4ab690493b0e321eb002820bffe1efc8c7183b7",
                ),
                "references": _wmt12_file(
                    "training_set_annotations/target_reference.spa",
                    "636db351ef503ec67ac089734e8902c5562dc887915f99f344840a6ff2e4d83f",
                ),
            },
            "test": {
                "src": _wmt12_file(
                    "test_set/source.eng", "78d57e2d1449345641aac4a7fb3ad9f16fdb4f772613e283fea2fea83a6b6964"
                ),
                "mt": _wmt12_file(
                    "test_set/target_system.spa",
                    "640bb8b5c0a8e19ec74fe32e994033d3a3635f79ee6dbeef2a3b58fad70ae7a7",
                ),
                "labels": _wmt12_file(
                    "test_set_annotations/target_system.effort",
                    "7576eb8394e23be53df1386127aaff01d1e310c07ced966b58901e4a3c654dae",
                ),
                "annotator_scores": _wmt12_file(
                    "test_set_annotations/target_system.effort3scores",
                    "f71d598d5f220bae2c8ef92922947c5470c6f1f17a2c3a80558dbafde8a06bb7",
                ),
                "post_edits": _wmt12_file(
                    "test_set_annotations/target_postedited.spa",
                    "8a7cc174eecb132a654d9f6e5a486ed7ac6acec1b1de01f394821339f86fe146",
                ),
                "references": _wmt12_file(
                    "test_set_annotations/target_reference.spa",
                    "be38e2405945df9a95e9ab73a1a2dff7124a2ef7308d7e851e6912eaa751c228",
                ),
            },
        },
        feature_sets={
            "wmt12-official-bf17": {
                "train": _wmt12_file(
                    "baseline_features/training.qe.baseline.tsv",
                    "f8f99c479e5b433295ce0d33bb2d273ed2de5fa5eb5571ee1c99d99369974314",
                ),
                "test": _wmt12_file(
                    "baseline_features/test.qe.baseline.tsv",
                    "768bccae85a353cbe08ea51684bd910f513d653ef818e0e877ac63bec68a9b89",
                ),
            }
        },
        feature_names={"wmt12-official-bf17": [f"bf17.{name}" for name in BF17_NAMES]},
    )
)
