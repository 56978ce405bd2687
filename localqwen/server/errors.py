"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}`` with an HTTP status,
so the official clients raise their usual exceptions (``AuthenticationError``, ``RateLimitError``...)."""

from __future__ import annotations

from typing import Any

# HTTP status -> OpenAI's error type.
ERROR_TYPES = {
    400: "invalid_request_error", 401: "invalid_request_error", 403: "invalid_request_error",
    404: "invalid_request_error", 405: "invalid_request_error", 413: "invalid_request_error",
    421: "invalid_request_error", 429: "rate_limit_error", 500: "server_error", 503: "server_error",
}


class ApiError(Exception):
    """A request the server refuses or could not answer; becomes an OpenAI-shaped error response."""

    def __init__(self, status: int, message: str, *, code: str | None = None, param: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return error_body(self.status, self.message, code=self.code, param=self.param)


def error_body(status: int, message: str, *, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "param": param,
                      "code": code}}


def error_response(error: ApiError) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)
