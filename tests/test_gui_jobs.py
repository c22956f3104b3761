"""The app's orchestration as a user meets it: what each cancel reaches, what each failure
shows, and that nothing blocks the window. One test per defect found by probing the app
(numbered as in the issue that listed them), with real widgets, the real worker threads,
real models and a real HTTP server on loopback for downloads."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from PIL import Image

pytest.importorskip("PySide6")
from PySide6.QtWidgets import QApplication, QMessageBox
from test_gui_compare_models import answer_download

from bgremover.gui.export_panel import select_data
from bgremover.gui.jobs import JobState
from bgremover.gui.queue import Status
from bgremover.network import models
from bgremover.network.models import DEFAULT_MODEL

from conftest import (
    DATA,
    SAMPLE,
    build_tiny_model,
    cpu_load,
    is_job,
    make_window,
    run_gui,
    served_model,
)

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("isolated_settings")]
WAIT_MS = 300_000
PHOTOS = [SAMPLE, DATA / "skimage_chelsea.png", DATA / "skimage_coffee.png"]


def message_boxes() -> list[QMessageBox]:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox)]


def visible_boxes() -> list[QMessageBox]:
    return [box for box in message_boxes() if box.isVisible()]


@pytest.fixture(autouse=True)
def no_boxes_left():
    yield
    for box in message_boxes():
        box.close()


@pytest.fixture()
def slow_model(tmp_path: Path, model_server, monkeypatch: pytest.MonkeyPatch, fresh_home):
    """A 1.5 MB tiny model behind a loopback server that sends it in about 1.2 s."""
    blob = build_tiny_model(tmp_path / "slow.onnx", padding_bytes=1_500_000).read_bytes()
    spec = served_model(model_server, "slowmodel", blob)
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    model_server.delay = 0.05
    return spec, model_server


def photo_folder(folder: Path, count: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        photo = PHOTOS[i % len(PHOTOS)]
        shutil.copy(photo, folder / f"img{i:02d}{photo.suffix}")
    return folder


def choose_model(window, name: str) -> None:
    """What the user does: pick the model in the settings pane, and agree to download it."""
    asked = answer_download("Download")
    select_data(window.panel.model_box, name)
    assert asked and f"{name} is not downloaded yet" in asked[0]
    assert window.settings.model == name


# 1 ----------------------------------------------------------------------------------
def test_a_batch_started_during_a_download_is_not_cancelled(qtbot, tmp_path, slow_model) -> None:
    """Closing the model-preparation progress once cancelled the next request: a batch
    started during a download was cancelled after its first image."""
    spec, _ = slow_model
    window = make_window(qtbot)
    choose_model(window, spec.name)
    window.add_paths([SAMPLE])
    qtbot.waitUntil(window.preparation.isVisible, timeout=WAIT_MS)  # downloading
    src = photo_folder(tmp_path / "in", 4)
    dialog = window.batches.open_batch(src)
    dialog.output_edit.setText(str(tmp_path / "out"))
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS
    ) as ended:
        dialog.start_button.click()
    assert window.preparation.isHidden()  # the download finished, and its bar went
    assert ended.args[0].state is JobState.DONE, ended.args[0]
    assert ended.args[0].result.done == 4
    assert len(list((tmp_path / "out").glob("*.png"))) == 4
    assert "Finished" in dialog.status.text()


# 2 ----------------------------------------------------------------------------------
def test_cancelling_a_download_stops_it_once_for_every_waiting_image(qtbot, slow_model) -> None:
    """It used to run the download again for each queued image, fail them and open a box
    for each; a cancel is not a failure."""
    spec, server = slow_model
    server.delay = 0.4  # about 10 s: plenty of time to cancel
    window = make_window(qtbot)
    choose_model(window, spec.name)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths(PHOTOS)
        qtbot.waitUntil(window.preparation.isVisible, timeout=WAIT_MS)
        window.preparation.cancel_button.click()
    assert server.requests[f"/{spec.filename}"] == 1  # one download, stopped
    entries = window.queue.entries()
    assert [e.status for e in entries] == [Status.STOPPED] * 3
    assert all("you cancelled preparing the model slowmodel" in e.error for e in entries)
    assert not message_boxes()
    assert not window.preparation.isVisible()
    assert not (window.store.models_dir / spec.filename).exists()  # nothing half-written
    assert "Reprocess" in window.detail.text()


# 3 ----------------------------------------------------------------------------------
def test_the_batch_dialog_recovers_when_the_model_cannot_be_loaded(
    qtbot, tmp_path, model_server, monkeypatch, fresh_home
) -> None:
    spec = served_model(model_server, "missingmodel", None)
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    window = make_window(qtbot)
    choose_model(window, spec.name)
    dialog = window.batches.open_batch(photo_folder(tmp_path / "in", 2))
    dialog.output_edit.setText(str(tmp_path / "out"))
    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS):
        dialog.start_button.click()
        assert dialog.running and not dialog.start_button.isEnabled()
    assert not dialog.running
    assert dialog.start_button.isEnabled() and not dialog.cancel_button.isEnabled()
    assert "could not run" in dialog.status.text()
    assert "Could not obtain model 'missingmodel'" in dialog.status.text()
    assert not list((tmp_path / "out").glob("*"))


# 4 ----------------------------------------------------------------------------------
def test_clear_queue_stops_the_queued_work(qtbot, tmp_path, window) -> None:
    """Clearing 30 queued images used to leave 29 of them to be computed anyway."""
    started: list[int] = []
    window.engine.started.connect(lambda job: job.kind == "process" and started.append(job.id))
    ended: list = []
    window.engine.ended.connect(lambda end: end.kind == "process" and ended.append(end))
    window.add_paths(sorted(photo_folder(tmp_path / "in", 30).iterdir()))
    qtbot.waitUntil(lambda: len(started) >= 1, timeout=WAIT_MS)
    running = {j.id for j in window.engine.jobs() if j.state is JobState.RUNNING}
    before = set(started)
    window.clear_queue()
    assert len(window.queue) == 0
    qtbot.waitUntil(lambda: not window.engine.busy() and len(ended) == 30, timeout=WAIT_MS)
    qtbot.wait(100)
    assert not set(started) - before - running  # nothing started after the clear
    assert len(set(started)) <= len(before) + 1  # at most the one that was running
    assert sum(e.state is JobState.CANCELLED for e in ended) >= 28


# 5 ----------------------------------------------------------------------------------
def test_saving_encodes_off_the_gui_thread(qtbot, tmp_path, window, monkeypatch) -> None:
    """Saving used to compress the PNG on the GUI thread (0.64 s frozen at 12 MP)."""
    import bgremover.gui.worker as worker_module

    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    gate, writers = threading.Event(), []
    real_write = worker_module.write_output

    def held_write(*args, **kwargs):
        writers.append(threading.current_thread() is threading.main_thread())
        gate.wait(30)  # the GUI must not be waiting for this
        return real_write(*args, **kwargs)

    monkeypatch.setattr(worker_module, "write_output", held_write)
    target = tmp_path / "cut.png"
    job = window.saving.save_result(window.current_entry(), target)
    assert job is not None
    qtbot.waitUntil(lambda: bool(writers), timeout=WAIT_MS)
    assert writers == [False] and not target.exists()  # writing elsewhere, GUI free
    qtbot.wait(20)  # the event loop runs while the write is held
    with qtbot.waitSignal(window.output.ended, timeout=WAIT_MS) as ended:
        gate.set()
    assert ended.args[0].state is JobState.DONE
    assert Image.open(target).size == (512, 600)
    assert "Saved" in window.statusBar().currentMessage()


# 6 ----------------------------------------------------------------------------------
def test_one_session_per_model_and_old_ones_are_released(qtbot, tmp_path, window) -> None:
    """Toggling "Refine edges" made a second session of the same model, and switching
    models kept every session ever made."""
    import gc
    import weakref

    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    for checked in (False, True):
        window.panel.refine_box.setChecked(checked)
        with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
            window.reprocess()
    assert len(window.worker.pool) == 1
    first = weakref.ref(window.worker.pool._sessions[window.worker.pool.keys()[0]][0])
    for i in range(4):  # four model files, tried one after another
        path = build_tiny_model(tmp_path / f"model{i}.onnx", size=24 + 8 * i)
        with qtbot.waitSignal(
            window.engine.ended, check_params_cb=is_job("check"), timeout=WAIT_MS
        ):
            window.model_setting.use_model_file(path)
    assert len(window.worker.pool) == window.worker.pool.capacity == 3
    gc.collect()
    assert first() is None  # u2netp's session, least recently used, was freed
    assert window.settings.model == str(tmp_path / "model3.onnx")


# 7 ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_bad_file_never_opens_a_dialog_even_at_start_under_load(qtbot, tmp_path, u2netp_path):
    """On a busy machine a modal box about a broken file appeared before the window, and
    the window never came. A bad file is shown in the queue; no dialog opens at all.

    The folder's name holds the word "models": the box used to be chosen by whether an
    error's text said "model", and a file's path is part of its error."""
    folder = photo_folder(tmp_path / "test models" / "in", 4)
    (folder / "broken.jpg").write_text("this is a text file, not a photo")
    with cpu_load(2):
        window = make_window(qtbot)
        with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
            window.add_paths([folder])
        assert window.isVisible()
        assert not message_boxes()
        broken = [e for e in window.queue.entries() if e.name == "broken.jpg"]
        assert broken[0].status is Status.FAILED and "broken.jpg" in broken[0].error
        assert sum(e.status is Status.DONE for e in window.queue.entries()) == 4
        # The app as launched: the window comes up, lists the failure, and exits.
        shot = tmp_path / "shot.png"
        proc = run_gui(str(folder), "--screenshot", str(shot), timeout=600)
    assert proc.returncode == 1 and "broken.jpg" in proc.stderr  # one image failed
    assert "screenshot" in proc.stdout and Image.open(shot).size[0] >= 800


# 8 ----------------------------------------------------------------------------------
def test_the_batch_dialog_survives_an_impossible_request(qtbot, tmp_path, window) -> None:
    """Input folder = output folder: the dialog stuck on "Starting…", showed the CLI's
    wording, came back with "Input folder: False" and remembered the bad pair."""
    src = photo_folder(tmp_path / "in", 2)
    dialog = window.batches.open_batch(src)
    dialog.output_edit.setText(str(src))
    dialog.start_button.click()
    assert "output folder is the input folder" in dialog.status.text()
    assert not dialog.running and dialog.start_button.isEnabled()
    assert not message_boxes()
    # The same request reaching the engine (e.g. through a link to the same folder).
    with qtbot.waitSignal(window.engine.ended, check_params_cb=is_job("batch"), timeout=WAIT_MS):
        window.batches.start_batch(src, src, False)
    text = dialog.status.text()
    assert "could not run" in text and "output folder is the input folder" in text
    assert "with -o" not in text  # no command-line wording in the app
    assert dialog.start_button.isEnabled() and not dialog.cancel_button.isEnabled()
    assert window.settings.last_output_folder != str(src)  # the bad pair is not remembered
    dialog.close()
    window.file_menu.batch.trigger()  # the menu's Batch Folder…
    assert window.batches.open_batch().input_edit.text() != "False"
    assert not list(src.glob("*.png")) or len(list(src.iterdir())) == 2


# 9 ----------------------------------------------------------------------------------
def test_cancelling_the_int8_build_is_not_a_failure_and_compare_retries(
    qtbot, fresh_home, u2netp_int8_path
) -> None:
    window = make_window(qtbot)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    entry = window.current_entry()
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("compare"), timeout=WAIT_MS
    ) as ended:
        window.comparing.show_compare()  # Ctrl+K
        qtbot.waitUntil(
            lambda: window.preparation.isVisible() and window.preparation.task == "quantize",
            timeout=WAIT_MS,
        )
        window.preparation.cancel_button.click()
    assert ended.args[0].state is JobState.CANCELLED
    assert not message_boxes()  # the user's own cancel is not an error
    assert entry.comparison.cancelled and not entry.compare_error
    assert "cancelled" in window.compare.placeholder.text()
    assert not list((fresh_home / "models").glob("*.int8-*"))  # nothing half-made kept
    # The int8 model appears (made meanwhile, e.g. through another image): switching
    # tabs retries the comparison, and so does Ctrl+K.
    shutil.copy(u2netp_int8_path, fresh_home / "models" / u2netp_int8_path.name)
    window.tabs.setCurrentIndex(0)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.tabs.setCurrentWidget(window.compare)
    assert entry.compared is not None and window.compare.result is entry.compared
    entry.comparison.unload()
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.comparing.show_compare()
    assert entry.compared is not None


# 10 ---------------------------------------------------------------------------------
def test_one_model_failure_is_one_message_and_no_stale_results(
    qtbot, model_server, monkeypatch, u2netp_path, fresh_home
) -> None:
    spec = served_model(model_server, "unreachable", None)
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    window = make_window(qtbot)
    photos = [*PHOTOS, DATA / "skimage_chelsea.png"]
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths(photos)
    assert all(e.processed is not None for e in window.queue.entries())
    choose_model(window, spec.name)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.edit_menu.reprocess.trigger()
    qtbot.waitUntil(lambda: bool(visible_boxes()), timeout=WAIT_MS)
    qtbot.wait(200)
    boxes = visible_boxes()
    assert len(boxes) == 1 and "Could not obtain model 'unreachable'" in boxes[0].text()
    assert model_server.requests[f"/{spec.filename}"] == 1  # tried once, not per image
    for entry in window.queue.entries():
        assert entry.status is Status.FAILED and "unreachable" in entry.error
        assert entry.processed is None and entry.summary == ""  # no old cutout or caption
    assert not window.viewer.has_image() and window.detail.text().startswith("Failed")
    assert "could not be processed" in window.saving.why_nothing_to_save(window.current_entry())


def test_a_model_failure_not_yet_reported_is_not_tried_again(
    qtbot, model_server, monkeypatch, u2netp_path, fresh_home
) -> None:
    """The race behind a second download: the model's job has failed on the engine thread,
    but its end has not reached the window yet when more work asks for the model."""
    import time

    spec = served_model(model_server, "unreachable", None)
    monkeypatch.setitem(models.REGISTRY, spec.name, spec)
    window = make_window(qtbot)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([*PHOTOS])
    choose_model(window, spec.name)  # the image shown asks for the model at once
    config = window.settings.engine()
    job = window.jobs.prepare(config)
    assert job is not None
    deadline = time.monotonic() + 300
    while job.state is not JobState.FAILED and time.monotonic() < deadline:
        time.sleep(0.01)  # no Qt events: the job's end waits in the window's mail
    assert job.state is JobState.FAILED
    assert window.jobs.prepare(config) is job  # waited on, not submitted again
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.edit_menu.reprocess.trigger()
    qtbot.waitUntil(lambda: bool(visible_boxes()), timeout=WAIT_MS)
    assert model_server.requests[f"/{spec.filename}"] == 1
    assert all(e.status is Status.FAILED for e in window.queue.entries())


# 11 ---------------------------------------------------------------------------------
def test_a_broken_model_file_is_refused_and_never_remembered(qtbot, tmp_path, u2netp_path) -> None:
    from bgremover.gui.window import MainWindow

    junk = tmp_path / "downloaded.onnx"
    junk.write_bytes(b"<html>404 Not Found</html>")
    window = make_window(qtbot)
    with qtbot.waitSignal(
        window.engine.ended, check_params_cb=is_job("check"), timeout=WAIT_MS
    ) as ended:
        window.model_setting.use_model_file(junk)
    assert ended.args[0].state is JobState.FAILED
    (box,) = visible_boxes()
    text = box.text()
    assert "downloaded.onnx could not be loaded as a model" in text
    assert "[ONNXRuntimeError]" not in text and "INVALID_PROTOBUF" not in text
    assert "download it again" not in text  # it is the user's file, not a download
    assert "setting is unchanged" in text
    assert window.settings.model == DEFAULT_MODEL
    assert window.panel.model_box.findData(str(junk)) < 0
    window.close()
    again = MainWindow()  # the next launch
    qtbot.addWidget(again)
    assert again.settings.model == DEFAULT_MODEL


def test_a_remembered_model_file_that_fails_is_dropped(qtbot, tmp_path, u2netp_path) -> None:
    """A model file saved by an earlier version, now unusable, is reported once and the app
    goes back to the default model instead of failing every image of every launch."""
    from bgremover.gui.settings import Settings, save_settings

    junk = tmp_path / "old.onnx"
    junk.write_bytes(b"not a model")
    save_settings(Settings(model=str(junk)))
    window = make_window(qtbot)
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.add_paths([SAMPLE])
    assert window.current_entry().status is Status.FAILED
    (box,) = visible_boxes()
    assert "went back to the default model" in box.text()
    assert window.settings.model == DEFAULT_MODEL
    with qtbot.waitSignal(window.settled, timeout=WAIT_MS):
        window.reprocess()
    assert window.current_entry().status is Status.DONE
    gone = tmp_path / "gone.onnx"
    save_settings(Settings(model=str(gone)))
    later = make_window(qtbot)
    assert later.settings.model == DEFAULT_MODEL
    assert "no longer there" in later.statusBar().currentMessage()


# 12 ---------------------------------------------------------------------------------
def test_a_model_file_of_two_possible_families_is_asked_about(
    qtbot, tmp_path, monkeypatch, u2netp_path
) -> None:
    """An IS-Net-shaped file (1024 px, side outputs) fits dis and dis-anime, which prepare
    photos differently: the app asks which it is, and uses the answer; the answer goes
    with that file only."""
    from test_families import build_model

    from bgremover.gui import model_controller
    from bgremover.gui.window import MainWindow

    path = build_model(tmp_path / "isnet_like.onnx", side=1024, outputs=7, sigmoid=True)
    asked: list[tuple[str, tuple[str, ...]]] = []

    def answer(parent, filename, candidates):
        asked.append((filename, candidates))
        return "dis-anime"

    monkeypatch.setattr(model_controller, "ask_family", answer)
    window = make_window(qtbot)
    window.model_setting.use_model_file(path)
    qtbot.waitUntil(lambda: window.settings.model == str(path), timeout=WAIT_MS)
    assert asked == [("isnet_like.onnx", ("dis", "dis-anime"))]
    assert window.settings.family == "dis-anime" and not visible_boxes()
    window.close()
    again = MainWindow()  # the next launch remembers both
    qtbot.addWidget(again)
    assert (again.settings.model, again.settings.family) == (str(path), "dis-anime")
    again.apply_settings(model=DEFAULT_MODEL)
    assert again.settings.family == ""  # a registry model has its own family
    again.close()
