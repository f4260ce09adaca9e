"""Stream line-aligned text files through a per-chunk computation: bounded memory, parallel, resumable.

``run_stream`` (``qe.stream.runner``) checks the inputs (e.g. ``src`` and ``mt``) whole
(``qe.stream.inputs``), then reads them chunk by chunk (``qe.stream.chunks``) and sends each chunk
to a joblib worker (processes forked from this one on Linux, loky's, or the workers of a Dask
cluster). The worker runs a ``ChunkTask`` (``qe.stream.tasks``): the task object is small (paths and
settings) and builds its heavy state (a model's scoring context, a resource bundle) once per worker
process, keeping it for later chunks. Results come back in input order and go to a ``Sink``
(``qe.stream.sinks``) that appends them to a partial output beside the target; at most
``2 * workers`` chunks are in flight, so memory does not grow with the input.

Resuming (``qe.stream.state``): after every chunk a sidecar state file (``.NAME.state.json`` beside
the target) records the chunks and pairs done, the byte offset reached in each input, the sink's
position (bytes of the partial output) and the inputs' sizes and SHA-256. ``resume=True`` checks
that the inputs and the job are unchanged, truncates whatever the sink wrote after the last
recorded chunk, and goes on from there, so no line is lost or written twice. At the end the partial
output is renamed onto the target (atomic) and the state file is removed. An input error removes
the partial output too; an interruption (Ctrl-C, a kill, a crash) keeps it for ``--resume``.

Each input is opened and read once: scanned whole before any work (checked, counted and hashed, so
a bad line near the end fails at once and nothing is written), its checked bytes kept for the chunks.
The inputs of a run keep at most ``qe.stream.inputs.MEMORY_BUDGET`` bytes (256 MB) together; an input
beyond that is not kept, but read a second time, chunk by chunk, so memory stays bounded.
"""

from qe.stream.chunks import CHUNKS_PER_WORKER, DEFAULT_CHUNK_SIZE, MIN_AUTO_CHUNK, Chunk
from qe.stream.runner import StreamSummary, run_stream
from qe.stream.sinks import AppendSink, ParquetSink, Sink, TextSink
from qe.stream.tasks import ChunkTask, preload_state

__all__ = [
    "CHUNKS_PER_WORKER",
    "DEFAULT_CHUNK_SIZE",
    "MIN_AUTO_CHUNK",
    "AppendSink",
    "Chunk",
    "ChunkTask",
    "ParquetSink",
    "Sink",
    "StreamSummary",
    "TextSink",
    "preload_state",
    "run_stream",
]
