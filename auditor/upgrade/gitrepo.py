"""The transformers checkout a commit bisection walks: git run on it, and the checks made before."""

from __future__ import annotations

import subprocess
from pathlib import Path

from auditor.core.errors import InputError


def git(repo: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    """`git -C repo ARGV`; with `check`, an InputError when it fails."""
    proc = subprocess.run(["git", "-C", str(repo), *argv], capture_output=True, text=True, check=False)
    if check and proc.returncode:
        raise InputError(f"git {' '.join(argv)} failed in {repo}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def checked_repo(repo: Path, refs: tuple[str, ...], *, bisecting: bool = False) -> tuple[Path, list[str]]:
    """The checkout's top directory and the commits of `refs`: clean, mid-bisect only when
    `bisecting` (a step of `git bisect run`), refs known."""
    repo = repo.expanduser().resolve()
    if not repo.is_dir():
        raise InputError(f"--repo {repo} is not a directory")
    top = git(repo, "rev-parse", "--show-toplevel", check=False)
    if top.returncode:
        raise InputError(f"--repo {repo} is not a git checkout")
    repo = Path(top.stdout.strip())
    dirty = git(repo, "status", "--porcelain", "--untracked-files=no").stdout.strip()
    if dirty:
        raise InputError(f"the checkout {repo} has uncommitted changes; commit or stash them first:\n{dirty}")
    if not bisecting and (repo / git(repo, "rev-parse", "--git-path", "BISECT_START").stdout.strip()).exists():
        raise InputError(f"a bisection is already under way in {repo}; end it with `git bisect reset`")
    commits = []
    for ref in refs:
        found = git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
        if found.returncode:
            raise InputError(f"{ref!r} is not a commit of {repo}")
        commits.append(found.stdout.strip())
    return repo, commits
