import subprocess
import sys

from croft.core import identity
from croft.core.redact import Redactor


def test_this_process_is_alive():
    assert identity.is_alive(identity.current())


def test_a_process_that_ended_is_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    who = identity.ProcessIdentity(child.pid, identity.start_time(child.pid), identity.boot_id())
    child.wait()
    assert not identity.is_alive(who)


def test_a_reused_pid_with_another_start_time_is_not_the_recorded_process():
    me = identity.current()
    impostor = identity.ProcessIdentity(me.pid, "1", me.boot)
    if me.start is not None:
        assert not identity.is_alive(impostor)
    other_boot = identity.ProcessIdentity(me.pid, me.start, "another-boot")
    if me.boot is not None:
        assert not identity.is_alive(other_boot)


def test_redactor_names_the_secret_and_hides_longer_values_first():
    redact = Redactor({"TOKEN": "abcd1234", "SHORT": "abc", "PART": "1234"})
    assert redact.text("key=abcd1234&x=abc") == "key=[redacted:TOKEN]&x=abc"
    assert redact.obj({"url": ["?t=1234"]}) == {"url": ["?t=[redacted:PART]"]}
    assert redact.names == ["PART", "TOKEN"]
