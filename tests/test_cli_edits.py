"""`bgremover remove IMAGE -o OUT --edits FILE`: edits made once, replayed by the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image

from bgremover.files.imaging import read_image
from bgremover.touchup.edit import Editor, Edits, Operation

from conftest import DATA, cli

PHOTO = DATA / "skimage_chelsea.png"


def made_edits(remover, tmp_path: Path) -> tuple[Path, np.ndarray]:
    """Edits made on the photo's full-size mask (as the app makes them), and their result."""
    loaded = read_image(PHOTO)
    result = remover.remove(loaded)
    h, w = result.alpha.shape
    editor = Editor(loaded.rgb, result.alpha, segment=remover.segment)
    editor.apply(Operation.stroke("erase", [(w * 0.1, h * 0.9), (w * 0.5, h * 0.85)], h / 12))
    editor.apply(Operation.stroke("restore", [(w * 0.05, h * 0.1)], h / 20, hardness=0.5))
    editor.apply(Operation.stroke("erase", [(w * 0.6, h * 0.2)], h / 15, edge_aware=True))
    path = tmp_path / "chelsea.edits.json"
    path.write_text(editor.edits.to_json(), encoding="utf-8")
    return path, editor.alpha


def test_edits_replay_in_the_cli_exactly(u2netp_remover, tmp_path: Path) -> None:
    edits, expected = made_edits(u2netp_remover, tmp_path)
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(edits), "-q")
    assert proc.returncode == 0, proc.stderr
    alpha = np.asarray(Image.open(out).getchannel("A"))
    assert np.array_equal(alpha, expected)
    # The mask written alone is the same edited mask.
    mask_out = tmp_path / "mask.png"
    proc = cli("remove", str(PHOTO), "-o", str(mask_out), "--edits", str(edits),
               "--mask-only", "-q")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.asarray(Image.open(mask_out)), expected)


def test_edits_made_at_preview_size_apply_at_full_size(u2netp_remover, tmp_path: Path) -> None:
    loaded = read_image(PHOTO)
    h, w = loaded.rgb.shape[:2]
    # An edit made on a half-size view: erase a disk at the centre.
    hw, hh = w // 2, h // 2
    edits = Edits((hw, hh), (Operation.stroke("erase", [(hw / 2, hh / 2)], hh / 4),))
    path = tmp_path / "half.edits.json"
    path.write_text(edits.to_json(), encoding="utf-8")
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(path), "-q")
    assert proc.returncode == 0, proc.stderr
    alpha = np.asarray(Image.open(out).getchannel("A"))
    yy, xx = np.mgrid[0:h, 0:w]
    inside = np.hypot(xx + 0.5 - w / 2, yy + 0.5 - h / 2) < hh / 2 - 2
    assert (alpha[inside] == 0).all()


def test_edits_for_several_inputs_are_refused_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text(Edits((10, 10)).to_json(), encoding="utf-8")
    proc = cli("remove", str(DATA), "-o", str(tmp_path / "out"), "--edits", str(path))
    assert proc.returncode == 2
    assert "--edits applies to one image" in proc.stderr
    assert "bgremover remove PHOTO -o OUTPUT --edits FILE" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_unreadable_edits_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    path.write_text('{"format": "something else"}', encoding="utf-8")
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(path))
    assert proc.returncode == 2
    assert "not a bgremover edits file" in proc.stderr
    missing = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(tmp_path / "no"))
    assert missing.returncode == 2
    assert "Could not read the edits file" in missing.stderr
    assert not out.exists()


def test_edits_of_another_photo_fail_that_image_clearly(tmp_path: Path) -> None:
    path = tmp_path / "e.json"
    edits = Edits((100, 400), (Operation.stroke("erase", [(5, 5)], 3),))
    path.write_text(edits.to_json(), encoding="utf-8")
    out = tmp_path / "cut.png"
    proc = cli("remove", str(PHOTO), "-o", str(out), "--edits", str(path))
    assert proc.returncode == 1
    assert "another shape" in proc.stderr and "photo it was made on" in proc.stderr
    assert not out.exists()
