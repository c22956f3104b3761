"""`--model best`: two models as one (the cascade and the fusion), and the cutout-doubt
signal every cutout carries, through the engine, the CLI, compare, serve and Ray.

The rule is proved on two synthetic models whose masks are known exactly; the real
combination (u2netp and IS-Net, both obtained through the store into the test session's
cache) on the photos shipped with the tests.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bgremover.mask import combine

from conftest import DATA, SAMPLE, cli, kept_best

SIDE = 64
ROCKET = DATA / "skimage_rocket.jpg"  # u2netp is unsure of it, and the models disagree


def build_constant_model(path: Path, mask: np.ndarray) -> Path:
    """A U²-Net-shaped model whose output is ``mask`` (SIDE x SIDE, 0..1) for any photo:
    a convolution with zero weights keeps the input in the graph."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inp = helper.make_tensor_value_info("input.1", TensorProto.FLOAT, [1, 3, SIDE, SIDE])
    outs = [
        helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 1, SIDE, SIDE])
        for n in ("d0", "d1")
    ]
    weights = [
        numpy_helper.from_array(np.zeros((1, 3, 1, 1), np.float32), "w"),
        numpy_helper.from_array(np.zeros(1, np.float32), "b"),
        numpy_helper.from_array(mask.astype(np.float32)[None, None], "mask"),
    ]
    nodes = [
        helper.make_node("Conv", ["input.1", "w", "b"], ["zero"], kernel_shape=[1, 1]),
        helper.make_node("Add", ["zero", "mask"], ["d0"]),
        helper.make_node("Identity", ["d0"], ["d1"]),
    ]
    graph = helper.make_graph(nodes, "constant_mask", [inp], outs, initializer=weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def square(top: int, left: int, bottom: int, right: int, value: float = 1.0) -> np.ndarray:
    mask = np.zeros((SIDE, SIDE), np.float32)
    mask[top:bottom, left:right] = value
    return mask


@pytest.fixture()
def pair(monkeypatch: pytest.MonkeyPatch, fresh_home: Path):
    """Registers two synthetic models and a combined model "pair" of the two; returns a
    function that sets the masks they give."""
    from bgremover.network import models

    def register(first: np.ndarray, second: np.ndarray) -> str:
        for name, mask in (("synthetic-a", first), ("synthetic-b", second)):
            path = build_constant_model(fresh_home / "models" / f"{name}.onnx", mask)
            size = path.stat().st_size
            spec = replace(models.REGISTRY["u2netp"], name=name, filename=path.name,
                           sources=(), sha256=None, md5=None, bytes=size)  # fmt: skip
            monkeypatch.setitem(models.REGISTRY, name, spec)
        combined = models.combined_entry(
            "pair", ("synthetic-a", "synthetic-b"), "A + B", "Two synthetic models."
        )
        monkeypatch.setitem(models.REGISTRY, "pair", combined)
        return "pair"

    return register


def grey_photo() -> np.ndarray:
    return np.full((SIDE, SIDE, 3), 128, np.uint8)


def test_the_second_model_restores_what_the_first_left_see_through_and_drops_its_stray_part(
    pair,
):
    """A: a square whose right half is see-through (alpha 0.45): hazy, so B is asked.
    B: the whole square, and a separate blob far from it (a logo). Best: the whole square
    solid (the part joined to what both call subject, at the higher alpha), no blob (B
    alone sees it, apart from the subject)."""
    from bgremover import Remover

    first = square(8, 8, 40, 24) + square(8, 24, 40, 40, 0.45)
    second = square(8, 8, 40, 40) + square(50, 50, 60, 60)
    result = Remover(pair(first, second), refine=False).remove(grey_photo())
    assert result.models == ("synthetic-a", "synthetic-b")
    expected = (square(8, 8, 40, 40) * 255).astype(np.uint8)
    assert np.array_equal(result.mask, expected)
    assert np.array_equal(result.alpha, expected)
    assert "second_model" in result.timings
    # The two agree on the square's left half only: 16x32 of (32x32 + 10x10) pixels.
    assert result.evidence is not None
    assert result.evidence.agreement == pytest.approx(16 * 32 / (32 * 32 + 100))
    assert result.doubts == ("its two models agree on only 46 % of it",)


def test_the_second_model_is_not_asked_where_the_first_is_sure(pair):
    from bgremover import Remover

    first = square(8, 8, 40, 40)
    second = square(40, 40, 60, 60)  # would be dropped anyway; it must not even run
    result = Remover(pair(first, second), refine=False).remove(grey_photo())
    assert result.models == ("synthetic-a",)
    assert "second_model" not in result.timings
    assert np.array_equal(result.mask, (first * 255).astype(np.uint8))
    assert result.doubts == ()
    assert result.evidence is not None and result.evidence.agreement is None


def test_masks_that_share_no_subject_are_joined_and_said_to_disagree(pair):
    from bgremover import Remover

    first = square(8, 8, 20, 20, 0.6) + square(30, 30, 32, 32)  # hazy: B is asked
    second = square(40, 40, 60, 60)
    result = Remover(pair(first, second), refine=False).remove(grey_photo())
    assert np.array_equal(result.mask, np.maximum(first, second).__mul__(255).astype(np.uint8))
    assert result.evidence is not None and result.evidence.agreement == 0.0
    assert "its two models agree on only 0 % of it" in result.doubts


def test_fuse_works_at_the_photos_size_beyond_the_working_side():
    """At 3000 px the parts are found at 1024 px, the mask is made at the photo's size."""
    big = 3000
    first = np.zeros((big, big), np.uint8)
    first[300:1500, 300:1500] = 255
    second = first.copy()
    second[300:1500, 1500:2400] = 200  # joined to the subject: kept
    second[2700:2900, 2700:2900] = 255  # apart from it: dropped
    fused = combine.fuse(first, second)
    assert fused.shape == (big, big)
    assert (fused[300:1500, 300:2400] >= 200).all()
    assert not fused[2600:, 2600:].any()


def test_evidence_in_words():
    solid = np.zeros((100, 100), np.uint8)
    solid[20:80, 20:80] = 255
    assert combine.evidence(solid).doubts() == ()
    hazy = solid.copy()
    hazy[20:80, 50:80] = 100
    assert combine.evidence(hazy).doubts() == ("much of it is half-transparent haze",)
    empty = np.zeros((100, 100), np.uint8)
    assert combine.evidence(empty).doubts() == ("almost nothing was found as the subject",)
    pieces = solid.copy()
    pieces[85:95, 5:95] = 255
    assert combine.evidence(pieces).fragments == pytest.approx(900 / (3600 + 900))
    assert "20 % of it lies in separate pieces" in combine.evidence(pieces).doubts()


def test_the_registry_entry_and_its_refusals(tiny_registered):
    from bgremover import Remover
    from bgremover.errors import UsageError
    from bgremover.network.models import EACH_MEMBER, REGISTRY
    from bgremover.network.store import ModelStore

    best = REGISTRY["best"]
    assert best.members == ("u2netp", "isnet-imgly")
    assert list(REGISTRY).index("best") == list(REGISTRY).index("u2netp") + 1
    assert "u2netp: Apache-2.0" in best.licence and "isnet-imgly: AGPL-3.0" in best.licence
    assert best.int8_recipes == (EACH_MEMBER,)
    record = ModelStore().describe(best)
    assert record["members"] == ["u2netp", "isnet-imgly"] and record["path"] is None
    with pytest.raises(UsageError, match="its own int8 recipe"):
        Remover("best", precision="int8", recipe="naive")
    with pytest.raises(UsageError, match="one mask"):
        Remover("best", classes=("upper",))


@pytest.mark.parametrize("fast", [True, False])
def test_isnet_runs_int8_in_best_where_int8_is_fast_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tiny_registered, fast: bool
):
    """IS-Net is best's int8 member: int8 (with its guard) at either precision on the CPU
    provider of a processor with int8 dot products; elsewhere, where int8 saves no time,
    the precision asked. What ran is in the output's record and its words."""
    from bgremover import ComposeOptions, Remover
    from bgremover.engine.pipeline import made_int8
    from bgremover.network import quantize
    from bgremover.network.models import REGISTRY

    assert REGISTRY["best"].int8_members == ("isnet-imgly",)
    monkeypatch.setattr(quantize, "fast_int8", lambda: fast)
    best = Remover("best")
    isnet = "int8" if fast else "fp32"
    assert [(m.spec.name, m.precision) for m in best.members] == [
        ("u2netp", "fp32"),
        ("isnet-imgly", isnet),
    ]
    words = best.output_settings(ComposeOptions(), "png").summary
    assert words.startswith(
        f"best: u2netp fp32 + isnet-imgly {isnet}{' (generic)' if fast else ''}, refined, png"
    )
    assert made_int8("best") == (("isnet-imgly",) if fast else ())
    # An accelerator runs fp32 IS-Net well: it is not made int8 for one.
    cuda = Remover("best", providers="cuda")
    assert [m.precision for m in cuda.members] == ["fp32", "fp32"]
    assert made_int8("best", "cuda") == () and made_int8("u2netp") == ()
    int8 = Remover("best", precision="int8")
    assert [m.precision for m in int8.members] == ["int8", "int8"]
    # The record tells the two apart, and IS-Net's guard is part of it where it runs int8.
    unguarded = Remover("best", int8_guard=False)
    assert (best.model_identity() != unguarded.model_identity()) is fast
    plain = ComposeOptions()
    assert best.output_settings(plain, "png").digest != int8.output_settings(plain, "png").digest
    assert [m.config.int8_guard for m in best.without_guard().members] == [False, False]


# -- the real combination: u2netp and IS-Net through the store --------------------------


@pytest.fixture(scope="module")
def best_models(u2netp_path: Path) -> None:
    """Best's models in the session's cache: IS-Net obtained (npm or its CDN), its int8
    made where Best runs it in int8. No session is kept: a loaded Best holds 2 GB, and
    the tests that run the CLI or a server in this process load their own."""
    kept_best()


@pytest.fixture()
def best(best_models: None):
    from bgremover import Remover

    remover = Remover("best")
    remover.load()
    return remover


def test_best_on_real_photos_asks_isnet_only_where_u2netp_is_unsure(best):
    from bgremover import Remover

    sure = best.remove(SAMPLE)
    assert sure.models == ("u2netp",) and sure.doubts == ()
    # Where only u2netp ran, the cutout is u2netp's (refined the same way).
    alone = Remover("u2netp").remove(SAMPLE)
    assert combine.agreement(sure.mask, alone.mask) > 0.999
    unsure = best.remove(ROCKET)
    assert unsure.models == ("u2netp", "isnet-imgly")
    assert unsure.evidence is not None and unsure.evidence.agreement is not None
    assert unsure.evidence.agreement < combine.DOUBT_AGREEMENT
    assert any("agree on only" in d for d in unsure.doubts)
    # Refinement and the export options apply to the combined mask as to any other.
    again = unsure.with_refinement(True)
    assert np.array_equal(again.alpha, unsure.alpha)
    assert unsure.compose(None).mode == "RGBA"


def test_the_output_record_names_both_models_by_their_contents(best):
    from bgremover import ComposeOptions, Remover

    made = best.output_settings(ComposeOptions(), "png")
    assert made.summary.startswith(f"best: u2netp fp32 + {best.members[1].precision_words()},")
    identity = best.model_identity()
    assert identity.startswith("combined-") and Remover("u2netp").model_identity() in identity
    assert made.digest != Remover("u2netp").output_settings(ComposeOptions(), "png").digest


def test_cli_names_doubtful_cutouts_with_v_and_counts_them(best_models, tmp_path: Path):
    out = tmp_path / "out"
    proc = cli("remove", str(ROCKET), str(SAMPLE), "-o", str(out), "--model", "best", "-v")
    assert proc.returncode == 0, proc.stderr
    assert f"{ROCKET}: this cutout may be wrong (its two models agree on only" in proc.stderr
    assert "check it, or touch it up in the app" in proc.stderr
    assert f"{SAMPLE}: this cutout may be wrong" not in proc.stderr
    # -v named it above: the count does not send the user to -v again
    assert "bgremover: 1 cutout may be wrong.\n" in proc.stderr
    assert "run with -v" not in proc.stderr
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} >= {
        "skimage_rocket.png",
        "sample.png",
    }
    # The default model's own doubt points to Best.
    proc = cli("remove", str(ROCKET), "-o", str(tmp_path / "u2"), "-v")
    assert "try --model best, or touch it up" in proc.stderr


def test_compare_u2netp_against_best_carries_the_doubt(best_models, tmp_path: Path):
    proc = cli("compare", str(ROCKET), "--a", "u2netp", "--b", "best", "-o", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "B's cutout may be wrong: its two models agree on only" in proc.stdout
    record = json.loads((tmp_path / "skimage_rocket.json").read_text())
    side_b = record["b"]
    assert side_b["model"] == "best" and side_b["models"] == ["u2netp", "isnet-imgly"]
    assert side_b["doubt"]["doubtful"] is True and side_b["doubt"]["agreement"] < 2 / 3
    assert record["a"]["doubt"]["agreement"] is None
    assert record["infer_b_s"] > record["b"]["infer_s"] / 2 > 0  # both of best's models


def test_serve_with_best_says_the_doubt_in_a_header(best_models):
    from test_serve import running

    with running("-m", "best") as server, server.client() as client:
        for photo, doubtful in ((ROCKET, True), (SAMPLE, False)):
            response = client.post(
                "/v1.0/removebg", files={"image_file": (photo.name, photo.read_bytes())}
            )
            assert response.status_code == 200, response.text
            doubt = response.headers["X-Cutout-Doubt"]
            assert (doubt != "none") is doubtful, doubt
            models = response.headers["X-Models"]
            assert models == ("u2netp,isnet-imgly" if doubtful else "u2netp")
            assert Image.open(io.BytesIO(response.content)).mode == "RGBA"
