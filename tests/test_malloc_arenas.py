"""local/malloc_arenas.py: a tfxline command's process takes at most two glibc malloc arenas, and
passes the limit to its children; a limit the user set stays theirs."""
import os
import subprocess
import sys

from tests.conftest import ROOT

PROBE = "from tfxline.local import malloc_arenas; print(malloc_arenas.limit(), __import__('os').environ.get('MALLOC_ARENA_MAX'))"


def probe(**env):
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, cwd=ROOT,
                            env={**clean, **env}, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


def test_two_arenas_here_and_in_children():
    assert probe() == ["True", "2"]


def test_a_limit_the_user_set_is_kept():
    assert probe(MALLOC_ARENA_MAX="4") == ["False", "4"]


def test_the_command_sets_it_before_it_runs():
    clean = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    code = ("import os; from tfxline.cli import main; "
            "main.main = lambda: print(os.environ.get('MALLOC_ARENA_MAX')) or 0; main.entry()")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=clean,
                            timeout=300)
    assert result.returncode == 0 and result.stdout.split() == ["2"], (result.stdout, result.stderr[-2000:])
