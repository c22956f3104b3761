"""Batches on a Ray cluster: ``bgremover remove --ray``.

``bgremover remove IN -o OUT --ray`` runs the same batch as ``bgremover remove IN -o OUT``
as a Ray Data pipeline, and writes the same files: the same names under the same mirrored
tree, byte for byte the same contents (each records the photo and the settings it was
made with, so a rerun skips it, or makes it again when the settings changed), written
atomically, with the same reasons for skips and failures and the
same exit status (0, 1 when an image failed, 2 when nothing could run, 130 on Ctrl+C).

The pipeline, one row per photo::

    from_items(jobs) -> decode + preprocess (tasks)
                     -> inference (an actor pool: one Remover, one ONNX Runtime session
                        per actor, created once when the actor starts)
                     -> finish: mask, edge refinement, edits, compose, encode and the
                        atomic write (tasks)
                     -> the driver prints each failure and the summary

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

import argparse
import contextlib
import logging
import os
import pickle
import sys
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .engine.batch_report import (
    BEING_WRITTEN,
    FAIL,
    MAKE,
    doubt_line,
    err,
    failure_line,
    failure_reason,
    remove_stale_temp_files,
    report_summary,
    resume_decision,
    skip_line,
    written_place,
)
from .engine.pipeline import EngineConfig, Remover
from .engine.plan import Job
from .errors import DiskFullError, ModelError, UsageError
from .export.compose import ComposeOptions
from .export.output import SourceRecord
from .files.atomic import Claim, windows_long_path
from .network.families import Family
from .network.guard import GuardCheck

log = logging.getLogger(__name__)

#: A test hook: ``N:FILE`` makes an inference actor's process exit (``os._exit``, a real
#: process death) on its Nth image unless FILE exists, creating FILE first, so that it
#: happens once per run; Ray must restart the actor and redo the image.
DIE_HOOK_ENV = "BGREMOVER_RAY_TEST_DIE"

#: Row states, from stage to stage.
TODO, WRITTEN, SKIPPED, FAILED, FATAL, STOPPED = (
    "todo", "written", "skipped", "failed", "fatal", "stopped"
)  # fmt: skip


@dataclass(frozen=True)
class RaySettings:
    """What every stage needs to know about the run (sent once to each worker)."""

    jobs: tuple[Job, ...]
    records: tuple[SourceRecord | None, ...]
    config: EngineConfig
    options: ComposeOptions
    fmt: str
    overwrite: bool
    max_megapixels: float | None
    #: The model's input side and family, read once on the driver from the model file.
    input_size: int
    family: Family | None


def _row(
    index: int, state: str, reason: str = "", payload: bytes = b"", written: int = 0
) -> dict[str, Any]:
    """A row of the pipeline: the same columns in every stage, so blocks stay one schema."""
    return {"index": index, "state": state, "reason": reason, "payload": payload,
            "written": written}  # fmt: skip


def _pack(*values: object) -> bytes:
    # Images differ in size and carry an optional alpha and metadata bytes: pickled, they
    # travel between stages exactly as they are, without Arrow's tensor conversions.
    return pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL)


def _unpack(payload: bytes) -> tuple[Any, ...]:
    return tuple(pickle.loads(payload))  # our own rows, from our own stages


# -- the stages (they run in Ray's worker processes) ------------------------------------


def decode_stage(row: dict[str, Any], settings: RaySettings) -> dict[str, Any]:
    """Read and decode the photo and make the model's input."""
    from .files.imaging import read_image
    from .network.transforms import preprocess

    index = int(row["index"])
    job = settings.jobs[index]
    try:
        t0 = time.perf_counter()
        loaded = read_image(job.source, settings.max_megapixels)
        t1 = time.perf_counter()
        assert settings.family is not None  # set whenever there is work
        batch = preprocess(loaded.rgb, settings.family, settings.input_size)
        timings = {"read": t1 - t0, "preprocess": time.perf_counter() - t1}
    except Exception as exc:
        return _row(index, FAILED, failure_reason(exc, job.source, log))
    return _row(index, TODO, payload=_pack(loaded, batch, timings))


class InferenceActor:
    """One Remover per actor; its ONNX Runtime session is created once, here."""

    config: EngineConfig = EngineConfig()
    die_hook: str | None = None

    def __init__(self) -> None:
        from .engine.pipeline import Remover

        self.remover = Remover.from_config(self.config)
        self.remover.load()
        self.seen = 0

    def _maybe_die(self) -> None:
        if not self.die_hook:
            return
        nth, _, marker = self.die_hook.partition(":")
        self.seen += 1
        if self.seen == int(nth) and not os.path.exists(marker):
            Path(marker).touch()
            os._exit(1)  # a real process death, for the fault-tolerance test

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if row["state"] != TODO:
            return row
        index = int(row["index"])
        loaded, batch, timings = _unpack(row["payload"])
        self._maybe_die()
        try:
            t0 = time.perf_counter()
            raw, found = self.remover.infer_checked(batch)
            timings["infer"] = time.perf_counter() - t0
            # The mask is made here, where the sessions are: a combined model may run its
            # second model on the photo (Remover.masked).
            made = self.remover.masked(loaded.rgb, raw, found)
        except ModelError as exc:  # the model cannot run: the plain batch stops too
            return _row(index, FATAL, str(exc))
        except Exception as exc:
            return _row(index, FAILED, failure_reason(exc, Path(loaded.source), log))
        payload = _pack(loaded, made.mask, timings, made.guard, made.evidence.doubts())
        return _row(index, TODO, payload=payload)


def finish_stage(row: dict[str, Any], settings: RaySettings) -> dict[str, Any]:
    """Mask, refinement, edits, compose, encode; the atomic write under the output's claim."""
    if row["state"] != TODO:
        return row
    from .engine.pipeline import Remover, output_alpha
    from .export.output import write_output

    index = int(row["index"])
    job, record = settings.jobs[index], settings.records[index]
    loaded, mask, timings, found, doubts = _unpack(row["payload"])
    on_disk = Path(windows_long_path(job.output))
    try:
        claim = Claim.try_acquire(on_disk)
    except OSError as exc:
        return _row(index, FAILED, f"{job.output}: cannot be written ({exc}).")
    if claim is None:
        return _row(index, SKIPPED, BEING_WRITTEN)
    with claim:
        # Another run may have made it meanwhile: decided again, under the claim.
        state, redone = _to_do(job, record, settings.overwrite)
        if state != TODO:
            return _row(index, state, redone)
        try:
            t0 = time.perf_counter()
            refine = settings.config.refine
            # Box edits run the model on a crop: only then does this stage load it.
            segment = Remover.from_config(settings.config).segment if job.edits else None
            alpha = output_alpha(loaded, mask, refine, job.edits, segment)
            t1 = time.perf_counter()
            written = write_output(
                loaded.rgb, alpha, settings.options, job.output, settings.fmt, record, claim,
                loaded.metadata,
            )  # fmt: skip
            timings.update(finish=t1 - t0, write=time.perf_counter() - t1)
        except DiskFullError as exc:
            return _row(index, STOPPED, str(exc))
        except Exception as exc:
            return _row(index, FAILED, failure_reason(exc, job.source, log))
    # A written row's reason: why it replaced an output made with other settings, if it did.
    return _row(index, WRITTEN, redone, payload=_pack(timings, found, doubts), written=written)


def _to_do(job: Job, record: SourceRecord | None, overwrite: bool) -> tuple[str, str]:
    """What ``job``'s output is to this run, by the plain batch's rules
    (:func:`~bgremover.engine.batch_report.resume_decision`): (TODO, "") to make it, (TODO, why)
    to make it again (other settings), else (SKIPPED or FAILED, why)."""
    decision = resume_decision(job.output, record, overwrite)
    if decision.detail:
        log.info(decision.detail)
    state = {MAKE: TODO, FAIL: FAILED}.get(decision.action, SKIPPED)
    return state, decision.reason


# -- the driver ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One photo's end, as the driver reports it."""

    index: int
    state: str
    reason: str = ""
    written: int = 0
    timings: Mapping[str, float] | None = None
    #: For int8: what the int8 guard found on the photo.
    guard: GuardCheck | None = None
    #: Why the cutout may be wrong (``Result.doubts``).
    doubts: tuple[str, ...] = ()


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
        "config": settings.config, "die_hook": os.environ.get(DIE_HOOK_ENV)})  # fmt: skip
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
        written = row["state"] == WRITTEN
        timings, found, doubts = _unpack(row["payload"]) if written else (None, None, ())
        yield Outcome(int(row["index"]), str(row["state"]), str(row["reason"]),
                      int(row["written"]), timings, found, doubts)  # fmt: skip


def _model_input(remover: Remover) -> tuple[int, Family]:
    """The model's input side and family, from the model file (the driver has it already);
    a combined model's are its first model's (the one every photo goes through)."""
    first = remover.members[0] if remover.members else remover
    return first.input_size, first.family


def cmd_remove_ray(
    args: argparse.Namespace,
    jobs: Sequence[Job],
    problems: Sequence[tuple[Path, str]],
    config: EngineConfig,
    options: ComposeOptions,
    fmt: str,
) -> int:
    """``bgremover remove ... --ray``: the batch on Ray, reported as the plain batch is."""
    start = time.monotonic()
    overwrite = bool(getattr(args, "overwrite", False))
    remove_stale_temp_files(jobs, log)
    records: list[SourceRecord | None] = []
    todo: list[int] = []
    done = skipped = 0
    redone: dict[str, int] = {}
    failures: list[tuple[Path, str]] = []
    # What the outputs record of their settings, as the plain batch's (no session is made).
    remover = Remover.from_config(config)
    made_with = remover.output_settings(options, fmt)

    def report(job: Job, state: str, reason: str) -> None:
        nonlocal skipped
        if state == FAILED:
            failures.append((job.source, reason))
            err(failure_line(job.source, reason))
        else:
            skipped += 1
            line = skip_line(job.source, reason)
            if line is not None:
                err(line)

    # Finished outputs are skipped here, before anything is sent to Ray; the finishing
    # stage looks again under the output's claim, as the plain batch does once claimed.
    for index, job in enumerate(jobs):
        record = None
        settings_of_job = remover.output_settings(options, fmt, job.edits) if job.edits else None
        with contextlib.suppress(OSError):  # if so, reading the photo says what is wrong
            record = SourceRecord.of(job.source, settings_of_job or made_with)
        records.append(record)
        state, reason = _to_do(job, record, overwrite)
        if state == TODO:
            todo.append(index)  # the finishing stage says whether it was made again
        else:
            report(job, state, reason)

    settings = RaySettings(
        tuple(jobs), tuple(records), config, options, fmt, overwrite,
        getattr(args, "max_megapixels", None), *(_model_input(remover) if todo else (0, None)),
    )  # fmt: skip
    stopped: str | None = None
    guarded: list[GuardCheck | None] = []
    doubtful = 0
    started_here = connect(args.ray) if todo else False
    ray = sys.modules.get("ray")
    try:
        for outcome in run_ray(todo, settings):
            job = jobs[outcome.index]
            if outcome.state == WRITTEN:
                done += 1
                if outcome.reason:  # made again: its settings had changed
                    redone[outcome.reason] = redone.get(outcome.reason, 0) + 1
                guarded.append(outcome.guard)
                log.info("%s -> %s", job.source, job.output)
                if outcome.doubts:
                    doubtful += 1
                    log.info("%s", doubt_line(job.source, outcome.doubts, config.model))
            elif outcome.state == FATAL:
                raise ModelError(outcome.reason)
            elif outcome.state == STOPPED:
                failures.append((job.source, outcome.reason))
                err(failure_line(job.source, outcome.reason))
                stopped = outcome.reason
                break
            else:
                report(job, outcome.state, outcome.reason)
    finally:
        if started_here and ray is not None:
            ray.shutdown()  # stops the workers: what they were writing stays a temp file
            remove_stale_temp_files(jobs)  # ...which no run holds now: delete them
    return report_summary(
        done=done,
        redone=redone,
        skipped=skipped,
        failed=len(failures) + len(problems),
        seconds=time.monotonic() - start,
        where=written_place(jobs, Path(args.output)),  # only a file or folder that exists
        stopped=stopped,
        guarded=guarded,
        doubtful=doubtful,
        doubts_named=log.isEnabledFor(logging.INFO),  # each doubt_line was logged
    )
