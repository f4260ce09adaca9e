"""The HTTP side of ``qe serve`` (FastAPI): the page at ``/``, ``GET /healthz`` and ``/readyz``, and the
versioned JSON API (``GET /v1/models``, ``POST /v1/score``, ``POST /v1/batch``, ``POST /v1/words`` for
word models, ``/v1/openapi.json``).

Requests are checked here (types, limits, model names from the server's own list, text) and scored by
the worker pool; every refusal is ``{"error": "one line"}`` with 400 / 401 / 403 / 404 / 408 / 413 / 422 /
503. Who may ask is checked first, on the request's head (``qe.serve.guards``).
"""

import json
import sys
import traceback
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

import anyio
from fastapi import Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect

from qe import __version__
from qe.serve.batch import FORMATS, Upload, upload_format
from qe.serve.deadlines import BodyDeadline, SendTimeout
from qe.serve.errors import ApiError, one_line, too_large
from qe.serve.guards import AllowedHosts, BearerToken, CorsPolicy, SameOrigin
from qe.serve.middleware import DeclaredLength, SecurityHeaders
from qe.serve.pairs import check_pair, check_tokens, in_body, read_body, validation_error
from qe.serve.pool import Unavailable, WorkerPool
from qe.serve.responses import ClosingStreamingResponse
from qe.serve.schemas import (
    ErrorResponse,
    ModelsResponse,
    ScoreResponse,
    WordsResponse,
    score_request,
    words_request,
)
from qe.serve.settings import Settings
from qe.serve.stopping import DrainCutoff

STATIC = Path(__file__).parent / "static"
PARSERS = 2  # JSON bodies parsed at once, in worker threads
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT"})
ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": text}
    for status, text in {
        400: "not UTF-8, not JSON, or no upload format; a Host this server does not answer to",
        401: "no or wrong bearer token",
        403: "a cross-origin request from an origin not allowed",
        404: "no such model on this server",
        408: "the request body came too slowly",
        413: "over a limit: body bytes, pairs, characters of a text",
        422: "a field missing, unknown or of the wrong type, or a text that cannot be scored",
        503: "not ready, stopping, every worker busy, or the worker died",
    }.items()
}


class StrictJSONRequest(Request):
    """A request whose JSON body is read by :func:`qe.serve.pairs.read_body` in a worker thread, at most
    :data:`PARSERS` at once (a hostile 2 MB body takes up to a second and 30 MB to parse and check: the
    event loop keeps answering meanwhile, and many such bodies cost no more memory than two): UTF-8
    (RFC 8259), without NaN / Infinity, nested at most ``qe.infra.io.MAX_NESTING`` deep, with only the
    request's keys at the top level and at most the server's pairs, counted before any pair is
    validated."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            state = self.app.state
            self._json = await anyio.to_thread.run_sync(
                read_body, body, state.max_pairs, state.body_keys[self.url.path], limiter=state.parsers
            )
        return self._json


class StrictJSONRoute(APIRoute):
    """A route whose handler reads the body as a :class:`StrictJSONRequest`."""

    def get_route_handler(self) -> Callable:
        handler = super().get_route_handler()

        async def strict(request: Request) -> Any:
            return await handler(StrictJSONRequest(request.scope, request.receive))

        return strict


def create_app(settings: Settings, pool: WorkerPool) -> FastAPI:
    """The ASGI app serving ``pool``'s models under ``settings``."""
    app = FastAPI(
        title="qe",
        version=__version__,
        description="Sentence-level quality estimation for machine translation: score source / MT pairs.",
        openapi_url="/v1/openapi.json",
        docs_url=None,  # FastAPI's documentation pages load their scripts from a CDN
        redoc_url=None,
        redirect_slashes=False,  # a redirect would name the request's Host: /v1/score/ is a 404 line
    )
    app.router.route_class = StrictJSONRoute
    app.state.max_pairs = settings.limits.pairs
    app.state.parsers = anyio.CapacityLimiter(PARSERS)
    api = Api(settings, pool)
    app.state.body_keys = {
        "/v1/score": tuple(api.score_request.model_fields),
        "/v1/words": tuple(api.words_request.model_fields),
    }
    _add_error_handlers(app, api)
    _add_page_and_health(app, pool)
    _add_models_route(app, api)
    _add_score_route(app, api)
    _add_batch_route(app, api)
    _add_words_route(app, api)
    _add_middleware(app, api)
    return app


class Api:
    """What every route shares: the settings and their limits, the pool, the token check, the lookup
    of a served model and the call that scores on a worker."""

    def __init__(self, settings: Settings, pool: WorkerPool) -> None:
        self.settings, self.pool, self.limits = settings, pool, settings.limits
        self.score_request = score_request(settings.limits.pairs)
        self.words_request = words_request(settings.limits.pairs)
        bearer = HTTPBearer(auto_error=False, description="the token in the server's --token-file")

        def declare_token(
            credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
        ) -> None:
            """Declares the bearer scheme in the OpenAPI schema only: ``qe.serve.guards.BearerToken``
            checked the token before the body was read."""

        self.guarded = [Depends(declare_token)] if settings.token is not None else []

    def body_limit(self, path: str) -> int:
        """The most bytes a request body to ``path`` may hold."""
        return self.limits.upload_bytes if path == "/v1/batch" else self.limits.body_bytes

    def served(self, name: str, words: bool = False) -> dict[str, Any]:
        """The served model called ``name`` (404 when there is none), of the kind the route takes
        (``words``: a word model, for ``/v1/words``; else a sentence model): 422 for the other kind."""
        model = self.pool.models.get(name)
        if model is None:  # the name given is the client's text: not quoted back
            known = ", ".join(self.pool.models)
            raise ApiError(404, f"model: the name given is not served here (served: {known})")
        if words and model.get("kind") != "words":
            raise ApiError(422, f"model: {model['name']} scores sentences (POST /v1/score or /v1/batch)")
        if not words and model.get("kind") == "words":
            raise ApiError(422, f"model: {model['name']} is a word model (tag words with POST /v1/words)")
        return model

    async def scored(self, request: tuple) -> tuple:
        """A worker's answer to a scoring request (503 when none can take it, its refusal as is). A
        cancelled request (the drain ran out) stops waiting at once; its job ends in the pool."""
        try:
            answer = await anyio.to_thread.run_sync(
                self.pool.call, request, self.limits.queue_seconds, abandon_on_cancel=True
            )
        except Unavailable as exc:
            raise ApiError(503, str(exc)) from None
        if answer[0] == "error":
            raise ApiError(answer[1], answer[2])
        return answer


def _add_error_handlers(app: FastAPI, api: Api) -> None:
    """Every refusal as ``{"error": "one line"}``; an internal error's traceback goes to the log only."""

    @app.exception_handler(ClientDisconnect)
    async def gone(request: Request, exc: ClientDisconnect) -> Response:
        _client_gone(request)
        return Response(status_code=400)  # never sent: no one is there

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if isinstance(exc.__cause__, ClientDisconnect):  # FastAPI's own body reading met it
            _client_gone(request)
        message = (
            exc.detail
            if isinstance(exc, ApiError)
            else _plain_error(request, exc.status_code, api.body_limit)
        )
        return JSONResponse({"error": message}, exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        error = dict(exc.errors()[0])
        loc = tuple(error.get("loc", ()))
        error["loc"] = loc[1:] if loc[:1] == ("body",) else loc
        if error.get("type") == "json_invalid":
            reason = error.get("ctx", {}).get("error", "invalid")
            return JSONResponse({"error": one_line(f"the body is not valid JSON: {reason}")}, 400)
        if loc == ("body",) and isinstance(error.get("input"), bytes):
            return JSONResponse({"error": "send the body as JSON (Content-Type: application/json)"}, 400)
        if loc[:1] == ("query",):
            error["loc"] = loc[1:]
        found = validation_error(error)
        return JSONResponse({"error": found.detail}, found.status_code)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        print(f"qe serve: {request.method} {request.url.path} failed:", file=sys.stderr)
        traceback.print_exception(exc, file=sys.stderr)
        return JSONResponse({"error": "internal error (the server log says why)"}, 500)


def _add_page_and_health(app: FastAPI, pool: WorkerPool) -> None:
    """The page at ``/`` with its static files, ``/healthz`` and ``/readyz``."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    @app.api_route("/healthz", methods=["GET", "HEAD"], summary="the process answers")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.api_route(
        "/readyz",
        methods=["GET", "HEAD"],
        summary="at least one scoring worker is up",
        responses={503: ERRORS[503]},
    )
    async def readyz() -> JSONResponse:
        ready = pool.ready()
        if not ready:
            return JSONResponse({"error": f"no scoring worker is ready (0 of {pool.size})"}, 503)
        return JSONResponse({"status": "ready", "workers": ready, "of": pool.size})


def _add_models_route(app: FastAPI, api: Api) -> None:
    """``GET /v1/models``."""

    @app.get(
        "/v1/models", response_model=ModelsResponse, dependencies=api.guarded, responses={401: ERRORS[401]}
    )
    async def models() -> dict[str, Any]:
        """The models this server scores with, and the limits a request must keep."""
        shown = ("body_bytes", "upload_bytes", "pairs", "batch_pairs", "chars")
        return {
            "models": list(api.pool.models.values()),
            "limits": {k: getattr(api.limits, k) for k in shown},
        }


def _add_score_route(app: FastAPI, api: Api) -> None:
    """``POST /v1/score``: pairs in a JSON body, results in one JSON answer."""
    limits = api.limits
    ScoreRequest = api.score_request

    @app.post(
        "/v1/score",
        response_model=None,
        dependencies=api.guarded,
        responses={200: {"model": ScoreResponse}, **ERRORS},
        max_body_size=limits.body_bytes,
    )
    async def score(body: ScoreRequest) -> JSONResponse:  # type: ignore[valid-type]
        """Score pairs with a model: results in input order, with ids, the model's label kind and
        direction and its signature."""
        model = api.served(body.model)
        checked = [check_pair(pair, in_body(k), model, limits.chars) for k, pair in enumerate(body.pairs)]
        inputs = {name: [extra[name] for *_, extra in checked] for name in model["pair_inputs"]}
        src, mt = [c[1] for c in checked], [c[2] for c in checked]
        detail = "features" if body.features else "unusual" if body.unusual else ""
        _, results, clipped = await api.scored((model["name"], src, mt, inputs, 0, detail))
        for index, (result, (pair_id, *_)) in enumerate(zip(results, checked, strict=True)):
            result["index"] = index
            result["id"] = index if pair_id is None else pair_id
        return JSONResponse(
            {
                "model": model["name"],
                "label": model["label"],
                "signature": model["signature"],
                "results": [_ordered(result) for result in results],
                "clipped": clipped,
            }
        )


def _add_words_route(app: FastAPI, api: Api) -> None:
    """``POST /v1/words``: pairs in a JSON body, each pair's word tags in one JSON answer."""
    limits = api.limits
    WordsRequest = api.words_request

    @app.post(
        "/v1/words",
        response_model=None,
        dependencies=api.guarded,
        responses={200: {"model": WordsResponse}, **ERRORS},
        max_body_size=limits.body_bytes,
    )
    async def words(body: WordsRequest) -> JSONResponse:  # type: ignore[valid-type]
        """Tag each pair's MT words, gaps and source words OK / BAD with a word model, as `qe predict
        --words` does: tokens are the texts split at whitespace; results in input order, with ids."""
        model = api.served(body.model, words=True)
        checked = []
        for k, pair in enumerate(body.pairs):
            where = in_body(k)
            checked.append(check_pair(pair, where, model, limits.chars))
            for field in ("src", "mt"):
                check_tokens(checked[-1][1 if field == "src" else 2], where(field), model["max_tokens"])
        src, mt = [c[1] for c in checked], [c[2] for c in checked]
        _, results, _ = await api.scored((model["name"], src, mt, {}, 0, ""))
        for index, (result, (pair_id, *_)) in enumerate(zip(results, checked, strict=True)):
            result["index"] = index
            result["id"] = index if pair_id is None else pair_id
        return JSONResponse(
            {
                "model": model["name"],
                "signature": model["signature"],
                "thresholds": model["thresholds"],
                "results": [_ordered(result) for result in results],
            }
        )


BATCH_OPENAPI = {
    "requestBody": {
        "required": True,
        "content": {kind: {"schema": {"type": "string"}} for kind in FORMATS.values()},
        "description": "TSV whose first line names the columns (src, mt, optional id, the model's "
        "pair_inputs), or JSON lines of pair objects",
    }
}
BATCH_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {
        "description": "one JSON line per pair in input order ({index, id, score, ...} as in "
        "/v1/score), then {done, pairs, clipped}; a failure after the first chunk ends the "
        "stream with an {error} line",
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    },
    **ERRORS,
}


def _add_batch_route(app: FastAPI, api: Api) -> None:
    """``POST /v1/batch``: an uploaded TSV or JSONL file, results streamed back as JSON lines."""

    @app.post(
        "/v1/batch",
        response_model=None,
        dependencies=api.guarded,
        max_body_size=api.limits.upload_bytes,
        openapi_extra=BATCH_OPENAPI,
        responses=BATCH_RESPONSES,
    )
    async def batch(
        request: Request,
        model: Annotated[str, Query(description="a model name from GET /v1/models")],
        features: Annotated[bool, Query(description="also return every feature value")] = False,
        unusual: Annotated[bool, Query(description="also return the most unusual features")] = False,
        format: Annotated[str | None, Query(description="tsv or jsonl (default: from Content-Type)")] = None,
    ) -> ClosingStreamingResponse:
        """Score an uploaded TSV or JSONL file, streaming the results back as they are scored."""
        described = api.served(model)
        upload = Upload(upload_format(format, request.headers.get("content-type")), described, api.limits)
        try:
            async for data in request.stream():
                await run_in_threadpool(upload.feed, data)
            await run_in_threadpool(upload.finish)
            chunks = upload.chunks(api.settings.batch_chunk)
            detail = "features" if features else "unusual" if unusual else ""
            first = await _score_chunk(chunks, described["name"], detail, api.scored)
        except BaseException:
            upload.close()
            raise
        return ClosingStreamingResponse(
            _stream(first, chunks, described["name"], detail, api.scored, upload),
            media_type="application/x-ndjson",
            headers={"x-pairs": str(upload.pairs)},
        )


def _add_middleware(app: FastAPI, api: Api) -> None:
    """The wrappers around the app, outermost first: the send timeout, security headers, the drain's
    cut-off, the Host check, CORS for the configured origins, the same-origin check, the token, the
    declared-length check, the body deadline. (Starlette runs the last one added first.)"""
    settings, limits = api.settings, api.limits
    app.add_middleware(BodyDeadline, seconds=limits.body_seconds)
    app.add_middleware(DeclaredLength, limit=api.body_limit)
    if settings.token is not None:
        app.add_middleware(BearerToken, token=settings.token)
    app.add_middleware(SameOrigin, origins=settings.cors_origins)
    if settings.cors_origins:
        app.add_middleware(
            CorsPolicy,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(AllowedHosts, names=settings.allowed_hosts)
    app.add_middleware(DrainCutoff, seconds=limits.drain_seconds)
    app.add_middleware(SecurityHeaders)
    app.add_middleware(SendTimeout, seconds=limits.send_seconds)


def _ordered(result: dict[str, Any]) -> dict[str, Any]:
    """A result with its index, id and score first."""
    return {"index": result["index"], "id": result["id"], **result}


async def _score_chunk(chunks: Any, name: str, detail: str, scored: Callable) -> tuple[list, int] | None:
    """The next chunk's results (id, score, ...) and clipped count; None after the last."""
    chunk = await run_in_threadpool(next, chunks, None)
    if chunk is None:
        return None
    start = chunk[0][0]  # the first pair's index in the upload: messages count from it
    src, mt = [row[2] for row in chunk], [row[3] for row in chunk]
    inputs = {key: [row[4][key] for row in chunk] for key in chunk[0][4]}
    _, results, clipped = await scored((name, src, mt, inputs, start, detail))
    for row, result in zip(chunk, results, strict=True):
        result["id"] = row[1]
    return results, clipped


async def _stream(
    first: tuple[list, int] | None, chunks: Any, name: str, detail: str, scored: Callable, upload: Upload
) -> AsyncIterator[bytes]:
    """The upload's results as JSON lines, chunk by chunk, then the summary line (or an error line)."""
    index = clipped = 0
    current = first
    try:
        while current is not None:
            results, count = current
            clipped += count
            lines = []
            for result in results:
                result["index"] = index
                index += 1
                lines.append(json.dumps(_ordered(result)))
            yield ("\n".join(lines) + "\n").encode()
            try:
                current = await _score_chunk(chunks, name, detail, scored)
            except HTTPException as exc:
                yield (json.dumps({"error": one_line(str(exc.detail))}) + "\n").encode()
                return
        yield (json.dumps({"done": True, "pairs": index, "clipped": clipped}) + "\n").encode()
    finally:
        upload.close()


def _plain_error(request: Request, status: int, body_limit: Callable[[str], int]) -> str:
    """The one line for an HTTP error the framework raised (no route, wrong method, body too large),
    naming neither the path nor a method the client made up."""
    if status == 413:  # a body sent without a length, counted as it came (on a path of ours)
        return too_large(request.url.path, body_limit(request.url.path))
    if status == 404:
        return "no such path (the API is under /v1; GET /v1/openapi.json describes it)"
    if status == 405:
        method = request.method if request.method in METHODS else "this method"
        return f"{method} is not allowed on this path"
    return f"HTTP {status}"


def _client_gone(request: Request) -> None:
    """One log line for a client that went away before its request was read (no traceback)."""
    print(
        f"qe serve: a client went away before sending all of its {request.method} {request.url.path} request",
        file=sys.stderr,
        flush=True,
    )
