"""Two sides on one image and what int8 costs: comparison, its pictures (report) and
the ``compare`` and ``bench`` commands (evaluation).
"""

__all__ = ["comparison", "evaluation", "report", "spots"]
