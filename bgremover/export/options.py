"""The export options, defined once: one :class:`ExportOption` record per option.

A record says everything the front ends need to know about an option: its name (the
key presets and option values use), its kind, how a value spelled as on the command
line is read (``parse``, into :class:`~bgremover.export.compose.ComposeOptions` fields) and
written back (``write``), its default, its range (the check) or choices, its command-line
flag(s) and help, its remove.bg parameter, and the app's setting(s), widget and label.
From the records are made: the keys presets may set and how they are read and written
(:mod:`bgremover.export.presets`), the export flags of ``bgremover remove``
(:func:`add_flags`, :func:`cli_values`), the app's export settings and check boxes, and
the parameters the server reads. The values' types (lengths, shadows, outlines, colours)
and parsers are here too, so a value is read by one parser whichever front end it comes
from, with one set of words for off: ``crop = "no"`` is off everywhere.

Every *switch*'s field of ``ComposeOptions`` and of the app's settings comes from
:class:`SchemaSwitches`, and the rest from its record: one whose whole behaviour is its
``apply`` (the photo's colour changed pixel by pixel) needs nothing else, the others are
read by name where they act (crop by the layout, lossless by the encoder).

One module because the values' types and parsers, the record and the table of records
are the options' one definition: split, they would again be spelled out in several places.

This module imports nothing heavy (no numpy, OpenCV or Pillow until a value is parsed
or a switch applied): the command line builds its parser from it and ``bgremover
--version`` answers at once. It sits below compose and output, so it cannot name the
output formats: the ``format`` option is read against :data:`bgremover.export.output.FORMATS`
by :func:`bgremover.export.presets.parse_format`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    import numpy as np

RGBA = tuple[int, int, int, int]

#: The words for on and off, for every option that can be off, whatever the front end (a
#: preset, a flag's value, an HTTP parameter, a stored setting). An empty text is off.
TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "none", "")

#: How a background image covers the output: scaled to cover it and cut (fill), scaled
#: to fit inside it with bars (fit), or distorted to its size (stretch).
FITS = ("fill", "fit", "stretch")
#: Where the subject sits on a canvas: centred, or centred and standing on the bottom
#: margin (products).
POSITIONS = ("center", "bottom")
#: Default encoding quality of lossy formats, when the options name none.
DEFAULT_QUALITY = {"jpeg": 92, "webp": 90}


@dataclass(frozen=True)
class Range:
    """The values a number may take: ``low`` to ``high`` (None: no upper end); with
    ``above``, strictly above ``low``."""

    low: float
    high: float | None = None
    above: bool = False

    def __contains__(self, value: float) -> bool:
        low_ok = value > self.low if self.above else value >= self.low
        return low_ok and (self.high is None or value <= self.high)

    def words(self) -> str:
        """The range as a fix says it: "1 to 100", "1 or more", "above 0, up to 20"."""
        low = f"above {self.low:g}" if self.above else f"{self.low:g}"
        if self.high is None:
            return f"{low} or more"
        return f"{low}{', up' if self.above else ''} to {self.high:g}"


#: JPEG and WebP quality.
QUALITY = Range(1, 100)
#: A side of a canvas, or of its aspect ratio, in pixels.
SIDE = Range(1, 30000)
#: The output's long side at most (never enlarged, so no upper end).
MAX_SIZE = Range(1)
#: The strength of a blurred background (1: a portrait lens's look).
BLUR = Range(0, 20, above=True)
#: A margin, in pixels or percent: past this no output fits any memory (the outputs'
#: own limit, in megapixels, is checked on each image before it is made).
MARGIN = Range(0, 100_000)
#: An outline's width in output pixels.
OUTLINE_WIDTH = Range(0, 500, above=True)


# -- The values' types ---------------------------------------------------------------


@dataclass(frozen=True)
class Length:
    """A distance in pixels, or in percent of a size the context gives."""

    value: float = 0.0
    percent: bool = False

    def pixels(self, reference: float) -> float:
        return self.value / 100.0 * reference if self.percent else self.value

    def __str__(self) -> str:
        return f"{self.value:g}%" if self.percent else f"{self.value:g}px"


@dataclass(frozen=True)
class Shadow:
    """A soft drop shadow under the subject, drawn from its alpha.

    Offset and blur are fractions of the subject's height on the output, so the
    shadow looks the same at every output size.
    """

    dx: float = 0.012
    dy: float = 0.02
    blur: float = 0.02
    opacity: float = 0.45
    color: RGBA = (0, 0, 0, 255)


@dataclass(frozen=True)
class Outline:
    """A stroke around the subject (stickers): ``width`` output pixels of ``color``."""

    width: float = 8.0
    color: RGBA = (255, 255, 255, 255)


# -- One parser per kind of value -----------------------------------------------------


def parse_bool(value: Any, name: str) -> bool:
    """An on/off value: a bool, or one of :data:`TRUE_WORDS` / :data:`FALSE_WORDS`
    (any case, 1 and 0 as numbers too); anything else is a :class:`UsageError`."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise UsageError(f"{name} is on or off, not {value!r}.", fix="Write true or false.")


def is_off(value: Any) -> bool:
    """Whether ``value`` says "none" for an option that is a value or nothing (an
    outline): None, or a word of :data:`FALSE_WORDS` (False and 0 too)."""
    return value is None or str(value).strip().lower() in FALSE_WORDS


def parse_number(value: Any, name: str, kind: type = int) -> Any:
    """A number of ``kind`` (int or float); a bool or a non-number is refused."""
    try:
        if isinstance(value, bool):
            raise ValueError
        return kind(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} is a number, not {value!r}.") from None


def parse_color(text: str) -> RGBA:
    """Parse "white", "#ff8800", "#ff880080" or "255,136,0[,128]" into RGBA."""
    value = text.strip()
    parts = [p.strip() for p in value.split(",")]
    try:
        if len(parts) in (3, 4) and all(p.isdigit() for p in parts):
            nums = [int(p) for p in parts]
            if any(n > 255 for n in nums):
                raise ValueError("components must be 0-255")
            return (nums[0], nums[1], nums[2], nums[3] if len(nums) == 4 else 255)
        from PIL import ImageColor

        rgba = ImageColor.getcolor(value, "RGBA")
        if not isinstance(rgba, tuple):  # a grey level: Pillow gives an int for mode "L"
            rgba = (rgba, rgba, rgba, 255)
        return (rgba[0], rgba[1], rgba[2], rgba[3])
    except ValueError:
        raise UsageError(
            f"Not a colour: {text!r}. Use a name (white), #rrggbb, #rrggbbaa or r,g,b[,a]."
        ) from None


def color_text(text: str) -> str:
    """A colour as the app keeps it: "#rrggbb", or "#rrggbbaa" when see-through."""
    r, g, b, a = parse_color(text)
    return f"#{r:02x}{g:02x}{b:02x}" + (f"{a:02x}" if a < 255 else "")


def parse_length(text: str) -> Length:
    """Parse "5%", "30" or "30px"."""
    value = str(text).strip().lower()
    percent = value.endswith("%")
    number = value[:-1] if percent else value.removesuffix("px")
    try:
        amount = float(number)
    except ValueError:
        raise UsageError(
            f"Not a margin: {text!r}. Use pixels (30 or 30px) or a percentage (5%)."
        ) from None
    if not math.isfinite(amount) or amount < 0:
        raise UsageError(f"Not a margin: {text!r}. Use 0 or more.")
    if amount > MARGIN.high:  # type: ignore[operator]
        raise UsageError(
            f"Not a margin: {text!r} is too large.", fix=f"Use at most {MARGIN.high:g}."
        )
    return Length(amount, percent)


def parse_pair(text: str, separator: str, what: str) -> tuple[int, int]:
    """Parse "2000x1500" (separator "x") or "4:5" (":") into two positive integers."""
    parts = str(text).strip().lower().split(separator)
    try:
        if len(parts) != 2:
            raise ValueError
        a, b = int(parts[0]), int(parts[1])
        if a < 1 or b < 1:
            raise ValueError
    except ValueError:
        example = "2000x2000" if separator == "x" else "4:5"
        raise UsageError(f"Not {what}: {text!r}. Write it like {example}.") from None
    return a, b


def parse_canvas(text: str) -> tuple[tuple[int, int] | None, tuple[int, int] | None]:
    """A canvas given as a size ("2000x2000") or a ratio ("1:1"): (size, ratio)."""
    if ":" in text:
        return None, parse_pair(text, ":", "an aspect ratio")
    return parse_pair(text, "x", "a canvas size"), None


def parse_outline(text: str) -> Outline:
    """Parse "8" or "8:white" (width in pixels, then an optional colour)."""
    width, _, colour = str(text).partition(":")
    try:
        px = float(width.strip().lower().removesuffix("px"))
    except ValueError:
        raise UsageError(
            f"Not an outline: {text!r}. Write a width in pixels and a colour, like 8:white."
        ) from None
    return Outline(px, parse_color(colour) if colour.strip() else Outline.color)


def parse_blur(text: str) -> float | None:
    """ "blur" or "blur:STRENGTH" to a strength; None when ``text`` is not a blur."""
    name, _, strength = text.strip().partition(":")
    if name.lower() != "blur":
        return None
    if not strength.strip():
        return 1.0
    try:
        return float(strength)
    except ValueError:
        raise UsageError(f"Not a blur strength: {strength!r}. Write blur or blur:2.") from None


def parse_background(value: Any) -> dict[str, Any]:
    """A background: "transparent", a colour, an image file, "blur[:STRENGTH]", or a list
    of a colour and an image (the colour shows in a fitted image's bars). A colour
    already parsed (an RGBA tuple, as the server gives it) is taken as it is: it is
    never looked for on disk."""
    items = value if isinstance(value, list) else [value]
    found: dict[str, Any] = {"background": None, "background_image": None, "blur": None}
    parsed: Any
    for item in items:
        text = str(item).strip()
        if isinstance(item, tuple):
            key, parsed = "background", _rgba(item)
        elif is_off(text) or text.lower() == "transparent":
            continue
        elif (strength := parse_blur(text)) is not None:
            key, parsed = "blur", strength
        elif _looks_like_file(text):
            if not _is_file(text):
                raise UsageError(
                    f"The background image {text} does not exist.",
                    fix="Give the path of an image file, a colour, or blur.",
                )
            key, parsed = "background_image", str(Path(text).resolve())
        else:
            try:
                key, parsed = "background", parse_color(text)
            except UsageError:
                raise UsageError(
                    f"Not a colour, an image file or blur: {text!r}.",
                    fix="Give a colour (white, #rrggbb, r,g,b), an image file, blur or "
                    "blur:STRENGTH, or transparent.",
                ) from None
        if found[key] is not None:
            raise UsageError(f"Two backgrounds of one kind: {items}.", fix="Give one of each.")
        found[key] = parsed
    return found


def _rgba(value: tuple) -> RGBA:
    """A colour given as an RGBA tuple of 0-255 integers."""
    if len(value) != 4 or not all(isinstance(v, int) and 0 <= v <= 255 for v in value):
        raise UsageError(f"Not a colour: {value!r}.", fix="Give four whole numbers 0-255.")
    return (value[0], value[1], value[2], value[3])


def _looks_like_file(text: str) -> bool:
    from ..files.imaging import is_image_name

    return os.sep in text or "/" in text or is_image_name(Path(text)) or _is_file(text)


def _is_file(text: str) -> bool:
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long for the system to look up
        return False


def parse_shadow(value: Any) -> Shadow | None:
    """On or off (as :func:`parse_bool` reads it; "soft" is on, "none" off: the soft
    default), or "opacity=0.6,blur=0.03,dx=0,dy=0.02,color=black"."""
    spelled = str(value).strip().lower()
    if value is not None and spelled in (*TRUE_WORDS, "soft"):
        return Shadow()
    if is_off(value):
        return None
    changes: dict[str, Any] = {}
    names = {f.name for f in fields(Shadow)}
    for part in str(value).split(","):
        key, _, text = part.partition("=")
        key = key.strip().lower()
        if key not in names or not text.strip():
            raise UsageError(
                f"Not a shadow: {value!r}.",
                fix="Write --shadow alone, or like opacity=0.6,blur=0.03,dx=0.01,dy=0.02.",
            )
        changes[key] = parse_color(text) if key == "color" else parse_number(text, key, float)
    return replace(Shadow(), **changes)


def shadow_text(shadow: Shadow) -> str | bool:
    """A shadow as an option value: True for the soft default, else its spec."""
    if shadow == Shadow():
        return True
    return (
        f"dx={shadow.dx:g},dy={shadow.dy:g},blur={shadow.blur:g},opacity={shadow.opacity:g},"
        "color=#{:02x}{:02x}{:02x}".format(*shadow.color[:3])
    )


# -- The records -----------------------------------------------------------------------

#: Kinds of option: on/off, a whole number, one of some words, a text of its own syntax,
#: and the output format (read against the format table, see the module's docstring).
SWITCH, NUMBER, CHOICE, TEXT, FORMAT = "switch", "number", "choice", "text", "format"
#: The rows of the Export panel a record's check box may be placed in (its ``row``).
ROWS = ("framing", "effects", "quality", "file")


@dataclass(frozen=True)
class ExportOption:
    """One export option, for every front end. Made by :func:`switch`, :func:`number`,
    :func:`choice` and :func:`text`, which fill in what their kind implies."""

    #: The name presets and option values use (``max_size``); ``--max-size`` on the
    #: command line unless ``flags`` says otherwise.
    key: str
    kind: str
    #: What the command line's help says it does.
    help: str
    #: The app's label: a check box's text, or a form row's ("Margin:").
    label: str
    #: The app's tooltip.
    tip: str = ""
    #: The app's value when the option is not set.
    default: Any = None
    #: The values its field may take: ComposeOptions refuses any other.
    range: Range | None = None
    #: The words a choice may be.
    choices: tuple[str, ...] = ()
    #: An option value (as a preset or the command line spells it) -> ComposeOptions
    #: fields. None for the format, which is no field of ComposeOptions.
    parse: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)
    #: ComposeOptions -> the option value that makes it (None: as by default, left out).
    write: Callable[[Any], Any] | None = field(default=None, repr=False)
    #: The app's settings fields it is kept in, and between them and an option value:
    #: ``to_settings(value)`` -> those fields; ``from_settings(settings)`` -> the value
    #: (None: not set).
    settings: tuple[str, ...] = ()
    to_settings: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)
    from_settings: Callable[[Any], Any] | None = field(default=None, repr=False)
    #: Command-line flags (() none), and how argparse reads them.
    flags: tuple[str, ...] = ()
    metavar: str | None = None
    #: argparse keywords (action, nargs, const, type) beyond dest, help and metavar.
    argparse: Mapping[str, Any] = field(default_factory=dict, repr=False)
    #: A flag's value -> option values (``--crop 5%`` is crop and a margin); None: itself.
    cli_values: Callable[[Any], dict[str, Any]] | None = field(default=None, repr=False)
    #: Where ``bgremover remove`` lists the flag: "export" (the export group), "main"
    #: (among the engine's, added by name) or "own" (cli.py adds it itself: -f, -o's twin).
    cli_group: str = "export"
    #: remove.bg's parameter for it, where the server reads one.
    http: str | None = None
    #: The app's widget: "check" (a check box made from this record) or "own" (the pane
    #: builds it); the pane that shows it ("export" or "settings"); and, for a check box
    #: of the Export panel, the row it sits in (one of :data:`ROWS`).
    widget: str = "own"
    pane: str = "export"
    row: str = ""
    #: The output formats it acts on (() every one): the app greys it out for the others.
    formats: tuple[str, ...] = ()
    #: For a switch that is nothing but this: the photo's colour (h, w, 3 uint8) ->
    #: the colour it is composed with, each pixel on its own. Its fields come from
    #: :class:`SchemaSwitches`.
    apply: Callable[[np.ndarray], np.ndarray] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        placed = self.row in ROWS if self.pane == "export" else self.pane == "settings"
        if self.widget == "check" and not placed:
            raise ValueError(
                f"The export option {self.key!r} has a check box that no pane places "
                f"(pane={self.pane!r}, row={self.row!r}): give it a row of the Export panel "
                f"({', '.join(ROWS)}), or pane='settings'."
            )

    @property
    def dest(self) -> str:
        """The argparse destination: the key."""
        return self.key

    def check_choice(self, value: str, what: str) -> str:
        """``value`` if it is one of the choices, else a UsageError naming them."""
        if value not in self.choices:
            raise UsageError(
                f"Unknown {what} {value!r}.", fix=f"Use one of: {', '.join(self.choices)}."
            )
        return value


def switch(key: str, help: str, label: str, tip: str, **more: Any) -> ExportOption:
    """An on/off option: a ComposeOptions and a settings field of its key, False by
    default, on with its flag alone, read by :func:`parse_bool`."""
    more.setdefault("argparse", {"action": "store_const", "const": True})
    more.setdefault("widget", "check")
    return ExportOption(
        key,
        SWITCH,
        help,
        label,
        tip,
        default=False,
        parse=lambda value: {key: parse_bool(value, key)},
        write=lambda options: True if getattr(options, key) else None,
        settings=(key,),
        to_settings=lambda value: {key: parse_bool(value, key)},
        from_settings=lambda settings: True if getattr(settings, key) else None,
        flags=(f"--{key.replace('_', '-')}",),
        **more,
    )


def number(key: str, help: str, label: str, tip: str, limits: Range, **more: Any) -> ExportOption:
    """A whole number; 0 in the app means "not set", as an off word (0, none...) does."""
    more.setdefault("argparse", {"type": int})
    more.setdefault(
        "parse", lambda value: {key: None if is_off(value) else parse_number(value, key, int)}
    )
    return ExportOption(
        key,
        NUMBER,
        help,
        label,
        tip,
        default=0,
        range=limits,
        write=lambda options: getattr(options, key),
        settings=(key,),
        to_settings=lambda value: {key: 0 if is_off(value) else parse_number(value, key, int)},
        from_settings=lambda settings: getattr(settings, key) or None,
        flags=(f"--{key.replace('_', '-')}",),
        **more,
    )


def choice(key: str, help: str, label: str, tip: str, words: tuple[str, ...], what: str,
           **more: Any) -> ExportOption:  # fmt: skip
    """One of ``words``, the first by default; ``what`` names it in a refusal."""
    default = words[0]
    more.setdefault(
        "from_settings",
        lambda settings: None if getattr(settings, key) == default else getattr(settings, key),
    )
    return ExportOption(
        key,
        CHOICE,
        help,
        label,
        tip,
        default=default,
        choices=words,
        parse=lambda value: {key: OPTIONS[key].check_choice(str(value), what)},
        write=lambda options: None if getattr(options, key) == default else getattr(options, key),
        settings=(key,),
        to_settings=lambda value: {} if value in (None, False) else {key: str(value)},
        flags=(f"--{key.replace('_', '-')}",),
        **more,
    )


def text(key: str, help: str, label: str, tip: str, **more: Any) -> ExportOption:
    """A value of its own syntax (a margin, a canvas), kept in the app as its text ("" for
    not set)."""
    more.setdefault("settings", (key,))
    more.setdefault("to_settings", lambda value: {key: "" if is_off(value) else str(value)})
    more.setdefault("from_settings", lambda settings: getattr(settings, key) or None)
    more.setdefault("flags", (f"--{key.replace('_', '-')}",))
    return ExportOption(key, TEXT, help, label, tip, default="", **more)


# -- Each option's own parts ---------------------------------------------------------


def _write_background(o: Any) -> str | list[str] | None:
    backgrounds = []
    if o.background is not None:
        backgrounds.append("#{:02x}{:02x}{:02x}{:02x}".format(*o.background))
    if o.background_image is not None:
        backgrounds.append(o.background_image)
    if o.blur is not None:
        backgrounds.append(f"blur:{o.blur:g}")
    if not backgrounds:
        return None
    return backgrounds[0] if len(backgrounds) == 1 else backgrounds


def _background_settings(value: Any) -> dict[str, Any]:
    """The app's two fields: a colour or blur, and an image file."""
    found = {"background": "", "background_image": ""}
    for item in value if isinstance(value, list) else [value]:
        spelled = str(item).strip()
        if is_off(spelled) or spelled.lower() == "transparent":
            continue
        if parse_blur(spelled) is not None:
            found["background"] = spelled.lower()
            continue
        try:
            found["background"] = color_text(spelled)
        except UsageError:
            found["background_image"] = spelled  # a file: parse_background checks it is one
    return found


def _settings_background(s: Any) -> str | list[str] | None:
    backgrounds = [b for b in (s.background, s.background_image) if b]
    if not backgrounds:
        return None
    return backgrounds[0] if len(backgrounds) == 1 else backgrounds


def _parse_canvas_value(value: Any) -> dict[str, Any]:
    if is_off(value) or str(value).strip().lower() == "keep":
        return {"canvas": None, "aspect": None}
    size, ratio = parse_canvas(str(value))
    return {"canvas": size, "aspect": ratio}


def _write_canvas(o: Any) -> str | None:
    if o.canvas is not None:
        return f"{o.canvas[0]}x{o.canvas[1]}"
    if o.aspect is not None:
        return f"{o.aspect[0]}:{o.aspect[1]}"
    return None


def _margin_amount(margin: str) -> float:
    """The number in a margin ("5%" -> 5), 0 when it has none."""
    try:
        return float(margin.strip().lower().removesuffix("%").removesuffix("px") or 0)
    except ValueError:
        return 1.0  # not a number: parse_length says what is wrong with it


def _settings_margin(s: Any) -> str | None:
    """A margin only counts with a crop or a canvas (the panel greys it out otherwise)."""
    if s.margin and (s.crop or s.canvas) and _margin_amount(s.margin):
        return str(s.margin)
    return None


def _parse_outline_value(value: Any) -> dict[str, Any]:
    return {"outline": None if is_off(value) else parse_outline(str(value))}


def _write_outline(o: Any) -> str | None:
    if o.outline is None:
        return None
    r, g, b = o.outline.color[:3]
    return f"{o.outline.width:g}:#{r:02x}{g:02x}{b:02x}"


def _greyscale(rgb: np.ndarray) -> np.ndarray:
    """The photo's colour as shades of grey (Rec. 601 luma, as Pillow's "L" weighs it)."""
    import cv2

    return cv2.cvtColor(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)


def _crop_values(value: Any) -> dict[str, Any]:
    """``--crop`` alone is a crop; ``--crop 5%`` (or 30) a crop with that margin; a word
    for on or off (yes, no, none...) is read as every switch's is."""
    spelled = str(value).strip().lower()
    if value is True or (spelled in (*TRUE_WORDS, *FALSE_WORDS) and not spelled.isdigit()):
        return {"crop": parse_bool(value, "crop")}
    return {"crop": True, "margin": value}


#: Every export option, in the order presets list them and the command line's help
#: shows them.
EXPORT_OPTIONS: tuple[ExportOption, ...] = (
    text(
        "background",
        "what the subject is put on: a colour (white, #rrggbb[aa], r,g,b[,a]), an image "
        "file, blur or blur:STRENGTH (the photo's own background, blurred), or transparent; "
        "give a colour and an image to fill a fitted image's bars",
        "Background:",
        "What the cutout is put on, in the view and in the file. You can also drop an "
        "image file here to use it as the background.",
        parse=parse_background,
        write=_write_background,
        settings=("background", "background_image"),
        to_settings=_background_settings,
        from_settings=_settings_background,
        flags=("-b", "--background"),
        metavar="BACKGROUND",
        argparse={"action": "append"},
        http="bg_color",
    ),
    choice(
        "background_fit",
        "how a background image covers the output: fill (default: cover it, cut to size), "
        "fit (inside, with bars) or stretch",
        "Image fit:",
        "How the background image covers the output: cut to fill it, shown whole with "
        "bars of the colour, or stretched",
        FITS,
        "background fit",
        metavar="FIT",
        from_settings=lambda s: (
            s.background_fit if s.background_image and s.background_fit != FITS[0] else None
        ),
    ),
    switch(
        "crop",
        "cut the output to the subject, with an optional margin: 30 (px) or 5% (of the "
        "subject's long side)",
        "Crop to subject",
        "Cut the picture down to the subject, plus the margin",
        metavar="MARGIN",
        argparse={"nargs": "?", "const": True},
        cli_values=_crop_values,
        http="crop",
        row="framing",
    ),
    text(
        "canvas",
        "place the subject on a canvas of a size (2000x2000: scaled to fit inside the "
        "margin) or a ratio (1:1, 4:5, 16:9: as small as holds it)",
        "Canvas:",
        "The picture's shape: the photo's own, a ratio (as small as holds the subject), "
        "or an exact size in pixels",
        parse=_parse_canvas_value,
        write=_write_canvas,
        to_settings=lambda v: {"canvas": "" if is_off(v) or v == "keep" else str(v)},
        metavar="SIZE",
    ),
    text(
        "margin",
        "free space at each side of a canvas: px or % of its short side",
        "Margin:",
        "Free space around the subject when cropping or on a canvas (needs one of them)",
        parse=lambda value: {"margin": Length() if is_off(value) else parse_length(str(value))},
        write=lambda o: str(o.margin) if o.margin.value else None,
        from_settings=_settings_margin,
        metavar="MARGIN",
        http="crop_margin",
    ),
    choice(
        "position",
        "where the subject sits on a canvas: center (default) or bottom (products)",
        "Position:",
        "Where the subject sits on a canvas: in the middle, or standing on the bottom "
        "margin (products)",
        POSITIONS,
        "position",
        metavar="WHERE",
        from_settings=lambda s: s.position if s.canvas and s.position != POSITIONS[0] else None,
    ),
    number(
        "max_size",
        "scale the output down to this long side",
        "Longest side:",
        "Make the picture's longest side at most this many pixels (never larger)",
        MAX_SIZE,
        metavar="PX",
    ),
    text(
        "shadow",
        "a soft drop shadow under the subject; optionally "
        "opacity=0.6,blur=0.03,dx=0.01,dy=0.02 (fractions of the subject's height)",
        "Shadow",
        "A soft drop shadow under the subject",
        parse=lambda value: {"shadow": parse_shadow(value)},
        write=lambda o: None if o.shadow is None else shadow_text(o.shadow),
        # The app has the soft shadow or none.
        to_settings=lambda value: {"shadow": parse_shadow(value) is not None},
        from_settings=lambda s: True if s.shadow else None,
        metavar="SPEC",
        argparse={"nargs": "?", "const": True},
        http="add_shadow",
        widget="check",
        row="effects",
    ),
    text(
        "outline",
        "a stroke around the subject, for stickers: 8 or 8:white",
        "Outline",
        "A line around the subject, as on a sticker",
        parse=_parse_outline_value,
        write=_write_outline,
        to_settings=lambda value: {"outline": "" if is_off(value) else str(value)},
        metavar="WIDTH[:COLOR]",
    ),
    switch(
        "greyscale",
        "the subject in black and white (and the photo's blurred background); a "
        "background colour or image keeps its colour",
        "Black and white",
        "The subject in shades of grey, as for a team page or a headshot; a background "
        "colour or image keeps its colour",
        row="effects",
        apply=_greyscale,
    ),
    switch(
        "decontaminate",
        "re-estimate colours in see-through edges (hair) so no tint of the old background "
        "remains; slower",
        "Decontaminate colours",
        "Re-estimate the colours of see-through edges (hair) so no tint of the old "
        "background shows on a new one (slower)",
        cli_group="main",
        pane="settings",
    ),
    ExportOption(
        "format",
        FORMAT,
        "output format (default: the output file's extension); it must agree with the "
        "output file's extension",
        "Format:",
        "The file type Save writes: PNG and TIFF keep every pixel; JPEG is small but has "
        "no transparency; WebP is small, with transparency",
        default="png",
        settings=("output_format",),
        from_settings=lambda s: s.output_format,
        flags=("-f", "--format"),
        cli_group="own",
        http="format",
    ),
    number(
        "quality",
        "JPEG/WebP quality {low}-{high} (JPEG {jpeg}, WebP {webp})".format(
            low=QUALITY.low, high=QUALITY.high, **DEFAULT_QUALITY
        ),
        "Quality:",
        "JPEG and WebP quality, 1 (smallest file) to 100 (best); the view shows the result",
        QUALITY,
        metavar="Q",
    ),
    switch(
        "lossless",
        "WebP without loss",
        "Lossless",
        "WebP without any loss: exact colours, larger files",
        row="quality",
        formats=("webp",),
    ),
    switch(
        "strip_metadata",
        "leave out the photo's EXIF data (camera, place, time); colour stays",
        "Strip metadata",
        "Leave out the photo's EXIF data (camera, place, time); its colour profile stays",
        row="file",
    ),
    switch(
        "progressive",
        "write a JPEG progressively (a coarse picture first, sharpened as it loads); PNG, "
        "WebP and TIFF are unaffected",
        "Progressive",
        "A JPEG that a web page shows coarse at once, then sharper as it loads; the other "
        "formats are unaffected",
        http="progressive",
        row="file",
        formats=("jpeg",),
    ),
)

#: The records by key.
OPTIONS: dict[str, ExportOption] = {o.key: o for o in EXPORT_OPTIONS}
#: The keys presets and option values may use, in order.
KEYS = tuple(OPTIONS)
#: The switches: a bool field each, False by default, of :class:`SchemaSwitches`.
SWITCHES = tuple(o for o in EXPORT_OPTIONS if o.kind == SWITCH)


if TYPE_CHECKING:  # what mypy reads; a test holds it to SWITCHES, one line per switch

    @dataclass(frozen=True)
    class SchemaSwitches:
        crop: bool = False
        greyscale: bool = False
        decontaminate: bool = False
        lossless: bool = False
        strip_metadata: bool = False
        progressive: bool = False

else:
    #: The base of ComposeOptions and of the app's Settings: one bool field per switch of
    #: :data:`SWITCHES`, so a new one needs no field written anywhere else.
    SchemaSwitches = make_dataclass(
        "SchemaSwitches",
        [(o.key, bool, field(default=False)) for o in SWITCHES],
        frozen=True,
        namespace={"__module__": __name__, "__doc__": "A bool field per switch of SWITCHES."},
    )


# -- The command line --------------------------------------------------------------


def add_flags(group: Any, options: Iterable[ExportOption]) -> None:
    """Add the flags of ``options`` to an argparse parser or group; each is None when
    not given, so a preset's value stands unless a flag overrides it."""
    for option in options:
        group.add_argument(
            *option.flags,
            dest=option.dest,
            metavar=option.metavar,
            help=option.help.replace("%", "%%"),
            default=None,
            **option.argparse,
        )


def cli_flags(group: str) -> tuple[ExportOption, ...]:
    """The options whose flags ``bgremover remove`` lists in ``group`` ("export", "main")."""
    return tuple(o for o in EXPORT_OPTIONS if o.flags and o.cli_group == group)


def cli_values(args: argparse.Namespace) -> dict[str, Any]:
    """The export options given on the command line, as option values (presets'
    spelling); the format is left to the output's planning (it must agree with -o)."""
    values: dict[str, Any] = {}
    for option in EXPORT_OPTIONS:
        if not option.flags or option.cli_group == "own":
            continue
        value = getattr(args, option.dest, None)
        if value is not None:
            values.update(option.cli_values(value) if option.cli_values else {option.key: value})
    return values
