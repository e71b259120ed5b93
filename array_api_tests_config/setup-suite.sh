#!/usr/bin/env bash
# Lays out the official array-api-tests suite in DEST/array-api-tests (DEST: .aat by default),
# with the standard's repository checked out at the commit the suite pins for its submodule.
#
#   bash array_api_tests_config/setup-suite.sh [DEST]                   # from GitHub
#   bash array_api_tests_config/setup-suite.sh DEST TESTS_GIT SPEC_GIT  # from local clones
#
# TESTS_GIT and SPEC_GIT: clones (or bare git directories) of data-apis/array-api-tests and
# data-apis/array-api, for a machine without network. Keep DEST out of git:
# echo /.aat/ >> .git/info/exclude
set -euo pipefail
dest=${1:-.aat}
tests=${2:-https://github.com/data-apis/array-api-tests.git}
spec=${3:-https://github.com/data-apis/array-api.git}
suite="$dest/array-api-tests"
rm -rf "$suite" && mkdir -p "$dest"
git clone -q "$tests" "$suite"
# the spec commit the suite was written against: its submodule's pin
pin=$(git -C "$suite" ls-tree HEAD array-api | awk '{print $3}')
if [ -z "$pin" ]; then
    echo "setup-suite: $tests pins no array-api submodule" >&2
    exit 1
fi
rm -rf "$suite/array-api"
git clone -q "$spec" "$suite/array-api"
git -C "$suite/array-api" checkout -q "$pin"
echo "suite at $suite ($(git -C "$suite" rev-parse --short HEAD)), standard at ${pin:0:8}"
echo "then: python -m pip install pytest hypothesis ndindex pytest-json-report"
