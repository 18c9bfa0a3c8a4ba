"""Execute the notebooks headless with papermill (``make run``, ``make notebooks``).

    python scripts/run_notebooks.py [--scale small] [--timeout 3600] [-p NAME VALUE ...] [NOTEBOOK ...]
    python scripts/run_notebooks.py --refresh        # SCALE=small, then copy outputs over notebooks/

Every ``notebooks/[0-9][0-9]_*.ipynb`` (or the ones named) is executed into
``build/<name>.ipynb`` with ``-p SCALE <scale>``, in a kernel of this interpreter
(``python3``: jupyter_client launches its ``python`` argv as ``sys.executable``), with the
notebook folder as working directory, a per-cell timeout (seconds, > 0), and these environment
variables for the kernel (:func:`kernel_environment`):

    FEDCORE_SCALE    the scale (a parameters cell reads it as its default)
    FEDCORE_FIGURES  -p FIGURES, else as given, else <out>/figures (build/figures/): where a notebook saves figures
    FEDCORE_STORE    -p STORE, else as given (empty: the notebooks' default store; off: none)
    FEDCORE_DATA     as given (unset: fedcore's default data folders)

Every path is the caller's (:func:`from_caller`): ``~`` is expanded, then a relative path is made
absolute from where this script was called (the kernel's working directory is the notebook folder),
the same for -p STORE / -p FIGURES, their variables, FEDCORE_DATA, --out and the notebooks named.
A parameter given on the command line (--scale, -p NAME) wins over its variable, and the kernel's
variable is set to it; one setting given twice on the command line (--scale smoke -p SCALE paper,
-p SEED 1 -p SEED 2) is refused, naming both.

All notebooks are tried; the time of each is printed; the exit code is 1 if any failed.

``--refresh`` runs the notebooks exactly as committed (no injected parameters cell; the
scale comes from FEDCORE_SCALE=small), strips papermill's run metadata, and writes each
successfully executed notebook back over ``notebooks/<name>.ipynb``, so the committed
notebooks carry the real outputs of a small run.  Failed notebooks, and notebooks whose
.ipynb or paired .py was edited while they ran, are left untouched (and count as failed).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
BUILD = ROOT / "build"
SCALES = ("smoke", "small", "medium", "paper")
REFRESH_SCALE = "small"
PATHS = ("STORE", "FIGURES")
"""The notebooks' parameters that are paths, each read by default from ``FEDCORE_<NAME>``."""


def from_caller(setting: str, cwd: Path | str, name: str = "") -> str:
    """A path setting for a kernel that runs in the notebook folder, as the caller meant it: ``~`` expanded, then a
    relative path made absolute from ``cwd``; empty, and for ``name="STORE"`` the words that mean no store
    (:data:`fedcore.store.STORE_OFF`), as they are."""
    if not setting.strip():
        return setting
    if name == "STORE":
        from fedcore.store import STORE_OFF

        if setting.strip().lower() in STORE_OFF:
            return setting
    path = Path(setting).expanduser()
    return str(path if path.is_absolute() else Path(cwd, path).resolve())


def positive_seconds(text: str) -> int:
    """``--timeout``: a whole number of seconds > 0 (nbclient reads 0 or less as no timeout at all)."""
    try:
        seconds = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of seconds") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{seconds} must be > 0 (seconds per cell)")
    return seconds


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line checked: ``--timeout`` > 0, each ``-p NAME`` once, ``-p SCALE`` the same as ``--scale``
    (either sets the scale), ``-p STORE`` / ``-p FIGURES`` and ``--out`` the caller's paths; ``args.parameters``
    holds the ``-p`` values as papermill will inject them (SCALE apart, in ``args.scale``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to run (default: every notebooks/[0-9][0-9]_*.ipynb)")
    parser.add_argument("--scale", choices=SCALES, help="SCALE parameter (default: $FEDCORE_SCALE or small)")
    parser.add_argument("--timeout", type=positive_seconds, default=3600, help="seconds per cell, > 0 (default 3600)")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="extra papermill parameter, as with papermill -p (value parsed as in papermill)")
    parser.add_argument("-k", "--kernel", default="python3", help="kernel name (default python3)")
    parser.add_argument("--out", type=Path, default=BUILD, help="output folder (default build/)")
    parser.add_argument("--refresh", action="store_true",
                        help=f"run at SCALE={REFRESH_SCALE} and copy the executed notebooks over notebooks/")
    parser.add_argument("--log-output", action="store_true", help="stream cell outputs to the terminal")
    args = parser.parse_args(argv)
    if args.refresh and (args.parameter or args.scale not in (None, REFRESH_SCALE)):
        parser.error(f"--refresh runs the committed notebooks as they are, at SCALE={REFRESH_SCALE}; "
                     "it takes no other --scale and no -p")
    given: dict[str, str] = {}
    for name, value in args.parameter:
        if name in given:
            parser.error(f"-p {name} given twice ({given[name]!r} and {value!r}): give it once")
        given[name] = value
    if "SCALE" in given:
        scale = given.pop("SCALE")
        if args.scale is not None and scale != args.scale:
            parser.error(f"--scale {args.scale} and -p SCALE {scale} differ: give the scale once")
        if scale not in SCALES:
            parser.error(f"-p SCALE {scale!r} is not one of {SCALES}")
        args.scale = scale
    args.parameters = {name: parse_value(value) for name, value in given.items()}
    for name in PATHS:
        if isinstance(args.parameters.get(name), str):
            args.parameters[name] = from_caller(args.parameters[name], Path.cwd(), name)
    args.out = Path(from_caller(str(args.out), Path.cwd()))
    if args.refresh:
        args.scale = REFRESH_SCALE
    elif args.scale is None:
        args.scale = os.environ.get("FEDCORE_SCALE") or "small"
        if args.scale not in SCALES:
            parser.error(f"FEDCORE_SCALE={args.scale!r} is not one of {SCALES}")
    return args


def find_notebooks(named: list[Path]) -> list[Path]:
    if not named:
        return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    missing = [str(path) for path in named if not path.expanduser().is_file()]
    if missing:
        sys.exit(f"run_notebooks: no such notebook: {', '.join(missing)}")
    return [Path(from_caller(str(path), Path.cwd())) for path in named]


def parse_value(text: str):
    """A ``-p`` value as papermill's CLI reads it: True/False/None, int, float, else the string."""
    constants = {"True": True, "False": False, "None": None}
    if text in constants:
        return constants[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parameters(args: argparse.Namespace) -> dict:
    """What papermill injects: SCALE and the ``-p`` pairs; nothing in refresh mode."""
    if args.refresh:
        return {}
    return {"SCALE": args.scale, **args.parameters}


def kernel_environment(args: argparse.Namespace, environ: Mapping[str, str], cwd: Path | str) -> dict[str, str]:
    """The variables the kernels get, from the checked ``args`` and the caller's ``environ`` (its working folder
    ``cwd``): FEDCORE_SCALE the scale that runs; FEDCORE_STORE and FEDCORE_FIGURES the ``-p`` value, else the
    caller's, else (figures) ``<out>/figures``; FEDCORE_DATA the caller's when set; every path the caller's."""
    environment = {"FEDCORE_SCALE": args.scale}
    for name in PATHS:
        variable = f"FEDCORE_{name}"
        if isinstance(args.parameters.get(name), str):
            environment[variable] = args.parameters[name]
        else:
            environment[variable] = from_caller(environ.get(variable, ""), cwd, name)
    environment["FEDCORE_FIGURES"] = environment["FEDCORE_FIGURES"] or str((args.out / "figures").resolve())
    if environ.get("FEDCORE_DATA"):
        environment["FEDCORE_DATA"] = from_caller(environ["FEDCORE_DATA"], cwd)
    return environment


def unknown_parameters(notebooks: list[Path], given: dict) -> list[str]:
    """Why each notebook would refuse ``given``: a ``-p`` name its parameters cell does not declare (a misspelt
    ``SEEED`` would otherwise run the whole notebook with the default seed), naming the ones it has."""
    import papermill

    problems = []
    for path in notebooks:
        declared = sorted(set(papermill.inspect_notebook(str(path))) - {"DECLARED"})  # DECLARED: the list itself
        unknown = sorted(set(given) - set(declared))
        if unknown:
            problems.append(f"{path.name} has no parameter {', '.join(unknown)}; its parameters: {', '.join(declared)}")
    return problems


def strip_run_metadata(path: Path) -> None:
    """Drop what papermill/nbclient add per run (timings, status) so a refresh diff shows outputs only."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if cell.metadata.get("tags") == []:  # papermill adds an empty tag list to every cell
            del cell.metadata["tags"]
    nbformat.write(nb, path)


def pair_of(path: Path) -> Path:
    """The jupytext py:percent script paired with ``path`` (it may not exist)."""
    return path.with_suffix(".py")


def snapshot(path: Path) -> dict[Path, bytes | None]:
    """The notebook and its paired script as they are now, to detect edits made during a run."""
    return {p: p.read_bytes() if p.exists() else None for p in (path, pair_of(path))}


def refresh(path: Path, out: Path, before: dict[Path, bytes | None]) -> str:
    """Write the executed ``out`` over ``path``; "" on success, else why not.

    Refuses when the notebook or its paired script changed while it ran (someone edited
    it: the outputs would belong to old sources).  Afterwards the paired script is touched,
    so it stays newer than the .ipynb, as jupytext expects of the text file it reads inputs from.
    """
    if snapshot(path) != before:
        return f"{path.name} or its paired script changed during the run: not refreshed"
    from fedcore.files import atomic_path

    strip_run_metadata(out)
    with atomic_path(path) as partial:
        partial.write_bytes(out.read_bytes())
    if pair_of(path).exists():
        os.utime(pair_of(path))
    return ""


def poll_replies_in_slices(slice_s: float = 1.0) -> None:
    """Work around a lost wake-up in nbclient's wait for a cell's reply (jupyter/nbclient#312,
    jupyter/nbconvert#2029, both open).

    After a cell that displays an ipywidget, the kernel sends its execute_reply and goes
    idle, yet ``await kc.shell_channel.get_msg(timeout)`` sometimes never wakes up: papermill
    then hangs until the cell timeout (here with 00_quickstart's ``widgets.interactive``
    explorer: 4 runs in 28 hung, with or without --execution-timeout 3600).  Waiting in
    1-second slices polls the socket afresh each time, and finds the reply.
    """
    from queue import Empty

    from jupyter_client.channels import AsyncZMQSocketChannel

    get_msg = AsyncZMQSocketChannel.get_msg
    if getattr(get_msg, "sliced", False):
        return

    async def sliced_get_msg(self, timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = slice_s if deadline is None else min(slice_s, max(0.0, deadline - time.monotonic()))
            try:
                return await get_msg(self, timeout=left)
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    sliced_get_msg.sliced = True
    AsyncZMQSocketChannel.get_msg = sliced_get_msg


def run_one(path: Path, out: Path, args: argparse.Namespace) -> tuple[bool, float, str]:
    import papermill

    start = time.perf_counter()
    try:
        papermill.execute_notebook(
            str(path), str(out), parameters=parameters(args), kernel_name=args.kernel,
            cwd=str(path.parent), execution_timeout=args.timeout, progress_bar=False,
            log_output=args.log_output,
        )
    except Exception as error:  # PapermillExecutionError, timeouts, dead kernels: report, go on
        message = str(error).strip().splitlines()
        return False, time.perf_counter() - start, f"{type(error).__name__}: {message[-1] if message else ''}"
    return True, time.perf_counter() - start, ""


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    notebooks = find_notebooks(args.notebooks)
    if not notebooks:
        print(f"run_notebooks: no notebooks matching {NOTEBOOKS.relative_to(ROOT)}/[0-9][0-9]_*.ipynb")
        return 0
    problems = unknown_parameters(notebooks, parameters(args))
    if problems:
        print("run_notebooks: " + "\nrun_notebooks: ".join(problems), file=sys.stderr)
        return 2
    os.environ.update(kernel_environment(args, os.environ, Path.cwd()))
    args.out.mkdir(parents=True, exist_ok=True)
    Path(os.environ["FEDCORE_FIGURES"]).mkdir(parents=True, exist_ok=True)
    os.environ.pop("MPLBACKEND", None)  # let ipykernel pick the inline backend, so figures land in the notebook
    poll_replies_in_slices()
    mode = "refresh" if args.refresh else "run"
    print(f"run_notebooks: {mode} {len(notebooks)} notebook(s), SCALE={args.scale}, timeout {args.timeout} s/cell, "
          f"kernel {args.kernel} ({sys.executable}), output {args.out}, figures {os.environ['FEDCORE_FIGURES']}, "
          f"store {os.environ['FEDCORE_STORE'] or 'the default'}", flush=True)

    results = []
    total = time.perf_counter()
    for path in notebooks:
        out = args.out / path.name
        print(f"  {path.name} ...", end="", flush=True)
        before = snapshot(path)
        ok, seconds, error = run_one(path, out, args)
        print(f" {'ok' if ok else 'FAILED'} in {seconds:.1f} s{'  ' + error if error else ''}", flush=True)
        if ok and args.refresh:
            error = refresh(path, out, before)
            ok = not error
            print(f"    {error or 'refreshed ' + str(path)}", flush=True)
        results.append((path, ok, seconds, error))

    failed = [path.name for path, ok, _, _ in results if not ok]
    print(f"run_notebooks: {len(results) - len(failed)} passed, {len(failed)} failed "
          f"in {time.perf_counter() - total:.1f} s", flush=True)
    if failed:
        print(f"run_notebooks: failed: {', '.join(failed)} (executed copies are in {args.out})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
