"""The README's quick start prints what it shows, and CI runs its commands."""

import doctest
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_readme_quickstart_prints_what_it_shows():
    (block,) = re.findall(r"```pycon\n(.*?)```", README, flags=re.S)
    test = doctest.DocTestParser().get_doctest(block, {}, "README", "README.md", 0)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 10
    assert result.failed == 0


def test_ci_runs_the_readme_test_commands():
    (first,) = re.findall(r"```bash\n(.*?)```", README[:2000], flags=re.S)
    commands = [line for line in first.splitlines() if line.startswith("python")]
    quick, full = commands[1], commands[2]
    assert quick.endswith('python -m pytest -n 2 -m "not slow"')
    assert full.endswith("python -m pytest -n 2")
    assert full in (ROOT / ".ci" / "run").read_text().splitlines()
    assert commands[0].endswith("skcalib report")
