"""Output names that are safe on every file system: case and Unicode normalisation do
not tell names apart, names Windows refuses are made legal, long Windows paths get the
``\\\\?\\`` prefix, and the plan is the same on every run."""

from __future__ import annotations

import shutil
import sys
import unicodedata
from pathlib import Path

import pytest
from PIL import Image

from bgremover.engine.plan import name_key, plan_batch, plan_names, safe_name
from bgremover.errors import UsageError
from bgremover.files.atomic import long_path_form, windows_long_path

from conftest import DATA, SAMPLE, cli

NFC_CAFE = unicodedata.normalize("NFC", "café.png")
NFD_CAFE = unicodedata.normalize("NFD", "café.png")


def _files(folder: Path, *names: str) -> Path:
    """Empty image-named files (planning reads no pixels), parents made as needed."""
    for name in names:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    return folder


def _require_distinct(folder: Path, *names: str) -> None:
    """Skip when the test's own disk cannot hold these names side by side."""
    if len(set(p.name for p in folder.iterdir()) & set(names)) < len(names):
        pytest.skip(f"this file system does not keep {names} apart")


def _outputs(inputs: list[Path], out: Path) -> dict[str, str]:
    plan = plan_batch(inputs, out, "png")
    assert plan.problems == ()
    return {
        j.source.relative_to(inputs[0].parent if len(inputs) > 1 else inputs[0]).as_posix(): (
            j.output.relative_to(out).as_posix()
        )
        for j in plan.jobs
    }


def _assert_one_distinct_safe_output_each(plan_outputs: dict[str, str]) -> None:
    keys = [tuple(name_key(part) for part in rel.split("/")) for rel in plan_outputs.values()]
    assert len(set(keys)) == len(keys), plan_outputs
    for rel in plan_outputs.values():
        assert all(safe_name(part) == part for part in rel.split("/")), rel


# --- the name rule, on names ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "safe"),
    [
        ("photo.png", "photo.png"),  # already safe: unchanged
        ("CON.png", "CON_.png"),
        ("con.png", "con_.png"),
        ("Nul.tar.png", "Nul_.tar.png"),  # reserved whatever the extensions
        ("aux", "aux_"),
        ("COM1.png", "COM1_.png"),
        ("lpt9.png", "lpt9_.png"),
        ("COM\u00b9.png", "COM\u00b9_.png"),
        ("CON .png", "CON _.png"),  # Windows ignores the space: still the device
        ("CONSOLE.png", "CONSOLE.png"),  # not a device name
        ("COM10.png", "COM10.png"),
        ("a:b?.png", "a_b_.png"),
        ('<|>"*\\.png', "______.png"),
        ("tab\there\x01.png", "tab_here_.png"),
        ("album. ", "album"),
        ("album...", "album"),
        (" . ", "_"),
        ("nul. ", "nul_"),  # stripped first, then seen as the device it is
    ],
)
def test_safe_name(name: str, safe: str) -> None:
    assert safe_name(name) == safe
    assert safe_name(safe) == safe  # a safe name stays as it is


def test_name_key_ignores_case_and_normalisation() -> None:
    assert NFC_CAFE != NFD_CAFE
    assert name_key(NFC_CAFE) == name_key(NFD_CAFE) == name_key("CAFÉ.PNG")
    assert name_key("a.png") == name_key("A.PNG") != name_key("a_png.png")


# --- collisions in a real folder ----------------------------------------------------------


def test_names_differing_in_case_get_distinct_outputs(tmp_path: Path) -> None:
    src = _files(tmp_path / "in", "a.png", "A.png")
    _require_distinct(src, "a.png", "A.png")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {"A.png": "A.png", "a.png": "a_png.png"}


def test_extensions_differing_in_case_get_distinct_outputs(tmp_path: Path) -> None:
    src = _files(tmp_path / "in", "photo.jpg", "photo.JPG", "photo.Jpg")
    _require_distinct(src, "photo.jpg", "photo.JPG", "photo.Jpg")
    outputs = _outputs([src], tmp_path / "out")
    # The extension rule gives photo_jpg.png twice: the third gets a number.
    assert outputs == {
        "photo.JPG": "photo.png",
        "photo.Jpg": "photo_jpg.png",
        "photo.jpg": "photo_jpg_2.png",
    }


def test_an_inputs_own_name_is_kept_before_collision_names_are_given(tmp_path: Path) -> None:
    """a_png.jpg keeps a_png.png; a.png, which collides with a.jpg, takes the next name."""
    src = _files(tmp_path / "in", "a.jpg", "a.png", "a_png.jpg")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {"a.jpg": "a.png", "a_png.jpg": "a_png.png", "a.png": "a_png_2.png"}


def test_nfd_and_nfc_spellings_are_two_inputs_with_two_outputs(tmp_path: Path) -> None:
    src = _files(tmp_path / "in", NFD_CAFE, NFC_CAFE)
    _require_distinct(src, NFD_CAFE, NFC_CAFE)
    plan = plan_batch([src], tmp_path / "out", "png")
    names = {j.source.name: j.output.name for j in plan.jobs}
    assert names == {NFD_CAFE: NFD_CAFE, NFC_CAFE: NFC_CAFE.replace(".png", "_png.png")}


def test_reserved_device_names_get_an_underscore(tmp_path: Path) -> None:
    src = _files(tmp_path / "in", "CON.jpg", "prn.webp", "Com3.tif", "lpt1.x.png", "console.png")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {
        "CON.jpg": "CON_.png",
        "prn.webp": "prn_.png",
        "Com3.tif": "Com3_.png",
        "lpt1.x.png": "lpt1_.x.png",
        "console.png": "console.png",
    }


def test_forbidden_characters_become_underscores_and_may_collide(tmp_path: Path) -> None:
    """a:b and a?b become a_b, the name a_b.jpg has already: a_b.jpg keeps it (its name
    needed no change), the others get collision names."""
    src = _files(tmp_path / "in", "a:b.jpg", "a?b.jpg", "a_b.jpg", 'q"<>|*.jpg', "c\x07.jpg")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {
        "a_b.jpg": "a_b.png",
        "a:b.jpg": "a_b_jpg.png",
        "a?b.jpg": "a_b_jpg_2.png",
        'q"<>|*.jpg': "q_____.png",
        "c\x07.jpg": "c_.png",
    }


def test_folder_names_are_mirrored_as_legal_names(tmp_path: Path) -> None:
    src = _files(
        tmp_path / "in", "album. /x.jpg", "AUX/y.jpg", "a|b/deep. /z.jpg", " /w.jpg", "ok/v.jpg"
    )
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {
        "album. /x.jpg": "album/x.png",
        "AUX/y.jpg": "AUX_/y.png",
        "a|b/deep. /z.jpg": "a_b/deep/z.png",
        " /w.jpg": "_/w.png",
        "ok/v.jpg": "ok/v.png",
    }


def test_folders_that_become_one_name_are_one_folder(tmp_path: Path) -> None:
    """album, Album and "album. " are one folder on a Windows share: their files go into
    one folder (spelled as the first) and are told apart by the file rule."""
    src = _files(tmp_path / "in", "album/x.jpg", "Album/x.jpg", "album. /x.png", "Album/y.jpg")
    _require_distinct(src, "album", "Album", "album. ")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {
        "Album/x.jpg": "Album/x.png",
        "Album/y.jpg": "Album/y.png",
        "album/x.jpg": "Album/x_jpg.png",
        "album. /x.png": "Album/x_png.png",
    }
    _assert_one_distinct_safe_output_each(outputs)


def test_a_file_never_takes_a_folders_name(tmp_path: Path) -> None:
    src = _files(tmp_path / "in", "x.jpg", "X.PNG/y.jpg")
    outputs = _outputs([src], tmp_path / "out")
    assert outputs == {"x.jpg": "x_jpg.png", "X.PNG/y.jpg": "X.PNG/y.png"}


def test_an_output_never_lands_on_an_input_spelled_in_another_case(tmp_path: Path) -> None:
    src = tmp_path / "x.PNG"
    src.write_bytes(b"")
    plan = plan_batch([src], tmp_path, "png")
    assert [j.output for j in plan.jobs] == [tmp_path / "x_png.png"]


def test_several_folder_inputs_get_legal_folder_names(tmp_path: Path) -> None:
    _files(tmp_path, "CON/p.jpg", "con. /p.jpg")
    _require_distinct(tmp_path, "CON", "con. ")
    plan = plan_batch([tmp_path / "CON", tmp_path / "con. "], tmp_path / "out", "png")
    assert sorted(j.output.relative_to(tmp_path / "out").as_posix() for j in plan.jobs) == [
        "CON_/p.png",
        "CON_/p_jpg.png",
    ]


def test_the_users_own_names_are_kept(tmp_path: Path) -> None:
    """Only names below the output folder are changed: -o CON. or -o CON.png is kept."""
    src = _files(tmp_path / "in", "AUX.jpg")
    plan = plan_batch([src], tmp_path / "CON. ", "png")
    assert [j.output for j in plan.jobs] == [tmp_path / "CON. " / "AUX_.png"]
    plan = plan_batch([src / "AUX.jpg"], tmp_path / "CON.png", "png", single_file=True)
    assert [j.output for j in plan.jobs] == [tmp_path / "CON.png"]


def test_the_plan_is_the_same_whatever_the_order_of_the_inputs(tmp_path: Path) -> None:
    names = ["b.jpg", "B.png", "b.webp", "CON.jpg", "con.png", "a?.jpg", "a_.jpg"]
    _files(tmp_path / "in", *names)
    files = sorted((tmp_path / "in").iterdir())
    first = plan_batch(files, tmp_path / "out", "png")
    again = plan_batch(list(reversed(files)), tmp_path / "out", "png")
    assert {j.source: j.output for j in first.jobs} == {j.source: j.output for j in again.jobs}
    assert [j.source for j in again.jobs] == list(reversed(files))  # jobs keep input order
    outputs = {j.source.name: j.output.name for j in first.jobs}
    assert len({name_key(n) for n in outputs.values()}) == len(names)
    assert outputs["a_.jpg"] == "a_.png" and outputs["a?.jpg"] == "a__jpg.png"
    assert outputs["CON.jpg"] == "CON_.png" and outputs["con.png"] == "con_png.png"


# --- long paths on Windows -------------------------------------------------------------


def test_long_windows_paths_get_the_prefix() -> None:
    short = "C:\\Users\\me\\out\\a.png"
    assert long_path_form(short) == short
    long = "C:\\Users\\me\\out\\" + "d" * 200 + "\\" + "n" * 60 + ".png"
    assert long_path_form(long) == "\\\\?\\" + long
    assert long_path_form(long.replace("\\", "/")) == "\\\\?\\" + long  # normalised
    assert long_path_form("\\\\?\\" + long) == "\\\\?\\" + long  # already prefixed
    share = "\\\\server\\share\\" + "d" * 250 + "\\a.png"
    assert long_path_form(share) == "\\\\?\\UNC\\server\\share\\" + "d" * 250 + "\\a.png"


def test_windows_long_path_changes_nothing_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    long = "C:\\out\\" + "n" * 300 + ".png"
    if sys.platform != "win32":
        assert windows_long_path(long) == long
        assert windows_long_path(Path("/tmp") / ("n" * 300)) == "/tmp/" + "n" * 300
    monkeypatch.setattr(sys, "platform", "win32")
    assert windows_long_path(long) == "\\\\?\\" + long


# --- the whole folder, through the command line ------------------------------------------


@pytest.mark.model
def test_a_folder_of_awkward_names_gives_one_legal_output_each_and_resumes(
    tmp_path: Path, u2netp_path: Path
) -> None:
    src = tmp_path / "in"
    (src / "album. ").mkdir(parents=True)
    photos = [SAMPLE, DATA / "skimage_chelsea.png", DATA / "skimage_coffee.png"]
    names = ["a.png", "A.png", "photo.jpg", "photo.JPG", "CON.jpg", NFD_CAFE, NFC_CAFE]
    for i, name in enumerate(names):
        Image.open(photos[i % len(photos)]).convert("RGB").save(src / name, format="PNG")
    shutil.copy(DATA / "skimage_rocket.jpg", src / "album. " / "rocket.jpg")
    _require_distinct(src, *names)
    out = tmp_path / "out"

    proc = cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "8 written" in proc.stderr, proc.stderr
    written = sorted(p for p in out.rglob("*") if p.is_file())
    outputs = {p.relative_to(out).as_posix(): p for p in written}
    assert len(outputs) == 8, sorted(outputs)
    _assert_one_distinct_safe_output_each({rel: rel for rel in outputs})
    assert "CON_.png" in outputs and "album/rocket.png" in outputs
    for path in written:
        with Image.open(path) as img:
            assert img.format == "PNG" and img.mode == "RGBA"
    # One cutout per input: the sizes of the outputs are the sizes of the inputs.
    assert sorted(Image.open(p).size for p in written) == sorted(
        Image.open(p).size for p in src.rglob("*") if p.is_file()
    )

    before = {rel: p.stat().st_mtime_ns for rel, p in outputs.items()}
    proc = cli("remove", str(src), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "0 written, 8 already done" in proc.stderr, proc.stderr
    after = {
        p.relative_to(out).as_posix(): p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()
    }
    assert after == before  # nothing written, nothing added


def test_names_for_images_saved_into_one_folder_never_take_a_name_already_there(
    tmp_path: Path,
) -> None:
    """Save Selected / Save All: files from several folders and a pasted image into one
    folder, named as a batch names them; a name held by anything in the folder is taken
    (nothing there is replaced), whatever its case."""
    src = _files(tmp_path, "a/cat.png", "b/cat.jpg", "b/dog.JPG", "c/CON.png")
    out = _files(tmp_path / "out", "CAT.PNG", "notes.txt")
    (out / "dog.png").mkdir()  # a folder holds a name too
    items = [
        (src / "a/cat.png", "cat.png"),
        (src / "b/cat.jpg", "cat.jpg"),
        (src / "b/dog.JPG", "dog.JPG"),
        (src / "c/CON.png", "CON.png"),
        (None, "Pasted image 1"),
    ]
    names = [p.name for p in plan_names(items, out, "png")]
    assert names == ["cat_png.png", "cat_jpg.png", "dog_jpg.png", "CON_.png", "Pasted image 1.png"]
    assert all(p.parent == out for p in plan_names(items, out, "png"))
    # The same names whatever the order of the images.
    reordered = [p.name for p in plan_names(items[::-1], out, "png")]
    assert reordered == names[::-1]
    # Into the photos' own folder: never a photo's name.
    assert [p.name for p in plan_names(items[:1], src / "a", "png")] == ["cat_png.png"]
    # Another format, and a file where the folder must be, refused in words.
    assert [p.name for p in plan_names(items[4:], out, "webp")] == ["Pasted image 1.webp"]
    with pytest.raises(UsageError, match="is an existing file, but a folder is needed"):
        plan_names(items, out / "notes.txt", "png")
