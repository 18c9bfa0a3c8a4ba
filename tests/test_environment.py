"""One source of truth for the environment: pyproject.toml.

environment.yml (conda) must agree with it, the interpreter running the tests must have
what it pins (a venv that drifted fails here: rerun `make setup`), and the README's two
commands must be the ones CI runs.
"""

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
ENVIRONMENT = yaml.safe_load((ROOT / "environment.yml").read_text())
CONDA_NAMES = {"pytorch": "torch"}  # conda package name -> PyPI name, where they differ


def project_requirements() -> list[Requirement]:
    """The dependencies and the `dev` extra (what `make setup` installs)."""
    project = PYPROJECT["project"]
    return [Requirement(text) for text in project["dependencies"] + project["optional-dependencies"]["dev"]]


def pins() -> dict[str, str]:
    """Exact `==` pins of pyproject, by canonical name: {"torch": "2.14.1", ...}."""
    out = {}
    for req in project_requirements():
        exact = [spec.version for spec in req.specifier if spec.operator == "=="]
        if exact:
            out[canonicalize_name(req.name)] = exact[0]
    return out


def conda_entries() -> list[str]:
    return [entry for entry in ENVIRONMENT["dependencies"] if isinstance(entry, str)]


def pip_entries() -> list[str]:
    sections = [entry["pip"] for entry in ENVIRONMENT["dependencies"] if isinstance(entry, dict) and "pip" in entry]
    assert len(sections) == 1, f"environment.yml needs exactly one `pip:` section, found {len(sections)}"
    return [str(entry).strip() for entry in sections[0]]


def split_conda(entry: str) -> tuple[str, str]:
    """`python=3.11` / `pytorch==2.1` / `pip` -> (canonical PyPI name, version or "")."""
    match = re.fullmatch(r"([A-Za-z0-9_.\-]+)\s*(?:==?\s*([^\s=<>!]+))?", entry.strip())
    assert match, f"environment.yml: cannot read conda dependency {entry!r}"
    name = canonicalize_name(match.group(1))
    return CONDA_NAMES.get(name, name), match.group(2) or ""


def test_torch_and_torchvision_are_pinned_exactly():
    for name in ("torch", "torchvision"):
        assert name in pins(), f"pyproject.toml must pin {name} with == (found {project_requirements()})"


def test_environment_yml_pip_pins_equal_pyproject():
    declared = {canonicalize_name(req.name): req for req in project_requirements()}
    for entry in pip_entries():
        if entry.startswith(("-e", "--editable")):
            continue
        req = Requirement(entry)
        name = canonicalize_name(req.name)
        assert name in declared, f"environment.yml lists {entry!r}, which pyproject.toml does not declare"
        assert str(req.specifier) == str(declared[name].specifier), (
            f"environment.yml has {entry!r}, pyproject.toml has {str(declared[name])!r}"
        )
    for name, version in pins().items():  # the pins themselves, spelled identically
        listed = [e for e in pip_entries() if not e.startswith("-") and canonicalize_name(Requirement(e).name) == name]
        for entry in listed:
            assert Requirement(entry).specifier == SpecifierSet(f"=={version}"), (entry, version)


def test_environment_yml_conda_pins_equal_pyproject():
    for entry in conda_entries():
        name, version = split_conda(entry)
        if name in pins():
            assert version == pins()[name], f"environment.yml has {entry!r}, pyproject.toml pins {name}=={pins()[name]}"


def test_environment_yml_python_agrees_with_requires_python():
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    pythons = [version for name, version in map(split_conda, conda_entries()) if name == "python"]
    assert len(pythons) == 1 and pythons[0], f"environment.yml needs one `python=X.Y`, found {pythons}"
    assert Version(pythons[0]) in requires, f"environment.yml python={pythons[0]} outside requires-python {requires}"
    running = ".".join(map(str, sys.version_info[:3]))
    assert Version(running) in requires, f"tests run on Python {running}, pyproject requires {requires}"


def test_environment_yml_installs_the_package_with_dev_extra():
    editable = [re.sub(r"\s+", " ", e.replace("--editable", "-e")).replace("'", "").replace('"', "")
                for e in pip_entries() if e.startswith(("-e", "--editable"))]
    assert editable == ["-e .[dev]"], f"environment.yml's pip section must install `-e .[dev]`, has {editable}"
    assert "pip" in [split_conda(e)[0] for e in conda_entries()], "environment.yml must list pip"


@pytest.mark.parametrize("req", project_requirements(), ids=str)
def test_installed_versions_satisfy_pyproject(req):
    """The running interpreter has every dependency, the pins exactly (a local tag like +cu130 is allowed)."""
    try:
        installed = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        pytest.fail(f"{req.name} is not installed in {sys.prefix}: run `make setup`")
    assert req.specifier.contains(installed, prereleases=True), (
        f"{req.name} {installed} is installed in {sys.prefix}, pyproject.toml wants {req}: run `make setup`"
    )


def test_ci_runs_make_test():
    script = (ROOT / ".ci" / "run").read_text()
    commands = [line.split("#")[0] for line in script.splitlines()]
    assert "set -euo pipefail" in commands, ".ci/run must `set -euo pipefail`"
    assert any(re.match(r"\s*(exec\s+)?make\b.*\btest\b", line) for line in commands), ".ci/run must call `make test`"


def test_readme_gives_the_two_commands():
    readme = (ROOT / "README.md").read_text()
    for command in ("make run", "make test"):
        assert command in readme, f"README.md must mention `{command}`"


def test_makefile_targets_depend_on_setup():
    makefile = (ROOT / "Makefile").read_text()
    for target in ("test", "run", "notebooks", "bench", "lab"):
        assert re.search(rf"^{target}:[^\n=]*\bsetup\b", makefile, re.M), f"Makefile: `{target}` must depend on setup"
