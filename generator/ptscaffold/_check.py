"""`check`: is a project on the newest template version this ptscaffold (or its source) has?"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from packaging.version import InvalidVersion, Version

from . import _template
from ._update import _git, _read_answers, _version_of, refuse_if_newer
from .errors import PtscaffoldError, UpdateRefused


@dataclass(frozen=True)
class Status:
    project: Path
    version: str  # the template version the project is on
    latest: str  # the newest one available

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
    answers = _read_answers(project)
    version = _version_of(answers.get("_commit"))
    if version is None:
        raise UpdateRefused(
            f"{project} records no template version (_commit) that names a release; "
            "it cannot be checked or updated"
        )
    src = str(answers.get("_src_path") or "")
    if src == _template.CANONICAL_URL or src in _template.LEGACY_URLS:
        latest = Version(_template.template_version())
        refuse_if_newer(project, version, latest)
    else:
        latest = max(_source_versions(project, src), default=version)
    return Status(project=project, version=str(version), latest=str(max(latest, version)))


def _source_versions(project: Path, src: str) -> list[Version]:
    proc = _git(project, "ls-remote", "--tags", "--refs", src)
    if proc.returncode != 0:
        raise PtscaffoldError(
            f"cannot list the versions of the template {src}: "
            f"{(proc.stderr.strip().splitlines() or ['git ls-remote failed'])[-1]}"
        )
    found = []
    for line in proc.stdout.splitlines():
        tag = line.rpartition("refs/tags/")[2].removeprefix("v")
        try:
            found.append(Version(tag))
        except InvalidVersion:
            continue
    return found
