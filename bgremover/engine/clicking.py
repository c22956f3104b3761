"""The click model for touch-up: obtained through the model store, loaded once, bound to
a photo by its embedding.

:class:`ClickModel` obtains a :class:`~bgremover.network.prompt_models.PromptModelSpec`'s two
files through the store (verified, atomic, cancellable through ``progress``) and loads
its sessions; :meth:`ClickModel.encode` makes a photo's embedding (the slow step, once
per photo) and :meth:`ClickModel.prompter` binds the decoder to it as the
:class:`~bgremover.touchup.learned.Prompter` the touch-up tools call per click.
:func:`shared_click_model` keeps one per model and provider choice for the process, so
replaying edits on many photos loads it once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..network.chunked import ProgressCallback
from ..network.prompt import Embedding, PromptModel
from ..network.prompt_models import DEFAULT_PROMPT_MODEL, resolve_prompt_spec
from ..network.session import resolve_providers
from ..network.store import ModelStore
from ..touchup.learned import Prompter

__all__ = ["ClickModel", "shared_click_model"]


class ClickModel:
    """A click model ready to run: its files obtained and its sessions loaded."""

    def __init__(
        self,
        name: str = DEFAULT_PROMPT_MODEL,
        store: ModelStore | None = None,
        providers: str | Sequence[str] = "cpu",
        threads: int = 0,
        progress: ProgressCallback | None = None,
    ) -> None:
        self.spec = resolve_prompt_spec(name)
        self.store = store or ModelStore()
        encoder, decoder = self.store.ensure_prompt(self.spec, progress)
        self._model = PromptModel(
            self.spec, encoder, decoder, resolve_providers(providers), threads
        )

    @property
    def name(self) -> str:
        return self.spec.name

    def encode(self, rgb: np.ndarray) -> Embedding:
        """The photo's embedding (a second or more on a CPU)."""
        return self._model.encode(rgb)

    def prompter(self, embedding: Embedding) -> Prompter:
        """The decoder bound to one photo's embedding, as the touch-up tools call it."""
        model = self._model

        def prompt(
            points: Sequence[tuple[float, float, int]],
            box: tuple[float, float, float, float] | None = None,
        ) -> np.ndarray:
            logits, _ = model.decode(embedding, points, box)
            return logits

        return prompt

    def prompter_for(self, rgb: np.ndarray) -> Prompter:
        """:meth:`prompter` for a photo not encoded yet."""
        return self.prompter(self.encode(rgb))


@functools.lru_cache(maxsize=2)
def shared_click_model(
    name: str = DEFAULT_PROMPT_MODEL, providers: str = "cpu", threads: int = 0
) -> ClickModel:
    """One :class:`ClickModel` per (name, providers, threads) for the process."""
    return ClickModel(name, providers=providers, threads=threads)
