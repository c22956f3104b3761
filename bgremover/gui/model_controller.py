"""The model setting: a model file tried before it is used, a model that cannot be used
undone, and what the app says when a model is prepared or fails.

A model file becomes the setting only once it loads (on the engine thread); one
whose signature fits several families makes the app ask which it is. A model file
that fails later is never left as the setting (every later launch would fail every
image): the default model is set instead, and the user is told once however many
images waited for it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QFileDialog

from ..engine.pipeline import EngineConfig
from ..errors import AmbiguousFamilyError, ModelError
from ..network.models import DEFAULT_MODEL, REGISTRY
from ..network.session import SessionInfo
from .compare import ComparisonView
from .dialogs import ask_family, show_error
from .host import Host
from .jobs import Job, JobEnd, JobState
from .settings import save_settings
from .settings_panel import SettingsPanel


class ModelController(QObject):
    """The model setting for the window; ``panel`` and ``compare_view`` list the models."""

    def __init__(self, host: Host, panel: SettingsPanel, compare_view: ComparisonView) -> None:
        super().__init__(host.window())
        self.host = host
        self.panel = panel
        self.compare_view = compare_view
        host.jobs.failed.connect(self.report_failure)
        host.jobs.prepared.connect(self._on_model_prepared)

    def forget_missing_model_file(self) -> None:
        """A model file remembered from an earlier run that is gone: back to the default."""
        model = self.host.settings.model
        if model in REGISTRY or Path(model).is_file():
            return
        # At start-up, before anything was made with it: no work to bring up to date.
        self.host.settings = replace(self.host.settings, model=DEFAULT_MODEL)
        save_settings(self.host.settings)
        self.panel.forget_model_file(model)
        self.panel.show_model(DEFAULT_MODEL)
        self.host.statusBar().showMessage(
            f"The model file {model} is no longer there; using {DEFAULT_MODEL}.", 10000
        )

    def choose_model_file(self) -> None:
        """File ▸ Use a Model File…"""
        path, _ = QFileDialog.getOpenFileName(
            self.host.window(), "Choose an ONNX model", "", "ONNX models (*.onnx)"
        )
        if path:
            self.use_model_file(Path(path))

    def use_model_file(self, path: Path, family: str = "") -> Job[SessionInfo]:
        """Try ``path`` as a model on the engine thread; it becomes the setting only if it
        loads. A file whose signature fits several families makes the app ask which one
        it is (``family``), then try again."""
        config = replace(
            self.host.settings.engine(), model=str(path), precision="fp32", family=family
        )

        def ended(end: JobEnd[SessionInfo]) -> None:
            if end.ok:
                self.panel.show_model(str(path))
                self.host.apply_settings(model=str(path), family=family)
                self.host.statusBar().showMessage(f"Using the model file {path.name}.", 6000)
            elif isinstance(end.error, AmbiguousFamilyError):
                chosen = ask_family(self.host.window(), path.name, end.error.candidates)
                if chosen:
                    self.use_model_file(path, chosen)
            elif end.state is JobState.FAILED:
                show_error(
                    self.host.window(),
                    "This file cannot be used as a model",
                    f"{end.message}\n\nThe model setting is unchanged.",
                    end.details,
                )

        return self.host.engine.submit(
            "check",
            lambda ctx: self.host.worker.check_model(ctx, config),
            tag=("check", None, config),
            on_end=ended,
            on_progress=self.host.jobs.report_progress,
        )

    def report_failure(self, end: JobEnd[Any]) -> None:
        """What the user must hear of beyond the queue (a bad image only shows there).

        A model that cannot be obtained or loaded: once, however many images waited for
        it. A bug: with its traceback behind Show Details.
        """
        technical = getattr(end.error, "technical", "")
        if not isinstance(end.error, ModelError):
            show_error(self.host.window(), "bgremover", end.message, end.details, technical)
            return
        config = end.tag[-1]
        message = end.message
        if config.model not in REGISTRY and self.host.settings.model == config.model:
            # A model file that does not load must not stay the setting: every later
            # launch would fail every image.
            self.host.apply_settings(model=DEFAULT_MODEL)
            self.panel.forget_model_file(config.model)
            self.panel.show_model(DEFAULT_MODEL)
            message += f"\n\nbgremover went back to the default model, {DEFAULT_MODEL}."
        show_error(
            self.host.window(), "The model could not be used", message, end.details, technical
        )

    def _refresh_model_labels(self) -> None:
        """A model was prepared (maybe downloaded): the model lists say it is cached."""
        self.panel.refresh_model_labels()
        self.compare_view.refresh_model_labels()

    def _on_model_prepared(self, config: EngineConfig) -> None:
        """A model is ready: the lists say it is cached, and the note of its download
        ("Obtaining … from …", of one of a combined model's files) gives way to the news
        instead of outliving it."""
        self._refresh_model_labels()
        spec = REGISTRY.get(config.model)
        files = spec.members if spec is not None and spec.members else (config.model,)
        shown = self.host.statusBar().currentMessage()
        if any(shown.startswith(f"Obtaining {name} from ") for name in files):
            self.host.statusBar().showMessage(f"The model {config.model} is ready.", 5000)
