"""The repository carries its own plan: README.md is a newcomer's page that links into docs/, every
relative link resolves, every "architecture principle N" the code cites is a principle of
docs/architecture.md, and no file cites a file outside the repository."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TEXT_SUFFIXES = {".py", ".md", ".txt", ".toml", ".cfg", ".ini", ".ipynb", ".sh", ".c", ".yml", ".yaml", ""}
OUTSIDE = ("DESIGN" + ".md", "../" + "shared", "/work" + "/shared")  # written apart, so this file does not cite them


def _repository_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True)
    if listed.returncode == 0:
        names = listed.stdout.splitlines()
    else:  # not a git checkout: every file but the virtualenv and caches
        names = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                 if p.is_file() and not {".venv", ".git", "__pycache__", "out"} & set(p.parts)]
    return [ROOT / n for n in names if (ROOT / n).is_file() and Path(n).suffix in TEXT_SUFFIXES]


def test_no_file_cites_a_file_outside_the_repository():
    cited = {}
    for path in _repository_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        found = [s for s in OUTSIDE if s in text]
        if found:
            cited[str(path.relative_to(ROOT))] = found
    assert not cited, f"files citing something outside the repository: {cited}"


def _markdown_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def test_every_relative_link_of_the_readme_and_docs_resolves():
    broken = []
    for page in _markdown_pages():
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            if not (page.parent / target.split("#", 1)[0]).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken


def test_the_readme_is_a_short_front_page_from_which_every_docs_page_is_reached():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200, "the README is a newcomer's page: put the details into docs/"
    for heading in ("## Set-up: two commands", "## The lessons", "## A first session on the command line",
                    "## From a script: the package's front door", "## Where to read next"):
        assert heading in readme
    reached, todo = set(), [ROOT / "README.md"]
    while todo:  # follow the links from the README, page to page
        page = todo.pop()
        for target in re.findall(r"\]\(([^)\s#]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            linked = (page.parent / target).resolve()
            if linked.parent == DOCS and linked.exists() and linked not in reached:
                reached.add(linked)
                todo.append(linked)
    unreached = sorted(p.name for p in DOCS.glob("*.md") if p.resolve() not in reached)
    assert not unreached, f"docs pages no link from the README leads to: {unreached}"


def test_every_principle_the_code_cites_is_written_in_the_architecture_page():
    architecture = (DOCS / "architecture.md").read_text(encoding="utf-8")
    principles = {int(n) for n in re.findall(r"^(\d+)\. \*\*", architecture, re.M)}
    assert principles == set(range(1, len(principles) + 1)) and len(principles) >= 5
    cited = set()
    for path in _repository_files():
        if path.suffix == ".py":
            cited |= {int(n) for n in re.findall(r"architecture(?:\.md,)? principle (\d+)", path.read_text(encoding="utf-8"))}
    assert cited and cited <= principles, f"cited {sorted(cited)}, written {sorted(principles)}"


def test_every_path_the_docs_name_exists():
    """A file or folder of the repository named in backticks on a docs page (``tests/...``,
    ``a2a_nb/...``, ``benchmarks/...``, ``scripts/...``) is there: a page never points at a test or a
    module that was renamed or never written (docs/surfaces.md names the tests of every surface)."""
    missing = []
    for page in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for path in re.findall(r"`((?:tests|a2a_nb|benchmarks|scripts)/[\w./-]*)`", page.read_text(encoding="utf-8")):
            if not (ROOT / path.rstrip("/")).exists() and not (ROOT / "a2a_nb" / path).exists():
                missing.append(f"{page.name}: {path}")
    assert not missing, missing
