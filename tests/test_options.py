"""The export-option schema: one record per option, read the same way by every front end.

The regression at its heart: a preset file that says ``crop = "no"`` (or ``"0"``, or
``lossless = "no"``) was off on the command line but on in the app. Now the command
line (``presets.options_from`` and a real ``bgremover remove --preset``), the app
(``export_fields`` -> ``Settings`` -> ``ComposeOptions``) and the server (its parameter
parsing) read the one parser, and give the same options.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.errors import UsageError
from bgremover.export.compose import ComposeOptions
from bgremover.export.options import (
    EXPORT_OPTIONS,
    FALSE_WORDS,
    KEYS,
    OPTIONS,
    SWITCH,
    SWITCHES,
    TRUE_WORDS,
    Range,
    cli_values,
    parse_bool,
    parse_shadow,
    switch,
)
from bgremover.export.output import FORMATS
from bgremover.export.presets import check_export, options_from, parse_format, read_preset

from conftest import SAMPLE, cli

#: Preset files that turn everything off in words the one parser reads; each must read
#: as the defaults (but for the format) everywhere.
OFF_PRESETS = {
    "crop-no": 'crop = "no"\n',
    "crop-zero": 'crop = "0"\n',
    "lossless-no": 'format = "webp"\nlossless = "no"\n',
    "all-off": 'crop = "off"\nlossless = "false"\nshadow = "no"\nstrip_metadata = 0\n',
}


@pytest.mark.parametrize("word", [*TRUE_WORDS, *(w.upper() for w in TRUE_WORDS), True, 1])
def test_one_parser_reads_every_word_for_on(word) -> None:
    assert parse_bool(word, "crop") is True


@pytest.mark.parametrize("word", [*FALSE_WORDS, "No", "OFF", False, 0])
def test_one_parser_reads_every_word_for_off(word) -> None:
    assert parse_bool(word, "crop") is False


def test_a_word_that_is_neither_is_refused_in_words() -> None:
    with pytest.raises(UsageError, match="crop is on or off, not 'maybe'"):
        parse_bool("maybe", "crop")
    assert parse_shadow("no") is None and parse_shadow("0") is None
    assert parse_shadow("yes") is not None and parse_shadow("soft") is not None


@pytest.fixture()
def export_panel(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The app's Export panel on default settings, with a presets folder of the test's own."""
    pytest.importorskip("PySide6")
    from bgremover.gui.export_panel import ExportPanel
    from bgremover.gui.settings import Settings

    monkeypatch.setenv("BGREMOVER_PRESETS", str(tmp_path / "presets"))
    panel = ExportPanel(Settings())
    qtbot.addWidget(panel)
    return panel


def _preset(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


def _app_options(values: dict) -> tuple[ComposeOptions, str]:
    """What the app makes of a preset's values: choosing it, then composing."""
    pytest.importorskip("PySide6")
    from bgremover.gui.settings import Settings, export_fields

    settings = Settings(**export_fields(values))
    return settings.compose(), settings.output_format


def _server_options(values: dict, width: int, height: int) -> tuple[ComposeOptions, str]:
    """What the server makes of a preset's values sent as its parameters (the options
    that have one), as a request for a PNG or WebP."""
    from bgremover.serve.params import options_for

    params = {OPTIONS[k].http: str(v) for k, v in values.items() if OPTIONS[k].http}
    return options_for(params, width, height, "auto")


@pytest.mark.parametrize("name", list(OFF_PRESETS))
def test_an_off_word_in_a_preset_is_off_on_the_command_line_in_the_app_and_the_server(
    tmp_path: Path, name: str
) -> None:
    values = dict(read_preset(_preset(tmp_path, name, OFF_PRESETS[name])).values)
    fmt = "webp" if "webp" in OFF_PRESETS[name] else None
    on_cli, cli_fmt = options_from(values)
    in_app, app_fmt = _app_options(values)
    assert on_cli == in_app == ComposeOptions()
    assert not in_app.crop and not in_app.lossless and in_app.shadow is None
    assert cli_fmt == fmt and app_fmt == (fmt or "png")
    served, served_fmt = _server_options(values, 64, 48)
    assert served == on_cli and served_fmt == (fmt or "png")


def test_the_servers_on_off_parameters_read_every_word_as_the_presets_do() -> None:
    from bgremover.export.options import Length
    from bgremover.serve.params import PARAMETERS, options_for

    off, _ = options_for({"crop": "no", "crop_margin": "10px", "add_shadow": "0"}, 64, 48, "png")
    assert off == ComposeOptions()  # remove.bg ignores a margin without a crop
    on, _ = options_for({"crop": "on", "crop_margin": "10px", "add_shadow": "yes"}, 64, 48, "png")
    assert on.crop and on.margin == Length(10) and on.shadow is not None
    assert {o.http for o in EXPORT_OPTIONS if o.http} <= set(PARAMETERS)


def _record_of(path: Path):
    record = FORMATS["webp"].record(path)
    assert record is not None and record.settings is not None
    return record.settings


def test_a_real_run_with_an_off_preset_makes_what_no_preset_makes(
    tmp_path: Path, tiny_model: Path
) -> None:
    folder = tmp_path / "presets"
    _preset(folder, "off", 'crop = "no"\nlossless = "no"\nformat = "webp"\n')
    _preset(folder, "on", 'crop = "yes"\nlossless = "yes"\nformat = "webp"\n')
    env = {"BGREMOVER_PRESETS": str(folder)}
    made = {}
    for name, args in (("plain", []), ("off", ["--preset", "off"]), ("on", ["--preset", "on"])):
        out = tmp_path / f"{name}.webp"
        cli("remove", str(SAMPLE), "-o", str(out), "--model", str(tiny_model), "-q", *args,
            env=env, check=True)  # fmt: skip
        made[name] = out
    plain, off, on = (_record_of(made[n]) for n in ("plain", "off", "on"))
    assert off.digest == plain.digest and off.summary == plain.summary
    with Image.open(made["off"]) as a, Image.open(made["plain"]) as b:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert on.digest != plain.digest and "crop" in on.summary and "lossless" in on.summary


# -- The records and what is made from them -------------------------------------------


def test_each_record_names_fields_that_exist_with_its_default() -> None:
    compose_fields = {f.name: f for f in fields(ComposeOptions)}
    defaults = ComposeOptions()
    for option in EXPORT_OPTIONS:
        if option.parse is None:
            assert option.key == "format"  # read against output.FORMATS
            continue
        for name in option.parse(_a_value(option)):
            assert name in compose_fields, (option.key, name)
        if option.kind == SWITCH or option.choices:
            assert getattr(defaults, option.key) == option.default, option.key
        # What a record writes from the defaults is "not set".
        assert option.write is not None and option.write(defaults) in (None, False), option.key


def _a_value(option) -> object:
    return {"background": "white", "canvas": "1:1", "margin": "5%", "shadow": True,
            "outline": "8:white", "max_size": 100, "quality": 80}.get(
        option.key, option.choices[0] if option.choices else True
    )  # fmt: skip


def test_the_app_settings_have_each_records_fields_and_defaults() -> None:
    pytest.importorskip("PySide6")
    from bgremover.gui.settings import EXPORT_FIELDS, Settings

    defaults = Settings()
    for option in EXPORT_OPTIONS:
        for name in option.settings:
            assert name in EXPORT_FIELDS and hasattr(defaults, name), name
        if option.kind == SWITCH or option.choices or option.key == "format":
            assert getattr(defaults, option.settings[0]) == option.default, option.key
    assert defaults.values() == {"format": "png"}


def test_every_flag_of_a_record_is_a_flag_of_remove() -> None:
    from bgremover.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    remove = sub.choices["remove"]
    strings = {s: a.dest for a in remove._actions for s in a.option_strings}
    for option in EXPORT_OPTIONS:
        for flag in option.flags:
            assert strings.get(flag) == option.dest, flag


def test_the_command_lines_flags_read_as_a_presets_values() -> None:
    from bgremover.cli import build_parser

    args = build_parser().parse_args(
        ["remove", "x.jpg", "-o", "out", "--crop", "5%", "--shadow", "--lossless",
         "-b", "white", "--max-size", "300", "--decontaminate", "-f", "webp"]
    )  # fmt: skip
    assert cli_values(args) == {
        "crop": True,
        "margin": "5%",
        "shadow": True,
        "lossless": True,
        "background": ["white"],
        "max_size": 300,
        "decontaminate": True,
    }


def test_keys_are_the_records_and_unknown_keys_are_refused() -> None:
    assert tuple(o.key for o in EXPORT_OPTIONS) == KEYS
    with pytest.raises(UsageError, match="Unknown export option 'colour'"):
        options_from({"colour": "red"})


@pytest.mark.parametrize(("spelled", "name"), [("jpg", "jpeg"), ("JPEG", "jpeg"), ("tif", "tiff")])
def test_a_format_is_named_by_its_name_or_its_files_ending(spelled: str, name: str) -> None:
    assert parse_format(spelled) == name
    assert options_from({"format": spelled, "background": "white"})[1] == name


def test_the_transparency_refusal_is_one_message_worded_for_each_front_end() -> None:
    with pytest.raises(UsageError) as on_cli:
        check_export(ComposeOptions(), "jpeg")
    with pytest.raises(UsageError) as in_app:
        check_export(ComposeOptions(), "jpeg", app=True)
    assert on_cli.value.message == in_app.value.message
    assert "JPEG cannot keep transparency" in on_cli.value.message
    assert "--background white" in on_cli.value.fix and "--format png" in on_cli.value.fix
    assert "Choose a background" in in_app.value.fix and "--" not in in_app.value.fix


def test_every_switch_is_a_field_declared_once_by_the_records() -> None:
    """ComposeOptions and the app's Settings type out no switch; the one static
    declaration mypy reads (options.py) names the records' switches, in order."""
    import ast
    import inspect

    from bgremover.export import options as module

    switches = [o.key for o in EXPORT_OPTIONS if o.kind == SWITCH]
    assert [o.key for o in SWITCHES] == switches
    assert {"crop", "lossless", "strip_metadata", "decontaminate"} <= set(switches)
    classes = [ComposeOptions]
    if importlib.util.find_spec("PySide6") is not None:
        from bgremover.gui.settings import Settings

        classes.append(Settings)
    for cls in classes:
        defaults = cls()
        for key in switches:
            assert getattr(defaults, key) is False, (cls, key)
            assert key not in vars(cls).get("__annotations__", {}), (cls, key)
    tree = ast.parse(inspect.getsource(module))
    declared = next(
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == "SchemaSwitches"
    )
    fields_declared = [n.target for n in declared.body if isinstance(n, ast.AnnAssign)]
    assert [t.id for t in fields_declared if isinstance(t, ast.Name)] == switches


def test_a_records_range_is_the_check(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    assert ComposeOptions(quality=60).quality == 60
    monkeypatch.setitem(OPTIONS, "quality", replace(OPTIONS["quality"], range=Range(1, 50)))
    with pytest.raises(UsageError, match="Quality 60 is out of range") as refused:
        ComposeOptions(quality=60)
    assert refused.value.fix == "Use 1 to 50."
    with pytest.raises(UsageError, match="Longest side 0 is out of range") as refused:
        ComposeOptions(max_size=0)
    assert refused.value.fix == "Use 1 or more."


def test_a_check_box_no_pane_places_is_refused_when_its_record_is_made() -> None:
    for placed in ({}, {"row": "middle"}, {"pane": "toolbar"}):
        with pytest.raises(ValueError, match="'sharpen' has a check box that no pane places"):
            switch("sharpen", "sharpen the subject", "Sharpen", "Sharper edges", **placed)
    assert switch("sharpen", "", "Sharpen", "", row="effects").row == "effects"
    assert switch("sharpen", "", "Sharpen", "", pane="settings").pane == "settings"


#: Options an off word turns off (not set), whichever option it is.
OFF = ("crop", "shadow", "outline", "canvas", "background", "margin", "greyscale", "lossless",
       "max_size", "quality")  # fmt: skip


@pytest.mark.parametrize("word", ["no", "none", "off", "false", "NO"])
def test_one_vocabulary_of_off_words_for_every_option(word: str) -> None:
    from bgremover.cli import build_parser
    from bgremover.serve.params import options_for

    assert options_from(dict.fromkeys(OFF, word))[0] == ComposeOptions()
    flags = ["--crop", "--shadow", "--outline", "--canvas", "-b", "--margin"]
    argv = ["remove", "x.jpg", "-o", "out", *(part for f in flags for part in (f, word))]
    assert options_from(cli_values(build_parser().parse_args(argv)))[0] == ComposeOptions()
    served = options_for({"crop": word, "add_shadow": word}, 64, 48, "png")[0]
    assert served == ComposeOptions()


def test_crop_on_the_command_line_is_a_switch_with_an_optional_margin() -> None:
    from bgremover.cli import build_parser
    from bgremover.export.compose import Length

    def crop(*value: str) -> ComposeOptions:
        args = build_parser().parse_args(["remove", "x.jpg", "-o", "out", "--crop", *value])
        return options_from(cli_values(args))[0]

    assert crop() == crop("yes") == crop("on") == ComposeOptions(crop=True)
    assert crop("0") == ComposeOptions(crop=True)  # a margin of 0
    assert crop("1").margin == Length(1) and crop("5%").margin == Length(5, True)
    with pytest.raises(UsageError, match="Not a margin: 'lots'"):
        crop("lots")


def test_the_server_hands_each_options_parameter_to_its_record_but_remove_bgs_own() -> None:
    from bgremover.serve.params import OPTION_PARAMETERS, READERS, options_for

    assert set(READERS) <= set(OPTION_PARAMETERS.values())
    for option in EXPORT_OPTIONS:
        if option.http is None or option.key in READERS:
            continue
        value = _a_value(option)
        served = options_for({option.http: str(value)}, 64, 48, "png")[0]
        assert served == options_from({option.key: value})[0], option.key


def test_the_settings_panes_check_boxes_are_its_records(
    qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_settings
) -> None:
    pytest.importorskip("PySide6")
    from bgremover.gui.settings import Settings
    from bgremover.gui.settings_panel import SettingsPanel
    from bgremover.network.store import ModelStore

    monkeypatch.setenv("BGREMOVER_PRESETS", str(tmp_path / "presets"))
    panel = SettingsPanel(Settings(), ModelStore(tmp_path))
    qtbot.addWidget(panel)
    mine = [o for o in EXPORT_OPTIONS if o.pane == "settings"]
    assert [o.key for o in mine] == list(panel.option_boxes) == ["decontaminate"]
    for option in mine:
        box = panel.option_boxes[option.key]
        assert (box.text(), box.toolTip()) == (option.label, option.tip)
        with qtbot.waitSignal(panel.changed) as signal:
            box.setChecked(True)
        assert signal.args[0] == {option.key: True}
    assert panel.decontaminate_box is panel.option_boxes["decontaminate"]


def test_the_batch_summary_names_each_option_set_by_its_record() -> None:
    pytest.importorskip("PySide6")
    from bgremover.gui.dialogs import settings_summary
    from bgremover.gui.settings import Settings

    settings = Settings(
        background="#ffffff", crop=True, margin="5%", shadow=True, greyscale=True,
        outline="8:#ffffff", max_size=1600, decontaminate=True,
    )  # fmt: skip
    parts = settings_summary(settings).split(" · ")
    for words in ("background #ffffff", "crop to subject", "margin 5%", "shadow",
                  "black and white", "outline 8:#ffffff", "longest side 1600",
                  "decontaminate colours"):  # fmt: skip
        assert words in parts, (words, parts)
    assert "transparent background" in settings_summary(Settings()).split(" · ")
    wall = Settings(background_image=str(SAMPLE), background="#000000")
    assert f"background #000000 + {SAMPLE.name}" in settings_summary(wall).split(" · ")


# -- A switch that is one record: black and white ---------------------------------------


def _coloured_scene() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    alpha = np.zeros((60, 80), np.uint8)
    alpha[10:50, 20:60] = 255
    alpha[10:50, 20] = 128  # a see-through edge
    return rgb, alpha


def test_greyscale_makes_the_subject_grey_and_keeps_the_background_colour() -> None:
    from bgremover.export.compose import compose_array

    rgb, alpha = _coloured_scene()
    grey = np.asarray(Image.fromarray(rgb).convert("L"), np.int16)  # Pillow's luma
    cut = compose_array(rgb, alpha, ComposeOptions(greyscale=True))
    assert cut.shape == (60, 80, 4)
    np.testing.assert_array_equal(cut[..., 3], alpha)  # the alpha is untouched
    inside = alpha == 255
    assert (cut[..., 0] == cut[..., 1]).all() and (cut[..., 1] == cut[..., 2]).all()
    assert np.abs(cut[..., 0][inside].astype(np.int16) - grey[inside]).max() <= 1
    red = compose_array(rgb, alpha, ComposeOptions(greyscale=True, background=(255, 0, 0, 255)))
    assert tuple(red[0, 0]) == (255, 0, 0)  # the background keeps its colour
    blurred = compose_array(rgb, alpha, ComposeOptions(greyscale=True, blur=1.0))
    assert (blurred[..., 0] == blurred[..., 2]).all()  # the photo's own background too
    off = compose_array(rgb, alpha, ComposeOptions())
    assert not (off[..., 0][inside] == off[..., 1][inside]).all()  # off: colour as it was
    mask = compose_array(rgb, alpha, ComposeOptions(greyscale=True, mask_only=True))
    np.testing.assert_array_equal(mask, alpha)
    np.testing.assert_array_equal(rgb, _coloured_scene()[0])  # the caller's photo unchanged


def test_greyscale_is_read_and_written_like_every_switch() -> None:
    from bgremover.export.presets import values_of

    assert options_from({"greyscale": "yes"})[0].greyscale
    assert not options_from({"greyscale": "no"})[0].greyscale
    options = ComposeOptions(greyscale=True, crop=True)
    assert values_of(options) == {"greyscale": True, "crop": True}
    assert options_from(values_of(options))[0] == options
    assert "greyscale" in KEYS and OPTIONS["greyscale"].http is None


def test_greyscale_on_the_command_line(tmp_path: Path, tiny_model: Path) -> None:
    out = tmp_path / "grey.png"
    cli("remove", str(SAMPLE), "-o", str(out), "--model", str(tiny_model), "-q", "--greyscale",
        check=True)  # fmt: skip
    with Image.open(out) as img:
        rgba = np.asarray(img)
    shown = rgba[..., 3] > 0
    assert shown.any()
    assert (rgba[..., 0][shown] == rgba[..., 1][shown]).all()
    assert (rgba[..., 1][shown] == rgba[..., 2][shown]).all()
    record = FORMATS["png"].record(out)
    assert record is not None and record.settings is not None
    assert "greyscale" in record.settings.summary


def test_greyscale_is_a_check_box_of_the_export_panel(qtbot, export_panel) -> None:
    from bgremover.gui.settings import Settings, export_fields

    panel = export_panel
    box = panel.switch_boxes["greyscale"]
    assert box.text() == "Black and white" and not box.isChecked()
    effects = panel.shadow_box.parentWidget()  # the Effects row; the records' effects below
    form = effects.parentWidget().layout()
    here = box if box.parentWidget() is effects.parentWidget() else box.parentWidget()
    assert form.getWidgetPosition(here)[0] == form.getWidgetPosition(effects)[0] + 1
    with qtbot.waitSignal(panel.changed) as signal:
        box.setChecked(True)
    assert signal.args[0] == {"greyscale": True, "preset": ""}
    chosen = Settings(**export_fields({"greyscale": True, "background": "white"}))
    assert chosen.greyscale and chosen.compose().greyscale
    panel.show_settings(chosen)
    assert box.isChecked()
    assert not Settings(**export_fields({"greyscale": "no"})).compose().greyscale


# -- A switch that is one record: progressive JPEG --------------------------------------


def _progressive(data: bytes | Path) -> bool:
    """Whether ``data`` (a file or its bytes) is a progressive JPEG."""
    with Image.open(io.BytesIO(data) if isinstance(data, bytes) else data) as img:
        return img.format == "JPEG" and bool(img.info.get("progressive"))


def test_progressive_writes_a_progressive_jpeg_and_leaves_other_formats_alone(
    tmp_path: Path,
) -> None:
    from bgremover.export.output import write_output

    rgb, alpha = _coloured_scene()
    white = ComposeOptions(background=(255, 255, 255, 255))
    for on in (False, True):
        out = tmp_path / f"{on}.jpg"
        write_output(rgb, alpha, replace(white, progressive=on), out, "jpeg")
        assert _progressive(out) is on
    for fmt in ("png", "webp", "tiff"):
        plain, progressive = tmp_path / f"plain.{fmt}", tmp_path / f"progressive.{fmt}"
        write_output(rgb, alpha, ComposeOptions(), plain, fmt)
        write_output(rgb, alpha, ComposeOptions(progressive=True), progressive, fmt)
        assert plain.read_bytes() == progressive.read_bytes(), fmt


def test_progressive_on_the_command_line(tmp_path: Path, tiny_model: Path) -> None:
    made = {}
    for name, args in (("plain", []), ("progressive", ["--progressive"])):
        out = tmp_path / f"{name}.jpg"
        cli("remove", str(SAMPLE), "-o", str(out), "--model", str(tiny_model), "-q",
            "-b", "white", *args, check=True)  # fmt: skip
        made[name] = out
    assert _progressive(made["progressive"]) and not _progressive(made["plain"])
    record = FORMATS["jpeg"].record(made["progressive"])
    assert record is not None and record.settings is not None
    assert "progressive" in record.settings.summary  # a rerun without it makes it again


def test_progressive_in_a_preset_round_trips(tmp_path: Path) -> None:
    from bgremover.export.presets import save_preset, values_of

    options, fmt = options_from({"progressive": "yes", "background": "white", "format": "jpg"})
    assert options.progressive and fmt == "jpeg"
    assert values_of(options, fmt) == {"background": "#ffffffff", "progressive": True,
                                       "format": "jpeg"}  # fmt: skip
    path = save_preset("web-jpeg", values_of(options, fmt), folder=tmp_path)
    assert "progressive = true" in path.read_text()
    assert options_from(read_preset(path).values) == (options, "jpeg")
    assert not options_from({"progressive": "no"})[0].progressive


def test_progressive_is_a_placed_check_box_of_the_export_panel(qtbot, export_panel) -> None:
    from bgremover.gui.settings import Settings, export_fields

    panel = export_panel
    box = panel.switch_boxes["progressive"]
    assert (box.text(), box.toolTip()) == (OPTIONS["progressive"].label, OPTIONS["progressive"].tip)
    row = box.parentWidget()
    assert row is not None and panel.form.getWidgetPosition(row)[0] >= 0  # placed in a row
    assert not box.isEnabled()  # PNG: progressive is JPEG's
    jpeg = Settings(output_format="jpeg", background="#ffffff")
    panel.show_settings(jpeg)
    assert box.isEnabled() and not box.isChecked()
    with qtbot.waitSignal(panel.changed) as signal:
        box.setChecked(True)
    assert signal.args[0] == {"progressive": True, "preset": ""}
    chosen = Settings(**export_fields({"progressive": "yes", "background": "white"}))
    assert chosen.progressive and chosen.compose().progressive
    assert chosen.values()["progressive"] is True


def test_progressive_over_http_is_a_progressive_jpeg(tiny_model: Path) -> None:
    from test_serve import removebg
    from test_serve_hostile import running_model

    from bgremover.serve.params import PARAMETERS

    assert "progressive" in PARAMETERS
    with running_model(str(tiny_model)) as server:
        on = removebg(server, SAMPLE, format="jpg", bg_color="fff", progressive="true")
        off = removebg(server, SAMPLE, format="jpg", bg_color="fff", progressive="false")
        png = removebg(server, SAMPLE, format="png", progressive="true")
        bad = removebg(server, SAMPLE, progressive="maybe")
    assert on.status_code == 200 and _progressive(on.content)
    assert off.status_code == 200 and not _progressive(off.content)
    assert png.status_code == 200 and png.headers["content-type"] == "image/png"
    assert bad.status_code == 400 and "progressive is on or off" in bad.text
