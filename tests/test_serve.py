"""``bgremover serve``: the real server as a subprocess with the real u2netp, talked to
over HTTP on 127.0.0.1, its outputs compared with the engine's for the same options."""

from __future__ import annotations

import base64
import contextlib
import io
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, SAMPLE

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

CHELSEA = DATA / "skimage_chelsea.png"
ROCKET = DATA / "skimage_rocket.jpg"
START_TIMEOUT = 180.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, proc: subprocess.Popen, port: int, key: str | None = None) -> None:
        self.proc = proc
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.headers = {"X-Api-Key": key} if key else {}

    def client(self, **kw) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=120, headers=self.headers, **kw)

    def metric(self, name: str) -> float:
        with self.client() as c:
            text = c.get("/metrics").text
        for line in text.splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        raise AssertionError(f"{name} not in /metrics:\n{text}")


def start(*extra: str, env: dict | None = None) -> Server:
    port = free_port()
    cmd = [sys.executable, "-m", "bgremover", "serve", "--port", str(port), "-m", "u2netp"]
    proc = subprocess.Popen(
        [*cmd, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )
    server = Server(
        proc, port, next((extra[i + 1] for i, a in enumerate(extra) if a == "--api-key"), None)
    )
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the server exited: {proc.stdout.read().decode()}")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(server.url + "/healthz", timeout=2).status_code == 200:
                return server
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the server did not start")


def stop(server: Server) -> int:
    if server.proc.poll() is None:
        server.proc.send_signal(signal.SIGTERM)
    try:
        return server.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
        raise
    finally:
        if server.proc.stdout:
            server.proc.stdout.close()


@contextlib.contextmanager
def running(*extra: str) -> Iterator[Server]:
    server = start(*extra)
    try:
        yield server
    finally:
        stop(server)


@pytest.fixture(scope="module")
def server(u2netp_path: Path) -> Iterator[Server]:
    with running() as s:
        yield s


@pytest.fixture(scope="module")
def remover(u2netp_path: Path):
    from bgremover import Remover

    return Remover("u2netp")


def engine_pixels(remover, photo: Path, values: dict, fmt: str, mask: bool = False):
    """What the engine gives for ``photo`` with these option values, encoded and decoded."""
    from bgremover.export.compose import ComposeOptions
    from bgremover.export.output import FORMATS
    from bgremover.export.presets import options_from

    options, _ = options_from(values, ComposeOptions(mask_only=mask))
    result = remover.remove(photo)
    pixels = result.compose_array(options)
    out = io.BytesIO()
    FORMATS[fmt].encode(out, pixels, FORMATS[fmt], None, options, result.image.metadata)
    return np.asarray(Image.open(io.BytesIO(out.getvalue())))


def decoded(response) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(response.content)))


def removebg(server: Server, photo: Path, **fields):
    with server.client() as c:
        return c.post(
            "/v1.0/removebg",
            files={"image_file": (photo.name, photo.read_bytes())},
            data={k: str(v) for k, v in fields.items()},
        )


def assert_error(response, status: int) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert isinstance(body["errors"], list) and body["errors"]
    assert body["errors"][0]["title"] and body["errors"][0]["code"]
    return body["errors"][0]


# -- endpoints and parameters -----------------------------------------------------------


def test_healthz_says_model_precision_providers(server: Server):
    with server.client() as c:
        body = c.get("/healthz").json()
    assert body["status"] == "ok"
    assert body["model"] == "u2netp" and body["precision"] == "fp32"
    assert "CPUExecutionProvider" in body["providers"]


def test_removebg_default_is_a_png_cutout_the_engines_pixels(server, remover):
    response = removebg(server, SAMPLE)
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    got = decoded(response)
    assert response.headers["x-width"] == str(got.shape[1])
    assert response.headers["x-height"] == str(got.shape[0])
    np.testing.assert_array_equal(got, engine_pixels(remover, SAMPLE, {}, "png"))


@pytest.mark.slow
def test_an_int8_server_says_which_precision_made_each_cutout(
    server: Server, remover, u2netp_int8_path
):
    """The int8 guard runs fp32 for the cat (int8 is unsure of its blanket), not for the
    cup; X-Precision says which, and the cat's cutout is fp32's to the pixel."""
    assert removebg(server, CHELSEA).headers["x-precision"] == "fp32"  # an fp32 server
    with running("-p", "int8") as fast:
        cat, cup = removebg(fast, CHELSEA), removebg(fast, DATA / "skimage_coffee.png")
        assert cat.status_code == 200 and cup.status_code == 200
        assert cat.headers["x-precision"] == "fp32" and cup.headers["x-precision"] == "int8"
        np.testing.assert_array_equal(decoded(cat), engine_pixels(remover, CHELSEA, {}, "png"))
    with running("-p", "int8", "--no-int8-guard") as plain:
        assert removebg(plain, CHELSEA).headers["x-precision"] == "int8"


@pytest.mark.parametrize(
    ("photo", "fields", "values", "fmt", "mask", "media"),
    [
        (CHELSEA, {"format": "png"}, {}, "png", False, "image/png"),
        (ROCKET, {"format": "jpg", "bg_color": "81d4fa"}, {"background": "#81d4fa"},
         "jpeg", False, "image/jpeg"),
        (CHELSEA, {"format": "webp"}, {}, "webp", False, "image/webp"),
        (SAMPLE, {"format": "jpg"}, {"background": "white"}, "jpeg", False, "image/jpeg"),
        (SAMPLE, {"bg_color": "green"}, {"background": "green"}, "jpeg", False, "image/jpeg"),
        (ROCKET, {"channels": "alpha"}, {}, "png", True, "image/png"),
        (CHELSEA, {"crop": "true", "crop_margin": "10%"}, {"crop": True, "margin": "10%"},
         "png", False, "image/png"),
        (SAMPLE, {"crop": "true", "crop_margin": "30px"}, {"crop": True, "margin": "30px"},
         "png", False, "image/png"),
        (CHELSEA, {"add_shadow": "true", "bg_color": "fff"},
         {"shadow": True, "background": "#fff"}, "jpeg", False, "image/jpeg"),
        (ROCKET, {"add_shadow": "true", "shadow_opacity": "80", "format": "png"},
         {"shadow": "opacity=0.8"}, "png", False, "image/png"),
    ],
)  # fmt: skip
def test_removebg_parameters_match_the_engine(
    server, remover, photo, fields, values, fmt, mask, media
):
    response = removebg(server, photo, **fields)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == media
    np.testing.assert_array_equal(
        decoded(response), engine_pixels(remover, photo, values, fmt, mask)
    )


def test_size_preview_is_at_most_a_quarter_megapixel(server, remover):
    big = Image.open(SAMPLE).resize((1200, 1400))
    buf = io.BytesIO()
    big.save(buf, "PNG")
    response = removebg_bytes(server, buf.getvalue(), size="preview")
    assert response.status_code == 200
    got = decoded(response)
    assert got.shape[0] * got.shape[1] <= 250_000
    assert got.shape[0] * got.shape[1] > 200_000
    # "full" keeps the photo's size
    full = decoded(removebg_bytes(server, buf.getvalue(), size="full"))
    assert full.shape[:2] == (1400, 1200)


def removebg_bytes(server: Server, data: bytes, **fields):
    with server.client() as c:
        return c.post("/v1.0/removebg", files={"image_file": ("x.png", data)}, data=fields)


def test_image_file_b64_is_the_same_as_the_file(server):
    data = base64.b64encode(CHELSEA.read_bytes()).decode()
    with server.client() as c:
        response = c.post("/v1.0/removebg", data={"image_file_b64": data})
    assert response.status_code == 200
    np.testing.assert_array_equal(decoded(response), decoded(removebg(server, CHELSEA)))


def test_api_remove_raw_body_and_query_parameters(server, remover):
    with server.client() as c:
        plain = c.post("/api/remove", content=ROCKET.read_bytes())
        webp = c.post("/api/remove?format=webp&bg_color=fff", content=ROCKET.read_bytes())
    assert plain.status_code == 200 and plain.headers["content-type"] == "image/png"
    np.testing.assert_array_equal(decoded(plain), engine_pixels(remover, ROCKET, {}, "png"))
    assert webp.status_code == 200 and webp.headers["content-type"] == "image/webp"
    expected = engine_pixels(remover, ROCKET, {"background": "#fff"}, "webp")
    np.testing.assert_array_equal(decoded(webp), expected)


def test_metrics_are_prometheus_text(server):
    removebg(server, CHELSEA)
    with server.client() as c:
        response = c.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    text = response.text
    assert 'bgremover_requests_total{endpoint="/v1.0/removebg",status="200"}' in text
    assert "# TYPE bgremover_request_seconds histogram" in text
    assert 'bgremover_request_seconds_bucket{endpoint="/v1.0/removebg",le="+Inf"}' in text
    for name in ("bgremover_queue_depth", "bgremover_in_flight", "process_resident_memory_bytes"):
        assert server.metric(name) >= 0
    assert server.metric("process_resident_memory_bytes") > 10e6


# -- refusals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"colour": "red"}, "unknown_parameter"),
        ({"type": "spaceship"}, "invalid_parameter"),
        ({"format": "gif"}, "invalid_format"),
        ({"size": "huge"}, "invalid_size"),
        ({"channels": "rgb"}, "invalid_channels"),
        ({"bg_color": "notacolour"}, "invalid_parameter"),
        ({"crop_margin": "lots"}, "invalid_parameter"),
        ({"crop": "maybe"}, "invalid_parameter"),
        ({"add_shadow": "true", "shadow_type": "car"}, "unsupported_parameter"),
        ({"add_shadow": "true", "shadow_opacity": "150"}, "invalid_parameter"),
        ({"scale": "50%"}, "unsupported_parameter"),
    ],
)
def test_bad_parameters_are_400_in_removebgs_shape(server, fields, code):
    error = assert_error(removebg(server, CHELSEA, **fields), 400)
    assert error["code"] == code


def test_unknown_query_parameter_on_api_remove_is_400(server):
    with server.client() as c:
        error = assert_error(c.post("/api/remove?colour=red", content=CHELSEA.read_bytes()), 400)
    assert "colour" in error["title"]


def test_image_url_is_refused(server):
    with server.client() as c:
        error = assert_error(
            c.post("/v1.0/removebg", data={"image_url": "http://example.com/a.jpg"}), 400
        )
    assert "URL fetching is off" in error["title"]


def test_unreadable_and_truncated_images_are_400(server):
    truncated = SAMPLE.read_bytes()[:5000]
    assert_error(removebg_bytes(server, b"not an image at all"), 400)
    assert_error(removebg_bytes(server, truncated), 400)
    with server.client() as c:
        assert_error(c.post("/api/remove", content=b""), 400)
        assert_error(c.post("/v1.0/removebg", data={"format": "png"}), 400)  # no image
        bad = c.post(
            "/v1.0/removebg",
            content=b"--xx\r\nbroken",
            headers={"Content-Type": "multipart/form-data; boundary=yy"},
        )
        assert_error(bad, 400)


def png_declaring(width: int, height: int) -> bytes:
    """A 1-bit greyscale PNG of ``width`` x ``height``, all black: a few KB."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    packer = zlib.compressobj(9)
    row = b"\0" * (1 + (width + 7) // 8)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")


def test_too_many_pixels_is_refused_before_decoding(server):
    bomb = png_declaring(30000, 30000)
    assert len(bomb) < 1_000_000
    error = assert_error(removebg_bytes(server, bomb), 400)  # remove.bg has no 413
    assert "megapixels" in error["title"] and error["code"] == "image_too_large"
    with server.client() as c:
        assert_error(c.post("/api/remove", content=bomb), 413)


def test_too_large_body_is_413(u2netp_path):
    with running("--max-body-mb", "1") as s, s.client() as c:
        error = assert_error(c.post("/api/remove", content=b"\0" * 3_000_000), 413)
        assert "limit" in error["title"]
        chunks = (b"\0" * 65536 for _ in range(40))  # chunked: no Content-Length to go by
        assert_error(c.post("/api/remove", content=chunks), 413)
        assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200


@pytest.mark.slow
def test_busy_server_answers_429_with_retry_after(u2netp_path):
    big = io.BytesIO()
    Image.open(SAMPLE).resize((2400, 2800)).save(big, "PNG")
    data = big.getvalue()
    responses: list = []
    with running("--queue", "0", "--workers", "1") as s:

        def send() -> None:
            with s.client() as c:
                responses.append(c.post("/api/remove", content=data))

        threads = [threading.Thread(target=send) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        with s.client() as c:
            after = c.post("/api/remove", content=CHELSEA.read_bytes())
    statuses = sorted(r.status_code for r in responses)
    assert len(statuses) == 6 and set(statuses) <= {200, 429}, statuses
    assert 200 in statuses and 429 in statuses, statuses
    busy = next(r for r in responses if r.status_code == 429)
    assert int(busy.headers["retry-after"]) >= 1
    assert_error(busy, 429)
    assert after.status_code == 200


# -- API key ----------------------------------------------------------------------------


def test_api_key_is_checked(u2netp_path):
    with running("--api-key", "s3cret") as s:
        with httpx.Client(base_url=s.url, timeout=120) as bare:
            assert_error(bare.post("/api/remove", content=CHELSEA.read_bytes()), 401)
            wrong = bare.post(
                "/api/remove", content=CHELSEA.read_bytes(), headers={"X-Api-Key": "nope"}
            )
            assert_error(wrong, 401)
            assert bare.get("/healthz").status_code == 200
            assert bare.get("/metrics").status_code == 401
        with s.client() as c:
            assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200


def test_refuses_to_listen_off_loopback_without_a_key(u2netp_path):
    env = {k: v for k, v in os.environ.items() if k != "BGREMOVER_API_KEY"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bgremover",
            "serve",
            "--host",
            "0.0.0.0",
            "--port",
            str(free_port()),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode != 0
    assert "API key" in done.stderr and "--api-key" in done.stderr


# -- robustness -------------------------------------------------------------------------


@pytest.mark.slow
def test_sigterm_finishes_the_request_in_flight_answers_503_meanwhile_then_exits_0(u2netp_path):
    big = io.BytesIO()
    Image.open(SAMPLE).resize((2400, 2800)).save(big, "PNG")
    s = start()
    result: list = []

    def send() -> None:
        with s.client() as c:
            result.append(c.post("/api/remove", content=big.getvalue()))

    thread = threading.Thread(target=send)
    thread.start()
    deadline = time.monotonic() + 60
    while s.metric("bgremover_in_flight") < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    s.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    try:
        with httpx.Client(base_url=s.url, timeout=30) as c:
            late = c.post("/api/remove", content=CHELSEA.read_bytes()).status_code
    except httpx.TransportError:
        late = "refused"
    thread.join(timeout=300)
    # The one SIGTERM is enough: wait for the exit it brings (stop() would signal again,
    # and a second SIGTERM during the process's teardown kills it, as it should).
    try:
        code = s.proc.wait(timeout=120)
    finally:
        stop(s)  # signals only a process still running; closes its output
    assert result and result[0].status_code == 200
    assert late == 503  # still listening while it drains, to say so
    assert code == 0


def test_client_that_disconnects_mid_upload_leaves_the_server_healthy(server):
    for _ in range(3):
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(
                b"POST /api/remove HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\n"
                b"Content-Length: 5000000\r\n\r\n" + CHELSEA.read_bytes()[:20000]
            )
    deadline = time.monotonic() + 30
    while server.metric("bgremover_in_flight") > 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.metric("bgremover_in_flight") == 0
    assert server.metric("bgremover_queue_depth") == 0
    with server.client() as c:
        assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200


# -- remove.bg's surface, as real clients use it ------------------------------------------


REMOVEBG_DEFAULTS = {
    "type": "auto",
    "type_level": "none",
    "roi": "0 0 100% 100%",
    "scale": "original",
    "position": "original",
    "semitransparency": "true",
    "shadow_method": "legacy",
    "crop": "false",
    "channels": "rgba",
    "add_shadow": "false",
    "format": "auto",
    "size": "auto",
}


def test_removebgs_defaults_change_nothing(server):
    """rembgpy sends every default of remove.bg's on every call; each was a 400."""
    plain = removebg(server, CHELSEA)
    with_defaults = removebg(server, CHELSEA, **REMOVEBG_DEFAULTS)
    assert with_defaults.status_code == 200, with_defaults.text
    assert with_defaults.content == plain.content
    roi_pixels = removebg(server, CHELSEA, roi="0px 0px 451px 300px", type_level="latest")
    assert roi_pixels.content == plain.content


@pytest.mark.parametrize(
    ("name", "value"),
    [("scale", "50%"), ("position", "center"), ("shadow_method", "ai")],
)
def test_values_bgremover_cannot_honour_are_400_naming_the_default(server, name, value):
    error = assert_error(removebg(server, CHELSEA, **{name: value}), 400)
    assert error["code"] == "unsupported_parameter"
    assert name in error["title"] and f"{name}=" in error["detail"]


def test_roi_leaves_nothing_outside_the_region(server):
    whole = decoded(removebg(server, CHELSEA, channels="alpha"))
    response = removebg(server, CHELSEA, channels="alpha", roi="10% 10% 50% 50%")
    assert response.status_code == 200, response.text
    region = decoded(response)
    height, width = region.shape[:2]
    x0, y0, x1, y1 = (
        round(0.1 * width),
        round(0.1 * height),
        round(0.5 * width),
        round(0.5 * height),
    )
    inside = np.zeros(region.shape, bool)
    inside[y0:y1, x0:x1] = True
    assert region[~inside].max() == 0
    np.testing.assert_array_equal(region[inside], whole[inside])
    assert response.headers["x-foreground-left"] == str(x0)
    assert response.headers["x-foreground-top"] == str(y0)
    assert_error(removebg(server, CHELSEA, roi="50% 50% 10% 10%"), 400)
    assert_error(removebg(server, CHELSEA, roi="0 0 100%"), 400)


def test_crop_margin_with_two_or_four_equal_values_and_without_crop(server):
    one = removebg(server, CHELSEA, crop="true", crop_margin="12px")
    assert one.status_code == 200
    for spelled in ("12px 12px", "12 12px 12px 12"):
        again = removebg(server, CHELSEA, crop="true", crop_margin=spelled)
        assert again.status_code == 200, again.text
        assert again.content == one.content
    error = assert_error(removebg(server, CHELSEA, crop="true", crop_margin="10px 20px"), 400)
    assert error["code"] == "unsupported_parameter"
    # remove.bg ignores a margin without crop
    assert (
        removebg(server, CHELSEA, crop_margin="30px").content == removebg(server, CHELSEA).content
    )


def test_json_body_and_json_answer(server):
    """The npm client remove.bg: base64 in a JSON body, JSON booleans, and an answer in
    remove.bg's JSON (data.result_b64, foreground_*) when it asks Accept: application/json."""
    plain = removebg(server, CHELSEA, crop="true")
    encoded = base64.encodebytes(CHELSEA.read_bytes()).decode()  # with line breaks
    body = {"image_file_b64": "data:image/png;base64," + encoded, "type": "auto", "crop": True}
    with server.client() as c:
        response = c.post("/v1.0/removebg", json=body, headers={"Accept": "application/json"})
        as_image = c.post("/v1.0/removebg", json=body)
        assert_error(c.post("/v1.0/removebg", json=["not", "an", "object"]), 400)
        assert_error(
            c.post("/v1.0/removebg", content=b"{", headers={"Content-Type": "application/json"}),
            400,
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/json"
    data = response.json()["data"]
    assert base64.b64decode(data["result_b64"]) == plain.content == as_image.content
    for side in ("top", "left", "width", "height"):
        assert data[f"foreground_{side}"] == int(plain.headers[f"x-foreground-{side}"])
    assert data["foreground_width"] > 0 and data["foreground_height"] > 0


def test_answers_carry_removebgs_headers(server):
    response = removebg(server, CHELSEA)
    headers = response.headers
    assert headers["x-type"] == "other" and headers["x-credits-charged"] == "0"
    assert int(headers["x-ratelimit-limit"]) == 3 + 16  # workers and the queue
    assert 0 <= int(headers["x-ratelimit-remaining"]) <= int(headers["x-ratelimit-limit"])
    assert int(headers["x-ratelimit-reset"]) >= int(time.time())
    alpha = decoded(response)[..., 3]
    rows, cols = np.flatnonzero((alpha > 10).any(axis=1)), np.flatnonzero((alpha > 10).any(axis=0))
    assert int(headers["x-foreground-top"]) == rows[0]
    assert int(headers["x-foreground-left"]) == cols[0]
    assert int(headers["x-foreground-height"]) == rows[-1] + 1 - rows[0]
    assert int(headers["x-foreground-width"]) == cols[-1] + 1 - cols[0]
    assert "x-ratelimit-limit" in removebg(server, CHELSEA, size="huge").headers


def test_account_and_unknown_paths_answer_in_the_errors_shape(server):
    with server.client() as c:
        assert assert_error(c.get("/v1.0/account"), 404)["code"] == "not_supported"
        assert assert_error(c.get("/v2/nothing"), 404)["code"] == "not_found"
        assert assert_error(c.get("/v1.0/removebg"), 405)["code"] == "method_not_allowed"


# -- form parts -------------------------------------------------------------------------


def multipart(*parts: tuple[str, bytes]) -> tuple[bytes, str]:
    """A multipart body written by hand: each part its Content-Disposition line's rest."""
    boundary = "bgremover-test-boundary"
    body = b"".join(
        b"--%s\r\nContent-Disposition: form-data; %s\r\n\r\n%s\r\n"
        % (boundary.encode(), disposition.encode(), data)
        for disposition, data in parts
    )
    return body + b"--%s--\r\n" % boundary.encode(), f"multipart/form-data; boundary={boundary}"


def post_form(server: Server, body: bytes, content_type: str):
    with server.client() as c:
        return c.post("/v1.0/removebg", content=body, headers={"Content-Type": content_type})


def test_an_image_part_without_a_file_name_is_the_image(server):
    """curl -F 'image_file=<photo' sends no filename; httpx sends filename "" ."""
    plain = removebg(server, CHELSEA)
    data = CHELSEA.read_bytes()
    response = post_form(server, *multipart(('name="image_file"', data)))
    assert response.status_code == 200, response.text
    assert response.content == plain.content
    with server.client() as c:
        empty_name = c.post("/v1.0/removebg", files={"image_file": ("", data)})
    assert empty_name.status_code == 200, empty_name.text
    assert empty_name.content == plain.content


def test_an_image_given_twice_is_400(server):
    data = CHELSEA.read_bytes()
    twice = multipart(('name="image_file"; filename="a.png"', data), ('name="image_file"', data))
    error = assert_error(post_form(server, *twice), 400)
    assert "twice" in error["title"]


def test_a_long_file_name_is_read(server):
    name = "a" * 8000 + ".png"
    response = post_form(
        server, *multipart((f'name="image_file"; filename="{name}"', CHELSEA.read_bytes()))
    )
    assert response.status_code == 200, response.text


# -- limits at the door -----------------------------------------------------------------


def raw_exchange(port: int, head: bytes, body: bytes = b"", wait: float = 30.0) -> tuple:
    """Send ``head`` (and ``body``) on a raw connection; the status line and the seconds
    until it came."""
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as sock:
        sock.sendall(head + body)
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0].decode(), time.monotonic() - start


def test_an_over_limit_content_length_is_refused_before_the_body(server):
    """No 100 Continue for a body that will be refused, and no wait for 10 GB to come."""
    head = b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000000\r\n"
    status, seconds = raw_exchange(
        server.port, head % b"/api/remove" + b"Expect: 100-continue\r\n\r\n"
    )
    assert status.endswith("413 Request Entity Too Large"), status
    assert seconds < 5
    form = b"Content-Type: multipart/form-data; boundary=b\r\n\r\n"
    status, seconds = raw_exchange(server.port, head % b"/v1.0/removebg" + form, b"x" * 100_000)
    assert status.endswith("400 Bad Request"), status  # remove.bg's file_too_large is 400
    assert seconds < 10


@pytest.fixture(scope="module")
def strict(u2netp_path: Path) -> Iterator[Server]:
    """A server with a key and a one-second limit."""
    with running("--api-key", "k3y", "--timeout", "1", "--workers", "1") as s:
        yield s


@pytest.mark.slow
def test_a_request_past_the_timeout_is_503_with_retry_after(strict):
    # 42 megapixels: reading, scaling, refining and encoding them takes several seconds
    # even on a fast machine (10.5 megapixels once finished within the second there).
    big = io.BytesIO()
    Image.open(SAMPLE).resize((6000, 7000)).save(big, "JPEG")
    with strict.client() as c:
        for response in (
            c.post("/api/remove", content=big.getvalue()),
            c.post("/v1.0/removebg", files={"image_file": ("big.jpg", big.getvalue())}),
        ):
            error = assert_error(response, 503)
            assert error["code"] == "timeout"
            assert int(response.headers["retry-after"]) >= 1
    # The server is still serving once the work nobody waits for is done (one worker).
    deadline = time.monotonic() + 300  # a bound on a hang, not a speed goal
    with strict.client() as c:
        while (status := c.post("/api/remove", content=CHELSEA.read_bytes()).status_code) != 200:
            assert status == 503 and time.monotonic() < deadline, status
            time.sleep(1)


def test_a_client_without_a_key_that_trickles_its_body_is_answered(strict):
    """Refusals read at most a few seconds of the body, then answer and close."""
    head = (
        b"POST /v1.0/removebg HTTP/1.1\r\nHost: x\r\nContent-Length: 50000000\r\n"
        b"Content-Type: multipart/form-data; boundary=b\r\n\r\n"
    )
    start = time.monotonic()
    with socket.create_connection(("127.0.0.1", strict.port), timeout=30) as sock:
        sock.sendall(head)
        sock.settimeout(0.1)
        answer = b""
        while time.monotonic() - start < 25 and not answer:
            with contextlib.suppress(OSError):
                sock.sendall(b"x" * 100)
            with contextlib.suppress(socket.timeout):
                answer = sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 403"), answer[:200]
    assert time.monotonic() - start < 10
    with httpx.Client(base_url=strict.url, timeout=30) as bare:
        assert_error(bare.post("/api/remove", content=CHELSEA.read_bytes()), 401)
        wrong = {"X-Api-Key": "nope"}
        error = assert_error(
            bare.post("/v1.0/removebg", files={"image_file": ("c.png", b"x")}, headers=wrong), 403
        )
        assert error["code"] == "auth_failed"


def test_the_start_up_line_is_a_url_for_ipv6_hosts():
    from bgremover.serve import url_of

    assert url_of("::1", 5000) == "http://[::1]:5000"
    assert url_of("[::1]", 5000) == "http://[::1]:5000"
    assert url_of("127.0.0.1", 80) == "http://127.0.0.1:80"
    assert url_of("localhost", 80) == "http://localhost:80"


def test_the_default_megapixel_limit_fits_in_half_the_memory():
    from bgremover.serve import BYTES_PER_PIXEL, memory_megapixels

    assert memory_megapixels(64 * 2**30) == 250  # a large machine keeps the imaging limit
    two_gb = memory_megapixels(2 * 2**30)
    assert two_gb * 1e6 * BYTES_PER_PIXEL <= 2**30 < (two_gb + 1) * 1e6 * BYTES_PER_PIXEL


def peak_rss(pid: int) -> int:
    """A process's peak resident memory in bytes (Linux)."""
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)")
def test_an_image_costs_at_most_the_stated_bytes_per_pixel(u2netp_path):
    """The default megapixel limit is derived from BYTES_PER_PIXEL: check it holds for a
    small upload that decodes to 30 megapixels (a PNG of zeros of a few KB)."""
    from bgremover.serve import BYTES_PER_PIXEL

    bomb = png_declaring(6000, 5000)
    with running("--workers", "1") as s, s.client() as c:
        assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200
        idle = peak_rss(s.proc.pid)
        assert c.post("/api/remove", content=bomb).status_code == 200
        per_pixel = (peak_rss(s.proc.pid) - idle) / (6000 * 5000)
    assert per_pixel <= BYTES_PER_PIXEL, per_pixel


LOOPING_EPS = b"%!PS-Adobe-3.0 EPSF-3.0\n%%BoundingBox: 0 0 64 64\n{ } loop\n"


def test_postscript_uploads_are_refused_without_running_ghostscript(tmp_path, u2netp_path):
    """A looping EPS held a worker for ever in Ghostscript; now no decoder runs it."""
    bin_dir, marker = tmp_path / "bin", tmp_path / "gs-ran"
    bin_dir.mkdir()
    fake = bin_dir / "gs"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nsleep 600\n")
    fake.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    s = start("--workers", "1", env={"PATH": path})
    try:
        with s.client() as c:
            for _ in range(4):  # more than the workers: none is held
                start_time = time.monotonic()
                error = assert_error(
                    c.post("/v1.0/removebg", files={"image_file": ("loop.eps", LOOPING_EPS)}),
                    400,
                )
                assert time.monotonic() - start_time < 10
                assert "Ghostscript" in error["title"], error
                assert_error(c.post("/api/remove", content=b"%PDF-1.4\n%\xe2\xe3\n"), 400)
            assert c.post("/api/remove", content=CHELSEA.read_bytes()).status_code == 200
    finally:
        stop(s)
    assert not marker.exists()
