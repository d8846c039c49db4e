"""What the client knows of one tool: its route, how it is paid, how it answers."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolSpec:
    name: str
    method: str
    path: str
    mode: str  # "inline": answered at once; "job": accepted (202), then waited for
    payment_header: str  # the header the signed x402 payment goes in
    idempotency: str  # "required", "optional" or "ignored": whether Idempotency-Key is honoured
    path_params: tuple[str, ...] = ()  # input fields that are also path segments

    def url_path(self, input: dict) -> str:
        path = self.path
        for name in self.path_params:
            path = path.replace("{" + name + "}", str(input[name]))
        return path
