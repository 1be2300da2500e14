"""Start the studio: the QApplication (name, icon, style), the settings, and the main window."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from qtapp.resources import resource_path
from qtapp.settings import Settings
from qtapp.sound_device import load_sound_module

ICON_PATH = resource_path("orator.svg")


def create_application(argv: list[str] | None = None) -> QApplication:
    """The one QApplication of the process (reused if it already exists, as under pytest-qt)."""
    app = QApplication.instance() or QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("Orator")
    app.setOrganizationName("Orator")
    app.setApplicationDisplayName("Orator")
    app.setStyle("Fusion")
    if ICON_PATH.exists():
        app.setWindowIcon(QIcon(str(ICON_PATH)))
    return app




def run_gui(open_file: str | None = None, precision: str | None = None) -> int:
    """Show the first-run dialog while no reading model is here, then the main window (optionally
    opening ``open_file``; models on the processor at ``precision`` for this run, default the Settings' choice),
    and run the event loop."""
    from qtapp.collector import GuiThreadCollector
    from qtapp.dialogs.first_run import FirstRunDialog, needs_first_run
    from qtapp.main_window import MainWindow

    app = create_application()
    GuiThreadCollector(app)  # a child of the application, it lives as long as it does
    settings = Settings.load()
    Settings.precision_override = precision
    if needs_first_run(settings):
        FirstRunDialog(settings).exec()
    window = MainWindow(settings, sd_module=load_sound_module())
    window.show()
    if open_file:
        window.open_path(Path(open_file))
    return app.exec()
