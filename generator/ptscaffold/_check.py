"""`check`: is a project on the newest template version this ptscaffold (or its source) has?"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from . import _git, _template
from ._questions import template_version
from ._update import read_answers, refuse_if_newer, version_of
from .errors import PtscaffoldError, UpdateRefused


@dataclass(frozen=True)
class Status:
    project: Path
    version: str  # the template version the project is on
    latest: str  # the newest one available
    src: str = ""  # the template source the project records (_src_path)

    @property
    def update_available(self) -> bool:
        return Version(self.latest) > Version(self.version)

    def as_dict(self) -> dict[str, object]:
        return {
            "project": str(self.project),
            "version": self.version,
            "latest": self.latest,
            "update_available": self.update_available,
        }


def check(project: str | os.PathLike[str] = ".") -> Status:
    """The project's template version and the newest one: for a project of the bundled
    template, the installed ptscaffold's (no network); for another template source, its newest
    version tag (`git ls-remote`, which may need network)."""
    project = Path(os.path.abspath(Path(project).expanduser()))
    if not project.is_dir():
        raise UpdateRefused(f"{project} is not a directory")
    answers = read_answers(project)
    version = version_of(answers.get("_commit"))
    if version is None:
        raise UpdateRefused(
            f"{project} records no template version (_commit) that names a release; "
            "it cannot be checked or updated"
        )
    src = str(answers.get("_src_path") or "")
    if _is_bundled(src):
        latest = Version(template_version())
        refuse_if_newer(project, version, latest)
    else:
        latest = max(_source_versions(project, src), default=version)
    return Status(project=project, version=str(version), latest=str(max(latest, version)), src=src)


def _is_bundled(src: str) -> bool:
    return src == _template.CANONICAL_URL or src in _template.LEGACY_URLS


def changelog(status: Status) -> str:
    """The sections of the template's CHANGELOG.md (beside its copier.yml) that an update from
    the project's version to the newest one brings, as Markdown; "" when there are none.

    The bundled template's comes with ptscaffold; another source's is read at the newest
    version's tag (a shallow fetch, which may need network)."""
    if not status.update_available:
        return ""
    if _is_bundled(status.src):
        path = _template.template_root() / CHANGELOG
        text = path.read_text(encoding="utf-8") if path.is_file() else ""
    else:
        text = _changelog_at_tag(status.project, status.src, status.latest)
    return changelog_sections(text, Version(status.version), Version(status.latest))


CHANGELOG = "CHANGELOG.md"
# A section: `## 1.2.0`, `## v1.2.0 (2026-01-05)`, `## [1.2.0] - ...`, or `## Unreleased`
_SECTION_HEADING = re.compile(r"##[ \t]+\[?v?(?P<name>[^\]\s]+)")


def changelog_sections(text: str, after: Version, upto: Version) -> str:
    """The `## <version>` sections of `text` with `after` < version <= `upto`, in their order
    in the file, and an `## Unreleased` one (what the newest template has beyond its last
    release). Text before the first section, and sections of other versions, are left out."""
    kept = []
    for section in re.split(r"(?m)^(?=##[ \t])", text):
        heading = _SECTION_HEADING.match(section)
        if heading is None:
            continue
        name = heading["name"]
        if name.lower() == "unreleased":
            kept.append(section)
            continue
        try:
            version = Version(name)
        except InvalidVersion:
            continue
        if after < version <= upto:
            kept.append(section)
    return "\n".join(section.strip() + "\n" for section in kept)


def _changelog_at_tag(project: Path, src: str, version: str) -> str:
    """CHANGELOG.md of the template source `src` at the tag of `version` ("" without one)."""
    tag = next((t for t in _source_tags(project, src) if _tag_version(t) == Version(version)), None)
    if tag is None:
        return ""
    with tempfile.TemporaryDirectory(prefix="ptscaffold-changelog-") as tmp:
        for args in (
            ("init", "--quiet", "--bare", "--template=", tmp),
            ("--git-dir", tmp, "fetch", "--quiet", "--depth=1", "--no-tags", src,
             f"refs/tags/{tag}"),
        ):  # fmt: skip
            proc = _git.run(*args, cwd=project)
            if proc.returncode != 0:
                raise PtscaffoldError(
                    f"cannot read the CHANGELOG of the template {src} at {tag}: "
                    f"{_git.last_line(proc)}"
                )
        shown = _git.run("--git-dir", tmp, "show", f"FETCH_HEAD:{CHANGELOG}", cwd=project)
        return shown.stdout if shown.returncode == 0 else ""


def _tag_version(tag: str) -> Version | None:
    try:
        return Version(tag.removeprefix("v"))
    except InvalidVersion:
        return None


def _source_versions(project: Path, src: str) -> list[Version]:
    found = (_tag_version(tag) for tag in _source_tags(project, src))
    return [version for version in found if version is not None]


def _source_tags(project: Path, src: str) -> list[str]:
    proc = _git.run("ls-remote", "--tags", "--refs", src, cwd=project)
    if proc.returncode != 0:
        raise PtscaffoldError(
            f"cannot list the versions of the template {src}: "
            f"{_git.last_line(proc, 'git ls-remote failed')}"
        )
    return [line.rpartition("refs/tags/")[2] for line in proc.stdout.splitlines() if line]
