"""The user's corrections to a mask as data: the tools (tools), the edits and their
replay (edit) and the Add/Remove clicks (regions).
"""

__all__ = ["edit", "learned", "regions", "tools"]
