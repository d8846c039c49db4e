"""`tollway data refresh sanctions` goes through the plugin's DataSource: the
real OFAC files (fixtures/ofac, served from a file:// folder) are loaded
into TOLLWAY_HOME and the progress callback sees every file."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


async def test_data_source_refreshes_the_lists_into_home(kernel_factory, tmp_path):
    folder = tmp_path / "ofac"
    folder.mkdir()
    for part in ("sdn_sample_small", "consolidated_non_sdn_2025-12"):
        for f in (FIXTURES / "ofac" / part).iterdir():
            (folder / f.name).write_bytes(f.read_bytes())
    kernel = await kernel_factory(
        installed={"tollway_sanctions"}, env={"TOLLWAY_SANCTIONS_LISTS_URL": folder.resolve().as_uri()}
    )
    seen: list[tuple[int, int | None, str]] = []
    summary = await kernel.data_sources["sanctions"].refresh(
        kernel.context, lambda done, total, what: seen.append((done, total, what))
    )
    assert summary.startswith("loaded ") and str(kernel.config.home) in summary
    assert {what for _, _, what in seen} >= {"sdn.csv", "cons_prim.csv"}
    assert (Path(kernel.config.home) / "sanctions").is_dir()
