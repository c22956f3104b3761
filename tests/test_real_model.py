"""The real u2netp on real photos: sensible cutouts, and masks that agree with rembg."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import SAMPLE, assert_masks_close, real_photos

pytestmark = pytest.mark.model


def test_sample_portrait_is_cut_out(u2netp_remover) -> None:
    result = u2netp_remover.remove(SAMPLE)
    h, w = result.mask.shape
    assert (h, w) == (600, 512)
    # Grace Hopper fills the centre; the top corners are background.
    assert result.mask[h // 2 - 50 : h // 2 + 50, w // 2 - 50 : w // 2 + 50].mean() > 240
    assert result.mask[:40, :40].mean() < 15 and result.mask[:40, -40:].mean() < 15
    cut = np.asarray(result.cutout())
    assert (cut[result.alpha == 0] == 0).all()


def test_masks_agree_with_rembg(
    u2netp_remover, u2netp_path: Path, monkeypatch, tmp_path: Path
) -> None:
    """Parity with rembg 2.0.86 + u2netp (same weights file): |Δα| <= 2/255, IoU >= 0.99."""
    monkeypatch.setenv("U2NET_HOME", str(u2netp_path.parent))  # rembg must not download
    rembg = pytest.importorskip("rembg")
    session = rembg.new_session("u2netp", providers=["CPUExecutionProvider"])
    for photo in real_photos():
        theirs = np.asarray(rembg.remove(Image.open(photo), session=session, only_mask=True))
        ours = u2netp_remover.remove(photo).mask
        assert_masks_close(ours, theirs, tmp_path, photo.stem, max_mean_abs=2 / 255, min_iou=0.99)


def test_unrefined_masks_are_rembgs(u2netp_path: Path, monkeypatch, tmp_path: Path) -> None:
    """``--no-refine`` is rembg's mask: the same Lanczos upscale, so on every shipped photo
    within 1/255 and IoU >= 0.995 (the fast bicubic upscale of refined runs is not)."""
    from bgremover import Remover

    monkeypatch.setenv("U2NET_HOME", str(u2netp_path.parent))
    rembg = pytest.importorskip("rembg")
    session = rembg.new_session("u2netp", providers=["CPUExecutionProvider"])
    remover = Remover("u2netp", providers="cpu", refine=False)
    for photo in real_photos():
        theirs = np.asarray(rembg.remove(Image.open(photo), session=session, only_mask=True))
        result = remover.remove(photo)
        assert_masks_close(result.mask, theirs, tmp_path, photo.stem, 1 / 255, 0.995)
        assert np.array_equal(result.alpha, result.mask)  # no refinement, opaque photos


def test_a_change_of_refinement_remakes_the_mask_with_its_upscale(u2netp_remover) -> None:
    from bgremover import Remover

    refined = u2netp_remover.remove(SAMPLE)
    unrefined = Remover("u2netp", providers="cpu", refine=False).remove(SAMPLE)
    assert not np.array_equal(refined.mask, unrefined.mask)  # bicubic against Lanczos
    assert np.array_equal(refined.with_refinement(False).mask, unrefined.mask)
    assert np.array_equal(refined.with_refinement(False).alpha, unrefined.alpha)
    assert np.array_equal(unrefined.with_refinement(True).alpha, refined.alpha)


def test_exif_rotated_photo_gives_rotated_mask(u2netp_remover, tmp_path: Path) -> None:
    upright = u2netp_remover.remove(SAMPLE).mask
    rotated_file = tmp_path / "rotated.jpg"
    exif = Image.Exif()
    exif[0x0112] = 8  # stored rotated; viewers turn it 90° CCW back upright
    Image.open(SAMPLE).transpose(Image.Transpose.ROTATE_270).save(
        rotated_file, exif=exif, quality=95
    )
    mask = u2netp_remover.remove(rotated_file).mask
    assert_masks_close(mask, upright, tmp_path, "rotated", max_mean_abs=0.02, min_iou=0.97)


def test_every_test_photo_has_a_subject(u2netp_remover) -> None:
    for photo in real_photos():
        mask = u2netp_remover.remove(photo).mask
        assert 0.02 < (mask >= 128).mean() < 0.98, photo.name
