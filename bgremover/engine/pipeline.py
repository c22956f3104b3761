"""The engine: load -> preprocess -> infer -> postprocess -> compose, for one image.

One module because :class:`EngineConfig`, :class:`Remover` and the record of what an
output was made with are one contract: a record is right only if it reads the settings
the chain itself uses.

Each stage is a small function on numpy arrays; only :meth:`Remover.infer`
touches ONNX Runtime. The CLI, the batch runner and the GUI all drive this
same chain.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from ..errors import EditsError, InferenceError, ModelError, UsageError, refuse_unknown
from ..export.compose import ComposeOptions, compose, compose_array
from ..export.options import Length
from ..export.output import OutputSettings
from ..files.imaging import LoadedImage, from_array, from_pil, read_image
from ..mask.combine import Evidence, agreement, evidence, fuse
from ..mask.refine import refine_alpha
from ..network.families import Family, Signature, guess_family
from ..network.guard import GuardCheck, check
from ..network.measured import providers_for
from ..network.models import DEFAULT_MODEL, PRECISIONS, ModelSpec, resolve_spec
from ..network.session import (
    CPU,
    SessionInfo,
    SessionPool,
    create_session,
    resolve_providers,
)
from ..network.store import ModelStore, file_identity
from ..network.transforms import mask_from_score, preprocess, score_map
from ..touchup.edit import Edits, Prompter, Segmenter, apply_edits
from .clicking import shared_click_model

#: ComposeOptions is here for ``from bgremover import ComposeOptions`` (the package's names).
__all__ = ["ComposeOptions", "EngineConfig", "Remover", "Result"]

ImageInput = str | os.PathLike[str] | Image.Image | np.ndarray | LoadedImage

#: Called with (task, done, total) while a model is prepared: task is "download"
#: (bytes) or "quantize" (calibration samples). It may raise to cancel. A combined
#: model's members report through its ``for_model(name)`` where it has one.
TaskProgress = Callable[[str, int, "int | None"], None]


def combine_alpha(mask: np.ndarray, input_alpha: np.ndarray | None) -> np.ndarray:
    """The output alpha: the model's mask, limited by the input's own transparency."""
    if input_alpha is None:
        return mask
    product = mask.astype(np.uint16) * input_alpha.astype(np.uint16)
    return ((product + 127) // 255).astype(np.uint8)


def model_mask(
    score: np.ndarray, width: int, height: int, family: Family, refine: bool
) -> np.ndarray:
    """The model's mask at the source size from its :func:`score_map`. Used as it is
    (``refine`` off) it is rembg's to the pixel: the same Lanczos upscale. Refinement
    reworks the edges anyway, so then the upscale is the fast bicubic one."""
    return mask_from_score(score, width, height, family, exact=not refine)


def edit_base(rgb: np.ndarray, mask: np.ndarray, refine: bool) -> np.ndarray:
    """The mask edits start from: the model's ``mask``, edge-refined when ``refine``."""
    return refine_alpha(rgb, mask) if refine else mask


def output_alpha(
    image: LoadedImage,
    mask: np.ndarray,
    refine: bool,
    edits: Edits | None = None,
    segment: Segmenter | None = None,
) -> np.ndarray:
    """The alpha outputs use: ``mask``, edge-refined with the photo's colours when
    ``refine``, with the user's ``edits`` replayed on it (``segment`` runs the model
    for box edits), limited by the input's own transparency."""
    alpha = edit_base(image.rgb, mask, refine)
    if edits:
        alpha = apply_edits(edits, image.rgb, alpha, segment, click_prompter(edits, image.rgb))
    return combine_alpha(alpha, image.alpha)


def click_prompter(edits: Edits, rgb: np.ndarray) -> Prompter | None:
    """The click model bound to ``rgb`` when ``edits`` hold clicks made with one (the model
    obtained and the photo encoded here); None when they hold none."""
    models = sorted(edits.click_models)
    if not models:
        return None
    if len(models) > 1:
        raise EditsError(
            f"These edits mix clicks of several click models ({', '.join(models)}); "
            "one photo's clicks are replayed with one.",
            fix="Make the clicks again with one click model.",
        )
    return shared_click_model(models[0]).prompter_for(rgb)


@dataclass(frozen=True)
class Result:
    """One image's outcome. Arrays are at the source size, upright."""

    image: LoadedImage
    #: The model's mask (uint8, H x W): rembg's when unrefined (see :func:`model_mask`).
    mask: np.ndarray
    #: The alpha that outputs use: the mask, edge-refined unless refinement is
    #: off, combined with the input's own alpha.
    alpha: np.ndarray
    #: Seconds per stage: read, preprocess, infer, postprocess, refine.
    timings: Mapping[str, float]
    model: str
    providers: tuple[str, ...]
    fallbacks: tuple[str, ...] = field(default=())
    precision: str = "fp32"
    #: The model's main output before min-max normalisation (S x S float32).
    raw: np.ndarray | None = field(default=None, repr=False)
    #: How the model's input and output are laid out (for the mask made again from raw).
    family: Family | None = field(default=None, repr=False)
    #: For int8: what the int8 guard found (``precision`` is "fp32" when it ran fp32).
    guard: GuardCheck | None = None
    #: What the model's mask says about whether the cutout can be trusted (see
    #: :mod:`~bgremover.mask.combine`); :attr:`Evidence.doubts` words its doubts.
    evidence: Evidence | None = None
    #: The models that made the mask: one, or for a combined model the ones it ran.
    models: tuple[str, ...] = ()

    @property
    def doubts(self) -> tuple[str, ...]:
        """Why this cutout may be wrong, in words; () when nothing points to it."""
        return self.evidence.doubts() if self.evidence is not None else ()

    def compose_array(self, options: ComposeOptions | None = None) -> np.ndarray:
        """The output pixels: cutout (RGBA) by default, or mask / background per ``options``."""
        return compose_array(self.image.rgb, self.alpha, options or ComposeOptions())

    def compose(self, options: ComposeOptions | None = None) -> Image.Image:
        """The output image: cutout by default, or mask / solid background per ``options``."""
        return compose(self.image.rgb, self.alpha, options or ComposeOptions())

    def cutout(self) -> Image.Image:
        return self.compose(ComposeOptions())

    def edit_base(self, refine: bool) -> np.ndarray:
        """The mask the user's edits start from: the model's mask, edge-refined when
        ``refine``, before the input's own transparency (what :func:`output_alpha`
        replays edits on)."""
        return edit_base(self.image.rgb, self.mask, refine)

    def with_edited_alpha(self, edited: np.ndarray) -> Result:
        """This result with ``edited`` (the mask after the user's edits, before the input's
        own transparency) as the alpha its outputs use."""
        return replace(self, alpha=combine_alpha(edited, self.image.alpha))

    def with_refinement(self, refine: bool) -> Result:
        """This result with its alpha made again from the model's mask, refined or not:
        what a change of the refinement setting needs, without running the model again."""
        start = time.perf_counter()
        mask = self.mask
        if self.raw is not None and self.family is not None:  # its upscale depends on refine
            height, width = mask.shape
            mask = model_mask(self.raw, width, height, self.family, refine)
        alpha = output_alpha(self.image, mask, refine)
        timings = {**self.timings, "refine": time.perf_counter() - start}
        return replace(self, mask=mask, alpha=alpha, timings=timings)


@dataclass(frozen=True)
class EngineConfig:
    """How images are cut out: which model runs, how, and whether edges are refined.

    The CLI builds one from its options, the app from its settings; both make
    their :class:`Remover` from it with :meth:`Remover.from_config`.
    """

    #: A registry model name or the path of a local ``.onnx`` file.
    model: str = DEFAULT_MODEL
    #: "fp32", or "int8" (made from the fp32 model on first use).
    precision: str = "fp32"
    #: "auto", "cpu", "cuda,cpu", ... (see :func:`~bgremover.network.session.resolve_providers`).
    providers: str = "auto"
    #: ONNX Runtime threads; 0 = one per physical core.
    threads: int = 0
    #: Refine the mask's edges with the photo's colours (see refine.py).
    refine: bool = True
    #: The int8 recipe; None for the family's default one.
    recipe: str | None = None
    #: For a model file of your own: its family (``families.py``); None to read it
    #: from the file's name or signature.
    family: str | None = None
    #: For class-map models (clothes): the class names or numbers that make the mask;
    #: empty for the family's default (all of them).
    classes: tuple[str, ...] = ()
    #: For models with a free input size (``birefnet-dynamic``): the long side of the
    #: model's input in pixels, for more detail on large photos (slower); None: the
    #: family's default.
    resolution: int | None = None
    #: For int8: run a photo in fp32 as well, and use that result, when int8 is in doubt
    #: on it (see guard.py).
    int8_guard: bool = True


#: The version of the engine's pixels: bumped by a change to the engine that changes the
#: output of the same photo with the same settings (the model's input or mask, the edge
#: refinement, the compose, an encoder's options), so that a rerun makes again the outputs
#: an older engine made (see :meth:`Remover.output_settings`).
PIXELS_VERSION = 1

#: The settings of :class:`EngineConfig` that change how fast an output is made, never what
#: it is: an output's record leaves them out (another provider or thread count makes the same file).
SPEED_ONLY = frozenset({"providers", "threads"})


class Remover:
    """Removes backgrounds with one model; its ORT session comes from a :class:`SessionPool`.

    The session is created on first use (which obtains the model through the store,
    reporting download progress to ``progress``) and reused for every image: never one per
    image. Removers that share a pool share sessions, so several Removers of the same model
    that differ only in refinement hold one session. Without a pool, the Remover gets one of
    its own. ``remove`` may be called from one worker thread at a time per Remover; ORT's
    ``run`` itself releases the GIL.
    """

    def __init__(
        self,
        config: EngineConfig | str | ModelSpec | None = None,
        *,
        store: ModelStore | None = None,
        progress: TaskProgress | None = None,
        pool: SessionPool | None = None,
        **settings: Any,
    ) -> None:
        """A Remover for ``config``; a model's name or path (or a :class:`ModelSpec`)
        stands for the default :class:`EngineConfig` with that model, and ``settings``
        are EngineConfig fields that replace its own (``Remover("u2netp",
        precision="int8")``). A name that is not an EngineConfig field is refused."""
        spec = config if isinstance(config, ModelSpec) else None
        if isinstance(config, EngineConfig):
            base = config
        elif isinstance(config, ModelSpec):
            base = EngineConfig(str(config.local_path) if config.local_path else config.name)
        else:
            base = EngineConfig(config or DEFAULT_MODEL)
        refuse_unknown("Remover", settings, [f.name for f in fields(EngineConfig)])
        made = replace(base, **settings)
        made = replace(made, classes=tuple(made.classes))
        if made.precision not in PRECISIONS:
            raise UsageError(f"Unknown precision {made.precision!r}; use fp32 or int8.")
        #: How this Remover cuts out: the one record of its settings.
        self.config = made
        self.spec = spec or resolve_spec(made.model, made.family)
        self._family: Family | None = None
        if self.spec.family is not None:
            self._family = self._choose_classes(self.spec.family)
            if made.precision == "int8":
                self.int8_recipes()  # refuses a model without int8 before any work
        self.store = store or ModelStore()
        # ``auto``: what ``bench --save`` measured here, if it did (network/measured.py).
        self.providers = (
            resolve_providers(made.providers)
            if self.spec.members
            else providers_for(
                made.providers, self.store.home, self.spec.name, made.precision, made.threads
            )
        )
        # Each model's precision: a combined model's int8 members run int8 at either one,
        # on the CPU provider of a processor where int8 is fast (elsewhere it costs a build
        # and saves no time, and an accelerator runs fp32 well).
        from ..network.quantize import fast_int8  # the build tools' module, imported late

        fast = bool(self.spec.int8_members) and self.providers == (CPU,) and fast_int8()
        precisions = [
            "int8" if fast and name in self.spec.int8_members else made.precision
            for name in self.spec.members
        ] or [made.precision]
        # A guarded int8 Remover of its own keeps the fp32 session it may need beside it;
        # a combined model, each of its models' sessions.
        capacity = sum(1 + (p == "int8") for p in precisions)
        self.pool = pool if pool is not None else SessionPool(capacity=capacity)
        self._progress = progress
        self._key: tuple[Any, ...] | None = None
        #: For a combined model (``--model best``): a Remover per model it runs, sharing
        #: this one's store, progress and pool; () for a model of its own.
        self.members: tuple[Remover, ...] = ()
        # One photo at a time through the second model: the batch's finishing threads
        # would otherwise each hold IS-Net's working memory (about 1 GB at 1024 px) at once.
        self._second_lock = threading.Lock()
        if self.spec.members:
            if made.recipe is not None:
                raise UsageError(
                    f"{self.spec.name} runs each of its models with its own int8 recipe; "
                    "--recipe applies to one model."
                )
            named = getattr(progress, "for_model", lambda _name: progress)
            self.members = tuple(
                Remover(replace(made, model=name, precision=precision), store=self.store,
                        progress=named(name), pool=self.pool)
                for name, precision in zip(self.spec.members, precisions, strict=True)
            )  # fmt: skip

    @classmethod
    def from_config(
        cls,
        config: EngineConfig,
        *,
        pool: SessionPool | None = None,
        store: ModelStore | None = None,
        progress: TaskProgress | None = None,
    ) -> Remover:
        """The Remover for ``config``; cheap when ``pool`` already holds its session."""
        return cls(config, pool=pool, store=store, progress=progress)

    @property
    def precision(self) -> str:
        """ "fp32", or "int8" (made from the fp32 model on first use)."""
        return self.config.precision

    @property
    def recipe(self) -> str | None:
        """The int8 recipe asked for; None for the family's default (:attr:`int8_recipe`)."""
        return self.config.recipe

    @property
    def refine(self) -> bool:
        """Refine the mask's edges with the photo's colours (hair, fur); see refine.py."""
        return self.config.refine

    def model_identity(self) -> str:
        """The model file by its content: a registry model's published hash, or the SHA-256
        of a file of your own (hashed once per path, size and modification time)."""
        if self.spec.local_path is not None:
            return f"sha256:{file_identity(self.spec.local_path)}"
        if self.members:  # the rule by its version, the models by their contents, and
            # how each ran where that is not the combined model's own precision
            return f"combined-{COMBINED_VERSION}:" + "+".join(
                m.model_identity()
                + (f"@{m.precision_words()}" if m.precision != self.precision else "")
                for m in self.members
            )
        return self.spec.known_hash or self.spec.name

    def session_key(self) -> tuple[Any, ...]:
        """What decides the session: model file, precision (and recipe), providers, threads."""
        if self._key is None and self.members:
            self._key = tuple(m.session_key() for m in self.members)
        if self._key is None:
            recipe = self.int8_recipe if self.precision == "int8" else None
            self._key = (self.model_identity(), self.precision, recipe, self.providers,
                         self.config.threads)  # fmt: skip
        return self._key

    def output_settings(
        self, options: ComposeOptions, fmt: str, edits: Edits | None = None
    ) -> OutputSettings:
        """What an output of this Remover made with ``options`` as a ``fmt`` file, with the
        user's ``edits``, records about its settings: the one place that decides them.

        The digest covers every :class:`EngineConfig` setting but :data:`SPEED_ONLY` (as
        :data:`_RECORDED` says each: the model by its content, the int8 settings only for
        int8), every field of ``options`` that is not at its default (a background image by
        its content), the format, the edits (by content) and :data:`PIXELS_VERSION`. A new
        field of either dataclass is covered the day it is added; an export option at its
        default is left out, so adding one (off by default) keeps every existing output done.
        A rerun whose digest differs makes the output again.
        """
        engine = {
            f.name: _RECORDED.get(f.name, _attribute(f.name))(self)
            for f in fields(EngineConfig)
            if f.name not in SPEED_ONLY
        }
        default = asdict(type(options)())
        export = {k: v for k, v in asdict(options).items() if v != default[k]}
        if options.background_image is not None:
            export["background_image"] = _content_digest(options.background_image)
        made = {
            "pixels": PIXELS_VERSION,
            "engine": engine,
            "export": export,
            "format": fmt,
            "edits": hashlib.sha256(edits.to_json().encode()).hexdigest() if edits else None,
        }
        text = json.dumps(made, sort_keys=True, separators=(",", ":"))
        digest = hashlib.sha256(text.encode()).hexdigest()
        return OutputSettings(digest, self._settings_words(options, fmt, edits), bool(edits))

    def _settings_words(self, options: ComposeOptions, fmt: str, edits: Edits | None) -> str:
        """The settings in a line: the engine's, the format, the export options that are
        not the defaults, and whether the mask was edited."""
        engine = self.precision_words()
        if self.config.classes:
            engine += f", classes={','.join(self.config.classes)}"
        if self.config.resolution is not None:
            engine += f", resolution={self.config.resolution}"
        engine += f", {'refined' if self.refine else 'not refined'}, {fmt}"
        default = ComposeOptions()
        export = [
            _option_words(f.name, getattr(options, f.name))
            for f in fields(ComposeOptions)
            if getattr(options, f.name) != getattr(default, f.name)
        ]
        return "; ".join([engine, *([" ".join(export)] if export else []),
                          *(["edited"] if edits else [])])  # fmt: skip

    def precision_words(self) -> str:
        """The model and how it runs, in words: "u2netp int8 (faithful)"; for a combined
        model each of its models ("best: u2netp fp32 + isnet-imgly int8 (generic)")."""
        if self.members:
            return f"{self.spec.name}: " + " + ".join(m.precision_words() for m in self.members)
        words = f"{self.spec.name} {self.precision}"
        if self.precision == "int8":
            words += f" ({self.int8_recipe}{'' if self.config.int8_guard else ', guard off'})"
        return words

    def int8_recipes(self) -> tuple[str, ...]:
        """The int8 recipes offered for this model, the family's default first. A model
        without int8 (its family has no recipe, or its file is int8 already) is refused
        in words (:class:`UsageError`)."""
        recipes = self.spec.int8_recipes if self.spec.members else (
            () if self.spec.quantized else self.family.int8
        )  # fmt: skip
        if self.spec.members and not recipes:
            raise UsageError(
                f"int8 is not offered for {self.spec.name}: not every model it runs has "
                "int8; use fp32."
            )
        if not recipes:
            why = "its file is int8 already" if self.spec.quantized else (
                f"{self.family.name} models have no int8 recipe"
            )  # fmt: skip
            raise UsageError(f"int8 is not offered for {self.spec.name} ({why}); use fp32.")
        return recipes

    @property
    def int8_recipe(self) -> str:
        """The int8 recipe: the one asked for, else the family's default (a model without
        int8 is refused, see :meth:`int8_recipes`)."""
        recipes = self.int8_recipes()
        return self.recipe or recipes[0]

    def _session(self) -> tuple[Any, SessionInfo]:
        return self.pool.get(self.session_key(), self._create_session, self.spec.bytes)

    def _choose_classes(self, family: Family) -> Family:
        if not self.config.classes:
            return family
        if family.classes is None:
            raise UsageError(
                f"{self.spec.name} gives one mask; --classes applies to class-map models "
                "such as u2net_cloth_seg."
            )
        names = family.class_names
        numbers = []
        for c in self.config.classes:
            if c.isdigit():
                numbers.append(int(c))
            elif c in names:
                numbers.append(names.index(c))
            else:
                raise UsageError(
                    f"{c!r} is not a class of {self.spec.name}; choose from: "
                    + ", ".join(names[1:])
                )
        return family.with_classes(tuple(numbers))

    def resolve_family(self) -> Family:
        """How this model's input is prepared and its mask read: the registry's family,
        or for a file of unknown origin the one its signature shows, read now (once);
        the classes asked for are checked against it."""
        if self._family is None:
            path = self.store.ensure(self.spec)  # a local file: its own path
            self._family = self._choose_classes(guess_family(read_signature(path), path.name))
        return self._family

    @property
    def family(self) -> Family:
        """The model's family (:meth:`resolve_family`)."""
        return self.resolve_family()

    def _create_session(self) -> tuple[Any, SessionInfo]:
        path = self.model_path()
        if self.spec.local_path is not None and self.precision == "fp32":
            advice = (
                "Choose an ONNX background-removal model (one image input of shape "
                "1×3×H×W, a mask output), or one of the built-in models."
            )
        elif self.precision == "int8":
            advice = f"The int8 file may be damaged: delete {path} and it is made again."
        else:
            advice = f"The file may be damaged: delete {path} to download it again."
        made = create_session(path, self.providers, self.config.threads, advice)
        shape = made[1].input_shape
        if len(shape) != 4 or shape[1] not in (3, None):
            raise ModelError(
                f"{path.name} is an ONNX model, but not one bgremover can use: it takes "
                f"{made[1].input_name!r} of shape {shape}, not one RGB image (1, 3, H, W).",
                fix=advice,
            )
        return made

    def model_path(self) -> Path:
        """The verified fp32 file, or the int8 one (made on first use) for ``precision="int8"``.
        For a combined model: every model's file made ready, the first one's path."""
        if self.members:
            paths = [m.model_path() for m in self.members]
            return paths[0]
        report = self._progress
        path = self.store.ensure(
            self.spec, (lambda done, total: report("download", done, total)) if report else None
        )
        if self.precision == "fp32":
            return path
        from ..network.quantize import ensure_int8

        return ensure_int8(
            self.spec,
            self.store,
            self.int8_recipe,
            family=self.family,
            progress=(lambda done, total: report("quantize", done, total)) if report else None,
            fp32_path=path,
        )

    def load(self) -> SessionInfo:
        """Obtain the model and create the session now (otherwise done on first use); a
        model file's family, the classes and resolution asked for are settled here too.
        A combined model loads every model it runs (the first one's providers are said)."""
        if self.members:
            infos = [m.load() for m in self.members]
            return infos[0]
        info = self._session()[1]
        self.resolve_input_size()
        return info

    def resolve_input_size(self) -> int:
        """The side of the model's square input, as declared by the file when fixed (for
        a free input size, the long side asked for, else the family's). Settles what it
        depends on: creates the session, reads a model file's family from its signature,
        and refuses classes or a resolution the model does not take. A combined model's is
        its first model's (the one every photo goes through)."""
        if self.members:
            return self.members[0].resolve_input_size()
        declared = self._session()[1].input_size
        family = self.family
        resolution = self.config.resolution
        if resolution is not None:
            if declared is not None or not family.dynamic:
                raise UsageError(
                    f"{self.spec.name} takes a fixed {declared or family.input_size} px input; "
                    "--resolution applies to models with a free input size "
                    "(the birefnet-dynamic family)."
                )
            if not family.multiple <= resolution <= family.max_size:
                raise UsageError(
                    f"--resolution {resolution} is outside what {self.spec.name} takes: "
                    f"{family.multiple} to {family.max_size} px."
                )
            return resolution
        return declared or family.input_size

    @property
    def input_size(self) -> int:
        """The side of the model's square input (:meth:`resolve_input_size`)."""
        return self.resolve_input_size()

    def infer(self, batch: np.ndarray) -> np.ndarray:
        """Run the model on a preprocessed (1, 3, h, w) batch; returns the family's mask
        output. A combined model runs its first model here; its second runs, where the first
        is unsure, in :meth:`finish`, which sees the photo."""
        if self.members:
            return self.members[0].infer(batch)
        session, info = self._session()
        family = self.family
        try:
            return np.asarray(session.run(None, {info.input_name: batch})[family.output])
        except Exception as exc:  # ORT raises its own exception types
            raise InferenceError(
                f"The model {self.spec.name!r} failed while processing this image.",
                technical=f"ONNX Runtime: {exc}",
                fix="If you use a model file of your own, check that it takes one "
                "(1, 3, S, S) image input.",
            ) from exc

    def infer_checked(self, batch: np.ndarray) -> tuple[np.ndarray, GuardCheck | None]:
        """:meth:`infer`, and for int8 the guard's check of its output (None for fp32).

        With the guard on, a photo on which int8 is in doubt is run in fp32 as well, and
        fp32's output is the one returned (see guard.py); the fp32 session shares this
        Remover's pool."""
        if self.members:
            return self.members[0].infer_checked(batch)
        raw = self.infer(batch)
        if self.precision != "int8":
            return raw, None
        found = check(score_map(raw, self.family), self.config.int8_guard)
        if found.ran_fp32:
            raw = self._fp32_twin().infer(batch)
        return raw, found

    def release_guard_sessions(self) -> bool:
        """Release the fp32 session(s) the int8 guard loaded for photos in doubt (for a
        combined model, each model's); True if one was held. A batch calls this when it
        ends: int8's memory is int8's again until a photo needs fp32 (IS-Net's fp32
        session holds over 1 GB beside its int8 one). The session is the one an fp32
        Remover on the same pool uses (the comparison's fp32 side in the app): that one
        loads it again on its next photo."""
        if self.members:  # every member's, not only up to the first that held one
            return any([m.release_guard_sessions() for m in self.members])
        if self.precision != "int8":
            return False
        return self.pool.release(self._fp32_twin().session_key())

    def _fp32_twin(self) -> Remover:
        """This Remover in fp32: the same model, providers, threads, store and pool."""
        twin = self.without_guard()
        twin.config, twin._key = replace(twin.config, precision="fp32"), None
        return twin

    def without_guard(self) -> Remover:
        """This Remover with the int8 guard off (what a comparison of precisions runs:
        int8 as it is); the guard's check is still made and reported."""
        twin = copy.copy(self)
        twin.config = replace(self.config, int8_guard=False)
        twin.members = tuple(m.without_guard() for m in self.members)
        return twin

    def remove(
        self,
        image: ImageInput,
        max_megapixels: float | None = None,
        edits: Edits | None = None,
    ) -> Result:
        """Cut out the subject of ``image`` (a path, PIL image, RGB(A) array or LoadedImage).

        ``max_megapixels`` limits the size of an image read from a file (the default
        limit when None, see :func:`~bgremover.files.imaging.read_image`).
        """
        t0 = time.perf_counter()
        loaded = load_input(image, max_megapixels)
        read = time.perf_counter() - t0
        batch, prep = self.prepare(loaded)
        t1 = time.perf_counter()
        raw, found = self.infer_checked(batch)
        timings = {"read": read, "preprocess": prep, "infer": time.perf_counter() - t1}
        return self.finish(loaded, raw, timings, edits, found)

    # The stages of :meth:`remove`, which the batch (batch.py, and --ray) runs on different
    # threads or processes: prepare -> infer_checked -> masked, then output_alpha.

    def prepare(self, loaded: LoadedImage) -> tuple[np.ndarray, float]:
        """The model input for ``loaded`` and the seconds it took (a combined model's: its
        first model's)."""
        if self.members:
            return self.members[0].prepare(loaded)
        start = time.perf_counter()
        batch = preprocess(loaded.rgb, self.family, self.input_size)
        return batch, time.perf_counter() - start

    def segment(self, rgb: np.ndarray) -> np.ndarray:
        """The mask of an RGB array (a crop, for box edits): the model's mask,
        edge-refined when this Remover refines."""
        batch, _ = self.prepare(from_array(rgb))
        mask = self.masked(rgb, *self.infer_checked(batch)).mask
        return edit_base(rgb, mask, self.refine)

    def masked(self, rgb: np.ndarray, raw: np.ndarray, guard: GuardCheck | None) -> Masked:
        """The mask at ``rgb``'s size from the model's ``raw`` output, and what it says of
        itself (:class:`Masked`). A combined model looks at its first model's mask and,
        where that is unsure (:meth:`Evidence.unsure`), runs its second model on ``rgb``
        and fuses the two (:func:`~bgremover.mask.combine.fuse`)."""
        height, width = rgb.shape[:2]
        if not self.members:
            score = score_map(raw, self.family)
            mask = model_mask(score, width, height, self.family, self.refine)
            return Masked(mask, score, self.family, evidence(mask), guard, (self.spec.name,))
        first, second = self.members
        # Bicubic (refine=True) upscales: a combined mask has no rembg mask to match.
        mask = model_mask(score_map(raw, first.family), width, height, first.family, True)
        found = evidence(mask)
        if not found.unsure():
            return Masked(mask, _as_score(mask), self.family, found, guard, (first.spec.name,))
        start = time.perf_counter()
        with self._second_lock:
            batch, _ = second.prepare(from_array(rgb))
            raw_second, guard_second = second.infer_checked(batch)
            del batch
        other = model_mask(score_map(raw_second, second.family), width, height, second.family,
                           True)  # fmt: skip
        fused = fuse(mask, other)
        found = replace(evidence(fused), agreement=agreement(mask, other))
        return Masked(fused, _as_score(fused), self.family, found, _joined(guard, guard_second),
                      (first.spec.name, second.spec.name), time.perf_counter() - start)  # fmt: skip

    def finish(
        self,
        loaded: LoadedImage,
        raw: np.ndarray,
        timings: dict[str, float],
        edits: Edits | None = None,
        guard: GuardCheck | None = None,
    ) -> Result:
        """Mask at the source size, refined edges, the user's edits, the input's own
        alpha: the Result. ``guard`` is the int8 guard's check from :meth:`infer_checked`
        (the result is fp32's when it ran fp32)."""
        info = self.load()
        t0 = time.perf_counter()
        made = self.masked(loaded.rgb, raw, guard)
        t1 = time.perf_counter()
        alpha = output_alpha(loaded, made.mask, self.refine, edits, self.segment)
        t2 = time.perf_counter()
        second = {"second_model": made.second_seconds} if made.second_seconds else {}
        stages = {"postprocess": t1 - t0 - made.second_seconds, **second, "refine": t2 - t1}
        guard = made.guard
        return Result(
            image=loaded,
            mask=made.mask,
            alpha=alpha,
            timings={**timings, **stages},
            model=self.spec.name,
            providers=info.active,
            fallbacks=info.fallbacks,
            precision="fp32" if guard is not None and guard.ran_fp32 else self.precision,
            raw=made.score,
            family=made.family,
            guard=guard,
            evidence=made.evidence,
            models=made.models,
        )


@dataclass(frozen=True)
class Masked:
    """A mask made from a model's output (:meth:`Remover.masked`), with what it says."""

    #: uint8, at the photo's size.
    mask: np.ndarray
    #: The score map it was made from (the Result's ``raw``), read as ``family`` says.
    score: np.ndarray
    family: Family
    evidence: Evidence
    guard: GuardCheck | None
    #: The models that made it.
    models: tuple[str, ...]
    #: The seconds a combined model's second model took (0 when it was not asked).
    second_seconds: float = 0.0


def made_int8(model: str | ModelSpec, providers: str = "auto") -> tuple[str, ...]:
    """The models of combined model ``model`` that run in int8 here at fp32 (its int8
    members, where they run int8), whose int8 version its first use makes; () for others."""
    spec = resolve_spec(model) if isinstance(model, str) else model
    if not spec.int8_members:
        return ()
    members = Remover(spec, providers=providers).members
    return tuple(m.spec.name for m in members if m.precision == "int8")


#: The version of the combined model's rule (:mod:`~bgremover.mask.combine`): part of its
#: identity, so that outputs made by an older rule are made again. 2: IS-Net runs int8.
COMBINED_VERSION = 2


def _as_score(mask: np.ndarray) -> np.ndarray:
    """A combined model's mask as its score map (the "combined" family reads it clipped
    to [0, 1]), from which the same mask is made again byte for byte."""
    return (mask.astype(np.float32) + 0.5) / 255.0


def _joined(first: GuardCheck | None, second: GuardCheck | None) -> GuardCheck | None:
    """The int8 guard's findings for two models of one photo: the larger doubt, and fp32
    run if it ran for either."""
    if first is None or second is None:
        return first or second
    return GuardCheck(max(first.doubt, second.doubt), first.ran_fp32 or second.ran_fp32)


def _attribute(name: str) -> Callable[[Remover], Any]:
    return lambda remover: getattr(remover.config, name)


#: How an output's record says the :class:`EngineConfig` settings that it does not take
#: from the Remover's config as they are: the model by its content, the family and
#: classes as resolved, the int8 recipe and guard only where they apply.
_RECORDED: dict[str, Callable[[Remover], Any]] = {
    "model": Remover.model_identity,
    "family": lambda r: r.family.name,
    "classes": lambda r: r.family.classes,
    "recipe": lambda r: r.int8_recipe if r.precision == "int8" else None,
    "int8_guard": lambda r: r.config.int8_guard if r.precision == "int8" else None,
}


def _content_digest(path: str) -> str:
    """The SHA-256 of a file's bytes (a background image), once per path, size and
    modification time; a file that cannot be read is named by its path (the compose
    then says what is wrong with it)."""
    try:
        info = os.stat(path)
    except OSError:
        return f"unreadable:{path}"
    return _digest_once(path, info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _digest_once(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
    except OSError:
        return f"unreadable:{path}"
    return digest.hexdigest()


def _option_words(name: str, value: Any) -> str:
    """An export option as the settings line says it (``background=#ff0000ff``, ``crop``)."""
    if value is True:
        return name
    if isinstance(value, Length):
        return f"{name}={value}"
    if is_dataclass(value) and not isinstance(value, type):  # a shadow, an outline
        return name
    if name == "background" and isinstance(value, tuple):
        return f"{name}=#" + "".join(f"{c:02x}" for c in value)
    if name == "background_image":
        return f"{name}={Path(value).name}"
    if isinstance(value, tuple):
        return f"{name}={'x'.join(str(v) for v in value)}"
    return f"{name}={value}"


def read_signature(path: Path) -> Signature:
    """What an ONNX file declares: input and output shapes, and the op making its first
    output (whether it applies its own sigmoid). Read once per path, size and modification
    time: the app makes a Remover per job, and the file can be a gigabyte."""
    info = path.stat()
    return _signature_once(str(path), info.st_size, info.st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _signature_once(path: str, size: int, mtime_ns: int) -> Signature:
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph

    def shape(value: Any) -> tuple[int | None, ...]:
        return tuple(d.dim_value or None for d in value.type.tensor_type.shape.dim)

    first = graph.output[0].name if graph.output else ""
    return Signature(
        shape(graph.input[0]) if graph.input else (),
        tuple(shape(o) for o in graph.output),
        next((n.op_type for n in graph.node if first in n.output), ""),
    )


def load_input(image: ImageInput, max_megapixels: float | None = None) -> LoadedImage:
    if isinstance(image, LoadedImage):
        return image
    if isinstance(image, Image.Image):
        return from_pil(image)
    if isinstance(image, np.ndarray):
        return from_array(image)
    return read_image(Path(image), max_megapixels)
