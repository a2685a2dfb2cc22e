"""The documentation runs: README.md and docs/*.md code blocks, docstring examples.

Every fenced ```python block of a Markdown page runs, in the order of the page, in
one fresh namespace per page (a later block may use the names an earlier one made),
with the working directory a temporary one. ```bash, ```text and unlabelled blocks
are shown, not run. A failing block is reported by page and line.

The ``Examples`` sections of the package's docstrings run as doctests.
"""
import doctest
import importlib
import importlib.util
import pkgutil
import re
import textwrap
import traceback
from pathlib import Path

import pytest

import hetplace

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN_LANGUAGES = ("python", "py")

# an opening or closing fence: indentation, three or more backticks or tildes, info string
_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


def code_blocks(text):
    """Fenced code blocks of a Markdown text.

    Parameters
    ----------
    text : str
        The page.

    Returns
    -------
    list of (str, int, str)
        ``(language, line, source)`` per block, in page order: ``language`` is the
        first word of the info string (lower case, ``""`` when none), ``line`` the
        1-based line of the opening fence, ``source`` the dedented contents.

    Raises
    ------
    ValueError
        A block is never closed (the rest of the page would silently be code).
    """
    blocks = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, fence, indent = i, m["fence"], len(m["indent"])
        words = m["info"].strip().split()
        language = words[0].lower() if words else ""
        body = []
        i += 1
        while i < len(lines):
            close = _FENCE.match(lines[i])
            if (close is not None and close["fence"][0] == fence[0]
                    and len(close["fence"]) >= len(fence) and not close["info"].strip()):
                break
            body.append(lines[i][indent:] if lines[i][:indent].strip() == "" else lines[i])
            i += 1
        else:
            raise ValueError(f"the code block opened at line {start + 1} is never closed")
        blocks.append((language, start + 1, textwrap.dedent("\n".join(body))))
        i += 1
    return blocks


def run_page(path, name=None):
    """Run the Python blocks of one page in order in one fresh namespace.

    Parameters
    ----------
    path : pathlib.Path
        The Markdown page.
    name : str, optional
        How failures name the page (default: ``path``).

    Returns
    -------
    int
        The number of blocks run.

    Raises
    ------
    AssertionError
        A block raised; the message names the page, the block's line and the error.
    """
    name = name or str(path)
    namespace = {"__name__": "__docs__"}
    ran = 0
    for language, line, source in code_blocks(path.read_text(encoding="utf-8")):
        if language not in RUN_LANGUAGES:
            continue
        # padded so that tracebacks give the line numbers of the page itself
        code = compile("\n" * line + source, name, "exec")
        try:
            exec(code, namespace)
        except Exception:
            raise AssertionError(
                f"{name}: the python block at line {line} failed:\n{traceback.format_exc()}"
            ) from None
        ran += 1
    return ran


@pytest.fixture
def fresh_dir(tmp_path, monkeypatch):
    """A temporary working directory and a non-interactive matplotlib."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_markdown_python_blocks_run(page, fresh_dir):
    run_page(page, name=str(page.relative_to(ROOT)))


def test_readme_has_python_blocks():
    # guards the parser: if it found nothing, the page test would pass vacuously
    languages = [lang for lang, _, _ in code_blocks((ROOT / "README.md").read_text(encoding="utf-8"))]
    assert "python" in languages and "bash" in languages


def test_failing_block_is_reported_with_page_and_line(fresh_dir):
    page = fresh_dir / "page.md"
    page.write_text(
        "# t\n\n```python\nx = 1\n```\n\ntext\n\n```python\ny = x + undefined_name\n```\n",
        encoding="utf-8",
    )
    with pytest.raises(AssertionError, match=r"page\.md: the python block at line 9 failed") as err:
        run_page(page, name="page.md")
    # the traceback points at the page's own line of the failing statement
    assert 'File "page.md", line 10' in str(err.value)
    assert "undefined_name" in str(err.value)


def test_blocks_share_one_namespace_per_page_in_order(fresh_dir):
    page = fresh_dir / "page.md"
    page.write_text("```python\nx = 2\n```\n\n```py\nassert x == 2\nopen('made', 'w').close()\n```\n",
                    encoding="utf-8")
    assert run_page(page) == 2
    assert (fresh_dir / "made").exists()  # ran with cwd the temporary directory
    other = fresh_dir / "other.md"
    other.write_text("```python\nx\n```\n", encoding="utf-8")
    with pytest.raises(AssertionError, match="NameError"):  # a fresh namespace per page
        run_page(other)


def test_shell_text_and_unlabelled_blocks_are_not_run(fresh_dir):
    page = fresh_dir / "page.md"
    page.write_text(
        "```bash\nexit 1\n```\n```text\nraise SystemExit\n```\n```\nraise SystemExit\n```\n"
        "~~~~python\nok = '```'\n~~~~\n  ```python\n  indented = True\n  ```\n",
        encoding="utf-8",
    )
    assert [b[0] for b in code_blocks(page.read_text())] == ["bash", "text", "", "python", "python"]
    assert run_page(page) == 2


def test_unclosed_block_is_an_error():
    with pytest.raises(ValueError, match="line 2 is never closed"):
        code_blocks("x\n```python\nprint(1)\n")


# ---------------------------------------------------------------- docstring examples
def _public_modules():
    names = ["hetplace"]
    for info in pkgutil.walk_packages(hetplace.__path__, "hetplace."):
        parts = info.name.split(".")
        # kernels are private and example-free; __main__ would run the command line
        if parts[1] in ("_core", "__main__") or (parts[1] in _OPTIONAL and not _has(_OPTIONAL[parts[1]])):
            continue
        names.append(info.name)
    return names


#: Subpackages of optional extras, and the package each needs.
_OPTIONAL = {"torch": "torch", "ray": "ray", "service": "fastapi"}


def _has(package):
    return importlib.util.find_spec(package) is not None


def _has_torch():
    return _has("torch")


def _doctests():
    finder = doctest.DocTestFinder()
    tests = []
    for name in _public_modules():
        module = importlib.import_module(name)
        tests.extend(t for t in finder.find(module) if t.examples)
    return tests


DOCTESTS = _doctests()


def test_docstring_examples_exist():
    assert len(DOCTESTS) >= 5


@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples_run(test, fresh_dir):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    out = []
    result = runner.run(test, out=out.append)
    assert result.failed == 0, "".join(out)


# ---------------------------------------------------------------- shell commands of the pages
SHELL_LANGUAGES = ("bash", "sh", "shell", "console")
# repository folders a command may name; docs/_build is where Sphinx writes, not a source
_REPO_PATH = re.compile(r"^(?:tests|benchmarks|examples|fuzz|docs)/[\w./-]*$")


def shell_commands(text):
    """Commands of the shell blocks and inline code spans of a Markdown text.

    Parameters
    ----------
    text : str
        The page.

    Returns
    -------
    list of (str, list of str)
        ``(where, words)`` per command: ``where`` is ``"block"`` or ``"inline"``, ``words``
        the command split as the shell would, without leading ``NAME=value`` assignments.
        Continued lines are joined, ``&&`` chains split, comments dropped.
    """
    import shlex

    pieces = []
    for language, _, source in code_blocks(text):
        if language in SHELL_LANGUAGES:
            pieces += [("block", line) for line in source.replace("\\\n", " ").splitlines()]
    fenced = re.sub(r"^([ \t]*)(`{3,}|~{3,}).*?^\1\2[ \t]*$", "", text, flags=re.S | re.M)
    pieces += [("inline", span) for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", fenced)]
    commands = []
    for where, line in pieces:
        for part in line.split("&&"):
            try:
                words = shlex.split(part, comments=True)
            except ValueError:  # prose in backticks, not a command
                continue
            while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):
                words = words[1:]
            if words:
                commands.append((where, words))
    return commands


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_shell_commands_name_files_that_exist(page):
    # the README named tests/test_hostile_matching.py before that file was committed
    missing = sorted({w for _, words in shell_commands(page.read_text(encoding="utf-8"))
                      if words[0] in ("pytest", "python", "hetplace")
                      for w in words[1:] if _REPO_PATH.match(w) and not w.startswith("docs/_build")
                      and not (ROOT / w).exists()})
    assert not missing, f"{page.relative_to(ROOT)} runs commands on {missing}, which do not exist"


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_shell_blocks_hetplace_commands_parse(page, capsys):
    from hetplace.cli import _build_parser

    parser = _build_parser()
    ran = 0
    for where, words in shell_commands(page.read_text(encoding="utf-8")):
        if where != "block" or words[0] != "hetplace" or any(w.startswith(("[", "<")) for w in words):
            continue  # a synopsis ([--json], <host>) is not a command
        try:
            parser.parse_args(words[1:])
        except SystemExit:
            pytest.fail(f"{page.relative_to(ROOT)}: `{' '.join(words)}` is not a valid hetplace command:\n"
                        + capsys.readouterr().err)
        ran += 1
    if page.name == "README.md":
        assert ran >= 4  # guards the scan: the README's command-line block has four


def test_shell_commands_are_found_in_blocks_and_inline_code():
    text = ("Run `HETPLACE_X=1 pytest tests/a.py -k 'b or c'` or\n\n```bash\nhetplace bench \\\n"
            "    --quick  # comment\npip install . && hetplace\n```\n\n~~~python\n`pytest not_this.py`\n~~~\n")
    assert shell_commands(text) == [
        ("block", ["hetplace", "bench", "--quick"]), ("block", ["pip", "install", "."]),
        ("block", ["hetplace"]), ("inline", ["pytest", "tests/a.py", "-k", "b or c"])]
