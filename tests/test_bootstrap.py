"""The stack selection rule of the setup command (tools/bootstrap.sh --print-stack)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOTSTRAP = os.path.join(ROOT, "tools", "bootstrap.sh")


def choose(**env):
    result = subprocess.run(["bash", BOOTSTRAP, "--print-stack"], capture_output=True, text=True,
                            env=dict(os.environ, **env), timeout=60)
    return result.returncode, result.stderr.strip()


def glibc():
    return tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])


def test_auto_picks_the_newest_stack_this_machine_can_install():
    code, said = choose(TFXLINE_STACK="auto")
    assert code == 0 and said.startswith("stack: TFX "), said
    if glibc() < (2, 39):
        assert said.startswith("stack: TFX 1.16 ") and "< 2.39" in said
    elif (3, 11) <= sys.version_info[:2] <= (3, 13):  # this interpreter is one the rule accepts
        assert said.startswith("stack: TFX 1.21 ") and ">= 2.39" in said
    # the lock file it names exists
    lock = said.split("(", 1)[1].split(")", 1)[0]
    assert os.path.isfile(os.path.join(ROOT, lock))


def test_explicit_stack_and_bad_values():
    code, said = choose(TFXLINE_STACK="1.16")
    assert code == 0 and "requirements/tfx-1.16-py310.lock.txt" in said
    code, said = choose(TFXLINE_STACK="1.21")
    if glibc() < (2, 39):
        assert code == 1 and "needs glibc >= 2.39" in said and "make test-tfx121" in said
    else:
        assert code == 0 and "requirements/tfx-1.21-py313.lock.txt" in said
    code, said = choose(TFXLINE_STACK="2.0")
    assert code == 1 and said == "error: TFXLINE_STACK=2.0 is not a stack; use 1.21, 1.16 or auto"


def test_the_suites_stacks_are_the_locks_and_this_one_is_among_them():
    """tests/conftest.py's STACKS (what a one_stack test may name) are the stacks with a lock file,
    and the installed tfx is one of them: a test kept to one stack's suite runs in one of them."""
    import re

    from tests.conftest import STACKS, tfx_stack

    names = os.listdir(os.path.join(ROOT, "requirements"))
    locks = sorted(m[1] for m in (re.fullmatch(r"tfx-(\d+\.\d+)-py\d+\.lock\.txt", n) for n in names) if m)
    assert sorted(STACKS) == locks and tfx_stack() in STACKS


def test_a_one_stack_test_is_skipped_in_the_other_suite_only_where_both_run(monkeypatch):
    import pytest

    from tests import conftest

    class Item:
        def __init__(self, *args, **kwargs):
            self.nodeid, self.marker, self.added = "t", pytest.mark.one_stack(*args, **kwargs).mark, []

        def get_closest_marker(self, name):
            return self.marker if name == self.marker.name else None

        def add_marker(self, marker):
            self.added.append(marker.mark)

    here = conftest.tfx_stack()
    other = next(s for s in conftest.STACKS if s != here)
    for both, stack, skipped in (("1", other, True), ("1", here, False), ("", other, False), ("0", other, False)):
        monkeypatch.setenv(conftest.BOTH_STACKS, both)
        item = Item(stack, why="covered elsewhere")
        conftest.pytest_collection_modifyitems(None, [item])
        assert [m.name for m in item.added] == (["skip"] if skipped else []), (both, stack)
        if skipped:
            assert item.added[0].kwargs["reason"] == (f"TFXLINE_BOTH_STACKS: runs in the TFX {stack} suite "
                                                      "(covered elsewhere)")
    for args, kwargs in ((("2.0",), {"why": "x"}), ((here,), {})):  # a stack no suite runs; no reason given
        with pytest.raises(pytest.UsageError, match="one_stack takes one of"):
            conftest.pytest_collection_modifyitems(None, [Item(*args, **kwargs)])
