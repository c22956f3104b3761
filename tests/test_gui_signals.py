"""Guard against a Qt binding that mis-counts references on signal delivery.

PySide6 6.12.0 released None once too often on every signal delivered to a
Python slot; on Python < 3.12 (where None is not immortal) the app aborted
after a few thousand signals. The app delivers that many in a long batch.
"""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import os, sys
os.environ["QT_QPA_PLATFORM"] = "offscreen"
from PySide6.QtCore import QCoreApplication, QTimer
app = QCoreApplication([])
count = [0]
def tick():
    count[0] += 1
    if count[0] >= 50000:
        app.quit()
timer = QTimer()
timer.setInterval(0)
timer.timeout.connect(tick)
timer.start()
before = sys.getrefcount(None)
app.exec()
print(count[0], sys.getrefcount(None) - before)
"""


def test_many_signals_do_not_corrupt_refcounts() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    delivered, drift = (int(x) for x in proc.stdout.split())
    assert delivered == 50000
    assert abs(drift) < 1000, f"None's reference count drifted by {drift}"
