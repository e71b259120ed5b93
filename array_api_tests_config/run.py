"""Run the official array-api-tests suite against xp_cuda from this checkout.

    python array_api_tests_config/run.py SUITE_PATH [--device cpu|cpu:N|cuda:N] [--max-examples N]
        [--api-version 2023.12|2024.12|2025.12] [--json FILE] [--] [test files, node ids or
        pytest args...]

``--api-version`` (default 2023.12) is the revision both sides take: the suite's
ARRAY_API_TESTS_VERSION and xp_cuda's XP_CUDA_API_VERSION.

Bare test file names (``test_creation_functions.py``, optionally with ``::node``) are taken
relative to the suite's ``array_api_tests/`` folder; with none, the whole suite runs. Prints
one line ``N passed, N failed, N skipped`` (errors count as failed), then a line with the
xfailed/xpassed/error counts, and exits with pytest's exit code.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
XFAILS = HERE / "xfails.txt"
SKIPS = HERE / "skips.txt"
_COMMENT = re.compile(r"\s+#.*$")
_TAGS = re.compile(r"^\s+#\s*\[([^\]]*)\]")
REVISIONS = ("2023.12", "2024.12", "2025.12")  # xp_cuda._revisions.REVISIONS (not imported:
# the runner must not import the package it sets the revision of)


def entry_applies(tags: list[str], device: str, api_version: str) -> bool:
    """Whether an entry with these leading tags holds in this run: "cuda" limits it to cuda
    devices; revisions ("2023.12", ...) limit it to runs at one of them."""
    if "cuda" in tags and not device.startswith("cuda"):
        return False
    revisions = [t for t in tags if t in REVISIONS]
    return not revisions or api_version in revisions


def clean_ids(path: Path, require_reason: bool, device: str = "cpu",
              api_version: str = "2023.12") -> tuple[list[str], list[str]]:
    """Ids of an xfails/skips file without comments; also the lines missing a reason.

    The suite's parser keeps a trailing ``# reason`` as part of the id (and its skips parser
    wants lines starting with ``array_api_tests``), so the suite only ever sees bare ids.
    A reason may start with tags in brackets, "# [cuda 2023.12] reason": the entry then holds
    only on cuda devices and/or at the revisions named, so other runs stay strict.
    """
    ids, missing = [], []
    for line in path.read_text().splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        if require_reason and not _COMMENT.search(s):
            missing.append(s)
        tags = _TAGS.search(s[len(_COMMENT.sub("", s)):])
        if tags and not entry_applies(tags.group(1).split(), device, api_version):
            continue
        ids.append(_COMMENT.sub("", s))
    return ids, missing


def map_arg(arg: str, suite: Path) -> tuple[str, bool]:
    """Map a bare test file (or node id) to the suite's array_api_tests/; say if it's a target."""
    if arg.startswith("-"):
        return arg, False
    file_part = arg.split("::", 1)[0]
    if "/" not in file_part and file_part.endswith(".py") \
            and (suite / "array_api_tests" / file_part).is_file():
        return f"array_api_tests/{arg}", True
    if (suite / file_part).exists():
        return arg, True
    if Path(file_part).exists():  # a path relative to where the runner was started
        return str(Path(file_part).resolve()) + arg[len(file_part):], True
    return arg, False  # e.g. the value of -k; passed through untouched


def parse_summary(text: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    lines = [ln for ln in text.splitlines() if re.search(r"\d+ (passed|failed|skipped|error)", ln)
             or re.search(r"no tests ran", ln)]
    if lines:
        for n, word in re.findall(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?)",
                                  lines[-1]):
            counts["error" if word.startswith("error") else word] = int(n)
    return counts


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", type=Path, help="array-api-tests checkout (holds conftest.py)")
    ap.add_argument("--device", default="cpu",
                    help="cpu, cpu:N (a simulated device) or cuda:N (default cpu)")
    ap.add_argument("--max-examples", type=int, default=20)
    ap.add_argument("--api-version", default="2023.12", choices=REVISIONS,
                    help="the revision of the standard to test (default 2023.12)")
    ap.add_argument("--json", type=Path, help="write pytest-json-report output here")
    args, unknown = ap.parse_known_args(argv)
    extra = unknown + extra

    suite = args.suite.resolve()
    if not (suite / "array_api_tests").is_dir() or not (suite / "conftest.py").is_file():
        ap.error(f"{suite} is not an array-api-tests checkout (see array_api_tests_config/README.md)")
    if not re.fullmatch(r"cpu(:\d+)?|cuda:\d+", args.device):
        ap.error(f"--device must be cpu, cpu:N (simulated) or cuda:N, got {args.device!r}")

    xfail_ids, missing = clean_ids(XFAILS, True, args.device, args.api_version)
    skip_ids, missing_s = clean_ids(SKIPS, True, args.device, args.api_version)
    if missing or missing_s:
        print("Every xfails.txt/skips.txt entry needs a trailing '# reason'; missing on:",
              *missing, *missing_s, sep="\n  ", file=sys.stderr)
        return 2

    mapped = [map_arg(a, suite) for a in extra]
    targets = [a for a, _ in mapped]
    if not any(is_target for _, is_target in mapped):
        targets.append("array_api_tests")

    tmp = tempfile.TemporaryDirectory(prefix="xp_cuda_aat_")
    xf, sk = Path(tmp.name) / "xfails.txt", Path(tmp.name) / "skips.txt"
    xf.write_text("".join(i + "\n" for i in xfail_ids))
    sk.write_text("".join(i + "\n" for i in skip_ids))

    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--disable-deadline",
           f"--max-examples={args.max_examples}", f"--xfails-file={xf}", f"--skips-file={sk}"]
    if args.json:
        import importlib.util
        if importlib.util.find_spec("pytest_jsonreport") is None:  # keep going offline
            print("[run.py] pytest-json-report is not installed: no --json written", file=sys.stderr)
        else:
            cmd += ["--json-report", f"--json-report-file={args.json.resolve()}"]
    cmd += targets

    env = dict(os.environ, ARRAY_API_TESTS_MODULE="xp_cuda",
               ARRAY_API_TESTS_VERSION=args.api_version, XP_CUDA_API_VERSION=args.api_version,
               XP_CUDA_DEFAULT_DEVICE=args.device)
    if args.device.startswith("cpu:"):  # a simulated device: switched on, up to this one
        env["XP_CUDA_CPU_DEVICES"] = str(int(args.device[4:]) + 1)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in
                                        env.get("PYTHONPATH", "").split(os.pathsep) if p])
    print(f"[run.py] device={args.device} api_version={args.api_version} "
          f"xfails={len(xfail_ids)} skips={len(skip_ids)}")
    print(f"[run.py] (cd {suite} && {' '.join(cmd)})", flush=True)

    # Stream pytest's output while keeping its tail to read the summary line.
    tail: list[str] = []
    with subprocess.Popen(cmd, cwd=suite, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        for line in proc.stdout:
            sys.stdout.write(line)
            tail = (tail + [line])[-50:]
        rc = proc.wait()
    tmp.cleanup()

    c = parse_summary("".join(tail))
    print(f"{c.get('passed', 0)} passed, {c.get('failed', 0) + c.get('error', 0)} failed, "
          f"{c.get('skipped', 0)} skipped")
    print(f"({c.get('xfailed', 0)} xfailed, {c.get('xpassed', 0)} xpassed, "
          f"{c.get('error', 0)} errors)")
    return rc


if __name__ == "__main__":
    sys.exit(main())
