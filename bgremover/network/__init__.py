"""The ONNX models: the registries, sources and store (models, prompt_models, sources, store,
families, chunked), the tensor transforms, ONNX Runtime sessions (session) and int8
(quantize, guard, graph_tools, u2net_graph).
"""

__all__ = [
    "chunked",
    "families",
    "graph_tools",
    "guard",
    "measured",
    "models",
    "prompt",
    "quantize",
    "session",
    "transforms",
    "u2net_graph",
]
