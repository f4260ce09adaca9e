"""The JSON the API reads and writes, as pydantic models: they check a request's types (strictly: no
number taken for a string, no "yes" for true) and make the OpenAPI schema at ``/v1/openapi.json``."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Pair(BaseModel):
    """A sentence pair: ``src``, ``mt``, an optional ``id`` echoed back, and each per-pair input the
    model declares (``GET /v1/models``: ``pair_inputs``) as a further string field."""

    model_config = ConfigDict(extra="allow", strict=True)

    id: str | int | None = Field(None, description="echoed back with the score (default: the pair's index)")
    src: str = Field(description="the source sentence")
    mt: str = Field(description="its machine translation")


def score_request(max_pairs: int) -> type[BaseModel]:
    """The ``POST /v1/score`` body, with this server's limit on pairs per request."""

    class ScoreRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        model: str = Field(description="a model name from GET /v1/models")
        pairs: list[Pair] = Field(min_length=1, max_length=max_pairs)
        features: bool = Field(False, description="also return every feature value and the most unusual ones")
        unusual: bool = Field(False, description="also return the features farthest from the training data")

    return ScoreRequest


def words_request(max_pairs: int) -> type[BaseModel]:
    """The ``POST /v1/words`` body (a word model's name and the pairs), with this server's limit on
    pairs per request."""

    class WordsRequest(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True)

        model: str = Field(description="a word model's name from GET /v1/models (kind: words)")
        pairs: list[Pair] = Field(
            min_length=1,
            max_length=max_pairs,
            description="src and mt tokenized, tokens separated by whitespace (as MLQE-PE's files are)",
        )

    return WordsRequest


class Unusual(BaseModel):
    feature: str
    definition: str
    value: float
    training_mean: float
    training_std: float
    z: float = Field(description="(value - training mean) / training standard deviation")


class Result(BaseModel):
    index: int = Field(description="the pair's 0-based position in the request")
    id: str | int
    score: float
    features: dict[str, float] | None = None
    unusual: list[Unusual] | None = Field(
        None, description="null when the model holds no training statistics"
    )


class Label(BaseModel):
    kind: str | None = Field(description="e.g. HTER, DA z-score, WMT12 effort 1-5 (null: unknown)")
    higher_is_better: bool | None
    direction: str | None
    range: list[float] | None = Field(description="the training label range scores are clipped to")


class ScoreResponse(BaseModel):
    model: str
    label: Label
    signature: str | None = Field(
        description="everything that changes a number: data, features, learner, versions"
    )
    results: list[Result] = Field(description="one per pair, in input order")
    clipped: int = Field(description="how many scores were clipped to the training label range")


class WordResult(BaseModel):
    index: int = Field(description="the pair's 0-based position in the request")
    id: str | int
    src_tokens: list[str] = Field(description="the source text split at whitespace (Python's str.split)")
    mt_tokens: list[str] = Field(description="the MT split at whitespace: the tokens the tags belong to")
    mt_tags: list[str] = Field(description="OK or BAD, one per MT token")
    mt_bad_probability: list[float]
    gap_tags: list[str] = Field(
        description="N+1 for N MT tokens: before the first token, between tokens, after the last"
    )
    gap_bad_probability: list[float]
    src_tags: list[str] = Field(description="one per source token")
    src_bad_probability: list[float]


class WordsResponse(BaseModel):
    model: str
    signature: str | None
    thresholds: dict[str, float] = Field(
        description="per kind (target, gaps, source): a token is BAD when its probability reaches it"
    )
    results: list[WordResult] = Field(description="one per pair, in input order")


class ModelInfo(BaseModel):
    name: str
    kind: str = Field(
        "sentences", description="sentences: scored by /v1/score and /v1/batch; words: tagged by /v1/words"
    )
    languages: dict[str, str | None]
    label: Label
    signature: str | None
    model_sha256: str
    bundle: str | None
    pair_inputs: list[str] = Field(description="string fields each pair must have besides src and mt")
    family_max_chars: int | None
    features: int
    training_statistics: bool
    thresholds: dict[str, float] | None = Field(None, description="a word model's BAD threshold per kind")
    max_tokens: int | None = Field(None, description="a word model's limit on tokens in a source or MT text")


class ModelsResponse(BaseModel):
    models: list[ModelInfo]
    limits: dict[str, Any]


class ErrorResponse(BaseModel):
    error: str = Field(description="one line naming the pair index and field at fault")
