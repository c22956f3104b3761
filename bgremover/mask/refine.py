"""Cheap alpha-matte refinement for a coarse segmentation mask (numpy + OpenCV only).

The u2netp mask is predicted at 320x320 and stretched to the photo, so its
transition from background to foreground is a smooth ramp a few (320-grid)
pixels wide that ignores the image: hair, fur and thin structure are smeared,
and large areas that should be exactly 0 or 1 sit at 0.97 or 0.02.

:func:`refine_alpha` fixes this with a learning-free local colour model:

1. Trimap from the mask alone: ``fg`` where mask >= ``hi``, ``bg`` where
   mask <= ``lo``, the rest is the *unknown* band (the mask's own ramp).
   Confident pixels are snapped to exactly 1 / 0.
2. Colour samples: the confident fg and bg regions are eroded by a disk whose
   radius scales with the image (``erode`` x long side) so that mixed pixels
   at the edge are not taken as pure samples.
3. For every pixel the local mean foreground colour F and background colour B
   are estimated by a normalised convolution over those samples, done
   coarse-to-fine on an image pyramid (pixels far from any sample get the
   colour of the nearest coarser level), at a capped working resolution.
4. In the unknown band the colour-line alpha is the projection of the pixel
   on the F-B segment, alpha_c = clip((I-B).(F-B) / |F-B|^2, 0, 1); it is
   trusted in proportion to how separable the colours are,
   c = |F-B|^2 / (|F-B|^2 + sigma), and blended with the network's value:
   alpha = c * alpha_c + (1 - c) * mask.
5. Only where the network's own uncertainty is an outline's: c is also scaled by
   the trust of :func:`_ramp_trust`, 1 where the network's ramp is narrower than
   the band refinement re-estimates and 0 where it is twice as wide (a broad
   uncertainty, where colour resemblance would make blotches and bites).
6. Only where the colour line explains the pixel: c is also scaled by
   exp(-r^2 / (``residual`` |F-B|^2)), r the distance of the pixel's colour from
   the F-B segment at alpha_c (the confidence of robust matting, Wang and Cohen
   2007). The dark grey of a wall's shadow beside red jeans lies far off the
   line from the jeans' red to the lit wall's grey: it is no mix of the two,
   and keeps the network's value.
7. Only near the outline: c is also scaled by the ring of :func:`_outline_band`,
   1 near the mask's 0.5 contour and fading to 0 around ``band`` from it, so that
   where the colour model and the network disagree the ring's end draws no line.

Large images: the pyramid work (F, B) is done at ``work_max`` long side; the
final per-pixel projection is done at full resolution but only on the unknown
band's pixels (F, B bilinearly sampled there), so hair detail of the full-size
photo is kept and the cost is dominated by a few full-size threshold passes.

:func:`estimate_foreground` recovers the foreground colour in semi-transparent
pixels (colour decontamination) by a two-pass blur-fusion estimate, so that a
cutout placed on a new background has no halo of the old one.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

__all__ = ["estimate_foreground", "refine_alpha"]


def _disk(radius: float) -> np.ndarray:
    r = max(1, round(radius))
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))


def _fill_mean(img: np.ndarray, weight: np.ndarray, levels: int = 6) -> np.ndarray:
    """Per-pixel weighted local mean of ``img`` over ``weight`` (0/1), coarse to fine.

    Level l of the pyramid averages over roughly 2^l pixels; at each level a
    pixel keeps its local mean where enough samples are near (weight density
    >= 0.5) and blends towards the coarser estimate where they are not, so the
    result is defined everywhere (far from samples it is the nearest samples'
    colour, smoothly extrapolated).
    """
    num = [img * weight[..., None]]
    den = [weight]
    for _ in range(levels):
        if min(den[-1].shape) < 4:
            break
        num.append(cv2.pyrDown(num[-1]))
        den.append(cv2.pyrDown(den[-1]))
    est = num[-1].sum((0, 1)) / max(float(den[-1].sum()), 1e-6)
    est = np.broadcast_to(est, num[-1].shape).astype(np.float32)
    for lv in range(len(num) - 1, -1, -1):
        if lv < len(num) - 1:
            h, w = den[lv].shape
            est = cv2.pyrUp(est, dstsize=(w, h))
        local = num[lv] / np.maximum(den[lv], 1e-6)[..., None]
        t = np.minimum(den[lv] * 2.0, 1.0)[..., None]  # den >= 0
        # est = t * local + (1 - t) * est, in place
        local -= est
        local *= t
        local += est
        est = local
    return est


def _sample(img: np.ndarray, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """Bilinear samples of img (h, w, 3) at float coordinates -> (N, 3)."""
    n = xs.size
    cols = 4096
    rows = -(-n // cols)
    mx = np.zeros(rows * cols, np.float32)
    my = np.zeros(rows * cols, np.float32)
    mx[:n] = xs
    my[:n] = ys
    out = cv2.remap(
        img,
        mx.reshape(rows, cols),
        my.reshape(rows, cols),
        cv2.INTER_LINEAR,
        borderMode=cv2.BORDER_REPLICATE,
    )
    return out.reshape(-1, img.shape[2])[:n]


#: Where the ring of re-estimated pixels ends, as fractions of ``band``: the colour
#: model's weight is 1 up to the first and fades to 0 at the second. A hard edge would
#: show where the network's value and the colour model's disagree (a stepped line across
#: a dark shoulder or a wall, the steps of the small copy the ring is measured on); the
#: fade is centred on ``band``, so the ring holds as many pixels as a hard one would.
RING_FADE = (0.75, 1.25)


def _outline_band(mask: np.ndarray, band: float) -> np.ndarray:
    """How much the colour model may re-estimate each pixel by its distance to the mask's
    0.5 contour: 1 within ``RING_FADE[0] * band`` x long side, fading to 0 at
    ``RING_FADE[1] * band`` (float32, on a copy of at most 1024 px long side).

    :func:`refine_alpha` samples it back to full size bilinearly, so the fade has no
    steps at the small copy's pixels.
    """
    height, width = mask.shape
    s = min(1.0, 1024 / max(height, width))
    small = (
        mask
        if s == 1.0
        else cv2.resize(
            mask,
            (max(1, round(width * s)), max(1, round(height * s))),
            interpolation=cv2.INTER_AREA,
        )
    )
    inside = (small >= 128).astype(np.uint8)
    radius = band * max(small.shape)
    # Distance to the other side of the contour, from both sides.
    d_in = cv2.distanceTransform(inside, cv2.DIST_L2, cv2.DIST_MASK_5)
    d_out = cv2.distanceTransform(1 - inside, cv2.DIST_L2, cv2.DIST_MASK_5)
    start, end = RING_FADE[0] * radius, max(RING_FADE[1] * radius, 1.0)
    # Capped: with no pixel on one side, the distances there are the float maximum.
    dist = np.minimum(np.where(inside.astype(bool), d_in, d_out), end)
    return np.clip((end - dist) / max(end - start, 1e-6), 0.0, 1.0).astype(np.float32)


#: Long side of the copy of the mask on which its ramp is measured: about the network's
#: own output grid (u2netp's is 320), finer than which the mask has no detail.
RAMP_GRID = 320


def _ramp_trust(mask: np.ndarray, band: float) -> np.ndarray:
    """How far the colour model may be trusted, per pixel of a small copy of the mask
    (float32, 0..1, ``RAMP_GRID`` long side): by the width of the network's own ramp there.

    The ramp's width at a pixel is its distance to the mask's sure foreground (>= 0.8)
    plus its distance to its sure background (<= 0.2). An outline, hair included, is a
    ramp narrower than the band refinement re-estimates (``2 * band`` of the long side
    across); a ramp wider than that is not an outline's but a broad uncertainty (a
    blanket half taken for the cat, a painting's sky), where a colour resemblance would
    turn the network's haze into hard blotches and bites. So the trust is 1 up to the
    band's width and fades to 0 at twice it.
    """
    height, width = mask.shape
    s = min(1.0, RAMP_GRID / max(height, width))
    size = (max(1, round(width * s)), max(1, round(height * s)))
    small = mask if s == 1.0 else cv2.resize(mask, size, interpolation=cv2.INTER_AREA)
    far = np.float32(4 * max(small.shape))  # no sure pixel of that side at all
    widths = np.zeros(small.shape, np.float32)
    for sure in (small >= 204, small <= 51):
        if sure.any():
            widths += cv2.distanceTransform((~sure).astype(np.uint8), cv2.DIST_L2, 5)
        else:
            widths += far
    full = 2 * band * max(small.shape)  # the band's width across, in these pixels
    return np.clip((2 * full - widths) / max(full, 1e-6), 0.0, 1.0).astype(np.float32)


def refine_alpha(
    rgb: np.ndarray,
    mask: np.ndarray,
    *,
    hi: float = 0.95,
    lo: float = 0.01,
    erode: float = 0.0025,
    sigma: float = 0.01,
    band: float = 0.02,
    residual: float | None = 0.15,
    work_max: int = 384,
    levels: int = 6,
    window: tuple[int, int, int, int] | None = None,
) -> np.ndarray:
    """Refine a soft segmentation mask into an alpha matte.

    Args:
        rgb: uint8 (H, W, 3) RGB image.
        mask: uint8 (H, W) predicted mask (0..255) at the image size.
        hi, lo: mask levels (0..1) above / below which a pixel is confident
            foreground / background (snapped to 1 / 0); the rest is refined.
        erode: radius of the erosion of the confident regions before taking
            colour samples, as a fraction of the long side (0.0025 = 2 px at 800).
        sigma: colour separability (squared RGB distance, 0..3 units) at which
            the colour model gets half the weight; lower trusts colour more.
        band: half-width of the band around the mask's 0.5 outline that is
            re-estimated, as a fraction of the long side (its edge fades over
            ``RING_FADE``); 0 re-estimates every uncertain pixel.
        residual: how far off the F-B colour line a pixel may be, as a share of
            |F-B|^2, before the colour model loses weight there (None: no such
            check). Chosen by leave-one-out cross-validation over the matting set
            and the portraits (``tests/benchmarks/refine_cv.py``).
        work_max: long side of the working resolution for the colour pyramid.
        levels: pyramid depth for the colour fill (reach ~ 2^levels working px).
        window: (x0, y0, x1, y1): refine only these pixels and return them (a touch-up
            refines what a click changed). The colour model and the bands are still the
            whole photo's, so each pixel is what refining the whole photo gives it.

    Returns:
        uint8 (H, W) alpha, or the window's (y1 - y0, x1 - x0).

    Full-size work is done in strips of rows, so beyond the output the memory
    used is a few megabytes whatever the image size (12-megapixel photos run
    several at once in a batch).
    """
    rgb = np.asarray(rgb)
    mask = np.asarray(mask)
    if rgb.ndim != 3 or rgb.shape[2] != 3 or mask.shape != rgb.shape[:2]:
        raise ValueError("rgb must be (H, W, 3) and mask (H, W) of the same size")
    height, width = mask.shape
    wx0, wy0, wx1, wy1 = window or (0, 0, width, height)
    if not (0 <= wx0 <= wx1 <= width and 0 <= wy0 <= wy1 <= height):
        raise ValueError(f"window {window} is not inside the {width} x {height} photo")
    hi8, lo8 = int(np.ceil(hi * 255)), int(np.floor(lo * 255))
    has_fg, has_bg = int(mask.max()) >= hi8, int(mask.min()) <= lo8

    ring = _outline_band(mask, band) if band > 0 else None
    if ring is not None:
        # The pixels the ring reaches: its non-zero part and one small pixel more, so that
        # at its rim the bilinear samples of its weight decide, not the nearest pixel.
        reach = cv2.dilate((ring > 0).astype(np.uint8), np.ones((3, 3), np.uint8)) > 0
        ring_cols = (np.arange(wx0, wx1) * ring.shape[1]) // width
    fg_w = bg_w = None
    weights: list[np.ndarray] = []
    s = 1.0
    if has_fg and has_bg:
        fg_w, bg_w, s = _colour_model(rgb, mask, hi8, lo8, erode, work_max, levels)
        if ring is not None:
            weights = [ring, _ramp_trust(mask, band)]

    out = np.empty((wy1 - wy0, wx1 - wx0), mask.dtype)
    strip = max(1, (1 << 18) // max(1, wx1 - wx0))
    for y0 in range(wy0, wy1, strip):
        y1 = min(wy1, y0 + strip)
        m = mask[y0:y1, wx0:wx1]
        fgk = m >= hi8
        unk = ~(fgk | (m <= lo8))
        o = out[y0 - wy0 : y1 - wy0]
        np.multiply(fgk, np.uint8(255), out=o, casting="unsafe")  # trimap: 255 / 0
        if ring is not None:
            # Only the outline is re-estimated. Uncertain pixels far from it (a badge
            # inside a hat, faint stars in a flag behind a person) keep the network's
            # value: there the colour model would trade the network's judgement for a
            # colour resemblance.
            ring_rows = (np.arange(y0, y1) * ring.shape[0]) // height
            near = reach[ring_rows][:, ring_cols]
            keep = unk & ~near
            o[keep] = m[keep]
            unk &= near
        if fg_w is None or bg_w is None:
            o[unk] = m[unk]  # no confident foreground or background to take colours from
            continue
        ys, xs = np.nonzero(unk)
        if ys.size:
            o[ys, xs] = _colour_line(
                rgb, mask, fg_w, bg_w, ys + y0, xs + wx0, s, sigma, residual, weights
            )
    return out


def _colour_model(
    rgb: np.ndarray,
    mask: np.ndarray,
    hi8: int,
    lo8: int,
    erode: float,
    work_max: int,
    levels: int,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Local foreground and background colours at the working resolution, and its scale."""
    height, width = mask.shape
    s = min(1.0, work_max / max(height, width))
    if s < 1.0:
        w, h = max(1, round(width * s)), max(1, round(height * s))
        img_w = cv2.resize(rgb, (w, h), interpolation=cv2.INTER_AREA)
        m_w = cv2.resize(mask, (w, h), interpolation=cv2.INTER_AREA)
    else:
        img_w, m_w = rgb, mask
    img_w = img_w.astype(np.float32) * (1.0 / 255.0)
    k = _disk(erode * max(img_w.shape[:2]))
    fg_s = cv2.erode((m_w >= hi8).astype(np.uint8), k).astype(np.float32)
    bg_s = cv2.erode((m_w <= lo8).astype(np.uint8), k).astype(np.float32)
    if fg_s.sum() == 0:
        fg_s = (m_w >= hi8).astype(np.float32)
    if bg_s.sum() == 0:
        bg_s = (m_w <= lo8).astype(np.float32)
    return _fill_mean(img_w, fg_s, levels), _fill_mean(img_w, bg_s, levels), s


def _colour_line(
    rgb: np.ndarray,
    mask: np.ndarray,
    fg_w: np.ndarray,
    bg_w: np.ndarray,
    ys: np.ndarray,
    xs: np.ndarray,
    s: float,
    sigma: float,
    residual: float | None = None,
    weights: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """Refined uint8 alpha at pixels (ys, xs), from the working-resolution F and B; the
    colour model's weight is also scaled by each of ``weights``, maps of the photo at any
    smaller size (the ring of :func:`_outline_band`, the trust of :func:`_ramp_trust`)."""
    height, width = mask.shape
    if s < 1.0:
        sx = (xs + 0.5) * (fg_w.shape[1] / width) - 0.5
        sy = (ys + 0.5) * (fg_w.shape[0] / height) - 0.5
        fg = _sample(fg_w, sx, sy)
        bg = _sample(bg_w, sx, sy)
    else:
        fg = fg_w[ys, xs]
        bg = bg_w[ys, xs]
    pix = rgb[ys, xs].astype(np.float32) * (1.0 / 255.0)
    m = mask[ys, xs].astype(np.float32) * (1.0 / 255.0)
    d = fg - bg
    dd = np.einsum("ij,ij->i", d, d)
    ac = np.clip(np.einsum("ij,ij->i", pix - bg, d) / (dd + 1e-6), 0.0, 1.0)
    c = dd / (dd + sigma)
    if residual is not None:  # a colour far off the F-B line is no mix of F and B
        off = pix - bg - ac[:, None] * d
        c *= np.exp(-np.einsum("ij,ij->i", off, off) / (residual * dd + 1e-6))
    for weight in weights:  # bilinearly, so a fade has no steps at the map's pixels
        tx = (xs + 0.5) * (weight.shape[1] / width) - 0.5
        ty = (ys + 0.5) * (weight.shape[0] / height) - 0.5
        c *= _sample(weight[..., None], tx, ty)[:, 0]
    a = c * ac + (1.0 - c) * m
    return np.clip(a * 255.0 + 0.5, 0, 255).astype(np.uint8)


def _blur(x: np.ndarray, r: int) -> np.ndarray:
    return cv2.blur(x, (2 * r + 1, 2 * r + 1), borderType=cv2.BORDER_REFLECT)


def _blur_fusion(
    img: np.ndarray, fg: np.ndarray, bg: np.ndarray, a: np.ndarray, r: int
) -> tuple[np.ndarray, np.ndarray]:
    a3 = a[..., None]
    wf = _blur(a, r)[..., None]
    wb = _blur(1.0 - a, r)[..., None]
    fg_mean = _blur(fg * a3, r) / (wf + 1e-5)
    bg_mean = _blur(bg * (1.0 - a3), r) / (wb + 1e-5)
    fg = fg_mean + a3 * (img - a3 * fg_mean - (1.0 - a3) * bg_mean)
    return np.clip(fg, 0.0, 1.0), np.clip(bg_mean, 0.0, 1.0)


def estimate_foreground(
    rgb: np.ndarray,
    alpha: np.ndarray,
    *,
    radii: tuple[float, float] = (0.09, 0.006),
    work_max: int = 2048,
) -> np.ndarray:
    """Foreground colour (decontamination) for compositing the cutout on a new background.

    Blur-fusion estimate, two passes (a wide one then a narrow one): the
    foreground colour of a pixel is the alpha-weighted local mean of the
    foreground, corrected by the part of the observed colour that the
    compositing equation I = a F + (1 - a) B leaves unexplained; the background
    is the (1 - alpha)-weighted local mean. Radii are fractions of the long side.
    Opaque pixels (alpha = 255) keep their colour. For large images the
    estimate is done at ``work_max`` and applied as a correction to the
    full-size colours.

    Returns uint8 (H, W, 3).
    """
    rgb = np.asarray(rgb)
    alpha = np.asarray(alpha)
    height, width = alpha.shape
    s = min(1.0, work_max / max(height, width))
    if s < 1.0:
        size = (max(1, round(width * s)), max(1, round(height * s)))
        img_w = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
        a_w = cv2.resize(alpha, size, interpolation=cv2.INTER_AREA)
    else:
        img_w, a_w = rgb, alpha
    img = img_w.astype(np.float32) * (1.0 / 255.0)
    a = a_w.astype(np.float32) * (1.0 / 255.0)
    long_side = max(a.shape)
    fg, bg = img, img
    for rf in radii:
        fg, bg = _blur_fusion(img, fg, bg, a, max(1, round(rf * long_side)))
    if s < 1.0:
        corr = cv2.resize(fg - img, (width, height), interpolation=cv2.INTER_LINEAR)
        fg = np.clip(rgb.astype(np.float32) * (1.0 / 255.0) + corr, 0.0, 1.0)
    out = (fg * 255.0 + 0.5).astype(np.uint8)
    opaque = alpha >= 255
    out[opaque] = rgb[opaque]
    return out
