"""The touch-up engine (bgremover.touchup.edit): every tool on images with a known answer,
exact undo, JSON round trips and replay at another resolution."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from bgremover.errors import EditsError
from bgremover.files.imaging import read_image
from bgremover.mask.metrics import iou
from bgremover.touchup.edit import (
    Apply,
    Editor,
    Edits,
    History,
    Operation,
    Redo,
    Remove,
    Undo,
    apply_edits,
)
from bgremover.touchup.tools import apply_box, apply_stroke, mask_from_image, stroke_coverage

from conftest import DATA

H, W = 240, 320


def textured(seed: int = 0, size: tuple[int, int] = (H, W)) -> np.ndarray:
    """A noisy green-grey texture: a background with no structure to follow."""
    rng = np.random.default_rng(seed)
    base = np.array([90, 120, 80], np.float32)
    noise = rng.normal(0, 18, (*size, 3))
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def disk_scene(cx: int = 200, cy: int = 120, r: int = 45) -> tuple[np.ndarray, np.ndarray]:
    """A red disk on the texture, and the disk's true mask."""
    rgb = textured()
    truth = np.zeros((H, W), np.uint8)
    cv2.circle(truth, (cx, cy), r, 255, -1)
    rgb[truth > 0] = (200, 40, 50)
    return rgb, truth


def distance_to_segment(p0, p1) -> np.ndarray:
    """Exact distance of every pixel centre to the segment p0-p1."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    (x0, y0), (x1, y1) = p0, p1
    dx, dy = x1 - x0, y1 - y0
    t = np.clip(((xx - x0) * dx + (yy - y0) * dy) / (dx * dx + dy * dy), 0, 1)
    return np.hypot(xx - (x0 + t * dx), yy - (y0 + t * dy))


def test_erase_stroke_removes_exactly_its_footprint() -> None:
    rgb = textured()
    alpha = np.full((H, W), 255, np.uint8)
    p0, p1 = (60.0, 50.0), (250.0, 180.0)
    op = Operation.stroke("erase", [p0, p1], radius=12)
    new, box = apply_stroke(rgb, alpha, op, restore=False)
    d = distance_to_segment(p0, p1)
    assert (new[d <= 11] == 0).all()  # inside the brush: gone
    assert (new[d >= 13] == 255).all()  # outside: untouched
    # The edge is one pixel wide: anti-aliased, not a blur.
    ring = (d > 11) & (d < 13)
    assert ring.sum() < 2.5 * 2 * np.hypot(190, 130)
    # The box is the tight box of what changed.
    ys, xs = np.nonzero(new != alpha)
    assert box == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)
    assert (alpha == 255).all()  # the input is not modified


def test_restore_stroke_paints_opaque_and_soft_brush_fades() -> None:
    rgb = textured()
    alpha = np.zeros((H, W), np.uint8)
    op = Operation.stroke("restore", [(160, 120)], 30, hardness=0.0)
    new, _ = apply_stroke(rgb, alpha, op, restore=True)
    d = distance_to_segment((160, 120), (160.001, 120))
    assert new[120, 160] >= 250
    near, far = new[(d > 5) & (d < 10)], new[(d > 20) & (d < 25)]
    assert near.mean() > far.mean() > 0  # fades from the centre
    assert (new[d >= 31] == 0).all()


def test_one_add_click_recovers_a_missed_disk() -> None:
    rgb, truth = disk_scene()
    alpha = np.zeros((H, W), np.uint8)
    cv2.rectangle(alpha, (20, 60), (90, 200), 255, -1)  # the mask kept something else
    editor = Editor(rgb, alpha)
    box = editor.apply(Operation.click(200, 120, add=True))
    assert box is not None
    disk = truth > 0
    assert iou(editor.alpha[:, 150:], truth[:, 150:]) >= 0.95
    # The click changed the disk's region, not the far-away part that was already kept.
    assert (editor.alpha[60:201, 20:91] == 255).all()
    assert disk[box[1] : box[3], box[0] : box[2]].sum() == disk.sum()


def test_one_remove_click_drops_a_wrongly_kept_blob() -> None:
    rgb, truth = disk_scene()
    alpha = truth.copy()
    cv2.rectangle(rgb, (20, 60), (90, 200), (40, 60, 200), -1)
    cv2.rectangle(alpha, (20, 60), (90, 200), 255, -1)  # a blue block wrongly kept
    editor = Editor(rgb, alpha)
    editor.apply(Operation.click(55, 130, add=False))
    assert (editor.alpha[60:201, 20:91] < 128).mean() > 0.95
    assert iou(editor.alpha, truth) >= 0.95


def test_a_remove_click_on_a_faint_leftover_clears_it() -> None:
    """A see-through remnant (alpha 70: below 128, yet visible on a new background,
    like the flag beside skimage's astronaut) goes with one Remove click on it."""
    rgb, truth = disk_scene()
    alpha = truth.copy()
    cv2.rectangle(rgb, (20, 60), (90, 200), (230, 230, 240), -1)
    cv2.rectangle(alpha, (20, 60), (90, 200), 70, -1)
    editor = Editor(rgb, alpha)
    editor.apply(Operation.click(55.5, 130.5, add=False))
    assert (editor.alpha[62:199, 22:89] == 0).all()
    assert np.array_equal(editor.alpha[:, 150:], truth[:, 150:])  # the disk is untouched


def test_undo_and_redo_are_bit_exact() -> None:
    rgb, truth = disk_scene()
    editor = Editor(rgb, truth)
    states = [editor.alpha.copy()]
    for op in (
        Operation.stroke("erase", [(180, 100), (220, 140)], 9),
        Operation.stroke("restore", [(30, 30), (80, 40), (120, 90)], 14, hardness=0.4),
        Operation.click(60, 180, add=True),
        Operation.stroke("erase", [(200, 120)], 20, edge_aware=True),
        Operation("reset"),
    ):
        editor.apply(op)
        states.append(editor.alpha.copy())
    for expected in reversed(states[:-1]):
        editor.undo()
        assert np.array_equal(editor.alpha, expected)
    assert not editor.can_undo and editor.undo() is None
    for expected in states[1:]:
        editor.redo()
        assert np.array_equal(editor.alpha, expected)
    assert not editor.can_redo


def test_a_new_operation_after_undo_drops_the_redo_history() -> None:
    rgb, truth = disk_scene()
    editor = Editor(rgb, truth)
    editor.apply(Operation.stroke("erase", [(200, 120)], 10))
    editor.undo()
    editor.apply(Operation.stroke("restore", [(20, 20)], 10))
    assert not editor.can_redo
    assert [op.tool for op in editor.edits.operations] == ["restore"]


def test_json_replay_gives_the_same_mask_at_another_resolution() -> None:
    rgb, truth = disk_scene()
    editor = Editor(rgb, truth)
    editor.apply(Operation.stroke("erase", [(170, 100), (230, 140)], 8))
    editor.apply(Operation.stroke("restore", [(40, 40), (100, 40)], 10))
    text = editor.edits.to_json()
    assert json.loads(text)["size"] == [W, H]
    # The same edits on the same photo at twice the size, then brought back down.
    big_rgb = cv2.resize(rgb, (2 * W, 2 * H), interpolation=cv2.INTER_NEAREST)
    big_base = cv2.resize(truth, (2 * W, 2 * H), interpolation=cv2.INTER_NEAREST)
    big = apply_edits(Edits.from_json(text), big_rgb, big_base)
    small = cv2.resize(big, (W, H), interpolation=cv2.INTER_AREA)
    differ = (small >= 128) != (editor.alpha >= 128)
    # Only along the outlines, within the half pixel a brush's edge may move by.
    inside = (editor.alpha >= 128).astype(np.uint8)
    outline = cv2.morphologyEx(inside, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8)) > 0
    assert (differ <= outline).all()
    assert iou(small, editor.alpha) > 0.97
    # At the same size, a replay is the editor's mask exactly.
    assert np.array_equal(apply_edits(Edits.from_json(text), rgb, truth), editor.alpha)


def test_edge_aware_erase_keeps_strands_and_drops_the_ground_between() -> None:
    """A body with dark hair strands against a light sky; the network's mask is a
    blurred halo over the strands. One rough edge-aware erase along the halo keeps
    the strands and clears the sky between them."""
    rgb = np.full((H, W, 3), (210, 220, 235), np.uint8)  # sky
    rgb[:, :120] = (60, 40, 30)  # the body (dark hair mass) on the left
    strands = np.zeros((H, W), bool)
    for y in range(20, H - 20, 12):
        cv2.line(rgb, (118, y), (175, y + 4), (60, 40, 30), 2)
        line = np.zeros((H, W), np.uint8)
        cv2.line(line, (118, y), (175, y + 4), 1, 2)
        strands |= line.astype(bool)
    halo = np.zeros((H, W), np.float32)
    halo[:, :120] = 1.0
    halo[:, 120:180] = np.linspace(0.8, 0.3, 60)[None, :]
    alpha = (halo * 255).astype(np.uint8)
    op = Operation.stroke("erase", [(150, 10), (150, H - 10)], radius=32, edge_aware=True)
    new, _ = apply_stroke(rgb, alpha, op, restore=False)
    inside = stroke_coverage(op, alpha.shape)
    assert inside is not None
    cover = np.zeros((H, W), np.float32)
    x0, y0, x1, y1 = inside[1]
    cover[y0:y1, x0:x1] = inside[0]
    core = (cover >= 1.0) & (np.arange(W)[None, :] > 125)
    sky = core & ~cv2.dilate(strands.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    assert new[sky].mean() < 20  # the sky between strands is cleared
    kept = core & cv2.erode(strands.astype(np.uint8), np.ones((1, 3), np.uint8)).astype(bool)
    assert (new[kept] >= alpha[kept]).mean() > 0.9  # the strands are kept as they were
    assert (new <= alpha).all()  # an erase never adds
    # A plain erase would have taken the strands with the sky.
    plain, _ = apply_stroke(rgb, alpha, Operation.stroke("erase", op.points, 32), restore=False)
    assert plain[core & strands].mean() < 5


def test_edge_aware_restore_brings_back_strands_but_not_the_ground() -> None:
    """The mask lost the strands altogether: an edge-aware restore over them brings
    the strands back and leaves the sky between them out."""
    rgb = np.full((H, W, 3), (210, 220, 235), np.uint8)
    rgb[:, :120] = (60, 40, 30)
    strands = np.zeros((H, W), np.uint8)
    for y in range(20, H - 20, 12):
        cv2.line(strands, (118, y), (175, y + 4), 1, 2)
    rgb[strands > 0] = (60, 40, 30)
    alpha = np.zeros((H, W), np.uint8)
    alpha[:, :120] = 255
    op = Operation.stroke("restore", [(150, 10), (150, H - 10)], radius=32, edge_aware=True)
    new, _ = apply_stroke(rgb, alpha, op, restore=True)
    band = np.zeros((H, W), bool)
    band[30 : H - 30, 130:170] = True
    hair = band & cv2.erode(strands, np.ones((1, 3), np.uint8)).astype(bool)
    sky = band & ~cv2.dilate(strands, np.ones((5, 5), np.uint8)).astype(bool)
    assert new[hair].mean() > 230
    assert new[sky].mean() < 20
    assert (new >= alpha).all()  # a restore never takes away


def footprint_error(op: Operation, new: np.ndarray, truth: np.ndarray) -> float:
    """Mean |alpha - truth| (0..1) over the pixels the stroke gives any paint."""
    found = stroke_coverage(op, new.shape)
    assert found is not None
    cover, (x0, y0, x1, y1) = found
    inside = cover > 0
    diff = np.abs(new[y0:y1, x0:x1].astype(np.float32) - truth[y0:y1, x0:x1]) / 255.0
    return float(diff[inside].mean())


def noisy(colour: tuple[int, int, int], seed: int) -> np.ndarray:
    """A flat colour with a photo's noise (sigma 3)."""
    rng = np.random.default_rng(seed)
    return np.clip(np.array(colour) + rng.normal(0, 3, (H, W, 3)), 0, 255).astype(np.uint8)


def test_edge_aware_erase_along_a_hard_edge_keeps_the_subject_side() -> None:
    """A blue subject (left of x = 150) on yellow; the mask kept 30 px of the yellow
    beside it. An edge-aware erase centred on the edge clears the yellow under it and
    keeps the subject, where a plain erase takes both."""
    rgb = noisy((230, 200, 40), 1)
    rgb[:, :150] = noisy((40, 60, 200), 2)[:, :150]
    truth = np.zeros((H, W), np.uint8)
    truth[:, :150] = 255
    alpha = np.zeros((H, W), np.uint8)
    alpha[:, :180] = 255
    op = Operation.stroke("erase", [(150, 20), (150, H - 20)], radius=24, hardness=0.8)
    aware = Operation.stroke("erase", op.points, 24, 0.8, edge_aware=True)
    plain, _ = apply_stroke(rgb, alpha, op, restore=False)
    new, _ = apply_stroke(rgb, alpha, aware, restore=False)
    core = np.zeros((H, W), bool)
    core[40 : H - 40, 130:170] = True
    subject = core & (truth > 0)
    assert new[subject].min() >= 250  # the subject side is kept
    assert plain[subject].mean() < 60  # (a plain erase takes it)
    assert new[core & (truth == 0)].max() <= 5  # the yellow under the brush is gone
    assert footprint_error(aware, new, truth) < 0.2 * footprint_error(op, plain, truth)


@pytest.mark.parametrize("tool", ["erase", "restore"])
def test_edge_aware_brush_where_both_sides_share_colours_is_the_plain_brush(tool: str) -> None:
    """A red subject on red: the colours cannot tell the sides apart, so the edge-aware
    brush does what the plain brush does (here: exactly what the stroke was for, a
    leftover beside the subject erased, a missed part of it restored), never less."""
    rgb = noisy((200, 30, 40), 3)
    truth = np.zeros((H, W), np.uint8)
    truth[:, :150] = 255
    alpha = np.zeros((H, W), np.uint8)
    if tool == "erase":
        alpha[:, :200] = 255  # 50 px of red background kept
        points = [(175.0, 20.0), (175.0, H - 20.0)]
    else:
        alpha[:, :100] = 255  # 50 px of the red subject missed
        points = [(125.0, 20.0), (125.0, H - 20.0)]
    op = Operation.stroke(tool, points, radius=24, hardness=0.8)
    aware = Operation.stroke(tool, points, 24, 0.8, edge_aware=True)
    plain, _ = apply_stroke(rgb, alpha, op, restore=tool == "restore")
    new, _ = apply_stroke(rgb, alpha, aware, restore=tool == "restore")
    assert footprint_error(aware, new, truth) <= footprint_error(op, plain, truth) + 1e-3
    assert np.abs(new.astype(int) - plain).max() <= 3


def test_box_replaces_the_mask_inside_and_blends_at_its_border() -> None:
    rgb, _ = disk_scene()
    alpha = np.zeros((H, W), np.uint8)
    calls = []

    def segment(crop: np.ndarray) -> np.ndarray:
        calls.append(crop.shape)
        return np.full(crop.shape[:2], 255, np.uint8)

    new, box = apply_box(rgb, alpha, (100, 50, 300, 200), segment)
    # The network saw the box's crop with a tenth of its sides around it as context.
    assert calls == [(150 + 2 * 15, 200 + 2 * 20, 3)]
    assert box == (100, 50, 300, 200)
    assert (new[60:190, 110:290] == 255).all()  # inside: the crop's mask
    assert (new[:50] == 0).all() and (new[200:] == 0).all() and (new[:, :100] == 0).all()
    assert 0 < new[50, 200] < 255  # feathered at the border, not a hard seam


def test_box_with_the_real_model_finds_the_subject_in_its_crop(u2netp_remover) -> None:
    """The astronaut-like case: the mask keeps a flag beside the subject; a box around
    the subject alone gives the network a crop where the subject fills its input."""
    loaded = read_image(DATA / "skimage_coffee.png")
    base = u2netp_remover.segment(loaded.rgb)
    h, w = base.shape
    editor = Editor(loaded.rgb, base, segment=u2netp_remover.segment)
    box = editor.apply(Operation.box(w * 0.2, h * 0.1, w * 0.8, h * 0.9))
    assert box is not None
    x0, y0, x1, y1 = box
    assert x0 >= int(w * 0.2) and x1 <= int(np.ceil(w * 0.8)) + 1
    outside = np.ones((h, w), bool)
    outside[y0:y1, x0:x1] = False
    assert np.array_equal(editor.alpha[outside], base[outside])
    assert (editor.alpha >= 128).sum() > 0.1 * (x1 - x0) * (y1 - y0)
    editor.undo()
    assert np.array_equal(editor.alpha, base)


def test_load_takes_a_cutouts_alpha_or_a_masks_grey_at_the_images_size() -> None:
    from PIL import Image

    rgb, truth = disk_scene()
    cut = np.dstack([rgb, truth])
    half = Image.fromarray(cut, "RGBA").resize((W // 2, H // 2), Image.Resampling.NEAREST)
    loaded = mask_from_image(half, (H, W))
    assert loaded.shape == (H, W) and iou(loaded, truth) > 0.97
    grey = mask_from_image(Image.fromarray(truth, "L"), (H, W))
    assert np.array_equal(grey, truth)
    editor = Editor(rgb, np.zeros((H, W), np.uint8))
    editor.apply(Operation.load(truth))
    assert np.array_equal(editor.alpha, truth)
    again = Edits.from_json(editor.edits.to_json())
    assert np.array_equal(apply_edits(again, rgb, np.zeros((H, W), np.uint8)), truth)


def test_reset_returns_to_the_models_mask_and_moots_what_came_before() -> None:
    rgb, truth = disk_scene()
    editor = Editor(rgb, truth)
    editor.apply(Operation.stroke("erase", [(200, 120)], 30))
    editor.apply(Operation("reset"))
    assert np.array_equal(editor.alpha, truth)
    editor.apply(Operation.stroke("restore", [(20, 20)], 5))
    saved = json.loads(editor.edits.to_json())
    assert [op["tool"] for op in saved["operations"]] == ["restore"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("not json", "not an edits file"),
        ('{"format": "other"}', "not a bgremover edits file"),
        ('{"format": "bgremover-edits", "version": 9, "size": [1, 1]}', "version 9"),
        ('{"format": "bgremover-edits", "version": 1}', "image size"),
        (
            '{"format": "bgremover-edits", "version": 1, "size": [4, 4],'
            ' "operations": [{"tool": "lasso"}]}',
            "Unknown edit tool",
        ),
        (
            '{"format": "bgremover-edits", "version": 1, "size": [4, 4],'
            ' "operations": [{"tool": "erase", "points": [[1, 1]]}]}',
            "radius",
        ),
    ],
)
def test_bad_edits_files_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(EditsError, match=says):
        Edits.from_json(text)


def test_edits_for_a_photo_of_another_shape_are_refused() -> None:
    rgb, truth = disk_scene()
    edits = Edits((100, 100), (Operation.stroke("erase", [(50, 50)], 5),))
    with pytest.raises(EditsError, match="another shape"):
        apply_edits(edits, rgb, truth)


def test_the_remover_applies_edits_after_refinement(u2netp_remover) -> None:
    loaded = read_image(DATA / "skimage_chelsea.png")
    plain = u2netp_remover.remove(loaded)
    h, w = plain.mask.shape
    edits = Edits((w, h), (Operation.stroke("erase", [(w / 2, h / 2)], h / 5),))
    edited = u2netp_remover.remove(loaded, edits=edits)
    assert np.array_equal(edited.mask, plain.mask)  # the model's own mask is kept
    assert np.array_equal(edited.alpha, apply_edits(edits, loaded.rgb, plain.alpha))
    assert edited.alpha[h // 2, w // 2] == 0


# -- taking one operation out of the history (a click marker removed in the app) -------


def _history() -> tuple[np.ndarray, np.ndarray, list[Operation]]:
    """The disk scene with a wrongly kept blue block, and edits that mix clicks (each
    constrained by the earlier ones), brushes and a whole-mask tool."""
    rgb, truth = disk_scene()
    alpha = truth.copy()
    cv2.rectangle(rgb, (20, 60), (90, 200), (40, 60, 200), -1)
    cv2.rectangle(alpha, (20, 60), (90, 200), 255, -1)
    alpha[100:140, 180:220] = 0  # a hole in the disk
    ops = [
        Operation.click(55.5, 130.5, add=False),
        Operation.stroke("erase", [(190, 90), (230, 150)], 7),
        Operation.click(200.5, 120.5, add=True),
        Operation("largest"),
        Operation.click(60.5, 80.5, add=True),
        Operation.stroke("restore", [(30, 30), (80, 40)], 10, hardness=0.5),
    ]
    return rgb, alpha, ops


@pytest.mark.slow
def test_removing_an_operation_equals_replaying_the_list_without_it_byte_for_byte() -> None:
    rgb, base, ops = _history()
    for index in range(len(ops)):
        editor = Editor(rgb, base, Edits((W, H), tuple(ops)))
        before = editor.alpha.copy()
        box = editor.remove(index)
        rest = tuple(ops[:index] + ops[index + 1 :])
        expected = Editor(rgb, base, Edits((W, H), rest)).alpha
        assert np.array_equal(editor.alpha, expected), index
        assert editor.edits.operations == rest
        # The box is the tight box of what changed; nothing outside it moved.
        differ = editor.alpha != before
        if box is None:
            assert not differ.any()
        else:
            x0, y0, x1, y1 = box
            assert differ[y0:y1, x0:x1].any() and differ.sum() == differ[y0:y1, x0:x1].sum()
        # One change: Undo puts the operation back exactly, Redo takes it out again.
        editor.undo()
        assert np.array_equal(editor.alpha, before) and editor.edits.operations == tuple(ops)
        editor.redo()
        assert np.array_equal(editor.alpha, expected) and editor.edits.operations == rest
        # The clicks in effect are those of the edits now: a new click replays alike.
        click = Operation.click(40.5, 190.5, add=False)
        editor.apply(click)
        again = Editor(rgb, base, Edits((W, H), (*rest, click))).alpha
        assert np.array_equal(editor.alpha, again), index


def test_the_effects_clicks_are_the_click_operations_since_the_last_restart() -> None:
    ops = _history()[2]
    edits = Edits((W, H), (*ops, Operation("reset"), Operation.click(5, 5), ops[1]))
    assert [i for i, _ in edits.clicks()] == [len(ops) + 1]
    assert [i for i, _ in Edits((W, H), tuple(ops)).clicks()] == [0, 2, 4]
    assert Edits((W, H)).clicks() == []


def test_insert_is_the_inverse_of_remove_and_undo_of_either_is_exact() -> None:
    rgb, base, ops = _history()
    editor = Editor(rgb, base, Edits((W, H), tuple(ops)))
    full = editor.alpha.copy()
    editor.remove(2)
    removed = editor.alpha.copy()
    # Put back by an editor that never saw it removed (as after a remade result).
    fresh = Editor(rgb, base, editor.edits)
    assert np.array_equal(fresh.alpha, removed)
    fresh.insert(2, ops[2])
    assert np.array_equal(fresh.alpha, full) and fresh.edits.operations == tuple(ops)
    assert fresh.splice_to_undo() == 2
    fresh.undo()
    assert np.array_equal(fresh.alpha, removed) and fresh.splice_to_redo() == 2
    # A plain undo after the splices takes back the last operation, as ever.
    editor.undo()
    editor.undo()
    assert editor.edits.operations == tuple(ops[:-1])
    expected = Editor(rgb, base, Edits((W, H), tuple(ops[:-1]))).alpha
    assert np.array_equal(editor.alpha, expected)
    with pytest.raises(IndexError):
        editor.remove(len(ops))


def test_the_editor_says_how_many_pixels_each_operation_changed_visibly() -> None:
    """What the app reads to tell a click that changed nothing (NO_CHANGE_SHARE)."""
    from bgremover.touchup.regions import NO_CHANGE_SHARE, SEEN_STEP

    rgb = np.full((100, 100, 3), 128, np.uint8)
    base = np.zeros((100, 100), np.uint8)
    editor = Editor(rgb, base)
    stroke = Operation.stroke("restore", [(50.5, 50.5)], 10)
    editor.apply(stroke)
    assert editor.seen_by(stroke) == int((editor.alpha >= SEEN_STEP).sum()) > 0
    nothing = Operation.stroke("erase", [(5.5, 5.5)], 3)  # on what is removed already
    editor.apply(nothing)
    assert editor.seen_by(nothing) == 0 < NO_CHANGE_SHARE * base.size
    assert editor.seen_by(Operation.stroke("erase", [(5.5, 5.5)], 3)) is None  # not this one
    editor.undo()
    assert editor.seen_by(nothing) is None


def test_one_history_counted_on_at_once_and_followed_by_the_editor_bit_for_bit() -> None:
    """The app counts the user's commands on the history at once and hands each move to
    the editor, which takes that history as its own: the two cannot disagree. An editor
    made again from the edits alone (a result remade) follows the same history."""
    rgb, base, ops = _history()
    editor = Editor(rgb, base)
    history = editor.history
    assert history.after(Undo()) is None and history.after(Redo()) is None
    assert history.after(Remove(0)) is None
    commands = [Apply(op) for op in ops[:4]]
    commands += [Remove(1), Undo(), Undo(), Redo(), Remove(0), Undo(), Apply(ops[4])]
    for command in commands:
        move = history.after(command)
        assert move is not None, command
        history = move.after
        editor.make(move)
        assert editor.history is history and editor.edits == history.edits
        assert np.array_equal(editor.alpha, apply_edits(history.edits, rgb, base)), command
    tools = ["remove", "erase", "add", "largest", "add"]
    assert [op.tool for op in history.edits.operations] == tools
    assert editor.can_undo and not editor.can_redo  # a new operation drops Redo's changes
    # A result made again: its editor has the edits, not their history, and follows it.
    fresh = Editor(rgb, base, history.edits)
    for command in (Undo(), Undo(), Undo(), Redo(), Undo(redo=False)):
        move = history.after(command)
        assert move is not None, command
        history = move.after
        fresh.make(move)
        editor.make(move)
        assert fresh.history is history is editor.history
        assert np.array_equal(fresh.alpha, editor.alpha), command
        assert np.array_equal(fresh.alpha, apply_edits(history.edits, rgb, base)), command
    # Undo(redo=False) took back a change Redo does not offer again.
    assert [op.tool for op in history.edits.operations] == ["remove", "erase"]
    assert [change.op for change in history.undone] == [ops[4], ops[3]]
    assert History.start(history.edits).after(Undo()).after.edits.operations == (ops[0],)
