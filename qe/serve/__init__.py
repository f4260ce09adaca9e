"""``qe serve``: saved models behind a JSON API and a web page, for tools and reviewers that call QE as a
service. The HTTP side (FastAPI on uvicorn) validates requests; worker processes, each holding every
served model loaded once, score them (``qe.serve.pool``), so a worker that dies costs its one request."""
