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
