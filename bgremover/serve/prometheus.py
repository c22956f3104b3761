"""The server's metrics in Prometheus' text format: requests by endpoint and status, a
latency histogram, queue depth, requests in flight, workers and resident memory."""

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..engine.budget import rss_bytes

if TYPE_CHECKING:
    from .pool import Engine

HISTOGRAM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


@dataclass
class Metrics:
    requests: dict[tuple[str, int], int] = field(default_factory=dict)
    buckets: dict[str, list[int]] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        with self.lock:
            key = (endpoint, status)
            self.requests[key] = self.requests.get(key, 0) + 1
            counts = self.buckets.setdefault(endpoint, [0] * len(HISTOGRAM_BUCKETS))
            for i, bound in enumerate(HISTOGRAM_BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            self.sums[endpoint] = self.sums.get(endpoint, 0.0) + seconds
            self.counts[endpoint] = self.counts.get(endpoint, 0) + 1

    def text(self, engine: "Engine") -> str:
        lines = [
            "# HELP bgremover_requests_total Requests answered, by endpoint and status.",
            "# TYPE bgremover_requests_total counter",
        ]
        with self.lock:
            for (endpoint, status), n in sorted(self.requests.items()):
                lines.append(
                    f'bgremover_requests_total{{endpoint="{endpoint}",status="{status}"}} {n}'
                )
            lines += [
                "# HELP bgremover_request_seconds Time from request to response.",
                "# TYPE bgremover_request_seconds histogram",
            ]
            name = "bgremover_request_seconds"
            for endpoint, counts in sorted(self.buckets.items()):
                label = f'endpoint="{endpoint}"'
                for bound, n in zip(HISTOGRAM_BUCKETS, counts, strict=True):
                    lines.append(f'{name}_bucket{{{label},le="{bound}"}} {n}')
                total = self.counts[endpoint]
                lines.append(f'{name}_bucket{{{label},le="+Inf"}} {total}')
                lines.append(f"{name}_sum{{{label}}} {self.sums[endpoint]:.6f}")
                lines.append(f"{name}_count{{{label}}} {total}")
            in_flight = self.in_flight
        lines += [
            "# HELP bgremover_queue_depth Admitted requests waiting for a worker.",
            "# TYPE bgremover_queue_depth gauge",
            f"bgremover_queue_depth {engine.queue_depth}",
            "# HELP bgremover_in_flight Requests being read, waiting or processed.",
            "# TYPE bgremover_in_flight gauge",
            f"bgremover_in_flight {in_flight}",
            "# HELP bgremover_workers Worker threads that run the engine.",
            "# TYPE bgremover_workers gauge",
            f"bgremover_workers {engine.workers}",
            "# HELP process_resident_memory_bytes Resident memory size in bytes.",
            "# TYPE process_resident_memory_bytes gauge",
            f"process_resident_memory_bytes {rss_bytes()}",
        ]
        return "\n".join(lines) + "\n"
