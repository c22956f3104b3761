"""``bgremover remove --ray``: the batch on a local Ray writes what the plain batch writes.

Each ``--ray`` run starts its own local Ray (seconds), so the runs are few and shared: one
plain batch, one Ray batch and one Ray rerun over the same folder (a module fixture), and
one Ray batch whose inference actor dies mid-run (killed by an actor the test installs).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.files.atomic import TEMP_SUFFIX

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"

pytest.importorskip("ray")

# A plain batch run in a fresh interpreter that says whether anything imported Ray.
PLAIN_WITHOUT_RAY = """\
import sys
from bgremover.cli import main
assert "ray" not in sys.modules, "importing bgremover.cli imported ray"
code = main(sys.argv[1:])
assert "ray" not in sys.modules, "a batch without --ray imported ray"
sys.exit(code)
"""

# A Ray batch in a fresh interpreter whose inference actor exits its process (os._exit, a
# real process death) on its second photo unless the file named first exists, creating it
# first, so that it happens once per run: Ray must restart the actor and redo the photo.
DYING_ACTOR = """\
import os
import sys
from pathlib import Path
from bgremover import distributed
from bgremover.cli import main

MARKER = Path(sys.argv.pop(1))


class DyingActor(distributed.InferenceActor):
    def __init__(self):
        super().__init__()
        self.seen = 0

    def __call__(self, row):
        if row["state"] == distributed.TODO:
            self.seen += 1
            if self.seen == 2 and not MARKER.exists():
                MARKER.touch()
                os._exit(1)
        return super().__call__(row)


distributed.InferenceActor = DyingActor
sys.exit(main(sys.argv[1:]))
"""


@dataclass(frozen=True)
class Run:
    code: int
    stderr: str


def _run(args: list[str], env: dict[str, str] | None = None, script: str | None = None) -> Run:
    command = [sys.executable, "-c", script] if script else [sys.executable, "-m", "bgremover"]
    proc = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    return Run(proc.returncode, proc.stderr)


def _photos(folder: Path, bad: bool) -> Path:
    """Three test photos, the sample in a subfolder and, if ``bad``, a file that is no image."""
    folder.mkdir(parents=True)
    for name in ("skimage_chelsea.png", "skimage_coffee.png", "skimage_rocket.jpg"):
        shutil.copy(DATA / name, folder / name)
    (folder / "album").mkdir()
    shutil.copy(ROOT / "assets" / "sample.jpg", folder / "album" / "sample.jpg")
    if bad:
        (folder / "broken.jpg").write_bytes(b"this is not a JPEG" * 100)
    return folder


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def _failures(stderr: str) -> list[str]:
    return sorted(line for line in stderr.splitlines() if line.startswith("bgremover: failed:"))


@dataclass(frozen=True)
class Runs:
    photos: Path
    plain_out: Path
    ray_out: Path
    plain: Run
    ray: Run
    rerun: Run
    #: A leftover temporary file planted before the rerun.
    leftover: Path
    plain_tree: dict[str, bytes]
    ray_tree: dict[str, bytes]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, u2netp_path: Path) -> Runs:
    base = tmp_path_factory.mktemp("ray")
    photos = _photos(base / "photos", bad=True)
    plain_out, ray_out = base / "plain", base / "ray"
    common = ["--model", "u2netp", "--quiet"]
    plain = _run(["remove", str(photos), "-o", str(plain_out), *common], script=PLAIN_WITHOUT_RAY)
    ray = _run(["remove", str(photos), "-o", str(ray_out), *common, "--ray"])
    ray_tree = _tree(ray_out)
    leftover = ray_out / f".skimage_coffee.png.0123abcd{TEMP_SUFFIX}"
    leftover.write_bytes(b"half a PNG")
    rerun = _run(["remove", str(photos), "-o", str(ray_out), *common, "--ray"])
    return Runs(photos, plain_out, ray_out, plain, ray, rerun, leftover, _tree(plain_out), ray_tree)


def test_ray_writes_the_plain_batchs_files_byte_for_byte(runs: Runs) -> None:
    assert sorted(runs.plain_tree) == [
        "album/sample.png", "skimage_chelsea.png", "skimage_coffee.png", "skimage_rocket.png",
    ]  # fmt: skip
    assert sorted(runs.ray_tree) == sorted(runs.plain_tree)
    for name, data in runs.plain_tree.items():
        assert runs.ray_tree[name] == data, name
    assert "4 written, 1 failed" in runs.ray.stderr


def test_a_bad_image_fails_alone_with_the_plain_batchs_reason(runs: Runs) -> None:
    assert runs.plain.code == 1, runs.plain.stderr
    assert runs.ray.code == 1, runs.ray.stderr
    failures = _failures(runs.ray.stderr)
    assert len(failures) == 1 and "broken.jpg" in failures[0]
    assert failures == _failures(runs.plain.stderr)


def test_a_rerun_skips_every_finished_output_and_deletes_leftovers(runs: Runs) -> None:
    assert runs.rerun.code == 1, runs.rerun.stderr  # the broken file fails again
    assert "0 written, 4 already done, 1 failed" in runs.rerun.stderr
    assert _failures(runs.rerun.stderr) == _failures(runs.ray.stderr)
    assert not runs.leftover.exists()
    assert _tree(runs.ray_out) == runs.ray_tree


def test_plain_batches_never_import_ray(runs: Runs) -> None:
    # The plain run's script asserts it after importing the CLI and after the batch; it
    # exits 1 (the broken photo), not with an AssertionError's traceback.
    assert "AssertionError" not in runs.plain.stderr
    assert runs.plain.code == 1


def test_a_killed_actor_is_replaced_and_every_output_is_complete(
    runs: Runs, tmp_path: Path
) -> None:
    photos = _photos(tmp_path / "photos", bad=False)
    out, marker = tmp_path / "out", tmp_path / "died"
    args = [str(marker), "remove", str(photos), "-o", str(out), "--model", "u2netp", "--ray"]
    run = _run(args, script=DYING_ACTOR)
    assert marker.exists(), "the actor never died: the test tested nothing"
    assert run.code == 0, run.stderr
    assert "4 written" in run.stderr
    tree = _tree(out)
    assert not [name for name in tree if name.endswith(TEMP_SUFFIX)]
    assert tree == runs.plain_tree
    for name in tree:  # each decodes whole
        with Image.open(out / name) as img:
            assert np.asarray(img).shape[2] == 4


def test_the_int8_guard_runs_on_ray_as_in_the_plain_batch(
    tmp_path: Path, u2netp_int8_path: Path
) -> None:
    """int8 is unsure of the cat and the rocket: both batches make them in fp32, write the
    same files and say so in the same words."""
    photos = _photos(tmp_path / "photos", bad=False)
    common = ["--model", "u2netp", "--quiet", "--precision", "int8"]
    plain = _run(["remove", str(photos), "-o", str(tmp_path / "plain"), *common])
    ray = _run(["remove", str(photos), "-o", str(tmp_path / "ray"), *common, "--ray"])
    assert plain.code == 0 and ray.code == 0, (plain.stderr, ray.stderr)
    line = "bgremover: 2 of 4 images were made in fp32: int8 was unsure of them"
    assert line in plain.stderr and line in ray.stderr
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "plain")


def test_best_runs_on_ray_as_in_the_plain_batch(tmp_path: Path, u2netp_path: Path) -> None:
    """The combined model on Ray: its second model runs in the actor where the first is
    unsure (the rocket, not the sample); the files and the doubt lines and count are the
    plain batch's."""
    photos = tmp_path / "photos"
    photos.mkdir()
    shutil.copy(DATA / "skimage_rocket.jpg", photos)
    shutil.copy(ROOT / "assets" / "sample.jpg", photos)
    common = ["--model", "best", "-v"]
    plain = _run(["remove", str(photos), "-o", str(tmp_path / "plain"), *common])
    ray = _run(["remove", str(photos), "-o", str(tmp_path / "ray"), *common, "--ray"])
    assert plain.code == 0 and ray.code == 0, (plain.stderr, ray.stderr)
    doubt = [line for line in plain.stderr.splitlines() if "may be wrong" in line]
    assert any("skimage_rocket.jpg: this cutout may be wrong" in line for line in doubt)
    assert "bgremover: 1 cutout may be wrong." in doubt  # -v named it: no "run with -v"
    assert not any("run with -v" in line for line in (plain.stderr + ray.stderr).splitlines())
    for line in doubt:  # the same words (the logger's name differs: bgremover.distributed)
        assert line.split(": ", 1)[1] in ray.stderr, line
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "plain")


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("bgremover: note:")]


def test_ray_notes_an_enlarged_subject_as_the_plain_batch_does(
    tmp_path: Path, u2netp_path: Path
) -> None:
    """The cup (about 400 x 300 px) on a 2000 x 2000 canvas is enlarged past twice: both
    batches print the same note about it, and write the same file."""
    photos = tmp_path / "photos"
    photos.mkdir()
    shutil.copy(DATA / "skimage_coffee.png", photos)
    common = ["--model", "u2netp", "--quiet", "--preset", "product-white-square"]
    plain = _run(["remove", str(photos), "-o", str(tmp_path / "plain"), *common])
    ray = _run(["remove", str(photos), "-o", str(tmp_path / "ray"), *common, "--ray"])
    assert plain.code == 0 and ray.code == 0, (plain.stderr, ray.stderr)
    notes = _notes(plain.stderr)
    assert len(notes) == 1 and "skimage_coffee.png" in notes[0] and "is enlarged" in notes[0]
    assert _notes(ray.stderr) == notes
    assert _tree(tmp_path / "ray") == _tree(tmp_path / "plain")
