"""``bgremover serve`` against a hostile client, on loopback: no parameter reads a file of
the server's, no small request makes a large image, slow clients hold no worker, and
no value of any parameter gives a 500 (a property-based fuzz over the parameter space)."""

from __future__ import annotations

import contextlib
import io
import socket
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from test_serve import CHELSEA, Server, assert_error, decoded, removebg, running

from conftest import DATA

httpx = pytest.importorskip("httpx")

#: The server's megapixel limit here: Chelsea (451x300, 0.135 MP) fits with a crop margin
#: of 10 % ((451+90)x(300+90) = 0.21 MP) and not with 50 % (0.68 MP).
LIMIT_MP = 0.5


@pytest.fixture(scope="module")
def server(u2netp_path: Path) -> Iterator[Server]:
    with running("--max-megapixels", str(LIMIT_MP)) as s:
        yield s


def api_remove(server: Server, data: bytes, **params):
    with server.client() as c:
        return c.post("/api/remove", content=data, params=params)


# -- 1. a colour is a colour, never a path ------------------------------------------------


@pytest.mark.parametrize(
    ("spelled", "rgba"),
    [
        ("81d4fa", (0x81, 0xD4, 0xFA, 255)),
        ("#81d4fa", (0x81, 0xD4, 0xFA, 255)),
        ("fff", (255, 255, 255, 255)),
        ("81d4fa80", (0x81, 0xD4, 0xFA, 0x80)),
        ("green", (0, 128, 0, 255)),
        ("rgb(10,20,30)", (10, 20, 30, 255)),
        ("10,20,30", (10, 20, 30, 255)),
    ],
)
def test_bg_color_takes_every_colour_form(server, spelled, rgba):
    response = removebg(server, CHELSEA, bg_color=spelled, format="png")
    assert response.status_code == 200, response.text
    pixels = decoded(response)
    assert tuple(pixels[0, 0][:3]) == rgba[:3]  # the corner is background
    if rgba[3] < 255:
        assert pixels.shape[2] == 4 and pixels[0, 0][3] == rgba[3]


def hostile_colours() -> list[str]:
    """Paths of files the server's user can read, and of files that do not exist."""
    return [
        str(DATA / "skimage_rocket.jpg"),  # an image: it came back as the background
        "../../tests/data/skimage_rocket.jpg",
        "/etc/passwd",
        "/proc/self/environ",  # answered with the server's PID in the message
        "/no/such/file.png",
        "~/.ssh/id_rsa",
        "C:\\Windows\\win.ini",
        "blur",  # the command line's background, not a colour
        "x" * 10_000,  # a 500
    ]


@pytest.mark.parametrize("value", hostile_colours())
def test_bg_color_never_reads_a_file_and_says_only_that_it_is_no_colour(server, value):
    for response in (
        removebg(server, CHELSEA, bg_color=value),
        api_remove(server, CHELSEA.read_bytes(), bg_color=value),
    ):
        error = assert_error(response, 400)
        assert error["code"] == "invalid_parameter"
        text = response.text
        # One answer for all: nothing tells whether the file exists, where it is, or
        # anything of the server's process.
        assert "is not a colour" in error["title"]
        assert "exist" not in text and "image format" not in text and "resolved" not in text
        assert len(text) < 400
        assert str(DATA) not in text.replace(value[:40], "")


# -- 2. no small request makes a large image ---------------------------------------------


def test_crop_margin_is_capped_as_remove_bg_caps_it(server):
    for margin in ("30000px", "501px", "51%", "1e308px", "inf", "nan"):
        error = assert_error(removebg(server, CHELSEA, crop="true", crop_margin=margin), 400)
        assert error["code"] == "invalid_parameter", (margin, error)
    error = assert_error(removebg(server, CHELSEA, crop="true", crop_margin="30000px"), 400)
    assert "500 px or 50%" in error["title"]
    assert removebg(server, CHELSEA, crop="true", crop_margin="10%").status_code == 200


def test_an_output_over_the_pixel_limit_is_refused_before_any_work(server):
    """Chelsea is 0.135 MP; with a 50 % margin its crop could be 0.68 MP, over the
    server's 0.5: refused with the limit in words, before the model runs."""
    start = time.monotonic()
    response = removebg(server, CHELSEA, crop="true", crop_margin="50%")
    error = assert_error(response, 400)
    assert error["code"] == "output_too_large"
    assert f"limit of {LIMIT_MP:g} megapixels" in error["title"]
    assert time.monotonic() - start < 30  # a bound on a hang: nothing was made
    small = removebg(server, CHELSEA, crop="true", crop_margin="10%")
    assert small.status_code == 200, small.text
    width, height = Image.open(io.BytesIO(small.content)).size
    assert width * height <= LIMIT_MP * 1e6


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_an_enlarged_output_costs_at_most_the_stated_bytes_per_pixel(u2netp_path):
    """The pixel budget holds the larger of the photo and its output, at BYTES_PER_PIXEL:
    check that holds where the output is four times the photo (a 50 % crop margin on a
    photo whose subject fills it), as at the limit (README: 53 MP made 208 MP)."""
    from test_serve import peak_rss

    from bgremover.serve import BYTES_PER_PIXEL

    photo = Image.open(CHELSEA).convert("RGB").resize((4000, 2660))
    data = io.BytesIO()
    photo.save(data, "PNG", compress_level=1)
    with running("--workers", "1") as s, s.client() as c:
        assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200
        idle = peak_rss(s.proc.pid)
        response = c.post(
            "/v1.0/removebg",
            files={"image_file": ("big.png", data.getvalue())},
            data={"crop": "true", "crop_margin": "50%", "size": "full", "format": "png"},
        )
        assert response.status_code == 200, response.text
        used = peak_rss(s.proc.pid) - idle
    width, height = Image.open(io.BytesIO(response.content)).size
    assert width * height > 3 * photo.width * photo.height
    assert used / (width * height) <= BYTES_PER_PIXEL, used / (width * height)


def test_the_command_lines_options_are_held_to_the_same_limit(monkeypatch):
    """The same check protects the command line and the app: a canvas is refused when
    its options are read (a preset's too), a margin before its image is made."""
    from bgremover.errors import UsageError
    from bgremover.export.compose import compose_strips, largest_output
    from bgremover.export.presets import options_from

    monkeypatch.setenv("BGREMOVER_MAX_MEGAPIXELS", "1")
    with pytest.raises(UsageError, match="over the limit of 1 megapixels"):
        options_from({"canvas": "2000x2000", "background": "white"})
    fine, _ = options_from({"canvas": "2000x2000", "max_size": 1000})  # capped: 1 MP
    assert largest_output(10, 10, fine) == 1_000_000
    options, _ = options_from({"crop": True, "margin": "5000px"})
    assert largest_output(100, 100, options) == 10_100 * 10_100
    alpha = np.zeros((100, 100), np.uint8)
    alpha[40:60, 40:60] = 255
    with pytest.raises(UsageError, match="10020x10020"):
        compose_strips(np.zeros((100, 100, 3), np.uint8), alpha, options)
    with pytest.raises(UsageError, match="too large"):
        options_from({"crop": True, "margin": "1e308px"})


# -- 3. slow clients hold no worker -------------------------------------------------------


def slow_upload(port: int) -> socket.socket:
    """A connection that starts an upload of 1 MB, sends 60 bytes of it, and stalls."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(
        b"POST /api/remove HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
        b"Content-Length: 1000000\r\n\r\n" + b"\x89PNG" + b"\0" * 56
    )
    return sock


def slow_headers(port: int) -> socket.socket:
    """A connection that never ends its headers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(b"POST /api/remove HTTP/1.1\r\nHost: x\r\n")
    return sock


def answer_of(sock: socket.socket) -> bytes:
    """What the server says on a connection before it closes it (b"" if nothing)."""
    data = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            data += chunk
    return data


@pytest.mark.slow
def test_slow_uploads_and_headers_lock_nobody_out_and_are_cut_off(u2netp_path):
    """Nineteen slow uploads filled every slot of a server with the default queue for
    two minutes; here fifty, and sixty connections that never end their headers, while
    normal requests are served, then each is answered 408 and closed."""
    with running("--workers", "1", "--queue", "2") as s:
        uploads = [slow_upload(s.port) for _ in range(50)]
        headers = [slow_headers(s.port) for _ in range(60)]
        try:
            with s.client() as c:
                for _ in range(3):
                    response = c.post("/api/remove", content=CHELSEA.read_bytes())
                    assert response.status_code == 200, response.text
            for sock in uploads:
                assert answer_of(sock).startswith(b"HTTP/1.1 408"), "a slow upload kept on"
            for sock in headers:
                assert answer_of(sock).startswith(b"HTTP/1.1 408"), "slow headers kept on"
            with s.client() as c:
                assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200
                assert s.metric("bgremover_in_flight") == 0
        finally:
            for sock in uploads + headers:
                sock.close()


# -- 4. no 500 for bad bodies --------------------------------------------------------------


def test_deeply_nested_json_is_400(server):
    with server.client() as c:
        for body in (b"[" * 100_000, b'{"image_file_b64": ' + b"[" * 100_000):
            response = c.post(
                "/v1.0/removebg", content=body, headers={"Content-Type": "application/json"}
            )
            assert_error(response, 400)


# -- 5. remove.bg's zip and types ----------------------------------------------------------


def test_format_zip_holds_the_colour_and_the_alpha(server):
    cutout = decoded(removebg(server, CHELSEA, format="png", crop="true"))
    response = removebg(server, CHELSEA, format="zip", crop="true")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    with zipfile.ZipFile(io.BytesIO(response.content)) as archive:
        assert sorted(archive.namelist()) == ["alpha.png", "color.jpg"]
        colour = Image.open(io.BytesIO(archive.read("color.jpg")))
        alpha = np.asarray(Image.open(io.BytesIO(archive.read("alpha.png"))))
    assert colour.format == "JPEG" and colour.mode == "RGB"
    assert colour.size == (cutout.shape[1], cutout.shape[0])
    np.testing.assert_array_equal(alpha, cutout[..., 3])  # the PNG's alpha, exactly
    shown = alpha > 250
    diff = np.abs(np.asarray(colour, np.int16) - cutout[..., :3].astype(np.int16))
    assert diff[shown].mean() < 4  # JPEG's loss only
    assert_error(removebg(server, CHELSEA, format="zip", channels="alpha"), 400)


def test_remove_bgs_types_run_as_auto_and_say_so(server):
    plain = removebg(server, CHELSEA)
    for kind in ("person", "product", "car", "animal", "graphics", "transportation"):
        response = removebg(server, CHELSEA, type=kind)
        assert response.status_code == 200, response.text
        assert response.headers["x-type-applied"] == "auto"
        assert response.content == plain.content
    assert "x-type-applied" not in plain.headers
    error = assert_error(removebg(server, CHELSEA, type="spaceship"), 400)
    assert "person" in error["detail"]


# -- every parameter, fuzzed ----------------------------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")

#: Values of the kinds a parameter parser meets: words it knows, numbers at their
#: extremes, lengths, colours, paths, and any text.
ODD_VALUES = [
    "",
    " ",
    "true",
    "false",
    "1",
    "0",
    "-1",
    "auto",
    "none",
    "zip",
    "png",
    "jpg",
    "webp",
    "alpha",
    "rgba",
    "full",
    "preview",
    "4k",
    "drop",
    "legacy",
    "original",
    "100%",
    "50%",
    "500px",
    "501px",
    "1e308",
    "1e308px",
    "-1e308",
    "nan",
    "inf",
    "-0",
    "0x10",
    "１２",
    "10px 20px",
    "1 2 3 4",
    "0% 0% 100% 100%",
    "#fff",
    "green",
    "rgb(1,2,3)",
    "1,2,3,4",
    "/etc/passwd",
    "../../x.png",
    "/proc/self/environ",
    "blur:5",
    "opacity=2",
    "\x00",
    "9" * 400,
    "a" * 5000,
    "%00",
    "ü",
    "🙂",
]


@pytest.fixture(scope="module")
def tiny_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server on the small synthetic model: the fuzz's accepted requests cost little."""
    from conftest import build_tiny_model

    model = build_tiny_model(tmp_path_factory.mktemp("fuzz") / "tiny.onnx")
    with running_model(str(model)) as s:
        yield s


@contextlib.contextmanager
def running_model(model: str) -> Iterator[Server]:
    from test_serve import start, stop

    s = start("-m", model)
    try:
        yield s
    finally:
        stop(s)


#: Values each parameter takes, for the companions of the one being fuzzed: with crop on,
#: a margin is read; with add_shadow on, the shadow's; and so on.
GOOD = {
    "crop": ["true", "false"],
    "crop_margin": ["10px", "5%"],
    "add_shadow": ["true"],
    "shadow_opacity": ["40"],
    "format": ["auto", "png", "jpg", "webp", "zip"],
    "channels": ["rgba", "alpha"],
    "size": ["auto", "preview", "full"],
    "bg_color": ["fff", "green"],
    "roi": ["0% 0% 50% 50%"],
    "type": ["auto", "person"],
}
FUZZ_EXAMPLES = 300
SMALL = io.BytesIO()
Image.open(CHELSEA).resize((90, 60)).save(SMALL, "PNG")


def names() -> list[str]:
    from bgremover.serve import PARAMETERS

    return [*PARAMETERS, "image_url", "bg_image_file", "bg_image_url", "x"]


def fuzz_params():
    """A parameter of any name with any value, among valid values of others."""
    values = st.one_of(
        st.sampled_from(ODD_VALUES),
        st.text(max_size=30),
        st.text(min_size=200, max_size=3000),
        st.floats().map(lambda f: f"{f}px"),
        st.integers().map(str),
    )
    companions = st.fixed_dictionaries(
        {}, optional={k: st.sampled_from(v) for k, v in GOOD.items()}
    )
    return st.tuples(companions, st.sampled_from(names()), values).map(
        lambda t: {**t[0], t[1]: t[2]}
    )


def answers(server: Server, params: dict[str, str]) -> list:
    """The answers to ``params`` in a form (/v1.0/removebg) and in the query (/api/remove)."""
    form = {k: v.replace("\x00", "") for k, v in params.items()}  # a form field has no NUL
    with server.client() as c:
        return [
            c.post("/v1.0/removebg", files={"image_file": ("s.png", SMALL.getvalue())},
                   data=form),
            c.post("/api/remove", content=SMALL.getvalue(), params=params),
        ]  # fmt: skip


def assert_no_500(params: dict[str, str], responses: list) -> None:
    for response in responses:
        assert response.status_code < 500, (params, response.status_code, response.text)
        if response.status_code != 200:
            assert_error(response, response.status_code)


@pytest.mark.slow
def test_each_odd_value_of_each_parameter_is_200_or_4xx(tiny_server):
    """Every parameter meets every value of ODD_VALUES, with crop and a shadow on."""
    for name in names():
        for value in ODD_VALUES:
            params = {"crop": "true", "add_shadow": "true", name: value}
            assert_no_500(params, answers(tiny_server, params))


@hypothesis.settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[hypothesis.HealthCheck.too_slow],
)
@pytest.mark.slow
@hypothesis.given(params=fuzz_params())
def test_no_value_of_any_parameter_is_a_500(tiny_server, params):
    """Random values of every parameter, among valid others: 200 or 4xx, never 500."""
    assert_no_500(params, answers(tiny_server, params))
