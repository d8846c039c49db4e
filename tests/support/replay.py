"""Replays real recorded upstream responses to the kernel's outbound HTTP client.

The files served are the recordings kept beside the tests of the plugin that
calls that upstream, `plugins/<family>/tests/fixtures/` (each folder's README
says where every file was recorded; none was typed by hand).
A `Replay` is an `httpx.MockTransport` handed to the kernel as its outbound
transport: it answers only the exact requests it was given recordings for,
byte for byte, and answers anything else with a 599 that it also notes in
`unexpected`. It never opens a socket, so no test using it reaches the internet.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def recorded_file(family: str, *parts: str) -> Path:
    """A recorded file of plugin `family` (`plugins/<family>/tests/fixtures/<parts>`)."""
    path = REPO.joinpath("plugins", family, "tests", "fixtures", *parts)
    if not path.exists():
        raise FileNotFoundError(f"recorded data {path} is missing")
    return path


@dataclasses.dataclass(frozen=True)
class Recording:
    """One recorded answer to `method url?query` (the query compared as a mapping)."""

    method: str
    url: str  # scheme://host/path, no query
    query: dict[str, str]
    body: bytes
    status: int = 200
    content_type: str = "application/json"

    def matches(self, request: httpx.Request) -> bool:
        return (
            request.method == self.method
            and str(request.url.copy_with(query=None)) == self.url
            and dict(request.url.params) == self.query
        )


class Replay(httpx.MockTransport):
    """An outbound transport serving only `recordings`; see the module docstring."""

    def __init__(self, *recordings: Recording) -> None:
        self.recordings = list(recordings)
        self.served: list[httpx.Request] = []
        self.unexpected: list[httpx.Request] = []
        super().__init__(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        for rec in self.recordings:
            if rec.matches(request):
                self.served.append(request)
                return httpx.Response(rec.status, content=rec.body, headers={"content-type": rec.content_type})
        self.unexpected.append(request)
        return httpx.Response(
            599, text=f"no recording for {request.method} {request.url} (the replay never reaches the internet)"
        )


NHTSA_RECALLS_URL = "https://api.nhtsa.gov/recalls/recallsByVehicle"
HONDA_ACCORD_2021 = ("vehicles", "nhtsa_recalls", "recallsByVehicle_honda_accord_2021_trimmed.json")


def nhtsa_honda_accord_2021() -> Replay:
    """NHTSA's recorded answer for recalls of the 2021 Honda Accord, served for
    `GET https://api.nhtsa.gov/recalls/recallsByVehicle?make=honda&model=accord&modelYear=2021`."""
    body = recorded_file(*HONDA_ACCORD_2021).read_bytes()
    return Replay(Recording("GET", NHTSA_RECALLS_URL, {"make": "honda", "model": "accord", "modelYear": "2021"}, body))


__all__ = ["HONDA_ACCORD_2021", "NHTSA_RECALLS_URL", "Recording", "Replay", "nhtsa_honda_accord_2021", "recorded_file"]
