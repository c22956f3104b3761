"""Batches on a Ray cluster: ``bgremover remove --ray``.

``bgremover remove IN -o OUT --ray`` runs the same batch as ``bgremover remove IN -o OUT``
as a Ray Data pipeline, and writes the same files: the same names under the same mirrored
tree, byte for byte the same contents (each records the photo and the settings it was
made with, so a rerun skips it, or makes it again when the settings changed), written
atomically, with the same reasons for skips and failures and the
same exit status (0, 1 when an image failed, 2 when nothing could run, 130 on Ctrl+C).

The pipeline, one row per photo::

    from_items(jobs) -> decode + preprocess (tasks)
                     -> inference and the mask (an actor pool: one Remover, one ONNX
                        Runtime session per actor, created once when the actor starts)
                     -> finish: edge refinement, edits, compose, encode and the atomic
                        write (tasks), the plain batch's own steps
                     -> the driver yields each photo's outcome, which the command line
                        reports as the plain batch's

Where it runs
-------------
- ``--ray`` starts Ray on this machine, with one CPU slot per core, and stops it at the end.
- ``--ray auto`` joins the cluster this machine belongs to (``ray start`` was run here),
  ``--ray ray://HEAD:10001`` joins one through Ray Client; the run stops at the end, the
  cluster keeps running.

A real cluster needs, on every node: ``pip install 'bgremover[ray]'`` (the same version as
the driver), the model in bgremover's model cache or a node able to download it (set
``BGREMOVER_HOME`` to a shared folder to download it once), and the input and output
folders at the same paths (a shared file system: NFS, a mounted volume). With KubeRay, build
the head and worker image from one that has ``bgremover[ray]`` installed, run
``bgremover models pull u2netp`` (or the model used) into the image's cache, and mount
the photo volume at the same path on the head and the workers; then run the command on the
head, or from outside with ``--ray ray://HEAD-SERVICE:10001``.

Paths are local (or shared-mount) paths only. Object stores (S3, GCS through pyarrow or
fsspec) are not supported: a rerun's resume reads the photo's record back from the existing
output, runs sharing a folder coordinate through operating-system file locks beside each
output, and a write is atomic by renaming a finished temporary file in the same folder.
Object stores have no such locks or renames, so supporting them would mean dropping
resume safety and the claims rather than carrying them over.

Failures and stopping
---------------------
A photo that cannot be read or written is reported (``bgremover: failed: ...``, exit 1)
and the others go on. An actor or worker process that dies (killed, out of memory) is
restarted by Ray and its image redone (actors: ``max_restarts=-1``,
``max_task_retries=-1``; tasks: ``max_retries``). Writes are atomic, so a killed writer
leaves no partial output, only a hidden temporary file that the next run deletes. Ctrl+C
stops the run: local Ray is shut down, its leftover temporary files are deleted, and only
complete outputs remain.

What it costs
-------------
On one machine ``--ray`` adds Ray's start-up (seconds) to the plain batch, and between
photos keeps its pace; it pays off when it adds machines, each node running its own
actors. The stages' costs, measured: docs/decisions/0008.

Ray's own log lines are kept at errors only; one it prints itself when the actor pool
starts (about actor constructor arguments in the object store) is harmless here: the
actor's settings are class attributes, and Ray Data's own arguments stay referenced
for the whole run.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .engine.batch import (
    BatchEvent,
    BatchSettings,
    BatchStarted,
    Item,
    ItemFailed,
    Outcome,
    Tally,
    claim_output,
    decide,
    finish_item,
    mask_item,
    source_record,
)
from .engine.batch_report import remove_stale_temp_files
from .engine.pipeline import EngineConfig, Remover
from .engine.plan import Job
from .errors import ModelError, UsageError
from .export.output import SourceRecord
from .network.families import Family

log = logging.getLogger(__name__)

#: Row states, from stage to stage: still to do (the payload is the next stage's input),
#: ended (the payload is the photo's :data:`~bgremover.engine.batch.Outcome`), or the
#: model could not run (the payload is why: the plain batch stops too).
TODO, ENDED, FATAL = "todo", "ended", "fatal"


@dataclass(frozen=True)
class RaySettings:
    """What every stage needs to know about the run (sent once to each worker)."""

    jobs: tuple[Job, ...]
    records: tuple[SourceRecord | None, ...]
    config: EngineConfig
    #: What the outputs are and how a finished one is treated (options, format, overwrite,
    #: the megapixel limit), as the plain batch's.
    batch: BatchSettings
    #: The model's input side and family, read once on the driver from the model file.
    input_size: int
    family: Family | None


def _row(index: int, state: str, payload: bytes) -> dict[str, Any]:
    """A row of the pipeline: the same columns in every stage, so blocks stay one schema."""
    return {"index": index, "state": state, "payload": payload}


def _pack(*values: object) -> bytes:
    # Images differ in size and carry an optional alpha and metadata bytes: pickled, they
    # travel between stages exactly as they are, without Arrow's tensor conversions.
    return pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(payload: bytes) -> tuple[Any, ...]:
    return tuple(pickle.loads(payload))  # our own rows, from our own stages


def _ended(row: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    return _row(int(row["index"]), ENDED, _pack(outcome))


def _item(row: dict[str, Any], settings: RaySettings) -> Item:
    """The row's photo as the plain batch's stages hold it (its index 1-based, as theirs)."""
    index = int(row["index"])
    return Item(index + 1, settings.jobs[index], time.perf_counter(),
                record=settings.records[index])  # fmt: skip


# -- the stages (they run in Ray's worker processes) ------------------------------------


def decode_stage(row: dict[str, Any], settings: RaySettings) -> dict[str, Any]:
    """Read and decode the photo and make the model's input."""
    from .files.imaging import read_image
    from .network.transforms import preprocess

    item = _item(row, settings)
    try:
        t0 = time.perf_counter()
        loaded = read_image(item.job.source, settings.batch.max_megapixels)
        t1 = time.perf_counter()
        assert settings.family is not None  # set whenever there is work
        batch = preprocess(loaded.rgb, settings.family, settings.input_size)
        timings = {"read": t1 - t0, "preprocess": time.perf_counter() - t1}
    except Exception as exc:
        return _ended(row, ItemFailed.of(item.index, len(settings.jobs), item.job, exc))
    return _row(int(row["index"]), TODO, _pack(loaded, batch, timings))


class InferenceActor:
    """One Remover per actor; its ONNX Runtime session is created once, here."""

    config: EngineConfig = EngineConfig()
    settings: RaySettings | None = None

    def __init__(self) -> None:
        self.remover = Remover.from_config(self.config)
        self.remover.load()

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if row["state"] != TODO:
            return row
        assert self.settings is not None
        item = _item(row, self.settings)
        item.loaded, batch, item.timings = _unpack(row["payload"])
        try:
            t0 = time.perf_counter()
            raw, found = self.remover.infer_checked(batch)
            item.timings["infer"] = time.perf_counter() - t0
            del batch
            # The mask is made here, where the sessions are: a combined model may run its
            # second model on the photo (Remover.masked).
            made = mask_item(self.remover, item, raw, found)
        except ModelError as exc:  # the model cannot run: the plain batch stops too
            return _row(int(row["index"]), FATAL, _pack(str(exc)))
        except Exception as exc:
            total = len(self.settings.jobs)
            return _ended(row, ItemFailed.of(item.index, total, item.job, exc))
        return _row(int(row["index"]), TODO, _pack(item.loaded, made, item.timings))


def finish_stage(row: dict[str, Any], settings: RaySettings) -> dict[str, Any]:
    """The plain batch's finishing step (refine, edits, compose, encode, the atomic
    write), under the output's claim, taken here: the process that writes holds it."""
    if row["state"] != TODO:
        return row
    item = _item(row, settings)
    item.loaded, made, item.timings = _unpack(row["payload"])
    # Where the stages ran in other processes, the photo's seconds are theirs.
    item.started -= sum(item.timings.values())
    total = len(settings.jobs)
    outcome: Outcome | None = None
    try:
        # Another run may have made it meanwhile: decided again, under the claim.
        outcome = claim_output(item, total, settings.batch.overwrite)
        if outcome is None:
            # Box edits run the model on a crop: only then does this stage load it.
            segment = Remover.from_config(settings.config).segment if item.job.edits else None
            outcome = finish_item(item, made, total, settings.batch, settings.config.refine,
                                  segment)  # fmt: skip
    except Exception as exc:
        outcome = ItemFailed.of(item.index, total, item.job, exc)
    finally:
        if item.claim is not None:
            item.claim.release()
    return _ended(row, outcome)


# -- the driver ---------------------------------------------------------------------------


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--ray needs Ray, which is not installed.",
            fix="Install it with: pip install 'bgremover[ray]'",
        ) from None
    return ray


#: What a Ray that ``--ray`` starts on this machine is started with, and why. Ray's own
#: processes (GCS, raylet, dashboard) read these from the environment they inherit.
LOCAL_RAY_ENV = {
    # Ray's usage statistics (sent to usage-stats.ray.io) off, whatever ~/.ray/config.json
    # or the user's environment says: bgremover promises no outbound connection.
    "RAY_USAGE_STATS_ENABLED": "0",
    # Ray's processes on 127.0.0.1 only, as Ray does on Windows and macOS: on Linux it
    # otherwise finds the machine's network address by a connect() towards 8.8.8.8 and
    # listens on that address, reachable from the network, for a run that never leaves
    # this machine. Read when ray is imported, so it is set before that.
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
}

#: Ray's variables that name an authentication token for the cluster.
_RAY_TOKEN_ENV = ("RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


def _prepare_local_ray() -> None:
    """Set up this process's environment for starting a local Ray (see LOCAL_RAY_ENV).

    Ray (2.60, as tested) also turns on token authentication for a cluster that
    ``ray.init()`` starts and, when no token is configured, writes a new one to
    ``~/.ray/auth_token``, where it stays. A token of this run's own, in the environment
    that Ray's processes inherit, keeps the authentication and leaves nothing in HOME. A
    token or mode the user set is kept as it is.
    """
    import secrets

    os.environ.update(LOCAL_RAY_ENV)
    configured = any(os.environ.get(name) for name in _RAY_TOKEN_ENV)
    if not configured and os.environ.get("RAY_AUTH_MODE", "token").lower() == "token":
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def runtime_env() -> dict[str, Any]:
    """The runtime environment every Ray worker of the run gets, on any cluster.

    A worker imports bgremover before ONNX Runtime, which sets the telemetry variables
    anyway (see ``bgremover._keep_onnxruntime_telemetry_off``); passing them to Ray as
    well sets them before the worker's first line of Python runs, on nodes this machine
    did not start and whatever their own environment says.
    """
    from . import ONNXRUNTIME_TELEMETRY_OFF

    return {"env_vars": dict(ONNXRUNTIME_TELEMETRY_OFF)}


def connect(address: str) -> bool:
    """Start a local Ray (``local``) or join the cluster at ``address``; True if started here."""
    if address == "local":
        _prepare_local_ray()
    ray = _import_ray()
    if ray.is_initialized():
        return False
    quiet = {"logging_level": logging.ERROR, "log_to_driver": False}
    if address == "local":
        ray.init(
            num_cpus=os.cpu_count() or 1,
            include_dashboard=False,
            runtime_env=runtime_env(),
            **quiet,
        )
        return True
    ray.init(address=address, runtime_env=runtime_env(), **quiet)
    return False


def _quiet_data(ray: Any) -> None:
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    with contextlib.suppress(AttributeError):
        context.print_on_execution_start = False
    for name in ("ray.data", "ray"):
        logging.getLogger(name).setLevel(logging.ERROR)


def stage_cpus() -> tuple[float, float]:
    """CPUs asked for by (each inference actor, each decode or finish task).

    The actor's ONNX Runtime uses every core while it runs the model, as in the plain
    batch, and decode and finish tasks fill the gaps between images: asking one CPU for
    the actor and half of one for each task lets one of each stage run at once on two
    cores instead of the actor waiting for tasks (or tasks for each other).
    """
    return 1.0, 0.5


def run_ray(
    todo: Sequence[int],
    settings: RaySettings,
    actors: int | None = None,
) -> Iterator[Outcome]:
    """Run the ``todo`` jobs (indexes into ``settings.jobs``) on Ray; yield each outcome
    as it completes. Ray must be initialised (:func:`connect`)."""
    ray = _import_ray()
    _quiet_data(ray)
    if not todo:
        return
    actor_cpus, task_cpus = stage_cpus()
    if actors is None:
        cluster_cpus = float(ray.cluster_resources().get("CPU", 1))
        actors = max(1, int(cluster_cpus // 2))  # a core for the model, one for the rest
    # A block per photo: each streams through the stages on its own.
    ds = ray.data.from_items([{"index": i} for i in todo], override_num_blocks=len(todo))
    # The actor's settings as class attributes rather than constructor arguments: Ray
    # keeps those in the object store, where a restarted actor might not find them.
    actor = type("InferenceActor", (InferenceActor,), {
        "config": settings.config, "settings": settings})  # fmt: skip
    with warnings.catch_warnings():
        # Ray Data takes the retry options as remote arguments, which it warns are to be
        # renamed; they are its documented defaults, set here so that they stay so.
        warnings.simplefilter("ignore", category=DeprecationWarning)
        ds = ds.map(decode_stage, fn_kwargs={"settings": settings}, num_cpus=task_cpus,
                    max_retries=-1)  # fmt: skip
        ds = ds.map(
            actor,
            compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=actor_cpus,
            max_restarts=-1,  # a dead actor is replaced...
            max_task_retries=-1,  # ...and the image it held is run again
        )
        ds = ds.map(finish_stage, fn_kwargs={"settings": settings}, num_cpus=task_cpus,
                    max_retries=-1)  # fmt: skip
    for row in ds.iter_rows():
        (value,) = _unpack(row["payload"])
        if row["state"] == FATAL:
            raise ModelError(value)
        yield value


def _model_input(remover: Remover) -> tuple[int, Family]:
    """The model's input side and family, from the model file (the driver has it already);
    a combined model's are its first model's (the one every photo goes through)."""
    first = remover.members[0] if remover.members else remover
    return first.input_size, first.family


def ray_batch(
    jobs: Sequence[Job], remover: Remover, settings: BatchSettings, address: str
) -> Iterator[BatchEvent]:
    """``bgremover remove ... --ray``: the batch of :func:`~bgremover.engine.batch.run_batch`
    on Ray (``address``, see :func:`connect`), as the same events. ``remover`` is the
    driver's, its model loaded: what the outputs record and the model's input are its own."""
    start = time.perf_counter()
    remove_stale_temp_files(jobs, log)
    yield BatchStarted(len(jobs))
    tally = Tally()
    made_with = remover.output_settings(settings.options, settings.fmt)
    records: list[SourceRecord | None] = []
    todo: list[int] = []
    # Finished outputs are skipped here, before anything is sent to Ray; the finishing
    # stage looks again under the output's claim, as the plain batch does once claimed.
    for index, job in enumerate(jobs):
        item = Item(index + 1, job, start)
        item.record = source_record(job, remover, settings.options, settings.fmt, made_with)
        records.append(item.record)
        if (skipped := decide(item, len(jobs), settings.overwrite)) is None:
            todo.append(index)  # the finishing stage says whether it was made again
        else:
            tally.add(skipped)
            yield skipped
    shape = _model_input(remover) if todo else (0, None)
    on_ray = RaySettings(tuple(jobs), tuple(records), remover.config, settings, *shape)
    started_here = connect(address) if todo else False
    ray = sys.modules.get("ray")
    try:
        for outcome in run_ray(todo, on_ray):
            tally.add(outcome)
            yield outcome
            if tally.stopped:
                break
    finally:
        if started_here and ray is not None:
            ray.shutdown()  # stops the workers: what they were writing stays a temp file
            remove_stale_temp_files(jobs)  # ...which no run holds now: delete them
    yield tally.finished(time.perf_counter() - start)
