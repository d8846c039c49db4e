"""Renders `plugin_template/` into a new plugin folder (`tollway new-plugin NAME`).

It only substitutes placeholders and writes files; it never installs, imports or
runs what it writes.
"""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

from tollway._runtime.plugins import GROUP

# The whole placeholder syntax: three literal tokens, replaced in file contents
# and in file and folder names. Anything else in double braces is a template bug.
PLACEHOLDERS = ("{{family}}", "{{Family}}", "{{FAMILY}}")
_LEFTOVER = re.compile(r"\{\{\s*\w+\s*\}\}")

# One lower-case word or words joined by single underscores: it becomes the
# import package `tollway_<name>`, the start of tool names (which must start with a
# letter) and the settings prefix `TOLLWAY_<NAME>_`.
_NAME = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
MAX_NAME = 40

# Build and cache litter that must never be copied from a template someone ran.
_SKIP_DIRS = {"__pycache__", ".pytest_cache", "build", "dist", ".hypothesis"}
_SKIP_SUFFIXES = (".pyc", ".egg-info")


class TemplateError(ValueError):
    """The plugin cannot be rendered: bad name, taken target, missing template."""


def repository_root() -> Path:
    """The folder holding `runtime/`: the source tree of a checkout (editable install),
    or site-packages when Tollway was installed from wheels."""
    return Path(__file__).resolve().parent.parent


def is_checkout() -> bool:
    """Whether Tollway runs from a source checkout (it has `plugins/` and a pyproject)."""
    root = repository_root()
    return (root / "pyproject.toml").is_file() and (root / "plugins").is_dir()


def template_dir() -> Path:
    """The template shipped in the `tollway` package (in a checkout, a link to
    `plugin_template/`; in a wheel, a copy made when the wheel was built)."""
    import tollway

    path = (Path(tollway.__file__).parent / "plugin_template").resolve()
    if not (path / "pyproject.toml").is_file():
        raise TemplateError(
            f"plugin template not found at {path}: this installation of tollway is incomplete; "
            "reinstall it (pip install --force-reinstall tollway)"
        )
    return path


def validate_name(name: str) -> None:
    if not _NAME.match(name or ""):
        raise TemplateError(
            f"plugin name {name!r} must be a lower-case identifier: a letter, then letters, digits "
            "and single underscores (e.g. weather or air_quality)"
        )
    if len(name) > MAX_NAME:
        raise TemplateError(f"plugin name {name!r} is longer than {MAX_NAME} characters")
    package = f"tollway_{name}"
    # pluggy skips a second entry point of the same name without a word (docs/plugins.md).
    if any(ep.name == package for ep in entry_points(group=GROUP)):
        raise TemplateError(f"a plugin with entry point {package!r} is already installed; choose another name")


def substitutions(name: str) -> dict[str, str]:
    return {
        "{{family}}": name,
        "{{Family}}": "".join(part.capitalize() for part in name.split("_")),
        "{{FAMILY}}": name.upper(),
    }


def _substitute(text: str, subs: dict[str, str]) -> str:
    for token, value in subs.items():
        text = text.replace(token, value)
    return text


def default_target(name: str) -> Path:
    """`plugins/<name>` of a checkout; elsewhere `tollway-<name>` in the current folder."""
    if is_checkout():
        return repository_root() / "plugins" / name
    return Path.cwd() / f"tollway-{name}"


def install_command(target: Path) -> str:
    """The pip command that installs a rendered plugin alone, in editable mode, into this
    environment: its dependencies (tollway, msgspec) are here already, and with setuptools
    77+ here the build needs no isolated environment of its own."""
    import shlex
    import sys
    from importlib.metadata import PackageNotFoundError, version

    try:
        isolated = int(version("setuptools").split(".")[0]) < 77
    except (PackageNotFoundError, ValueError):
        isolated = True
    flags = "--no-deps" if isolated else "--no-deps --no-build-isolation"
    return f"{shlex.quote(sys.executable)} -m pip install {flags} -e {shlex.quote(str(target))}"


def _template_files(source: Path) -> list[Path]:
    files = []
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if any(part in _SKIP_DIRS or part.endswith(_SKIP_SUFFIXES) for part in rel.parts):
            continue
        if path.is_file():
            files.append(rel)
    return files


def render_plugin(name: str, target: Path | None = None) -> Path:
    """Render the template for family `name` into `target` (default: `default_target`).

    `target` is the plugin's own folder: it must not exist, or be an empty folder.
    Everything is rendered and checked in memory before the first file is written.
    """
    validate_name(name)
    dest = (Path(target) if target is not None else default_target(name)).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise TemplateError(f"{dest} already exists and is not an empty folder; choose another name or --dir")
    source = template_dir()
    subs = substitutions(name)

    rendered: dict[Path, bytes] = {}
    for rel in _template_files(source):
        out = Path(*(_substitute(part, subs) for part in rel.parts))
        raw = (source / rel).read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            rendered[out] = raw  # binary files are copied as they are
            continue
        text = _substitute(text, subs)
        for where in (text, str(out)):
            leftover = _LEFTOVER.search(where)
            if leftover:
                raise TemplateError(f"template file {rel} uses unknown placeholder {leftover.group(0)}")
        rendered[out] = text.encode("utf-8")

    for out, data in rendered.items():
        path = dest / out
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return dest
