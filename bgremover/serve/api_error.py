"""A request that fails, as remove.bg answers it: the HTTP status and its error fields."""

from collections.abc import Mapping
from typing import Any


class ApiError(Exception):
    """A request that fails: its HTTP status and remove.bg's error fields."""

    def __init__(
        self,
        status: int,
        title: str,
        code: str,
        detail: str = "",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(title)
        self.status = status
        self.title = title
        self.code = code
        self.detail = detail
        self.headers = dict(headers or {})

    def body(self) -> dict[str, Any]:
        error = {"title": self.title, "code": self.code}
        if self.detail:
            error["detail"] = self.detail
        return {"errors": [error]}


def too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        f"The request body is over this server's limit of {limit / 1e6:g} MB.",
        "file_too_large",
        "Send a smaller file; a server operator can raise the limit with --max-body-mb.",
    )


def removebg_status(exc: ApiError) -> ApiError:
    """The answer remove.bg gives where bgremover's own endpoint says otherwise: 403 for
    a missing or wrong key, 400 for a file or an image over the limits."""
    status = {401: 403, 413: 400}.get(exc.status, exc.status)
    if status == exc.status:
        return exc
    return ApiError(status, exc.title, exc.code, exc.detail, exc.headers)
