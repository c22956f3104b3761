"""Clips through the engine: real encoding and decoding with PyAV (FFmpeg), on clips made
here, cut out by the small synthetic model (brighter pixels are the subject)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from bgremover import Remover
from bgremover.errors import ImageReadError, UsageError
from bgremover.export.compose import ComposeOptions
from bgremover.video.clip import probe, read_frames
from bgremover.video.run import remove_clip
from bgremover.video.writer import FORMATS

from conftest import build_tiny_model

av = pytest.importorskip("av")

W, H, FPS = 96, 64, 24
#: The subject: a bright box moving right on a dark ground.
SUBJECT = (230, 200, 40)
GROUND = (20, 20, 20)


def frame_at(i: int, width: int = W, height: int = H) -> np.ndarray:
    img = np.empty((height, width, 3), np.uint8)
    img[:] = GROUND
    x = 10 + 2 * i
    img[16:48, x : x + 30] = SUBJECT
    return img


def make_clip(
    path: Path,
    frames: int = 12,
    audio: str | None = "aac",
    pts: list[int] | None = None,
    time_base: Fraction = Fraction(1, FPS),
    size: tuple[int, int] = (W, H),
    rotation: int = 0,
) -> Path:
    """An H.264 clip (with a 440 Hz tone in ``audio``'s codec), as a camera writes one."""
    with av.open(str(path), "w") as out:
        video = out.add_stream("libx264", rate=FPS)
        video.width, video.height, video.pix_fmt = *size, "yuv420p"
        video.codec_context.time_base = time_base
        if rotation:
            video.set_display_rotation(rotation)
        sound = out.add_stream(audio, rate=48000) if audio else None
        if sound is not None:
            sound.layout = "stereo"
        done = 0
        for i in range(frames):
            frame = av.VideoFrame.from_ndarray(frame_at(i, *size), format="rgb24")
            frame.pts = pts[i] if pts else i
            out.mux(video.encode(frame))
            while sound is not None and done < (i + 1) * 48000 // FPS:
                tone = np.sin(np.arange(done, done + 1024) * 2 * np.pi * 440 / 48000)
                samples = np.stack([tone, tone]).astype(np.float32)
                chunk = av.AudioFrame.from_ndarray(samples, format="fltp", layout="stereo")
                chunk.sample_rate, chunk.pts = 48000, done
                out.mux(sound.encode(chunk))
                done += 1024
        out.mux(video.encode())
        if sound is not None:
            out.mux(sound.encode())
    return path


@pytest.fixture(scope="module")
def remover(tmp_path_factory: pytest.TempPathFactory) -> Remover:
    return Remover(str(build_tiny_model(tmp_path_factory.mktemp("m") / "tiny.onnx")))


def decoded(path: Path, decoder: str | None = None) -> tuple[list[np.ndarray], list[float]]:
    """Every frame of ``path`` as RGBA, and its time in seconds; ``decoder`` names one
    (VP9's alpha is read by libvpx, FFmpeg's own VP9 decoder leaves it out)."""
    frames, times = [], []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        context = av.CodecContext.create(decoder, "r") if decoder else None
        packets = container.demux(stream)
        for packet in packets:
            if context is None:
                got = packet.decode()
            elif packet.size:
                got = context.decode(packet)
            else:
                got = context.decode(None)
            for frame in got:
                frames.append(frame.to_ndarray(format="rgba"))
                times.append(float(frame.pts * stream.time_base))
    return frames, times


def audio_codecs(path: Path) -> list[str]:
    with av.open(str(path)) as container:
        return [s.codec_context.name for s in container.streams.audio]


def source_times(path: Path) -> list[float]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        return [float(f.pts * stream.time_base) for f in container.decode(stream)]


def assert_cut_out(rgba: np.ndarray, i: int) -> None:
    """The subject opaque, the ground transparent (frame ``i``'s box)."""
    alpha = rgba[..., 3]
    x = 10 + 2 * i
    assert alpha[24:40, x + 6 : x + 24].min() > 200
    assert alpha[:, :4].max() < 40 and alpha[:6].max() < 40


def test_vp9_webm_keeps_the_alpha_every_frame_and_the_timing(remover, tmp_path):
    clip = make_clip(tmp_path / "in.mp4", audio="aac")
    done = remove_clip(remover, clip, tmp_path / "out.webm")
    frames, times = decoded(tmp_path / "out.webm", "libvpx-vp9")
    assert done.frames == len(frames) == 12
    for i, rgba in enumerate(frames):
        assert_cut_out(rgba, i)
    assert times == pytest.approx(source_times(clip), abs=0.002)
    # WebM holds no AAC: the sound goes along as Opus.
    assert done.audio == "encoded" and audio_codecs(tmp_path / "out.webm") == ["opus"]


def test_prores_4444_keeps_the_alpha_and_copies_the_audio(remover, tmp_path):
    clip = make_clip(tmp_path / "in.mp4", audio="aac")
    done = remove_clip(remover, clip, tmp_path / "out.mov")
    with av.open(str(tmp_path / "out.mov")) as container:
        context = container.streams.video[0].codec_context
        assert (context.name, context.profile) == ("prores", "4444")
    frames, times = decoded(tmp_path / "out.mov")
    assert len(frames) == 12
    for i, rgba in enumerate(frames):
        assert_cut_out(rgba, i)
    assert times == pytest.approx(source_times(clip), abs=0.002)
    assert done.audio == "copied" and audio_codecs(tmp_path / "out.mov") == ["aac"]


def test_mp4_puts_the_subject_on_the_background_white_by_default(remover, tmp_path):
    clip = make_clip(tmp_path / "in.mp4", audio=None)
    assert remove_clip(remover, clip, tmp_path / "white.mp4").audio is None
    white, _ = decoded(tmp_path / "white.mp4")
    assert len(white) == 12 and white[0][..., 3].min() == 255
    assert np.abs(white[3][2, 2, :3].astype(int) - 255).max() <= 4  # the ground: white
    assert np.abs(white[3][32, 30, :3].astype(int) - SUBJECT).max() <= 8  # the subject
    blue = ComposeOptions(background=(0, 0, 255, 255))
    remove_clip(remover, clip, tmp_path / "blue.mp4", blue)
    frames, _ = decoded(tmp_path / "blue.mp4")
    assert np.abs(frames[3][2, 2, :3].astype(int) - (0, 0, 255)).max() <= 8


def test_png_frames_in_a_folder_one_per_frame(remover, tmp_path):
    from PIL import Image

    clip = make_clip(tmp_path / "in.mp4", frames=5, audio="aac")
    done = remove_clip(remover, clip, tmp_path / "frames")
    assert done.audio == "left out"  # PNG frames hold no sound (the batch says so)
    names = sorted(p.name for p in (tmp_path / "frames").glob("*.png"))
    assert done.frames == 5 and names == [f"{i:06d}.png" for i in range(5)]
    for i, name in enumerate(names):
        assert_cut_out(np.asarray(Image.open(tmp_path / "frames" / name)), i)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frames", "in.mp4"]  # no leftovers


def test_a_variable_frame_rate_keeps_each_frames_time(remover, tmp_path):
    # Frames 1/24 s apart but every third held 7 ms longer, in milliseconds.
    pts = [round(i * 1000 / FPS) + 7 * (i // 3) for i in range(12)]
    clip = make_clip(tmp_path / "vfr.mp4", audio=None, pts=pts, time_base=Fraction(1, 1000))
    for out in ("out.mov", "out.mp4", "out.webm"):
        remove_clip(remover, clip, tmp_path / out)
        _, times = decoded(tmp_path / out)
        assert times == pytest.approx(source_times(clip), abs=0.002), out


def test_a_rotated_clip_is_cut_out_as_it_is_shown(remover, tmp_path):
    clip = make_clip(tmp_path / "phone.mp4", frames=3, audio=None, rotation=90)
    info = probe(clip)
    assert (info.width, info.height, info.rotation) == (H, W, 90)
    remove_clip(remover, clip, tmp_path / "out.mov")
    frames, _ = decoded(tmp_path / "out.mov")
    shown = np.rot90(frame_at(0), 1)  # as a player shows it: turned 90 degrees left
    assert frames[0].shape[:2] == shown.shape[:2]
    subject = np.all(shown == SUBJECT, axis=2)
    assert frames[0][..., 3][subject].mean() > 200 and frames[0][..., 3][~subject].mean() < 60


def test_colours_are_read_by_the_clips_own_matrix_and_range(tmp_path):
    """A colour written as BT.709 limited range reads back as itself, and one written as
    BT.601 full range (a JPEG-style camera clip) too: each by its own tags."""
    from av.video.reformatter import ColorRange, Colorspace

    colour = np.zeros((64, 64, 3), np.uint8)
    colour[:] = (200, 60, 30)
    tags = ((Colorspace.ITU709, ColorRange.MPEG), (Colorspace.ITU601, ColorRange.JPEG))
    for space, level in tags:
        path = tmp_path / f"{int(space)}-{int(level)}.mp4"
        with av.open(str(path), "w") as out:
            stream = out.add_stream("libx264", rate=FPS, options={"crf": "0"})
            stream.width = stream.height = 64
            stream.pix_fmt = "yuv420p" if level == ColorRange.MPEG else "yuvj420p"
            stream.codec_context.colorspace, stream.codec_context.color_range = space, level
            frame = av.VideoFrame.from_ndarray(colour, format="rgb24").reformat(
                format=stream.pix_fmt, dst_colorspace=space, dst_color_range=level
            )
            frame.pts = 0
            out.mux(stream.encode(frame))
            out.mux(stream.encode())
        rgb = next(read_frames(path)).rgb
        assert np.abs(rgb[32, 32].astype(int) - colour[32, 32]).max() <= 3, (space, level)


# -- bad input: one clear error each, nothing written --------------------------------------


def assert_nothing_written(folder: Path, keep: set[str]) -> None:
    assert {p.name for p in folder.iterdir()} == keep


def test_a_truncated_clip_is_refused_and_nothing_is_written(remover, tmp_path):
    # Matroska states its length up front, and FFmpeg reads a cut one up to the cut.
    clip = make_clip(tmp_path / "in.mkv", frames=96, audio=None)
    data = clip.read_bytes()
    cut = tmp_path / "cut.mkv"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(ImageReadError, match=r"cut\.mkv: the video breaks off after frame"):
        remove_clip(remover, cut, tmp_path / "out.webm")
    # MP4 and MOV keep their index at the end: a cut one shows no frame at all.
    cut_mp4 = make_clip(tmp_path / "in.mp4", frames=12, audio=None)
    (tmp_path / "cut.mp4").write_bytes(cut_mp4.read_bytes()[:-200])
    with pytest.raises(ImageReadError, match=r"cut\.mp4: (not a video|holds no video frame)"):
        remove_clip(remover, tmp_path / "cut.mp4", tmp_path / "out.webm")
    assert_nothing_written(tmp_path, {"in.mkv", "cut.mkv", "in.mp4", "cut.mp4"})


def test_a_file_without_video_or_not_a_video_is_refused(remover, tmp_path):
    sound = tmp_path / "sound.m4a"
    with av.open(str(sound), "w", format="mp4") as out:
        stream = out.add_stream("aac", rate=48000)
        stream.layout = "mono"
        chunk = av.AudioFrame.from_ndarray(
            np.zeros((1, 1024), np.float32), format="fltp", layout="mono"
        )
        chunk.sample_rate, chunk.pts = 48000, 0
        out.mux(stream.encode(chunk))
        out.mux(stream.encode())
    with pytest.raises(ImageReadError, match="no video stream"):
        remove_clip(remover, sound, tmp_path / "out.webm")
    text = tmp_path / "notes.mp4"
    text.write_text("not a video")
    with pytest.raises(ImageReadError, match="not a video bgremover can read"):
        remove_clip(remover, text, tmp_path / "out.webm")
    assert_nothing_written(tmp_path, {"sound.m4a", "notes.mp4"})


def test_frames_over_the_pixel_budget_are_refused(remover, tmp_path):
    clip = make_clip(tmp_path / "in.mp4", frames=2, audio=None)
    with pytest.raises(ImageReadError, match="over the limit"):
        remove_clip(remover, clip, tmp_path / "out.webm", max_megapixels=0.001)
    assert_nothing_written(tmp_path, {"in.mp4"})


def test_options_that_change_a_frames_size_and_unknown_suffixes_are_refused(remover, tmp_path):
    clip = make_clip(tmp_path / "in.mp4", frames=2, audio=None)
    with pytest.raises(UsageError, match="one size"):
        remove_clip(remover, clip, tmp_path / "out.webm", ComposeOptions(crop=True))
    with pytest.raises(UsageError, match=r"\.avi"):
        remove_clip(remover, clip, tmp_path / "out.avi")
    assert set(FORMATS) == {".webm", ".mov", ".mp4"}
    assert_nothing_written(tmp_path, {"in.mp4"})


def test_a_clip_with_no_frames_is_refused(remover, tmp_path):
    empty = tmp_path / "empty.mkv"
    with av.open(str(empty), "w") as out:
        stream = out.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        out.start_encoding()  # the header alone: a video stream, no frame
    with pytest.raises(ImageReadError, match=r"empty\.mkv: (holds no video|not a video)"):
        remove_clip(remover, empty, tmp_path / "out.webm")
    assert_nothing_written(tmp_path, {"empty.mkv"})


@pytest.mark.parametrize("out", ["out.webm", "out.mov", "out.mp4", "frames"])
def test_an_output_records_its_clip_and_settings_for_a_rerun(remover, tmp_path, out):
    from bgremover.export.output import DONE, MISSING, OTHER_PHOTO, STALE, UNVERIFIED
    from bgremover.video.run import clip_options, clip_source
    from bgremover.video.writer import existing_clip, video_format

    clip = make_clip(tmp_path / "in.mp4", frames=3, audio=None)
    other = make_clip(tmp_path / "other.mp4", frames=4, audio=None)
    target = tmp_path / out
    fmt = video_format(target)
    options = clip_options(None, alpha=fmt is None or fmt.alpha)

    def state(source: Path, **how: bool) -> str:
        wanted = clip_source(
            remover, source, target, options, **{"audio": True, "steady": False, **how}
        )
        return existing_clip(target, wanted).state

    assert state(clip) == MISSING
    remove_clip(remover, clip, target)
    assert state(clip) == DONE
    assert state(clip, steady=True) == STALE and state(clip, audio=False) == STALE
    assert state(other) == OTHER_PHOTO
    remove_clip(remover, other, target, steady=True)  # made again over the old one
    assert state(other, steady=True) == DONE and state(clip) == OTHER_PHOTO
    stranger = tmp_path / f"stranger{target.suffix}"
    if fmt is None:
        stranger.mkdir()
    else:
        stranger.write_bytes(target.read_bytes()[:10])
    assert (
        existing_clip(
            stranger, clip_source(remover, clip, stranger, options, audio=True, steady=False)
        ).state
        == UNVERIFIED
    )


def test_clips_are_told_from_photos_and_each_gets_its_output(tmp_path):
    from bgremover.engine.plan import Job as ClipJob
    from bgremover.video.plan import plan_clips

    shoot = tmp_path / "shoot"
    (shoot / "day2").mkdir(parents=True)
    for name in ("a.mp4", "day2/b.MOV", "photo.jpg", ".hidden.mp4"):
        (shoot / name).write_bytes(b"x")
    out = tmp_path / "out"
    jobs, rest = plan_clips([shoot], out, "webm")
    assert jobs == [
        ClipJob(shoot / "a.mp4", out / "a.webm"),
        ClipJob(shoot / "day2" / "b.MOV", out / "day2" / "b.webm"),
    ]
    assert rest == [shoot]  # its photos are the photo batch's
    frames, _ = plan_clips([shoot / "a.mp4"], out, "png")
    assert frames == [ClipJob(shoot / "a.mp4", out / "a")]
    one, rest = plan_clips([shoot / "a.mp4"], tmp_path / "cut.mov")
    assert one == [ClipJob(shoot / "a.mp4", tmp_path / "cut.mov")] and rest == []
    with pytest.raises(UsageError, match="names a video file"):
        plan_clips([shoot], tmp_path / "cut.mov")
    with pytest.raises(UsageError, match="Unknown video format 'gif'"):
        plan_clips([shoot], out, "gif")


# -- the command line ------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("cli") / "tiny.onnx")


def test_remove_writes_one_clip_to_the_file_o_names(tiny_file, tmp_path):
    from conftest import cli

    clip = make_clip(tmp_path / "in.mp4", frames=6, audio="aac")
    proc = cli("remove", str(clip), "-o", str(tmp_path / "cut.webm"), "-m", str(tiny_file), "-v")
    assert proc.returncode == 0, proc.stderr
    frames, _ = decoded(tmp_path / "cut.webm", "libvpx-vp9")
    assert len(frames) == 6 and audio_codecs(tmp_path / "cut.webm") == ["opus"]
    assert "6 frames at" in proc.stderr and "frames/s" in proc.stderr  # -v: the speed
    assert "bgremover: 1 written" in proc.stderr


def test_remove_on_a_folder_makes_its_clips_and_photos_and_a_rerun_skips_both(tiny_file, tmp_path):
    from PIL import Image

    from conftest import cli

    shoot = tmp_path / "shoot"
    (shoot / "day2").mkdir(parents=True)
    make_clip(shoot / "day2" / "walk.mp4", frames=4, audio=None)
    Image.fromarray(frame_at(0)).save(shoot / "still.png")
    (shoot / "broken.mov").write_bytes(b"not a clip")
    args = ("remove", str(shoot), "-o", str(tmp_path / "out"), "-m", str(tiny_file))
    first = cli(*args, "--video-format", "mov")
    assert first.returncode == 1, first.stderr  # the broken clip alone failed
    assert "broken.mov: not a video bgremover can read" in first.stderr
    assert (tmp_path / "out" / "still.png").is_file()
    frames, _ = decoded(tmp_path / "out" / "day2" / "walk.mov")
    assert len(frames) == 4
    again = cli(*args, "--video-format", "mov")
    assert "2 already done" in again.stderr, again.stderr
    redo = cli(*args, "--video-format", "mov", "--no-audio")
    assert "1 redone: settings changed" in redo.stderr, redo.stderr
    frames = cli(*args, "--video-format", "png")
    assert "walk.mp4: PNG frames hold no sound" not in frames.stderr  # it has none
    (shoot / "day2" / "walk.mp4").unlink()
    make_clip(shoot / "talk.mp4", frames=2, audio="aac")
    frames = cli(*args, "--video-format", "png")
    assert "talk.mp4: PNG frames hold no sound, so its sound was left out" in frames.stderr
