"""A rerun never keeps a stale file silently, and an output folder that cannot be written
is refused before any work.

An output records the settings it was made with (a digest of everything that changes its
pixels or bytes, see ``Remover.output_settings``) beside the photo it was made from: a
rerun with the same settings skips it, one with other settings makes it again and says so
("1 redone: settings changed"), on the command line, with ``--ray`` and in the app's batch.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.engine.batch import (
    SETTINGS_CHANGED,
    SETTINGS_UNKNOWN,
    BatchFinished,
    ItemDone,
    run_batch,
)
from bgremover.engine.pipeline import EngineConfig, Remover
from bgremover.engine.plan import plan_batch
from bgremover.export.compose import ComposeOptions
from bgremover.export.options import SWITCHES, Length, Outline, Shadow
from bgremover.export.output import (
    DONE,
    EDITED,
    STALE,
    OutputSettings,
    SourceRecord,
    existing_output,
    format_for_path,
    write_output,
)
from bgremover.touchup.edit import Edits, Operation

from conftest import DATA, SAMPLE, cli, is_job, offline_env, run_cli

COFFEE = DATA / "skimage_coffee.png"
CHELSEA = DATA / "skimage_chelsea.png"
WAIT_MS = 300_000


def _settings(path: Path) -> OutputSettings | None:
    fmt = format_for_path(path)
    assert fmt is not None
    record = fmt.record(path)
    assert record is not None
    return record.settings


# -- what the settings cover ---------------------------------------------------------------

#: A value other than the default for every export option (a new option must be added
#: here: the test below checks that each one changes what an output records).
OTHER_EXPORT = {
    "mask_only": True,
    "background": (255, 0, 0, 255),
    "background_image": str(SAMPLE),
    "background_fit": "fit",
    "blur": 1.0,
    "decontaminate": True,
    "crop": True,
    "margin": Length(5.0, percent=True),
    "canvas": (600, 600),
    "aspect": (1, 1),
    "position": "bottom",
    "max_size": 500,
    "shadow": Shadow(),
    "outline": Outline(),
    "quality": 70,
    "lossless": True,
    "strip_metadata": True,
    # The switches whose fields the option records make (bgremover.export.options.SWITCHES).
    **{option.key: True for option in SWITCHES},
}


def test_every_setting_that_changes_an_output_changes_its_record() -> None:
    base = Remover("u2netp")
    options = ComposeOptions()
    first = base.output_settings(options, "png")
    assert first == Remover("u2netp").output_settings(ComposeOptions(), "png")  # stable
    assert len(first.digest) == 64 and first.summary == "u2netp fp32, refined, png"

    assert set(OTHER_EXPORT) == {f.name for f in fields(ComposeOptions)}
    needs = {"margin": ComposeOptions(crop=True)}  # a margin applies to a crop
    for name, value in OTHER_EXPORT.items():
        start = needs.get(name, options)
        other = replace(start, **{name: value})
        was = base.output_settings(start, "png").digest
        assert base.output_settings(other, "png").digest != was, name

    engine = {
        "model": Remover("isnet-imgly"),
        "precision": Remover("u2netp", precision="int8"),
        "refine": Remover("u2netp", refine=False),
    }
    for name, remover in engine.items():
        assert remover.output_settings(options, "png").digest != first.digest, name
    int8 = Remover("u2netp", precision="int8").output_settings(options, "png")
    unguarded = Remover("u2netp", precision="int8", int8_guard=False)
    assert unguarded.output_settings(options, "png").digest != int8.digest
    assert "guard off" in unguarded.output_settings(options, "png").summary
    assert base.output_settings(options, "webp").digest != first.digest
    edits = Edits((64, 48), (Operation.click(3, 4),))
    edited = base.output_settings(options, "png", edits)
    assert edited.digest != first.digest and edited.summary.endswith("; edited")
    assert base.output_settings(options, "png", Edits((64, 48))).digest == first.digest

    # What changes only the speed is not a setting of the output.
    for same in (
        Remover("u2netp", providers="cpu"),
        Remover("u2netp", threads=2),
        Remover("u2netp", int8_guard=False),  # the guard is int8's only
    ):
        assert same.output_settings(options, "png") == first


def test_a_new_export_option_at_its_default_keeps_existing_outputs_done() -> None:
    """An upgrade that adds an option (off by default) must not redo every output."""

    @dataclass(frozen=True)
    class WithANewOption(ComposeOptions):
        sepia: bool = False

    remover = Remover("u2netp")
    before = remover.output_settings(ComposeOptions(crop=True), "png")
    assert remover.output_settings(WithANewOption(crop=True), "png") == before
    assert remover.output_settings(WithANewOption(crop=True, sepia=True), "png") != before


def test_a_background_image_counts_by_its_content(tmp_path: Path) -> None:
    wall = tmp_path / "wall.png"
    Image.new("RGB", (8, 8), (10, 20, 30)).save(wall)
    options = ComposeOptions(background_image=str(wall))
    remover = Remover("u2netp")
    before = remover.output_settings(options, "png")
    assert "background_image=wall.png" in before.summary
    Image.new("RGB", (8, 8), (200, 20, 30)).save(wall)
    os.utime(wall, ns=(1, 1))  # another time too: the file is hashed again
    assert remover.output_settings(options, "png").digest != before.digest
    moved = tmp_path / "moved.png"
    shutil.copy(wall, moved)
    assert (
        remover.output_settings(replace(options, background_image=str(moved)), "png").digest
        == remover.output_settings(options, "png").digest
    )


def test_an_output_of_other_or_unknown_settings_is_stale(
    tmp_path: Path, rgb_gradient: np.ndarray
) -> None:
    photo = tmp_path / "a.jpg"
    shutil.copy(SAMPLE, photo)
    remover = Remover("u2netp")
    plain = remover.output_settings(ComposeOptions(), "png")
    red = remover.output_settings(ComposeOptions(background=(255, 0, 0, 255)), "png")
    out = tmp_path / "a.png"
    alpha = rgb_gradient[..., 0]
    write_output(rgb_gradient, alpha, ComposeOptions(), out, "png", SourceRecord.of(photo, plain))
    assert _settings(out) == plain
    assert existing_output(out, SourceRecord.of(photo, plain)).state == DONE
    seen = existing_output(out, SourceRecord.of(photo, red))
    assert seen.state == STALE and seen.record is not None and seen.record.settings == plain
    assert existing_output(out, SourceRecord.of(photo)).state == DONE  # settings not asked
    # An output of an earlier bgremover records the photo only: its settings are unknown.
    write_output(rgb_gradient, alpha, ComposeOptions(), out, "png", SourceRecord.of(photo))
    seen = existing_output(out, SourceRecord.of(photo, plain))
    assert seen.state == STALE and seen.record is not None and seen.record.settings is None
    # One made with edits is kept from a run without them; one with other edits is stale.
    touched = remover.output_settings(ComposeOptions(), "png", Edits((64, 48), (
        Operation.stroke("erase", [(3.0, 4.0)], 2.0),)))  # fmt: skip
    write_output(rgb_gradient, alpha, ComposeOptions(), out, "png", SourceRecord.of(photo, touched))
    assert _settings(out) == touched and touched.edited
    assert existing_output(out, SourceRecord.of(photo, plain)).state == EDITED
    other = remover.output_settings(ComposeOptions(), "png", Edits((64, 48), (
        Operation.stroke("erase", [(9.0, 4.0)], 2.0),)))  # fmt: skip
    assert existing_output(out, SourceRecord.of(photo, other)).state == STALE


# -- reruns on the command line -------------------------------------------------------------


def test_a_rerun_with_new_options_redoes_the_image_and_says_so(
    tmp_path: Path, u2netp_path: Path
) -> None:
    """Issue #33, 2: the same command with -b "#ff0000" was "0 written, 1 already done",
    and the file stayed transparent."""
    shutil.copy(COFFEE, tmp_path / "skimage_coffee.png")
    out = tmp_path / "coffee.png"
    photo = str(tmp_path / "skimage_coffee.png")
    cli("remove", photo, "-o", str(out), "-q", check=True)
    with Image.open(out) as img:
        assert img.mode == "RGBA"
    transparent = out.read_bytes()

    proc = cli("remove", photo, "-o", str(out), "-q", "-b", "#ff0000")
    assert proc.returncode == 0, proc.stderr
    assert "0 written, 1 redone: settings changed in" in proc.stderr, proc.stderr
    assert "already done" not in proc.stderr
    with Image.open(out) as img:
        pixels = np.asarray(img)
    assert pixels.ndim == 3 and pixels.shape[2] == 3  # opaque now: on the red background
    settings = _settings(out)
    assert settings is not None and "background=#ff0000ff" in settings.summary
    red = out.read_bytes()
    assert red != transparent

    proc = cli("remove", photo, "-o", str(out), "-q", "-b", "#ff0000")
    assert proc.returncode == 0 and "0 written, 1 already done in" in proc.stderr, proc.stderr
    assert out.read_bytes() == red
    # What changes only the speed is not another setting: still done.
    proc = cli("remove", photo, "-o", str(out), "-q", "-b", "#ff0000", "--threads", "1")
    assert "0 written, 1 already done in" in proc.stderr, proc.stderr
    # --overwrite makes it again whatever it records, and calls it written.
    proc = cli("remove", photo, "-o", str(out), "-q", "-b", "#ff0000", "--overwrite")
    assert proc.returncode == 0 and "1 written in" in proc.stderr, proc.stderr
    assert out.read_bytes() == red

    # With -v, the log says what the output was made with and what it is now.
    proc = cli("remove", photo, "-o", str(out), "-q", "-v", "--no-refine")
    assert "1 redone: settings changed" in proc.stderr, proc.stderr
    assert "it was u2netp fp32, refined, png; background=#ff0000ff" in proc.stderr
    assert "now u2netp fp32, not refined, png" in proc.stderr


def test_outputs_of_an_earlier_bgremover_are_redone_and_said_so(
    tmp_path: Path, u2netp_path: Path, rgb_gradient: np.ndarray
) -> None:
    """An output whose record names the photo but no settings (as bgremover wrote them
    before it recorded settings) is made again: whether its settings were these is not
    known. Another photo's output is still kept."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    shutil.copy(CHELSEA, src / "b.png")
    write_output(rgb_gradient, rgb_gradient[..., 0], ComposeOptions(), out / "a.png", "png",
                 SourceRecord.of(src / "a.png"))  # fmt: skip
    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert f"1 written, 1 redone: {SETTINGS_UNKNOWN} in" in proc.stderr, proc.stderr
    with Image.open(out / "a.png") as img, Image.open(COFFEE) as photo:
        assert img.size == photo.size  # the real cutout now, not the old file
    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert "0 written, 2 already done" in proc.stderr, proc.stderr


def test_an_edited_output_is_not_replaced_by_a_run_without_the_edits(
    tmp_path: Path, u2netp_path: Path
) -> None:
    """Edits are a setting, but a run that lacks them would throw the touch-up away: such an
    output is kept and said so; other edits, or --overwrite, make it again."""
    photo = tmp_path / "coffee.png"
    shutil.copy(COFFEE, photo)
    with Image.open(photo) as img:
        size = img.size
    edits = tmp_path / "coffee.edits.json"
    erase = Operation.stroke("erase", [(20.0, 20.0), (120.0, 60.0)], 15.0)
    edits.write_text(Edits(size, (erase,)).to_json())
    out = tmp_path / "out.png"
    cli("remove", str(photo), "-o", str(out), "-q", "--edits", str(edits), check=True)
    settings = _settings(out)
    assert settings is not None and settings.edited and settings.summary.endswith("; edited")
    edited = out.read_bytes()

    proc = cli("remove", str(photo), "-o", str(out), "-q")
    assert proc.returncode == 0, proc.stderr
    assert "was made with your edits (touch-up), which this run does not have" in proc.stderr
    assert "0 written, 1 already done" in proc.stderr, proc.stderr
    assert out.read_bytes() == edited
    # The same edits: done; other edits: made again.
    proc = cli("remove", str(photo), "-o", str(out), "-q", "--edits", str(edits))
    assert "0 written, 1 already done" in proc.stderr and "touch-up" not in proc.stderr
    more = Edits(size, (erase, Operation.stroke("erase", [(200.0, 200.0)], 10.0)))
    edits.write_text(more.to_json())
    proc = cli("remove", str(photo), "-o", str(out), "-q", "--edits", str(edits))
    assert "0 written, 1 redone: settings changed" in proc.stderr, proc.stderr
    proc = cli("remove", str(photo), "-o", str(out), "-q", "--overwrite", check=True)
    settings = _settings(out)
    assert settings is not None and not settings.edited


def test_the_batch_reports_what_it_redid(tmp_path: Path, u2netp_path: Path) -> None:
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    shutil.copy(CHELSEA, src / "b.png")
    plan = plan_batch([src], tmp_path / "out", "png")
    remover = Remover.from_config(EngineConfig("u2netp"))
    first = list(run_batch(plan.jobs, remover))
    assert isinstance(first[-1], BatchFinished) and first[-1].redone == {}
    assert all(not e.redone for e in first if isinstance(e, ItemDone))
    again = list(run_batch(plan.jobs, remover, ComposeOptions(mask_only=True)))
    done = [e for e in again if isinstance(e, ItemDone)]
    assert len(done) == 2 and {e.redone for e in done} == {SETTINGS_CHANGED}
    finished = again[-1]
    assert isinstance(finished, BatchFinished)
    assert finished.done == 2 and finished.redone == {SETTINGS_CHANGED: 2}
    with Image.open(tmp_path / "out" / "a.png") as img:
        assert img.mode == "L"  # the mask now


@pytest.mark.slow
def test_ray_redoes_what_the_plain_batch_redoes(tmp_path: Path, u2netp_path: Path) -> None:
    pytest.importorskip("ray")
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    shutil.copy(CHELSEA, src / "b.png")
    plain, ray = tmp_path / "plain", tmp_path / "ray"
    cli("remove", str(src), "-o", str(plain), "-q", "-b", "white", check=True)
    cli("remove", str(src), "-o", str(ray), "-q", check=True)
    proc = run_cli("remove", str(src), "-o", str(ray), "-q", "-b", "white", "--ray")
    assert proc.returncode == 0, proc.stderr
    assert "0 written, 2 redone: settings changed in" in proc.stderr, proc.stderr
    for name in ("a.png", "b.png"):
        assert (ray / name).read_bytes() == (plain / name).read_bytes(), name


# -- the app's batch --------------------------------------------------------------------------


def test_the_apps_batch_redoes_outputs_whose_settings_changed(qtbot, window, tmp_path) -> None:
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    shutil.copy(CHELSEA, src / "b.png")
    dialog = window.batches.open_batch(src)
    dialog.output_edit.setText(str(out))

    def run() -> object:
        with qtbot.waitSignal(
            window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS
        ) as ended:
            dialog.start_button.click()
        return ended.args[0].result

    first = run()
    assert first.done == 2 and not first.redone
    assert "2 written, 0 already done, 0 failed" in dialog.status.text()
    window.apply_settings(background="#ff0000")
    second = run()
    assert second.done == 2 and second.redone == {SETTINGS_CHANGED: 2}
    assert "0 written, 2 redone: settings changed, 0 already done" in dialog.status.text()
    with Image.open(out / "a.png") as img:
        assert img.mode == "RGB"
    third = run()
    assert third.skipped == 2 and third.done == 0
    assert "0 written, 2 already done" in dialog.status.text()


def test_the_apps_save_records_the_settings_a_rerun_checks(qtbot, window, tmp_path) -> None:
    """A cutout saved in the app is "already done" for a batch with the same settings, and
    made again by one with others."""
    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([src / "a.png"])
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS, check_params_cb=is_job("save")):
        assert window.saving.save_result(window.current_entry(), out / "a.png") is not None
    settings = _settings(out / "a.png")
    assert settings is not None and settings.summary == "u2netp fp32, refined, png"
    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert "0 written, 1 already done" in proc.stderr, proc.stderr
    proc = cli("remove", str(src), "-o", str(out), "-q", "--mask-only")
    assert "0 written, 1 redone: settings changed" in proc.stderr, proc.stderr


def test_save_all_records_the_settings_a_rerun_checks(tmp_path: Path, u2netp_path: Path) -> None:
    """Save Selected / Save All write what a batch with the same settings takes for done."""
    from bgremover.gui.save_many import SaveItem, SaveRequest, write_item

    src, out = tmp_path / "in", tmp_path / "out"
    src.mkdir()
    out.mkdir()
    shutil.copy(COFFEE, src / "a.png")
    item = SaveItem(1, "a.png", src / "a.png", out / "a.png")
    config = EngineConfig("u2netp")
    request = SaveRequest((item,), out, config, ComposeOptions(), "png")
    assert write_item(Remover.from_config(config), item, request) > 0
    proc = cli("remove", str(src), "-o", str(out), "-q")
    assert "0 written, 1 already done" in proc.stderr, proc.stderr
    proc = cli("remove", str(src), "-o", str(out), "-q", "-f", "png", "--no-refine")
    assert "0 written, 1 redone: settings changed" in proc.stderr, proc.stderr


# -- an output folder that cannot be written ---------------------------------------------


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A folder no file can be made in, even by an administrator where the tests run as
    one: sysfs refuses new files to root too; otherwise a folder without write permission."""
    if os.name == "posix" and os.geteuid() == 0:
        sysfs = Path("/sys/kernel")
        try:
            fd, probe = tempfile.mkstemp(dir=sysfs)
        except OSError:
            yield sysfs
            return
        os.close(fd)
        os.unlink(probe)
        pytest.skip("no folder here refuses new files to an administrator")
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


@pytest.mark.parametrize("offline", [False, True], ids=["model at hand", "no model"])
@pytest.mark.parametrize("below", [False, True], ids=["the folder", "a new folder in it"])
def test_an_unwritable_output_folder_is_refused_up_front(
    tmp_path: Path, unwritable: Path, below: bool, offline: bool, u2netp_path: Path
) -> None:
    """Issue #33, 5: every file failed with the same line, and the exit code was 1."""
    out = unwritable / "bgremover-out" if below else unwritable
    photos = tmp_path / "in"
    photos.mkdir()
    for photo in (COFFEE, CHELSEA):
        shutil.copy(photo, photos / photo.name)
    # Offline (an empty model cache, no network): refused before the model is looked for.
    env = offline_env(tmp_path) if offline else None
    proc = cli("remove", str(photos), "-o", str(out), env=env)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[0].startswith("bgremover: "), proc.stderr
    assert "cannot be written in" in lines[0] and "no image was processed" in lines[0]
    assert str(out) in lines[0]
    assert "Give an output folder you can write to" in proc.stderr
    assert len(lines) == 2, proc.stderr  # one message: what happened, then what to do
    assert "failed" not in proc.stderr and "Traceback" not in proc.stderr
    assert not (unwritable / "bgremover-out").exists()


def test_the_summary_names_no_file_that_was_not_written(tmp_path: Path, u2netp_path: Path) -> None:
    """Issue #33, 5: "0 written, 1 failed -> out/notatext.png" named a file never made."""
    broken = tmp_path / "notatext.jpg"
    broken.write_bytes(b"this is not a JPEG" * 100)
    out = tmp_path / "badout" / "notatext.png"
    proc = cli("remove", str(broken), "-o", str(out), "-q")
    assert proc.returncode == 1, proc.stderr
    summary = proc.stderr.strip().splitlines()[-1]
    assert summary.startswith("bgremover: 0 written, 1 failed in "), proc.stderr
    assert "->" not in summary and not out.exists()
    # A written file is named, as before.
    good = tmp_path / "badout" / "coffee.png"
    proc = cli("remove", str(COFFEE), "-o", str(good), "-q", check=True)
    assert proc.stderr.strip().splitlines()[-1].endswith(f"-> {good}")
