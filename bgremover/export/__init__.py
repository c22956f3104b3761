"""What the user saves: the export options (options), composing a cutout on its
background, crop and canvas (compose), the output formats (output) and presets.
"""

__all__ = ["compose", "options", "output", "presets"]
