"""`git-remote-ptscaffold`: git reads `ptscaffold://template` from the local template store.

Projects made from the bundled template record `_src_path: git+ptscaffold://template`. Copier
hands git `ptscaffold://template`, and git runs the helper of that scheme, this console script
(installed with ptscaffold, like git's own `git-remote-https`). It makes sure the store holds
the installed template and every earlier release, as the installed ptscaffold has them (see
`_cache.py`), then connects git straight to it: git's own upload-pack serves clones, fetches
and tag listings, with no network and no machine path in the project's answers file. The
upload-pack runs in the cache's own git environment, like every git ptscaffold runs there.

The protocol (`gitremote-helpers`): git writes `capabilities`, the helper answers `connect`;
git writes `connect git-upload-pack`, the helper answers with an empty line and from then on
its stdin and stdout are the upload-pack conversation.
"""

from __future__ import annotations

import os
import sys

from . import _cache
from ._template import GIT_URL
from .errors import PtscaffoldError


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv  # git passes: REMOTE-NAME [URL]
    url = args[1] if len(args) > 1 else (args[0] if args else "")
    if url.rstrip("/") != GIT_URL:
        sys.exit(f"git-remote-ptscaffold: unknown address {url!r}; it serves {GIT_URL} only")
    try:
        repo = _cache.ensure_repo()
    except (OSError, PtscaffoldError) as exc:
        sys.exit(f"git-remote-ptscaffold: cannot prepare the template store: {exc}")
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        command = line.strip().decode()
        if command == "capabilities":
            out.write(b"connect\n\n")
            out.flush()
        elif command.startswith("connect "):
            service = command.split(" ", 1)[1]
            if service != "git-upload-pack":  # a template store is read, never pushed to
                sys.exit(f"git-remote-ptscaffold: {service} is not served ({GIT_URL} is read-only)")
            out.write(b"\n")
            out.flush()
            # --strict: the folder itself, never a `.git` found inside it
            upload_pack = ["git", "upload-pack", "--strict", str(repo)]
            os.execvpe("git", upload_pack, _cache.git_env())
        elif not command:
            return
        else:
            sys.exit(f"git-remote-ptscaffold: unsupported command {command!r}")


if __name__ == "__main__":
    main()
