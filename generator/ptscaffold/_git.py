"""The one way ptscaffold runs git, and the one environment every git it starts runs in.

Every git that copier or ptscaffold runs gets SAFE_CONFIG, as GIT_CONFIG_* variables
(command-line configuration wins over any file): no hook, no fsmonitor daemon, no signing
program, and no repository found by looking at a folder that merely looks like one. A
template, or a tree rendered from it, so never gets a command run through git.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

SAFE_CONFIG = {
    "core.hooksPath": os.devnull,
    "core.fsmonitor": "false",
    "commit.gpgSign": "false",
    "tag.gpgSign": "false",
    "safe.bareRepository": "explicit",
}


def config_env(base: Mapping[str, str], items: Iterable[tuple[str, str]]) -> dict[str, str]:
    """GIT_CONFIG_* variables adding `items` after the entries `base` already has."""
    first = int(base.get("GIT_CONFIG_COUNT", "0") or 0)
    env = {}
    for offset, (key, value) in enumerate(items):
        env[f"GIT_CONFIG_KEY_{first + offset}"] = key
        env[f"GIT_CONFIG_VALUE_{first + offset}"] = value
    env["GIT_CONFIG_COUNT"] = str(first + len(env) // 2)
    return env


def safe_config(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """GIT_CONFIG_* variables adding SAFE_CONFIG to those already in `base` (os.environ)."""
    return config_env(os.environ if base is None else base, SAFE_CONFIG.items())


def environment(
    base: Mapping[str, str] | None = None, config: Iterable[tuple[str, str]] = ()
) -> dict[str, str]:
    """The whole environment of a git run: `base` (os.environ) with SAFE_CONFIG and `config`."""
    base = dict(os.environ if base is None else base)
    return {**base, **config_env(base, [*SAFE_CONFIG.items(), *config])}


def run(
    *args: str,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | bytes | None = None,
    check: bool = False,
    text: bool = True,
    umask: int = -1,
) -> subprocess.CompletedProcess:
    """`git ARGS` in `cwd`, output captured. `env` is the whole environment, one that
    `environment()` made (the default: `environment()` itself). With `check`, a failure raises
    subprocess.CalledProcessError (stdout and stderr on it)."""
    return subprocess.run(
        ["git", *args],
        cwd=Path(cwd) if cwd is not None else None,
        env=environment() if env is None else dict(env),
        input=input,
        capture_output=True,
        text=text,
        umask=umask,
        check=check,
    )


def last_line(proc: subprocess.CompletedProcess, default: str = "git failed") -> str:
    """The last line git wrote on stderr (or stdout): what a one-line error quotes."""
    lines = str(proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1] if lines else default
