"""One image and many: the pipeline (pipeline), planning a batch's outputs (plan), the
pipelined batch (batch), how a batch is reported (batch_report) and the pixels in flight (budget).
"""

__all__ = ["batch", "batch_report", "budget", "clicking", "pipeline", "plan"]
