"""Pure numpy/OpenCV work on alpha mattes: edge refinement (refine), the subject's box
(subject) and agreement and ground-truth scores (metrics). No model, no files.
"""

__all__ = ["combine", "metrics", "refine", "subject"]
