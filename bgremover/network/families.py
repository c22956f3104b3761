"""Model families as data: how each kind of network wants its input and gives its mask.

A registry entry (``models.py``) names its family; the transforms (``transforms.py``)
read these facts and nothing else, so adding a model of a known family is one
registry entry. The facts follow each network's published inference code (for the
models rembg publishes, the settings its sessions use, so masks agree with it).

A model file of unknown origin gets its family from ``--family NAME``, or from its
input and output signature (:func:`guess_family`), which says so plainly when
the signature fits more than one family.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import AmbiguousFamilyError, ModelError

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: How the photo becomes the square input: stretched to it (rembg's way for every
#: model), or scaled to fit inside it with its aspect ratio kept and the rest padded.
RESIZE_MODES = ("stretch", "letterbox")
#: Pixel scaling before mean/std: by the image's own maximum (rembg's), or by 255.
SCALINGS = ("max", "255")
#: Applied to the mask output before normalisation: none (the network gives
#: probabilities, or a saliency map min-max makes sense of), or a sigmoid for logits.
ACTIVATIONS = ("none", "sigmoid")
#: After the activation: stretched to [0, 1] by its own min and max (rembg's), or clipped.
NORMALISATIONS = ("minmax", "clip")


@dataclass(frozen=True)
class Family:
    """One family's pre- and postprocessing, as data."""

    name: str
    description: str
    #: The side of the square input (the default side when the input size is dynamic).
    input_size: int
    #: The input's height and width are free (a multiple of ``multiple``, at most
    #: ``max_size``): the photo keeps its aspect ratio, its long side at the input size.
    dynamic: bool = False
    multiple: int = 32
    max_size: int = 2048
    resize: str = "stretch"
    scaling: str = "max"
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    #: "rgb", or "bgr" for networks trained on OpenCV's channel order.
    channels: str = "rgb"
    #: Which of the model's outputs is the mask.
    output: int = 0
    activation: str = "none"
    normalisation: str = "minmax"
    #: For class-map outputs (N x C x S x S): the classes that make the mask (the
    #: pixel's most likely class is one of them). None: the output's first channel.
    classes: tuple[int, ...] | None = None
    #: Names of the classes, index 0 first (for messages and the model list).
    class_names: tuple[str, ...] = ()
    #: The int8 recipes that apply (``quantize.RECIPES``), the default first; empty
    #: when int8 is not offered for this family.
    int8: tuple[str, ...] = ("generic",)

    def __post_init__(self) -> None:
        for value, allowed, what in (
            (self.resize, RESIZE_MODES, "resize"),
            (self.scaling, SCALINGS, "scaling"),
            (self.activation, ACTIVATIONS, "activation"),
            (self.normalisation, NORMALISATIONS, "normalisation"),
            (self.channels, ("rgb", "bgr"), "channels"),
        ):
            if value not in allowed:
                raise ValueError(f"family {self.name}: {what} {value!r} not in {allowed}")
        if self.dynamic and self.resize != "stretch":
            raise ValueError(f"family {self.name}: a dynamic input keeps the aspect already")

    @property
    def default_int8(self) -> str | None:
        """The int8 recipe this family uses unless told otherwise; None: no int8."""
        return self.int8[0] if self.int8 else None

    def preprocessing_key(self) -> str:
        """The facts that decide the model's input (what int8 calibration depends on)."""
        return repr(
            (self.input_size, self.dynamic, self.multiple, self.max_size, self.resize,
             self.scaling, self.mean, self.std, self.channels)
        )  # fmt: skip

    def with_classes(self, classes: tuple[int, ...]) -> Family:
        """This class-map family choosing ``classes`` (e.g. upper clothes only)."""
        if self.classes is None:
            raise ModelError(f"The {self.name} family gives one mask; it has no classes.")
        bad = [c for c in classes if not 0 < c < len(self.class_names)]
        if bad or not classes:
            names = ", ".join(f"{i} {n}" for i, n in enumerate(self.class_names) if i)
            raise ModelError(f"Classes {list(classes)} are not among {self.name}'s: {names}.")
        return replace(self, classes=tuple(sorted(set(classes))))


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family(
            "u2net",
            "U²-Net (Qin et al. 2020): 320 px, saliency map min-max normalised.",
            input_size=320,
            int8=("faithful", "naive"),
        ),
        Family(
            "dis",
            "IS-Net / DIS (Qin et al. 2022): 1024 px, mean 0.5.",
            input_size=1024,
            mean=(0.5, 0.5, 0.5),
            std=(1.0, 1.0, 1.0),
        ),
        Family(
            "dis-anime",
            "IS-Net trained on anime (SkyTNT): 1024 px, ImageNet mean, unit std.",
            input_size=1024,
            std=(1.0, 1.0, 1.0),
        ),
        Family(
            "birefnet",
            "BiRefNet (Zheng et al. 2024): 1024 px, ImageNet mean/std, logits through a sigmoid.",
            input_size=1024,
            activation="sigmoid",
        ),
        Family(
            "birefnet-dynamic",
            "BiRefNet exported with a free input size: the photo's aspect kept, long side "
            "1024 px by default (up to 2048), logits through a sigmoid.",
            input_size=1024,
            dynamic=True,
            activation="sigmoid",
        ),
        Family(
            "bria",
            "BRIA RMBG 2.0 (BiRefNet architecture, exported with its sigmoid): 1024 px.",
            input_size=1024,
        ),
        Family(
            "ben2",
            "BEN2 (Prama LLC): 1024 px, mean 0.5.",
            input_size=1024,
            mean=(0.5, 0.5, 0.5),
            std=(1.0, 1.0, 1.0),
        ),
        Family(
            "u2net-cloth",
            "U²-Net clothes parsing: 768 px, four classes; the mask is the union of the "
            "chosen ones (all clothes by default).",
            input_size=768,
            classes=(1, 2, 3),
            class_names=("background", "upper", "lower", "full"),
            int8=(),
        ),
        Family(
            "combined",
            "Two models as one (--model best): the second model asked where the first is "
            "unsure, their masks fused at the photo's size; int8 applies to each model.",
            input_size=1024,
            normalisation="clip",
            int8=(),
        ),
    )
}

#: The family of a model file until its signature says otherwise (a file whose fixed input
#: is not 1024 px, and the int8 recipes and input size a spec of unknown family reports):
#: U²-Net, rembg's default for custom models and what bgremover assumed before families.
DEFAULT_FAMILY: Family = FAMILIES["u2net"]


def get_family(name: str) -> Family:
    """The family called ``name``; a clear error listing the known ones otherwise."""
    if name in FAMILIES:
        return FAMILIES[name]
    raise ModelError(
        f"Unknown model family {name!r}. Known families: {', '.join(FAMILIES)}.",
        fix="Pass --family with one of those names (`bgremover models families` describes them).",
    )


@dataclass(frozen=True)
class Signature:
    """What a model file declares: its input's shape and each output's shape."""

    input_shape: tuple[int | None, ...]
    output_shapes: tuple[tuple[int | None, ...], ...]
    #: The op that produces the first output ("Sigmoid" when the file applies its own).
    last_op: str = ""


def guess_family(sig: Signature, filename: str = "") -> Family:
    """The family a model file of unknown origin belongs to, from its signature.

    Raises :class:`ModelError` naming the candidates when the signature fits
    several families that preprocess differently, or none.
    """
    candidates = _candidates(sig)
    if len(candidates) == 1:
        return FAMILIES[candidates[0]]
    shape = "x".join("?" if d is None else str(d) for d in sig.input_shape)
    what = f"{filename or 'This model'} (input {shape}, {len(sig.output_shapes)} outputs)"
    if not candidates:
        raise ModelError(
            f"{what} does not look like a model of any family bgremover knows.",
            fix="If it is a background-removal model, pass --family NAME with the family "
            f"whose preprocessing it was trained with: {', '.join(FAMILIES)}.",
        )
    raise AmbiguousFamilyError(
        f"{what} could be a model of several families, which prepare the photo "
        f"differently: {', '.join(candidates)}.",
        tuple(candidates),
        fix=f"Pass --family with the one it was trained as (e.g. --family {candidates[0]}).",
        app_fix="Choose the family it was trained as.",
    )


def _candidates(sig: Signature) -> list[str]:
    if len(sig.input_shape) != 4 or sig.input_shape[1] not in (3, None) or not sig.output_shapes:
        return []
    first = sig.output_shapes[0]
    side = sig.input_shape[-1]
    if len(first) == 4 and first[1] not in (1, None):
        return ["u2net-cloth"]  # a class map
    if side is None or sig.input_shape[-2] is None:
        # U²-Net exports keep their side outputs; BiRefNet's give the one mask.
        return ["u2net"] if len(sig.output_shapes) > 1 else ["birefnet-dynamic"]
    if side != 1024:
        return [DEFAULT_FAMILY.name]
    if len(sig.output_shapes) >= 6:  # IS-Net's side outputs; BiRefNet and BRIA give one
        return ["dis", "dis-anime"]
    if sig.last_op == "Sigmoid":
        return ["bria", "ben2"]
    return ["birefnet"]
