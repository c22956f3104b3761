"""`bgremover compare`: what it says while it runs, and the sheet it writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE, run_cli


@pytest.mark.model
def test_compare_says_what_it_does_and_where_the_sheets_went(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    """stderr is a pipe here, not a terminal: a line per image, then where it went."""
    cat = DATA / "skimage_chelsea.png"
    out = tmp_path / "report"
    proc = run_cli("compare", str(SAMPLE), str(cat), "-o", str(out), "--heat-scale", "0.1")
    assert proc.returncode == 0, proc.stderr
    assert "bgremover: comparing sample.jpg (1/2)..." in proc.stderr
    assert "bgremover: comparing skimage_chelsea.png (2/2)..." in proc.stderr
    assert f"-> {out / 'sample.png'} (and sample.json)" in proc.stdout
    assert f"-> {out / 'skimage_chelsea.png'} (and skimage_chelsea.json)" in proc.stdout
    assert "2 compared" in proc.stdout
    metrics = json.loads((out / "sample.json").read_text())
    assert metrics["heat_scale"] == 0.1 and 0.9 < metrics["iou"] <= 1.0
    # Readable: sample.jpg is 512 x 600, so each panel is 437 x 512 (512 on the long side).
    width, height = Image.open(out / "sample.png").size
    assert width >= 4 * 437 and height >= 512 + 100

    quiet = run_cli("compare", str(SAMPLE), "-o", str(tmp_path / "q"), "-q")
    assert quiet.returncode == 0 and "comparing" not in quiet.stderr
    assert (tmp_path / "q" / "sample.png").is_file()


def test_compare_refuses_outputs_it_cannot_write(tmp_path: Path) -> None:
    env = {"BGREMOVER_HOME": str(tmp_path / "empty-home"), "HTTPS_PROXY": "http://127.0.0.1:9"}
    proc = run_cli("compare", str(SAMPLE), "-o", str(tmp_path / "r.webp"), env=env)
    assert proc.returncode == 2 and "compare writes its sheets as PNG" in proc.stderr
    proc = run_cli("compare", str(tmp_path / "gone.jpg"), "-o", str(tmp_path / "r"), env=env)
    assert proc.returncode == 2 and "nothing could run" in proc.stderr
    assert "Could not obtain model" not in proc.stderr


def _full_colour_pixels(sheet: Image.Image) -> int:
    from bgremover.report import heat_lut

    pixels = np.asarray(sheet)
    return int(np.all(pixels == heat_lut()[255], axis=2).sum())


def test_sheet_heatmap_saturates_at_the_chosen_scale() -> None:
    """A difference of 0.25 shows at full colour at the default scale (as in the app),
    and at a quarter of the colour bar at scale 1."""
    from bgremover.report import DEFAULT_HEAT_SCALE, HEAT_SCALES, comparison_sheet, scale_label

    assert DEFAULT_HEAT_SCALE == 0.25 and DEFAULT_HEAT_SCALE in HEAT_SCALES
    rgb = np.full((300, 400, 3), 128, np.uint8)
    fp32 = np.zeros((300, 400), np.uint8)
    fp32[50:250, 100:300] = 255
    int8 = fp32.copy()
    int8[50:250, 100:200] = 191  # |Δα| = 64/255, just over 0.25, on 100 x 200 pixels
    default = comparison_sheet(rgb, fp32, int8, "caption")
    full = comparison_sheet(rgb, fp32, int8, "caption", heat_scale=1.0)
    assert default.size == full.size
    legend_only = _full_colour_pixels(full)  # the colour bar's last column
    assert legend_only < 100
    assert _full_colour_pixels(default) - legend_only == 100 * 200
    assert [scale_label(v, 0.25) for v in (0, 0.125, 0.25)] == ["0", "0.125", "0.25+"]
    assert scale_label(1.0, 1.0) == "1"


def test_sheet_panels_are_512_on_the_long_side() -> None:
    """A 2000 x 1500 photo gets 512 x 384 panels; a small one keeps its own size."""
    from bgremover.report import comparison_sheet

    for size, panel in (((2000, 1500), (512, 384)), ((300, 200), (300, 200))):
        width, height = size
        rgb = np.full((height, width, 3), (10, 200, 30), np.uint8)  # a colour used nowhere else
        mask = np.zeros((height, width), np.uint8)
        sheet = np.asarray(comparison_sheet(rgb, mask, mask, "caption"))
        where = np.nonzero(np.all(sheet == (10, 200, 30), axis=2))
        assert where[0].size == panel[0] * panel[1]
        assert (np.ptp(where[1]) + 1, np.ptp(where[0]) + 1) == panel
