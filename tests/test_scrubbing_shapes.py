"""Credentials in the shapes production text writes them, as an outside tester pushes them
through the default scrubber: a flag glued to the end of another secret, a labelled value
whatever its punctuation and whatever the label's separator, a ``*_KEY`` label over a random
value, a client's password flag. Each is replaced by a scrub that runs once, and scrubbing
the result again changes nothing; the text around stays readable."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_otel import Scrubber
from test_scrubbing import assert_scrubbed, fakes

F = fakes()
PASSWORD = "Zq9x" + "Hunter2Abc"
FLAGS = (" --password ", "--password ", "--api-key=", "--client-secret ", "--token=")


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(F.values())), st.sampled_from(FLAGS), st.text(max_size=20))
def test_a_flag_glued_to_the_end_of_a_secret_loses_its_value_in_one_scrub(
    secret: str, flag: str, after: str
) -> None:
    """A flag whose ``--`` follows another detector's secret (``ghp_...--password VALUE``:
    words joined by a log line or an f-string) was read as glued to a word, so not a flag, on
    the first scrub; the second, seeing a marker before the ``--``, found its value."""
    text = secret + flag + PASSWORD + (" " + after if after else "")
    once = Scrubber().text(text)
    assert_scrubbed(once, PASSWORD)
    assert_scrubbed(once, secret)
    assert Scrubber().text(once) == once
