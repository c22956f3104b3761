"""Reading images and writing files safely: decoders by allow-list (imaging), the
streaming PNG writer (png), atomic writes and output claims (atomic).
"""

__all__ = ["atomic", "imaging", "png"]
