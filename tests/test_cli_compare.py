"""`bgremover compare`: what it says while it runs, and the sheet it writes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE, cli, offline_env


@pytest.mark.model
def test_compare_says_what_it_does_and_where_the_sheets_went(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    """stderr is a pipe here, not a terminal: a line per image, then where it went."""
    cat = DATA / "skimage_chelsea.png"
    out = tmp_path / "report"
    proc = cli("compare", str(SAMPLE), str(cat), "-o", str(out), "--heat-scale", "0.1")
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

    quiet = cli("compare", str(SAMPLE), "-o", str(tmp_path / "q"), "-q")
    assert quiet.returncode == 0 and "comparing" not in quiet.stderr
    assert (tmp_path / "q" / "sample.png").is_file()


def test_compare_refuses_outputs_it_cannot_write(tmp_path: Path) -> None:
    env = {"BGREMOVER_HOME": str(tmp_path / "empty-home"), "HTTPS_PROXY": "http://127.0.0.1:9"}
    proc = cli("compare", str(SAMPLE), "-o", str(tmp_path / "r.webp"), env=env)
    assert proc.returncode == 2 and "compare writes its sheets as PNG" in proc.stderr
    proc = cli("compare", str(tmp_path / "gone.jpg"), "-o", str(tmp_path / "r"), env=env)
    assert proc.returncode == 2 and "nothing could run" in proc.stderr
    assert "Could not obtain model" not in proc.stderr


def _full_colour_pixels(sheet: Image.Image) -> int:
    from bgremover.compare.report import heat_lut

    pixels = np.asarray(sheet)
    return int(np.all(pixels == heat_lut()[255], axis=2).sum())


def test_sheet_heatmap_saturates_at_the_chosen_scale() -> None:
    """A difference of 0.25 shows at full colour at the default scale (as in the app),
    and at a quarter of the colour bar at scale 1."""
    from bgremover.compare.report import (
        DEFAULT_HEAT_SCALE,
        HEAT_SCALES,
        comparison_sheet,
        scale_label,
    )

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
    from bgremover.compare.report import comparison_sheet

    for size, panel in (((2000, 1500), (512, 384)), ((300, 200), (300, 200))):
        width, height = size
        rgb = np.full((height, width, 3), (10, 200, 30), np.uint8)  # a colour used nowhere else
        mask = np.zeros((height, width), np.uint8)
        sheet = np.asarray(comparison_sheet(rgb, mask, mask, "caption"))
        where = np.nonzero(np.all(sheet == (10, 200, 30), axis=2))
        assert where[0].size == panel[0] * panel[1]
        assert (np.ptp(where[1]) + 1, np.ptp(where[0]) + 1) == panel


@pytest.mark.model
def test_compare_any_two_sides_names_both_in_the_json(
    tmp_path: Path, u2netp_int8_path: Path, tiny_model: Path
) -> None:
    """The default pair is fp32 | int8 of --model (its JSON keys kept); --b PATH compares
    u2netp with another model, and the JSON says which side is which."""
    default = cli("compare", str(SAMPLE), "-o", str(tmp_path / "default"), "-q")
    assert default.returncode == 0, default.stderr
    m = json.loads((tmp_path / "default" / "sample.json").read_text())
    assert (m["a"]["label"], m["b"]["label"]) == ("u2netp fp32", "u2netp int8")
    assert m["a"]["precision"] == "fp32" and m["b"]["precision"] == "int8"
    assert m["infer_fp32_s"] == m["infer_a_s"] and m["infer_int8_s"] == m["infer_b_s"]
    assert m["model"] == "u2netp" and "providers_int8" in m and 0.9 < m["iou"] <= 1.0
    assert "B (u2netp int8)" in default.stdout and "A (u2netp fp32)" in default.stdout

    out = tmp_path / "models"
    proc = cli("compare", str(SAMPLE), "-o", str(out), "--a", "u2netp:fp32", "--b", str(tiny_model))
    assert proc.returncode == 0, proc.stderr
    m = json.loads((out / "sample.json").read_text())
    assert m["a"] == {**m["a"], "label": "u2netp fp32", "model": "u2netp", "precision": "fp32"}
    assert m["b"]["label"] == "tiny fp32" and m["b"]["model"] == "tiny"
    assert m["infer_a_s"] == m["a"]["infer_s"] and m["infer_b_s"] == m["b"]["infer_s"]
    # Not the fp32 | int8 pair: no keys that would say it was.
    assert not {"infer_fp32_s", "infer_int8_s", "providers_int8"} & set(m)
    assert m["iou"] < 0.9  # the tiny model is nothing like u2netp
    assert "B (tiny fp32)" in proc.stdout
    assert Image.open(out / "sample.png").width >= 4 * 437


def test_compare_refuses_a_bad_pair_before_any_model_is_looked_for(tmp_path: Path) -> None:
    env = offline_env(tmp_path)
    for sides, says in (
        (["--a", "u2netp", "--b", "u2netp:fp32"], "--a and --b are the same (u2netp fp32)"),
        (["--b", "u2netp:fp16"], "unknown precision 'fp16'"),
        (["--b", "no-such-model"], "Unknown model 'no-such-model'"),
        (["--b", "u2net_cloth_seg:int8"], "int8 is not offered for u2net_cloth_seg"),
    ):
        proc = cli("compare", str(SAMPLE), "-o", str(tmp_path / "r"), *sides, env=env)
        assert proc.returncode == 2 and says in proc.stderr, (sides, proc.stderr)
        assert "Could not obtain model" not in proc.stderr
