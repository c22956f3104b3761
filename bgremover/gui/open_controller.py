"""Opening images: files, folders, Open Recent, the clipboard and drops on the window.

Each image opened is queued and processed with the current settings; the first one
added is selected and shown. A file opened by name is remembered in Open Recent once
its cutout is made (one that fails is not offered again); a folder at once.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QMimeData, QObject
from PySide6.QtGui import QGuiApplication, QImage
from PySide6.QtWidgets import QFileDialog, QMenu

from ..files.imaging import IMAGE_EXTENSIONS, LoadedImage, from_array, walk_images
from .entry import QueueEntry, Status
from .host import Host
from .imageconv import qimage_to_rgba
from .settings import forget_recent, recent_paths, remember_recent


class OpenController(QObject):
    """Opening images for the window; owns the Open Recent menu (:attr:`recent_menu`)."""

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        #: The image shown was selected by adding it, not by the user's click: if it
        #: fails, the selection moves on to an image that can be shown.
        self.auto_selected = False
        self._paste_count = 0
        #: Files opened by name, by queue item: remembered in Open Recent once their
        #: cutout is made (a file that fails is not offered again).
        self._recent_files: dict[int, str] = {}
        self.recent_menu = QMenu("Open &Recent", host.window())
        self._fill_recent_menu(recent_paths())
        host.jobs.changed.connect(self._on_entry_changed)

    def _on_entry_changed(self, entry: QueueEntry) -> None:
        """Open Recent learns how a file opened by name went; an image added that fails
        gives the selection to the next one that can be shown."""
        if entry.status in (Status.DONE, Status.FAILED) and entry.item_id in self._recent_files:
            path = self._recent_files.pop(entry.item_id)
            done = entry.status is Status.DONE
            self._fill_recent_menu(remember_recent([path]) if done else forget_recent(path))
        if (
            entry is self.host.current_entry()
            and entry.status is Status.FAILED
            and self.auto_selected
        ):
            following = self._next_showable(entry)
            if following is not None:
                self.select_added(following)  # a photo that can be shown, not a failure

    def add_paths(self, paths: list[Path]) -> int:
        """Queue image files; folders are walked. The first image added is selected and
        shown. Returns how many images were added."""
        added: list[QueueEntry] = []
        folders: list[str] = []
        for path in paths:
            if path.is_dir():
                found = [self._enqueue(f, f.name) for f in walk_images(path)]
                if found:
                    folders.append(str(path.absolute()))
                added.extend(found)
            else:  # a file named explicitly is tried even if its name is odd
                entry = self._enqueue(path, path.name)
                self._recent_files[entry.item_id] = str(path.absolute())
                added.append(entry)
        if folders:
            self._fill_recent_menu(remember_recent(folders))
        if added:
            self.select_added(added[0])
            self.host.statusBar().showMessage(
                f"Added {len(added)} image{'s' if len(added) > 1 else ''}.", 4000
            )
        return len(added)

    def _enqueue(self, source: Path | LoadedImage, name: str) -> QueueEntry:
        entry = self.host.queue.add(source, name)
        self.host.jobs.process(entry)
        self.host.update_enabled()
        return entry

    def select_added(self, entry: QueueEntry) -> None:
        """Select ``entry`` as the image just added: if it fails, the selection moves on
        to one that can be shown (not so once the user selects an image)."""
        self.host.select(entry)
        self.auto_selected = True

    def _fill_recent_menu(self, paths: list[str]) -> None:
        """Open Recent lists ``paths`` (the settings' list, newest first)."""
        menu = self.recent_menu
        menu.clear()
        for path in paths:
            shown = path if len(path) <= 70 else f"{path[:30]}…{path[-39:]}"
            a = menu.addAction(shown.replace("&", "&&"))
            a.setStatusTip(path)
            a.triggered.connect(lambda _=False, p=path: self.open_recent(p))
        if paths:
            menu.addSeparator()
            menu.addAction("Clear Menu", lambda: self._fill_recent_menu(forget_recent()))
        else:
            menu.addAction("No recent files").setEnabled(False)

    def open_recent(self, path: str) -> None:
        """Open a file or folder from Open Recent; one no longer there leaves the list."""
        if not Path(path).exists():
            self._fill_recent_menu(forget_recent(path))
            self.host.statusBar().showMessage(
                f"{path} is no longer there; removed from the list.", 8000
            )
            return
        if not self.add_paths([Path(path)]) and Path(path).is_dir():
            self.host.statusBar().showMessage(f"No images found in {path}.", 6000)

    def _next_paste_name(self, what: str) -> str:
        self._paste_count += 1
        return f"{what} image {self._paste_count}"

    def open_files(self) -> None:
        """File ▸ Open Images…"""
        patterns = " ".join(f"*{e}" for e in sorted(IMAGE_EXTENSIONS))
        files, _ = QFileDialog.getOpenFileNames(
            self.host.window(),
            "Open images",
            self.host.settings.last_folder,
            f"Images ({patterns});;All files (*)",
        )
        if files:
            self.host.apply_settings(last_folder=str(Path(files[0]).parent))
            self.add_paths([Path(f) for f in files])

    def open_folder(self) -> None:
        """File ▸ Open Folder…: every image in it and its subfolders."""
        folder = QFileDialog.getExistingDirectory(
            self.host.window(), "Open a folder of images", self.host.settings.last_folder
        )
        if folder:
            self.host.apply_settings(last_folder=folder)
            if not self.add_paths([Path(folder)]):
                self.host.statusBar().showMessage(f"No images found in {folder}.", 6000)

    def paste(self) -> None:
        """File ▸ Paste Image: files copied in a file manager, or an image's pixels."""
        data = QGuiApplication.clipboard().mimeData()
        if data is not None and data.hasUrls() and any(u.isLocalFile() for u in data.urls()):
            self.add_paths([Path(u.toLocalFile()) for u in data.urls() if u.isLocalFile()])
            return
        image = QGuiApplication.clipboard().image()
        if image.isNull():
            self.host.statusBar().showMessage("The clipboard holds no image.", 4000)
            return
        name = self._next_paste_name("Pasted")
        self.select_added(self._enqueue(from_array(qimage_to_rgba(image), name), name))

    def drop(self, data: QMimeData) -> None:
        """Files or an image dropped on the window."""
        paths = [Path(u.toLocalFile()) for u in data.urls() if u.isLocalFile()]
        if paths:
            self.add_paths(paths)
        elif data.hasImage():
            name = self._next_paste_name("Dropped")
            entry = self._enqueue(from_array(qimage_to_rgba(QImage(data.imageData())), name), name)
            self.select_added(entry)

    def _next_showable(self, entry: QueueEntry) -> QueueEntry | None:
        """The first image after ``entry`` that has not failed."""
        entries = self.host.queue.entries()
        later = entries[entries.index(entry) + 1 :]
        return next((e for e in later if e.status is not Status.FAILED), None)
