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


class ModelInfo(BaseModel):
    name: str
    languages: dict[str, str | None]
    label: Label
    signature: str | None
    model_sha256: str
    bundle: str | None
    pair_inputs: list[str] = Field(description="string fields each pair must have besides src and mt")
    family_max_chars: int | None
    features: int
    training_statistics: bool


class ModelsResponse(BaseModel):
    models: list[ModelInfo]
    limits: dict[str, Any]


class ErrorResponse(BaseModel):
    error: str = Field(description="one line naming the pair index and field at fault")
