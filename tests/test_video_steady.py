"""The steady rule on frames made here: a still scene stays exactly still, noise at an edge
is damped, a moving subject is followed rather than smeared, and a cut starts again."""

from __future__ import annotations

import numpy as np

from bgremover.video.steady import Steady

H, W = 120, 160


def scene(x: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A textured ground with a bright box at column ``x``, and the box's exact alpha."""
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 90, (H, W, 3), dtype=np.uint8)
    rgb = np.repeat(np.repeat(rgb[::8, ::8], 8, axis=0), 8, axis=1)[:H, :W].copy()
    alpha = np.zeros((H, W), np.uint8)
    rgb[30:90, x : x + 40] = (240, 220, 60)
    alpha[30:90, x : x + 40] = 255
    return rgb, alpha


def test_a_still_scene_gives_the_same_mask_on_every_frame():
    rgb, alpha = scene(50)
    steady = Steady()
    outs = [steady(rgb, alpha) for _ in range(6)]
    assert all(np.array_equal(out, alpha) for out in outs)
    assert steady.resets == 1


def test_noise_at_a_still_edge_is_damped():
    rgb, alpha = scene(50)
    rng = np.random.default_rng(1)
    steady = Steady()
    noisy, steadied = [], []
    for _ in range(20):
        shaken = alpha.astype(int)
        band = (slice(30, 90), slice(88, 92))  # the box's right edge flickers
        shaken[band] = rng.integers(60, 200, shaken[band].shape)
        noisy.append(shaken.astype(np.uint8))
        steadied.append(steady(rgb, noisy[-1]).astype(int))
    change_in = np.mean([np.abs(np.diff([n.astype(int) for n in noisy], axis=0)).mean()])
    change_out = np.mean([np.abs(np.diff(steadied, axis=0)).mean()])
    assert change_out < 0.6 * change_in


def test_a_moving_subject_is_followed_not_smeared():
    steady = Steady()
    errors = []
    for i in range(10):
        rgb, alpha = scene(20 + 6 * i)
        out = steady(rgb, alpha)
        errors.append(np.abs(out.astype(int) - alpha).mean())
    assert max(errors) < 3.0  # of 255: the old place is not kept


def test_a_cut_starts_again_from_the_new_frames_mask():
    steady = Steady()
    first, alpha_first = scene(20, seed=0)
    for _ in range(3):
        steady(first, alpha_first)
    other, alpha_other = scene(100, seed=5)
    other = 255 - other  # another shot: nothing of the last frame explains it
    assert np.array_equal(steady(other, alpha_other), alpha_other)
    assert steady.resets == 2
