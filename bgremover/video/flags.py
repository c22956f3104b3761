"""``bgremover remove``'s options for clips, and the kinds of output a clip becomes.
Standard library only: the command line's parser is made before anything heavy loads."""

from __future__ import annotations

from typing import Any

#: What a clip becomes in an output folder: a video file of that suffix (the writer's
#: formats), or png, a folder of PNG frames.
KINDS = ("webm", "mov", "mp4", "png")
DEFAULT_KIND = "webm"


def add_arguments(parser: Any) -> None:
    """Add the clip options to ``bgremover remove``'s parser."""
    parser.add_argument(
        "--video-format",
        choices=KINDS,
        default=DEFAULT_KIND,
        help=f"what a clip becomes in an output folder (default {DEFAULT_KIND}): webm (VP9 "
        "with alpha), mov (ProRes 4444 with alpha), mp4 (on the background, white by "
        "default) or png (a folder of frames); -o NAME.webm/.mov/.mp4 names one clip's file",
    )
    parser.add_argument(
        "--no-audio", dest="audio", action="store_false", help="leave a clip's sound out"
    )
