"""The build's one job beyond pyproject.toml: the repository's internal folders (core,
runtime, http_server, mcp_server) are installed as private subpackages of `tollway`
(`tollway._core`, ...), so a wheel puts no generic top-level names into site-packages."""

from setuptools import find_packages, setup

INTERNAL = ("core", "runtime", "http_server", "mcp_server")

packages = find_packages(include=["tollway", "tollway.*"])
for folder in INTERNAL:
    packages += [f"tollway._{name}" for name in find_packages(include=[folder, f"{folder}.*"])]
setup(packages=packages, package_dir={f"tollway._{folder}": folder for folder in INTERNAL})
