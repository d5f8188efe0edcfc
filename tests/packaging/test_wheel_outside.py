"""The package as a user installs it: a wheel built from the checkout, installed into a fresh venv in a
temporary folder, then run from there with the checkout out of reach (no ``PYTHONPATH``, another
working directory). ``story``, ``serve ticket-desk`` + ``send`` and lesson 00 must find what they need
inside the installed package (the ticket data and recordings: :mod:`a2a_nb.data`).

The fresh venv holds the wheel alone; its dependencies come from the test venv's ``site-packages``,
named in a ``.pth`` file (a plain folder on ``sys.path``: the editable install of the checkout that
folder holds is not activated), so nothing is downloaded. The wheel is built without build isolation
when the test venv's setuptools meets ``[build-system]``, else with it (pip fetches setuptools once).
"""
from __future__ import annotations

import os
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("a2a_nb", "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md")


def _build_isolation_needed() -> bool:
    """True when this venv cannot build the wheel itself: its setuptools is older than pyproject.toml's
    ``[build-system]`` asks, or older than 70.1 (which builds wheels without the ``wheel`` package)."""
    tomllib = pytest.importorskip("tomllib")
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import Requirement
    from packaging.version import Version

    needs = [Requirement(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]]
    try:
        if Version(version("setuptools")) < Version("70.1"):
            return True
        return not all(r.specifier.contains(version(r.name), prereleases=True) for r in needs)
    except PackageNotFoundError:  # a build requirement this venv does not have
        return True


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """``(venv folder, run directory, wheel file, timings)``: the wheel installed in a fresh venv, outside the checkout."""
    base = tmp_path_factory.mktemp("wheel-outside")
    timings: dict[str, float] = {}
    src = base / "src"  # a copy: the build leaves build/ and *.egg-info in the checkout otherwise
    src.mkdir()
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif (ROOT / name).exists():
            shutil.copy(ROOT / name, src / name)
    t0 = time.monotonic()
    isolation = [] if _build_isolation_needed() else ["--no-build-isolation"]
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", *isolation,
                          "-w", str(base / "dist"), str(src)], capture_output=True, text=True, timeout=240, cwd=base)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    timings["build"] = time.monotonic() - t0
    wheel, = (base / "dist").glob("a2a_nb-*.whl")

    t0 = time.monotonic()
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=30).stdout.strip()
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "--no-deps", "--no-index",
                          "-q", str(wheel)], capture_output=True, text=True, timeout=120, cwd=base)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    # the dependencies: this venv's site-packages, as a plain folder after the fresh venv's own
    deps = [p for p in {sysconfig.get_paths()["purelib"], *site.getsitepackages()} if Path(p).is_dir()]
    (Path(purelib) / "zz_test_dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    timings["install"] = time.monotonic() - t0
    run_dir = base / "elsewhere"
    run_dir.mkdir()
    return venv, run_dir, wheel, timings


def _env(venv: Path, run_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", HOME=str(run_dir),
               XDG_STATE_HOME=str(run_dir / "state"), A2A_UBSP_DIR=str(run_dir / "ubsp"),
               PYTHONNOUSERSITE="1", MPLBACKEND="Agg")
    return env


def _run(argv: list, venv: Path, run_dir: Path, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, env=_env(venv, run_dir), cwd=run_dir, capture_output=True, text=True,
                          timeout=timeout, **kw)


def test_the_wheel_holds_the_data_and_imports_from_the_venv(installed):
    venv, run_dir, wheel, timings = installed
    out = _run([str(venv / "bin" / "python"), "-c",
                "import a2a_nb, a2a_nb.data as d; from a2a_nb.story import ticket_data;"
                "print(a2a_nb.__file__); print(d.recording('full')); print(len(ticket_data.load().orders))"],
               venv, run_dir)
    assert out.returncode == 0, out.stderr
    module, recording, orders = out.stdout.split()
    assert module.startswith(str(venv)) and recording.startswith(str(venv)), out.stdout  # not the checkout
    assert int(orders) > 0
    print(f"wheel built in {timings['build']:.1f} s, installed in {timings['install']:.1f} s")


def test_the_wheel_carries_license_types_and_metadata(installed):
    """LICENSE, py.typed (PEP 561) and the data inside; the metadata names the license, the Python
    range, the project's URLs and classifiers."""
    import zipfile
    from email.parser import Parser

    wheel = installed[2]
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta_name, = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(z.read(meta_name).decode())
    assert {"a2a_nb/py.typed", "a2a_nb/data/tickets.csv", "a2a_nb/data/recordings/full.jsonl"} <= names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)[:20]
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"] == ">=3.11"
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert urls["Source"].startswith("https://github.com/") and "Changelog" in urls
    assert "Typing :: Typed" in meta.get_all("Classifier")


def test_version_from_both_entry_points(installed):
    venv, run_dir, *_ = installed
    import a2a_nb
    for argv in ([str(venv / "bin" / "a2a-nb"), "--version"], [str(venv / "bin" / "python"), "-m", "a2a_nb", "--version"]):
        out = _run(argv, venv, run_dir)
        assert (out.returncode, out.stdout) == (0, f"a2a_nb {a2a_nb.__version__}\n"), out.stderr


def test_the_missing_extra_hint_names_the_wheel_it_came_from(installed, tmp_path):
    """Installed from a wheel, the hint installs the extra from that wheel (the kit is on no public
    index), with the venv's own Python; pip accepts the requirement as written."""
    venv, run_dir, wheel, timings = installed
    out = _run([str(venv / "bin" / "python"), "-c",
                "from a2a_nb.installed import install_extra_command as c; print(c('notebook'))"], venv, run_dir)
    assert out.returncode == 0, out.stderr
    command = out.stdout.strip()
    assert command == f"{venv / 'bin' / 'python'} -m pip install '{wheel}[notebook]'"
    requirement = command.split(" install ", 1)[1].strip("'")
    check = subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
                            "--dry-run", "--no-deps", "--no-index", "-q", requirement],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert check.returncode == 0, check.stderr


def test_mypy_reads_the_installed_package_types(installed, tmp_path):
    """py.typed: mypy checks a user's script against the installed kit's annotations (without it:
    'missing library stubs or py.typed marker')."""
    venv, run_dir, *_ = installed
    script = run_dir / "user_script.py"
    script.write_text("from a2a_nb.data import recording\nname: int = recording('happy')\n")
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                          "--python-executable", str(venv / "bin" / "python"), str(script)],
                         capture_output=True, text=True, timeout=180, cwd=run_dir,
                         env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")})
    assert "py.typed" not in out.stdout, out.stdout
    assert 'Incompatible types in assignment (expression has type "Path", variable has type "int")' in out.stdout, out.stdout


def test_story_runs_from_the_installed_console_script(installed, broker_url):
    venv, run_dir, *_ = installed
    out = _run([str(venv / "bin" / "a2a-nb"), "story", "--scenario", "happy", "--pace", "0"], venv, run_dir)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "OK  happy" in out.stdout


def test_serve_ticket_desk_and_send_with_python_dash_m(installed, broker_url):
    venv, run_dir, *_ = installed
    py = str(venv / "bin" / "python")
    desk = subprocess.Popen([py, "-m", "a2a_nb", "serve", "ticket-desk", "--pace", "0.01", "--unit", "wheel"],
                            env=_env(venv, run_dir), cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        line = desk.stdout.readline()
        assert "serving" in line, line + desk.stderr.read() if desk.poll() is not None else line
        out = _run([py, "-m", "a2a_nb", "send", "ticket-desk", "Analyze ticket TCK-4821\nReproduction: refresh twice",
                    "--unit", "wheel", "--stream"], venv, run_dir)
        assert out.returncode == 0, out.stdout + out.stderr
        assert "completed" in out.stdout and "artifactUpdate" in out.stdout, out.stdout
    finally:
        desk.terminate()
        assert desk.wait(timeout=15) == 0


RUN_LESSON = """
import sys
import nbformat
from nbclient import NotebookClient

nb = nbformat.read(sys.argv[1], as_version=4)
nb.cells.append(nbformat.v4.new_code_cell("import a2a_nb; print('kernel uses', a2a_nb.__file__)"))
NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.get("output_type") == "error"]
print("errors", len(errors))
print("".join(o.get("text", "") for o in nb.cells[-1].outputs))
"""


def test_lesson_00_runs_from_the_installed_package(installed, broker_url):
    venv, run_dir, *_ = installed
    lesson = run_dir / "00-start-here.ipynb"
    shutil.copy(ROOT / "notebooks" / "00-start-here.ipynb", lesson)
    out = _run([str(venv / "bin" / "python"), "-c", RUN_LESSON, str(lesson), str(run_dir)], venv, run_dir,
               timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "errors 0" in out.stdout, out.stdout
    assert f"kernel uses {venv}" in out.stdout, out.stdout  # the kernel ran on the installed package
