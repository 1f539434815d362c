#!/usr/bin/env bash
# requirements.lock: every dependency of gangplace and of each extra, pinned for Python 3.11 on
# every platform (--universal: markers where they differ). The README's install commands,
# .ci/run and the Dockerfile install with `pip install -c requirements.lock ...`, so an image
# or a CI run built from one commit gets the same versions; tests/test_project.py checks the
# lock covers pyproject.toml and that the environment under test matches it.
# Refresh after changing a dependency in pyproject.toml (or with --upgrade to move pins):
#   python3 -m pip install uv && scripts/lock.sh [--upgrade]
set -euo pipefail
cd "$(dirname "$0")/.."
"${UV:-uv}" pip compile pyproject.toml --all-extras --universal --python-version 3.11 --quiet \
  --custom-compile-command "scripts/lock.sh" -o requirements.lock "$@"
