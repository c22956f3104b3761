"""The int8 guard: its check, the engine running fp32 where int8 is in doubt, and every
place that says so (the result, the command line's summary, compare's JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover import Remover
from bgremover.network.guard import NEAR, THRESHOLD, GuardCheck, check, doubt, summary

from conftest import DATA, cli

# Measured with u2netp's default int8 recipe: on the cat (skimage_chelsea) a broad part
# of the blanket sits near 0.5 (doubt 0.039) and int8's mask is at IoU 0.958 against
# fp32's; the coffee cup is decided everywhere (doubt 0.003, IoU 0.999).
UNSURE = DATA / "skimage_chelsea.png"
SURE = DATA / "skimage_coffee.png"


def test_doubt_is_the_undecided_area_per_subject_area() -> None:
    score = np.zeros((100, 100), np.float32)
    score[:50] = 1.0  # a subject of 5000 pixels
    assert doubt(score) == 0.0
    score[60:70, :20] = 0.5 + NEAR / 2  # 200 undecided pixels, on the subject's side
    score[80:90, :10] = 0.5 - NEAR / 2  # 100 more, on the background's
    assert doubt(score) == pytest.approx(300 / 5200)
    score[95, 0] = 0.5 + 2 * NEAR  # decided enough: not counted
    assert doubt(score) == pytest.approx(300 / 5201)
    assert doubt(np.full((10, 10), 0.5, np.float32)) == 1.0  # all undecided


def test_the_check_runs_fp32_only_in_doubt_and_only_with_the_guard_on() -> None:
    sure = np.zeros((100, 100), np.float32)
    sure[:50] = 1.0
    unsure = sure.copy()
    unsure[50:60] = 0.5  # 1000 undecided pixels per 6000 at or above 0.5
    assert not check(sure, guard=True).ran_fp32
    assert check(unsure, guard=True).ran_fp32
    off = check(unsure, guard=False)
    assert off.in_doubt and not off.ran_fp32
    assert GuardCheck(THRESHOLD, ran_fp32=False).in_doubt  # the threshold itself is doubt
    assert not GuardCheck(THRESHOLD * 0.99, ran_fp32=False).in_doubt
    assert check(sure, guard=True).words() == ""
    assert "so it was made in fp32" in check(unsure, guard=True).words()
    assert "16.7 % of the subject" in check(unsure, guard=True).words()
    assert "may differ from fp32's" in off.words()


def test_a_batch_summary_counts_what_the_guard_did() -> None:
    made = GuardCheck(0.05, ran_fp32=True)
    sure = GuardCheck(0.001, ran_fp32=False)
    unsure = GuardCheck(0.05, ran_fp32=False)
    assert summary([None, None]) == ""  # fp32: no guard
    assert summary([sure, sure]) == ""
    assert summary([made, sure, None], " (hint)") == (
        "1 of 2 images was made in fp32: int8 was unsure of it (hint)."
    )
    assert summary([made, made, sure]).startswith("2 of 3 images were made in fp32")
    assert summary([unsure, sure]).startswith("int8 was unsure of 1 of 2 images")


@pytest.mark.model
def test_int8_in_doubt_gives_fp32s_result_and_says_so(u2netp_int8_path: Path) -> None:
    fp32 = Remover("u2netp", refine=False)
    guarded = Remover("u2netp", precision="int8", refine=False)
    plain = Remover("u2netp", precision="int8", refine=False, int8_guard=False)

    reference = fp32.remove(UNSURE)
    result = guarded.remove(UNSURE)
    assert result.guard is not None and result.guard.ran_fp32
    assert result.precision == "fp32"  # what ran for this photo
    assert np.array_equal(result.mask, reference.mask)  # fp32's, bit for bit
    assert result.guard.doubt >= THRESHOLD
    # The fp32 session is kept beside the int8 one: the next photo does not reload.
    assert len(guarded.pool.keys()) == 2

    unguarded = plain.remove(UNSURE)
    assert unguarded.precision == "int8" and unguarded.guard is not None
    assert unguarded.guard.in_doubt and not unguarded.guard.ran_fp32
    assert unguarded.guard.doubt == result.guard.doubt  # the same check of the same output
    assert not np.array_equal(unguarded.mask, reference.mask)

    decided = guarded.remove(SURE)
    assert decided.precision == "int8" and decided.guard is not None
    assert not decided.guard.in_doubt and not decided.guard.ran_fp32
    assert fp32.remove(SURE).guard is None  # fp32 needs no guard


def test_a_batch_releases_the_fp32_session_the_guard_loaded(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    """The fp32 session a photo in doubt needed is held while the batch runs (the next such
    photo does not reload it) and released when the batch ends, cancelled or not."""
    from bgremover.engine.batch import ItemDone, run_batch
    from bgremover.engine.plan import plan_batch

    photos = tmp_path / "photos"
    photos.mkdir()
    for i in range(2):
        (photos / f"unsure{i}.png").write_bytes(UNSURE.read_bytes())
    guarded = Remover("u2netp", precision="int8", refine=False)
    int8_key = guarded.session_key()
    fp32_key = Remover("u2netp", refine=False).session_key()
    jobs = plan_batch([photos], tmp_path / "out", "png").jobs

    held_during: list[bool] = []
    made = []
    for event in run_batch(jobs, guarded):
        if isinstance(event, ItemDone):
            made.append(event.guard)
            held_during.append(fp32_key in guarded.pool)
    assert [g is not None and g.ran_fp32 for g in made] == [True, True]
    assert held_during == [True, True]
    assert guarded.pool.keys() == [int8_key]  # int8's memory again

    events = run_batch(jobs, guarded, overwrite=True)
    next(e for e in events if isinstance(e, ItemDone))
    assert fp32_key in guarded.pool
    events.close()  # cancelled after one photo
    assert guarded.pool.keys() == [int8_key]


@pytest.mark.model
def test_the_cli_batch_says_how_many_were_made_in_fp32(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    photos = tmp_path / "photos"
    photos.mkdir()
    for src in (UNSURE, SURE):
        (photos / src.name).write_bytes(src.read_bytes())
    guarded = cli("remove", str(photos), "-o", str(tmp_path / "g"), "-p", "int8", "-v")
    assert guarded.returncode == 0, guarded.stderr
    assert (
        "bgremover: 1 of 2 images was made in fp32: int8 was unsure of it "
        "(--no-int8-guard keeps int8 for every image)."
    ) in guarded.stderr
    assert f"{photos / UNSURE.name}: int8 was unsure of this photo" in guarded.stderr
    fp32 = cli("remove", str(photos / UNSURE.name), "-o", str(tmp_path / "f.png"))
    assert fp32.returncode == 0, fp32.stderr
    made = np.asarray(Image.open(tmp_path / "g" / UNSURE.name))
    assert np.array_equal(made, np.asarray(Image.open(tmp_path / "f.png")))

    kept = cli("remove", str(photos), "-o", str(tmp_path / "k"), "-p", "int8", "--no-int8-guard")
    assert kept.returncode == 0, kept.stderr
    assert "made in fp32" not in kept.stderr
    assert "bgremover: int8 was unsure of 1 of 2 images" in kept.stderr
    int8 = np.asarray(Image.open(tmp_path / "k" / UNSURE.name))
    assert not np.array_equal(int8, made)

    plain = cli("remove", str(photos), "-o", str(tmp_path / "p"))
    assert plain.returncode == 0 and "int8" not in plain.stderr  # fp32: nothing to say


@pytest.mark.model
def test_compare_shows_int8_as_it_is_and_says_when_it_changes_a_photo(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    out = tmp_path / "report"
    proc = cli("compare", str(UNSURE), str(SURE), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    unsure = json.loads((out / "skimage_chelsea.json").read_text())
    assert unsure["b"]["precision"] == "int8" and unsure["iou"] < 0.98  # int8 itself, unguarded
    assert unsure["material"] is True
    assert unsure["guard_a"] is None
    assert unsure["guard_b"]["in_doubt"] is True and unsure["guard_b"]["ran_fp32"] is False
    assert unsure["guard_b"]["threshold"] == THRESHOLD
    assert unsure["verdict"].startswith("u2netp int8 changes this photo materially")
    assert "The int8 guard catches it" in unsure["verdict"]
    assert unsure["verdict"] in proc.stdout
    sure = json.loads((out / "skimage_coffee.json").read_text())
    assert sure["material"] is False and sure["guard_b"]["in_doubt"] is False
    assert sure["verdict"].startswith("u2netp int8 keeps u2netp fp32's mask on this photo")
    assert sure["verdict"] not in proc.stdout  # only what needs saying is printed
    assert "u2netp int8 changes 1 of 2 photos materially (IoU below 0.98)." in proc.stdout
    assert unsure["warning"] is True and sure["warning"] is False


def test_two_models_that_disagree_are_said_in_neutral_words() -> None:
    """Neither of two models is the reference: a disagreement names no culprit."""
    from bgremover.compare.comparison import verdict

    text = verdict(0.9, "u2netp fp32", "isnet-imgly fp32", None, reference=False)
    assert text.startswith("u2netp fp32 and isnet-imgly fp32 disagree on this photo")
    assert "Neither is the reference" in text and "changes" not in text
    same = verdict(0.99, "u2netp fp32", "isnet-imgly fp32", None, reference=False)
    assert same == "u2netp fp32 and isnet-imgly fp32 agree on this photo (IoU 0.990)."
    held = verdict(0.9, "u2netp fp32", "u2netp int8", None)  # int8 is held to fp32
    assert held.startswith("u2netp int8 changes this photo materially")
