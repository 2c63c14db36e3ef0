"""Credentials in the shapes production text writes them, as an outside tester pushes them
through the default scrubber: a flag glued to the end of another secret, a labelled value
whatever its punctuation and whatever the label's separator, a ``*_KEY`` label over a random
value, a client's password flag. Each is replaced by a scrub that runs once, and scrubbing
the result again changes nothing; the text around stays readable."""

from __future__ import annotations

import argparse
import base64
import json
import logging
import random
import re
import string
import textwrap
import unittest

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_otel import Scrubber
from test_scrubbing import ALNUM, HEX, assert_scrubbed, fakes

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


# --- a labelled value, whatever its punctuation ---------------------------------------------
SYMBOLS = "!#$%*+,.:;<=>?@[]^_{|}~"
CONTAINERS = {
    "env": "DB_PASSWORD={}",
    "ini": "[db]\npassword = {}\nhost = db.internal\n",
    "dsn": "host=db user=app password={} dbname=prod",
    "json": '{{"password": "{}", "user": "app"}}',
    "yaml_quoted": 'db:\n  password: "{}"\n  pool: 5',
    "yaml": "db:\n  password: {}\n  pool: 5",
    "flag": "mytool --password={} --verbose",
    "flag_space": "mytool --password {} --verbose",
    "kwargs": "connect(host='db', password='{}')",
}


def generated_password() -> st.SearchStrategy[str]:
    """A password as generators make them: letters, digits and symbols, starting with a letter
    (a leading ``-`` or ``$x`` reads as a flag or a variable; an unquoted YAML value needs a
    letter and a digit), without the few pairs that end a value wherever it is written
    (``</``, ``><``)."""
    body = st.text(st.sampled_from(ALNUM + SYMBOLS), min_size=7, max_size=30)
    letters = st.sampled_from(string.ascii_letters)
    return st.builds(lambda head, rest: head + "9" + rest, letters, body).filter(
        lambda p: "</" not in p and "><" not in p
    )


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(CONTAINERS)), generated_password())
def test_a_labelled_password_with_symbols_leaves_nothing_of_itself(
    container: str, password: str
) -> None:
    """A value after its label was cut at the first ``<``, ``>``, ``;``, ``,``, ``|`` or ``$``
    (and not found at all when fewer than three characters came before it), and a quoted one
    holding a backslash was not found: the rest of a generated password was exported."""
    if container == "json":
        password = password.replace("\\", "")  # json.dumps would escape it: its own case below
    out = Scrubber().text(CONTAINERS[container].format(password))
    assert_scrubbed(out, password)
    assert Scrubber().text(out) == out


@settings(max_examples=200, deadline=None)
@given(
    st.text(st.sampled_from(ALNUM + "!$*+,.;=<>[]^_{|}~/"), min_size=7, max_size=30).filter(
        lambda p: not p.split("/", 1)[0].isdigit()  # digits then "/": a port and a path
    )
)
def test_a_url_password_with_symbols_or_a_slash_leaves_nothing_of_itself(password: str) -> None:
    """A password written into a URL unescaped (base64's ``/``, a generator's ``<`` or ``;``)
    was not found: ``postgres://app:ab/cd@db`` went out whole."""
    password = "Zq9" + password
    for text in (
        f"could not connect to postgres://app:{password}@db.internal:5432/prod",
        f"mongodb+srv://ops:{password}@cluster0.example.net/db?retryWrites=true",
    ):
        out = Scrubber().text(text)
        assert_scrubbed(out, password)
        assert "db.internal:5432/prod" in out or "cluster0.example.net/db" in out


# no "." or ":" after an "@": "@db.example.com?" or "@db:5432#" reads as a host and its query
_URL_SYMBOLS = st.text(st.sampled_from(ALNUM + "!$*+,;=_~@?#"), max_size=10)


@settings(max_examples=100, deadline=None)
@given(
    _URL_SYMBOLS,
    st.sampled_from(["@{}?", "@{}#", "?{}@", "#{}@", ":{}@{}#"]),
    _URL_SYMBOLS,
    _URL_SYMBOLS,
)
def test_a_url_password_with_an_at_sign_and_a_query_or_fragment_mark_leaves_nothing(
    head: str, marks: str, middle: str, tail: str
) -> None:
    """A password holding an ``@`` and a ``?`` or ``#`` unescaped (``P@ss:w0rd#1``, as
    generators make them) was cut at its first ``@``: the rest went out as the host."""
    password = "Zq9" + head + marks.format(middle, middle) + tail
    for text in (
        f"could not connect to postgres://app:{password}@db.internal:5432/prod",
        f"mongodb+srv://ops:{password}@cluster0.example.net/db?retryWrites=true",
        f"redis://:{password}@cache/0",
    ):
        out = Scrubber().text(text)
        assert_scrubbed(out, password)
        assert any(h in out for h in ("@db.internal:5432/prod", "@cluster0.example", "@cache/0"))
        assert Scrubber().text(out) == out


def test_a_host_and_a_query_with_an_at_sign_are_kept_beside_a_password() -> None:
    out = Scrubber().text("https://app:Zq9pw@db.example.com?cc=ann@example.com")
    assert out == "https://[REDACTED:url_credentials len=9]@db.example.com?cc=ann@example.com"


def test_a_port_and_a_path_with_an_at_sign_are_no_credentials() -> None:
    for text in ("https://example.com:443/@alice", "http://localhost:3000/u/@me?x=1"):
        assert Scrubber().text(text) == text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ('"password" => "{}"', "ruby_or_php_hash"),
        ("password => {}", "arrow"),
        ('password := "{}"', "go"),
        ("password:{}", "no_space"),
        ('password:"{}"', "no_space_quoted"),
        ('password: str = "{}"', "annotated"),
        ('api_key: Optional[str] = "{}"', "annotated_optional"),
        ('client_secret: str | None = "{}"', "annotated_union"),
        ("db:\n  password: |\n    {}\n  pool: 5", "yaml_block"),
        ("password: >-\n  {}\n", "yaml_folded"),
        ('{{"password": "{}\\"x"}}', "json_escaped_quote"),
        ("{{'password': '{}\\\\x'}}", "repr_backslash"),
    ],
    ids=lambda v: v if "{" not in v else None,
)
def test_every_separator_between_a_label_and_its_value(text: str, secret: str) -> None:
    """``=>`` (Ruby, PHP), ``:=`` (Go), ``key:value`` with no space, a type annotation
    (``password: str = "..."``, a settings class), a YAML block scalar, a quoted value holding
    an escape: the label was there, the value went out."""
    del secret
    out = Scrubber().text(text.format(PASSWORD))
    assert_scrubbed(out, PASSWORD, "key_value")
    assert Scrubber().text(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "password: must be 8 chars",
        "the password:",
        "password: str = Field(...)",
        "https://x-access-token@github.com/o/r.git",
    ],
)
def test_a_label_in_prose_keeps_its_words(text: str) -> None:
    assert Scrubber().text(text) == text


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("my api key is {}", "abcdefghijklmnopqrstuv"),
        ("My Mistral API key is {}.", "QwZxKjVbNmRtPlKjHgFdSwEr"),
        ("the access token was set to '{}' yesterday", "XKCDQZJWVBPLMFGHYTRSNKQW"),
        ("Incorrect API key provided: {}", "jfkwqpzmvxbnqlrtyghcwdkp"),
        ("OPENAI_API_KEY: {}", "abcdefghijklmnopqrstuvwx"),  # YAML, a settings dump
        ("X-Auth-Token: {}", "QwZxKjVbNmRtPlKjHgFdSwEr"),  # a header
        ("curl -H 'x-api-key: {}' https://api", "abcdefghijklmnopqrstuvwx"),
        ("api-key: {}", "jfkwqpzmvxbnqlrtyghcwdkp"),  # Azure OpenAI's header
    ],
)
def test_a_key_of_letters_alone_after_its_label_in_prose_is_replaced(text: str, key: str) -> None:
    """A key with no prefix of its own that drew no digit (letters alone, which 20 random
    letters and digits draw about once in a hundred keys, and a tester or a user writes) went
    out whole after its label in prose, a header's name or an unquoted ``name: value``: letters
    alone were kept as a name. Letters drawn at random are told from a name or words run
    together by which letters they are."""
    out = Scrubber().text(text.format(key))
    assert_scrubbed(out, key)
    assert out.startswith(text.partition("{}")[0])
    assert Scrubber().text(out) == out


def test_keys_of_letters_alone_are_found_and_words_run_together_kept_as_a_rule() -> None:
    """A key of 20 random lower-case letters after its label was kept about one time in six
    (of both cases, one in four): letters were told random by how few of English's commonest
    twelve they held, and a random draw often holds that many. Pairs of neighbouring letters
    tell better: random letters' are mostly pairs words seldom hold. Of 200 such keys at least
    196 are replaced now (190 of both cases); of 200 runs of words from the standard library's
    own prose, no more than 3 are taken."""
    draw = random.Random(20)
    for letters, least in ((string.ascii_lowercase, 196), (string.ascii_letters, 190)):
        keys = ["".join(draw.choices(letters, k=20)) for _ in range(200)]
        found = sum("[REDACTED" in Scrubber().text(f"my api key is {key}") for key in keys)
        assert found >= least, (letters, found)
    prose = " ".join(m.__doc__ or "" for m in (argparse, json, logging, textwrap, unittest))
    vocabulary = sorted({w.lower() for w in re.findall(r"[A-Za-z]{3,}", prose)})
    assert len(vocabulary) > 300
    runs = []
    for _ in range(200):
        run = ""
        while len(run) < 20:
            run += draw.choice(vocabulary)
        runs.append(run)
    taken = [run for run in runs if "[REDACTED" in Scrubber().text(f"my api key is {run}")]
    assert len(taken) <= 3, taken


@pytest.mark.parametrize(
    "text",
    [
        "the api key is internationalization; the api key is AzureKeyVaultSecretName",
        "set your api key via AgentSettingsFromEnvironment, the token was ThisIsAVeryLongName",
        "the api key is missingfromtheenvironment; the secret is GLKEffectPropertyFogColor",
        "the access token is MMMMMMMMVMMMMMMMMMMMMMMMXM and the api key is TRANSFORMERSCACHE",
        "password: PasswordFromEnvironmentVariable, token: AuthenticationRequiredForThis",
    ],
)
def test_a_name_or_words_run_together_after_a_label_in_prose_are_kept(text: str) -> None:
    assert Scrubber().text(text) == text


@pytest.mark.parametrize(
    ("text", "password"),
    [
        ("connect with app:swordfish@db.example.com now", "swordfish"),
        ("the database is at app:letmein@db.example.com.", "letmein"),
        ("ssh deploy:hunter@build-server and retry", "hunter"),
        ("(admin:changeme@10.0.0.5)", "changeme"),
        ("the database is at app:s3cret@db.example.com.", "s3cret"),  # a sentence's stop
    ],
)
def test_a_user_and_password_before_a_host_in_prose_lose_the_password(
    text: str, password: str
) -> None:
    """``app:PASSWORD@db.example.com`` in prose went out whole when the password was letters
    alone (read as a label before an address, ``From:bob@example.com``), and any password
    before a host that ended a sentence. RFC 5322 keeps ``:`` out of an address's local part:
    ``word:word@host`` is a label and an address only when the word names an address."""
    out = Scrubber().text(text)
    assert_scrubbed(out, password, "url_credentials")
    user = text.split(":")[0].split()[-1].strip("(")
    assert f"{user}:[REDACTED:url_credentials len={len(password)}]@" in out
    assert Scrubber().text(out) == out


def test_a_label_before_an_address_in_prose_is_kept() -> None:
    text = (
        "From:bob@example.com To:ann@example.org cc:team@example.net mailto:ops@example.com, "
        "sip:alice@atlanta.example, xmpp:juliet@example.com, Email:carol@example.com, "
        "see user:alice@example.com, Owner:dave@example.com, Support:help@example.com; "
        "https://host/#x:y@z "
        "at 12:30@home, python:slim@sha256:abc, x:y@db.example/"
    )
    assert Scrubber().text(text) == text


# --- a label that ends in "key", over a random value -----------------------------------------
KEY_LABELS = ("AZURE_OPENAI_KEY", "storage_key", "searchAdminKey", "license-key", "SPEECH_KEY")
RANDOM_KEYS = st.one_of(
    st.text(st.sampled_from(HEX), min_size=32, max_size=32).filter(
        lambda k: not k.isdigit() and any(c.isdigit() for c in k)
    ),  # an Azure AI services key
    st.builds(lambda k: "Zq9" + k, st.text(st.sampled_from(ALNUM), min_size=30, max_size=81)),
    st.builds(lambda k: "Zq9" + k + "==", st.text(st.sampled_from(ALNUM + "+/"), min_size=40)),
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(KEY_LABELS),
    RANDOM_KEYS,
    st.sampled_from(("{}={}", "{}: {}", '"{}": "{}"', "export {}='{}'")),
)
def test_a_random_value_under_a_key_label_is_a_secret_in_text_and_content(
    label: str, key: str, form: str
) -> None:
    """``AZURE_OPENAI_KEY`` (Azure's own variable name), ``storage_key``, ``searchAdminKey``:
    the key names' table has ``api key`` and ``access key``, not every service's ``*_KEY``,
    so a 32-hex-digit Azure key under one went out in text and in tool arguments alike."""
    out = Scrubber().text(form.format(label, key))
    assert_scrubbed(out, key, "key_value")
    assert label in out
    content = Scrubber().value({label: key, "region": "westeurope"})
    assert content == {label: f"[REDACTED:key_name len={len(key)}]", "region": "westeurope"}


@pytest.mark.parametrize(
    "text",
    [
        "sort_key=created_at",
        "cache_key=user:42",
        "primary_key: id",
        "idempotency_key=550e8400-e29b-41d4-a716-446655440000",
        "partition_key: tenant-eu-west",
        "key=3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e",  # "key" alone says nothing (docs: known limits)
    ],
)
def test_a_key_label_over_a_name_or_an_id_is_kept(text: str) -> None:
    assert Scrubber().text(text) == text
    name, _, value = text.replace(": ", "=").partition("=")
    assert Scrubber().value({name: value}) == {name: value}


# --- a client's password flag, a setting as XML attributes -------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "mysql -h db.internal -uroot -p{} prod",
        "mysqldump -u root -p{} --all-databases > dump.sql",
        "mariadb -u app -p{}",
        "Command '['mysql', '-uroot', '-p{}', 'prod']' returned non-zero exit status 1.",
        "redis-cli -h cache -a {} ping",
        "['redis-cli', '-a', '{}', 'INFO']",
        '<add key="DbPassword" value="{}"/>',
        "<property name='password' value='{}'/>",
        # a client's own flag, named by the client; a password given as a positional argument
        "redis-cli --user app --pass {} ping",
        "mongosh -u admin -p {} --authenticationDatabase admin",
        "['mongodump', '--uri', 'mongodb://db', '-u', 'ops', '-p', '{}']",
        "sqlcmd -S db.internal -U sa -P {} -Q 'SELECT 1'",
        "ldapsearch -x -D cn=admin,dc=example -w {} -b dc=example",
        "az login --service-principal -u app-id -p {} --tenant t",
        "smbclient //fs/share -U ops%{} -c ls",
        "Command 'htpasswd -b /etc/nginx/.htpasswd ops {}' returned non-zero exit status 1.",
        "['htpasswd', '-B', '-C', '10', '-bc', '.htpasswd', 'ops', '{}']",
        "htpasswd -nb ops {} > users",
        "rabbitmqctl add_user ops {}",
        "['rabbitmqctl', '-n', 'rabbit@mq', 'change_password', 'ops', '{}']",
        "openssl pkcs12 -export -in c.pem -passout pass:{} -out c.p12",
        "aws configure set aws_secret_access_key {} --profile ci",
        "['aws', 'configure', 'set', 'aws_session_token', '{}']",
        "npm config set //registry.example.com/:_authToken {}",
        "poetry config pypi-token.pypi {}",
    ],
)
def test_a_clients_password_flag_and_an_xml_setting_lose_their_value(text: str) -> None:
    """``mysql -pSECRET`` (the form mysql's own docs show), ``redis-cli -a SECRET``, .NET's
    ``<add key="DbPassword" value="..."/>``: the value sat beside its label in a form no
    detector read."""
    out = Scrubber().text(text.format(PASSWORD))
    assert_scrubbed(out, PASSWORD)
    assert Scrubber().text(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "sshpass -p '{}' ssh ops@host",
        'sshpass -p "{}" ssh ops@host',
        "mysql -u root -p'{}' prod",
        'mariadb -uroot -p"{}" prod',
        "redis-cli -a '{}' ping",
        "docker login -u ops -p '{}' ghcr.io",
        'sqlcmd -S db -U sa -P "{}" -Q "select 1"',
        "ldapsearch -x -D cn=admin -w '{}' -b dc=example",
        "mongosh -u app -p '{}' --authenticationDatabase admin",
        "smbclient //fs/share -U 'ops%{}' -c ls",
    ],
)
def test_a_clients_password_flag_quoted_for_the_shell_loses_its_value(text: str) -> None:
    """A command as a shell tool's line writes it, the value of a one-letter password flag in
    quotes (``sshpass -p 'SECRET'``, ``mysql -p'SECRET'``): only a bare value was read, and
    the quoted one went out whole; the quotes are kept, the value alone is redacted."""
    password = PASSWORD + " and more"  # what quotes are for: a passphrase with spaces
    out = Scrubber().text(text.format(password))
    assert out == text.format(f"[REDACTED:command_line len={len(password)}]")
    assert Scrubber().text(out) == out


def test_a_client_command_as_an_argv_list_loses_its_password() -> None:
    argv = ["mysql", "-uroot", "-p" + PASSWORD, "prod"]
    out = Scrubber().value({"argv": argv})["argv"]
    assert out[:2] == ["mysql", "-uroot"] and out[3] == "prod"
    assert_scrubbed(out[2], PASSWORD, "command_line")


@pytest.mark.parametrize(
    "argv",
    [
        ["htpasswd", "-bc", "/etc/nginx/.htpasswd", "ops", "{}"],
        ["htpasswd", "-nbB", "ops", "{}"],
        ["rabbitmqctl", "add_user", "ops", "{}"],
        ["aws", "configure", "set", "aws_secret_access_key", "{}"],
        ["npm", "config", "set", "//registry.example.com/:_authToken", "{}"],
        ["redis-cli", "--pass", "{}", "PING"],
    ],
    ids=["htpasswd", "htpasswd_n", "rabbitmqctl", "aws", "npm", "redis"],
)
def test_a_positional_or_client_password_in_an_argv_list_is_redacted_in_its_item(
    argv: list[str],
) -> None:
    """A tool's ``{"argv": [...]}`` scrubbed item by item: a password given as a positional
    argument (no flag in the list at all, ``aws configure set NAME VALUE``) was never read
    as a command, and went out whole."""
    out = Scrubber().value({"argv": [a.format(PASSWORD) for a in argv]})["argv"]
    secret = argv.index("{}")
    assert out[:secret] == argv[:secret] and out[secret + 1 :] == argv[secret + 1 :]
    assert_scrubbed(out[secret], PASSWORD, "command_line")
    assert Scrubber().value(["set", "the", "table"]) == ["set", "the", "table"]


@pytest.mark.parametrize(
    "text",
    [
        "mysql -u root -p prod",  # -p alone prompts: prod is the database
        "mysql -h db -P 3306 -u root",  # -P is the port
        "redis-cli -a $REDIS_PASSWORD ping",
        '<add key="Timeout" value="30"/>',
        "pip install -p mysql",
        # -p, -P, -w, -U and -a that are no password: a port, a path, a user, a flag
        "ssh -l login bastion -p 2222",
        "the login page: -p prints the port, -p 8080 sets it",  # login alone is a word
        "docker login registry.example.com && docker run -p 8080:80 img",
        "redis-cli -p 6379 --askpass",
        "mongosh -u admin -p --authenticationDatabase admin",
        "sqlcmd -S db -U sa -P $SA_PASSWORD",
        'sqlcmd -S db -U sa -P "$SA_PASSWORD"',  # quoted for the shell: still a variable
        "sshpass -p \"${SSH_PASS}\" ssh ops@host; redis-cli -a '-' ping",
        "ldapsearch -x -W -D cn=admin -b dc=example",
        "smbclient //fs/share -U ops -c ls",
        "htpasswd -c /etc/nginx/.htpasswd ops",
        "htpasswd -B .htpasswd ops; rabbitmqctl list_users",
        "openssl pkcs12 -passin env:P12_PASS -passout file:/run/secrets/p12",
        "aws configure set region us-east-1; npm config set registry https://r.example.com/",
        "poetry config virtualenvs.in-project true; git config --global user.name ops",
    ],
)
def test_flags_and_settings_that_hold_no_password_are_kept(text: str) -> None:
    assert Scrubber().text(text) == text


@pytest.mark.parametrize("scheme", ["basic", "BASIC", "bAsIc"])
def test_basic_credentials_are_found_whatever_the_schemes_case(scheme: str) -> None:
    """The scheme's name is case-insensitive (RFC 7617): a proxy log's ``basic ...`` or a
    client's ``BASIC ...`` carried the same ``user:password`` as ``Basic ...``."""
    credentials = base64.b64encode(b"deploy:" + PASSWORD.encode()).decode()
    for text in (f"{scheme} {credentials}", f"proxy sent {scheme} {credentials} upstream"):
        out = Scrubber().text(text)
        assert_scrubbed(out, credentials, "basic_auth")
    assert Scrubber().text("a basic understanding of it") == "a basic understanding of it"


# --- look-alike characters -----------------------------------------------------------------------
def fullwidth(text: str) -> str:
    """``text`` as an East Asian input method types it: each ASCII character's fullwidth form."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


@pytest.mark.parametrize(
    "text",
    [
        fullwidth("PASSWORD=") + "{}",
        "password" + fullwidth("=") + "{}",
        "DB_PASSWORD" + fullwidth(":") + "\u3000{}",  # and the ideographic space
        "p\u0430ssword={}",  # a Cyrillic a in the label
        "\u0455ecret_key: {}",  # a Cyrillic s
        fullwidth("API_KEY=") + "{}",
    ],
)
def test_a_label_written_in_look_alike_characters_still_hides_its_value(text: str) -> None:
    """A label typed with fullwidth characters (an East Asian input method) or with a Cyrillic
    letter drawn as the Latin one read as no label: its value went out."""
    out = Scrubber().text(text.format(PASSWORD))
    assert_scrubbed(out, PASSWORD, "key_value")
    assert Scrubber().text(out) == out


def test_a_key_in_fullwidth_characters_is_found_and_prose_in_other_scripts_kept() -> None:
    key = F["openai_api_key"]
    out = Scrubber().text(f"\u952e {fullwidth(key)} \u3002")
    assert out == f"\u952e [REDACTED:openai_api_key len={len(key)}] \u3002"
    for prose in (
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440: "
        "\u0441\u0435\u043a\u0440\u0435\u0442",
        "\u5bc6\u7801\uff1a\u8bf7\u8f93\u5165\uff0c\u8c22\u8c22",
        fullwidth("hello") + "\u3000" + fullwidth("world"),
    ):
        assert Scrubber().text(prose) == prose


def styled(text: str, upper: int, lower: int, digit: int) -> str:
    """``text`` in a Unicode style: each letter and digit from the block that starts there."""
    return "".join(
        chr(upper + ord(c) - 65)
        if "A" <= c <= "Z"
        else chr(lower + ord(c) - 97)
        if "a" <= c <= "z"
        else chr(digit + ord(c) - 48)
        if c.isdigit()
        else c
        for c in text
    )


@pytest.mark.parametrize(
    "style",
    [(0x1D400, 0x1D41A, 0x1D7CE), (0x1D670, 0x1D68A, 0x1D7F6), (0x24B6, 0x24D0, 0x2460)],
    ids=["bold", "monospace", "circled"],
)
def test_a_key_or_label_in_styled_letters_is_read_as_the_ascii_it_stands_for(
    style: tuple[int, int, int],
) -> None:
    """Mathematical bold or monospace letters (a rich-text editor's, a chat's "fancy text")
    and circled ones are the ASCII letters NFKC says they are: a key written in them, or its
    label, matched nothing and went out whole. So did a value after a no-break space."""
    key = F["openai_api_key"]
    if style[2] == 0x2460:  # circled digits start at one: keep the key's digits as they are
        shown = styled(key, style[0], style[1], ord("0")).replace(chr(ord("0")), "0")
    else:
        shown = styled(key, *style)
    out = Scrubber().text(f"key {shown} end")
    assert out == f"key [REDACTED:openai_api_key len={len(shown)}] end"
    assert_scrubbed(Scrubber().text(styled("PASSWORD=", *style) + PASSWORD), PASSWORD, "key_value")
    assert_scrubbed(Scrubber().text(f"password:\u00a0{PASSWORD}"), PASSWORD, "key_value")


def test_math_and_typography_in_compatible_characters_is_kept() -> None:
    for prose in (
        "x\u00b2 + y\u00b2 = z\u00b2, \u2116 5, \u2139 info, \u216b o'clock, \u2460 first",
        "\U0001d453(\U0001d465) = \U0001d465\u00b2 and \u210c, caf\u00e9 \u2122 \u00bd \u2026",
    ):
        assert Scrubber().text(prose) == prose


INVISIBLE = "\u200b\u200c\u200d\u2060\u00ad\ufeff\u202e\u2066"


@pytest.mark.parametrize("invisible", INVISIBLE)
@pytest.mark.parametrize("detector", ["openai_api_key", "github_token", "jwt", "aws_access_key_id"])
def test_a_key_with_characters_drawn_as_nothing_inside_is_still_replaced(
    detector: str, invisible: str
) -> None:
    """A key pasted from a chat or a rich-text page, or written to slip past a filter, can carry
    a zero-width space, a joiner, a soft hyphen or a bidirectional mark inside it: it reads the
    same, and a copy of it from the export works once they are taken out, but it matched no
    detector and went out whole. It is read without them now, and they go with it."""
    key = F[detector]
    hidden = key[:6] + invisible + key[6:12] + invisible * 2 + key[12:]
    out = Scrubber().text(f"use {hidden} now{invisible}")
    assert out == f"use [REDACTED:{detector} len={len(hidden)}] now{invisible}"
    assert Scrubber().text(out) == out
    label = f"pass{invisible}word={PASSWORD}"  # in a label too
    assert_scrubbed(Scrubber().text(label), PASSWORD, "key_value")


@pytest.mark.parametrize("form", ["zero-width", "fullwidth"])
def test_such_a_key_escaped_by_a_json_dump_is_still_replaced(form: str) -> None:
    """``json.dumps`` escapes every non-ASCII character by default (``\\u200b``,
    ``\\uff53``): a key with an invisible character inside, or in fullwidth forms, was read
    decoded but not as ASCII, and went out whole in any JSON text a tool or an error printed."""
    key = F["openai_api_key"]
    shown = key[:8] + "\u200b" + key[8:] if form == "zero-width" else fullwidth(key)
    text = json.dumps({"note": f"use {shown} now", "n": 1})
    out = Scrubber().text(text)
    assert out.startswith('{"note": "use [REDACTED:openai_api_key len=')
    assert out.endswith(' now", "n": 1}')
    assert_scrubbed(out, json.dumps(shown)[12:-1])
    assert Scrubber().text(out) == out


def test_text_that_joins_with_invisible_characters_is_kept() -> None:
    """Emoji sequences, Persian and Hindi words and soft-hyphenated prose use these
    characters as they are meant: nothing there is a key."""
    for prose in (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467 family, \u2764\ufe0f\u200d\U0001f525",
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645 \u0915\u094d\u200d\u0937",
        "hyphen\u00adation of a very\u00adlong\u00adword and \ufeffa byte order mark",
    ):
        assert Scrubber().text(prose) == prose


@pytest.mark.parametrize(
    "text",
    ["redis-cli -a Zq9xH2", "sqlcmd -P Zq9xH2ab", "ldapsearch -w Zq9xH2", "htpasswd -nb u Zq9xH2"],
)
def test_a_short_command_with_a_clients_flag_loses_its_password(text: str) -> None:
    """A text under 20 characters was screened for `` -p`` only: ``redis-cli -a SECRET`` as a
    short tool argument skipped every detector and went out whole."""
    out = Scrubber().text(text)
    assert_scrubbed(out, "Zq9xH2", "command_line")


# --- a Kubernetes Secret: secrets by its kind, whatever their keys' names ------------------------
SECRET_VALUES = (
    base64.b64encode(b"Zq9xHunter2Abc").decode(),  # data: base64, no format of its own
    base64.b64encode(b'{"auths": {"r.example": {"auth": "x"}}}').decode(),
    "mongodb://app:letmein@db",  # stringData: as it is
)
MANIFEST = """apiVersion: v1
kind: Secret
metadata:
  name: app-secrets
  labels: {{app: web}}
type: Opaque
data:
  config: {0}
  .dockerconfigjson: "{1}"
  ca.bundle: |
    {0}
    {1}
stringData:
  uri: {2}
---
apiVersion: v1
kind: ConfigMap
data:
  color: blue
"""


def test_the_values_of_a_secret_manifests_data_are_replaced_whatever_their_names() -> None:
    """A Secret's ``data`` holds base64 (``cGFzc3dvcmQ=``), which no detector reads as a
    credential, under names that say nothing (``config``, ``.dockerconfigjson``): a manifest
    a tool read or printed (``kubectl get secret -o yaml``) went out with them. Every value of
    its ``data`` and ``stringData`` is a secret now, its keys and the rest of the manifest
    kept, and another document's data (a ConfigMap's) too."""
    out = Scrubber().text(MANIFEST.format(*SECRET_VALUES))
    for value in SECRET_VALUES:
        assert_scrubbed(out, value, "kubernetes_secret")
    for kept in (
        "name: app-secrets",
        "config: [",
        '.dockerconfigjson: "[',
        "uri: [",
        "color: blue",
    ):
        assert kept in out
    config, tls_key = SECRET_VALUES[:2]
    as_json = (
        f'{{"apiVersion": "v1", "data": {{"config": "{config}", "tls.key": "{tls_key}"}}, '
        '"kind": "Secret", "metadata": {"name": "app-secrets"}}'
    )
    for text in (as_json, as_json.replace('"', "'")):  # kubectl's JSON, a dict's repr
        out = Scrubber().text(f"kubectl said: {text}")
        assert_scrubbed(out, SECRET_VALUES[0], "kubernetes_secret")
        assert_scrubbed(out, SECRET_VALUES[1])
        assert "app-secrets" in out and "tls.key" in out
    for text in (MANIFEST.format(*SECRET_VALUES), as_json):
        assert Scrubber().text(Scrubber().text(text)) == Scrubber().text(text)


def test_a_secret_object_in_structured_content_loses_its_data_values() -> None:
    """The same Secret as a tool's result (a client's ``to_dict()``, parsed JSON): its data's
    values went out; they are replaced now, its metadata and another kind's data kept."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "app-secrets"},
        "data": {"config": SECRET_VALUES[0], "ca.bundle": SECRET_VALUES[1]},
        "stringData": {"uri": SECRET_VALUES[2]},
    }
    listed = {"kind": "List", "items": [secret, {"kind": "ConfigMap", "data": {"color": "blue"}}]}
    out = Scrubber().value(listed)
    text = str(out)
    for value in SECRET_VALUES:
        assert_scrubbed(text, value)
    assert out["items"][0]["metadata"] == {"name": "app-secrets"}
    assert out["items"][0]["data"]["config"] == f"[REDACTED:key_name len={len(SECRET_VALUES[0])}]"
    assert out["items"][1] == {"kind": "ConfigMap", "data": {"color": "blue"}}
    assert Scrubber().tree(secret)["data"] == out["items"][0]["data"]


@pytest.mark.parametrize(
    "text",
    [
        "kind: ConfigMap\ndata:\n  color: blue\n  api_url: https://api.example.com\n",
        "kind: SealedSecret\nspec:\n  encryptedData:\n    config: AgBy3i4OJSWK+PXeaz\n",
        "a Secret's data: is base64; kind: Secret objects hold data: maps",
    ],
)
def test_data_of_other_kinds_and_prose_about_secrets_is_kept(text: str) -> None:
    assert Scrubber().text(text) == text


def test_a_secrets_data_in_yamls_flow_style_loses_its_values() -> None:
    """``data: {tls.key: LS0t…}``: YAML's flow style (a manifest written inline, a tool's
    one-line view) was read neither as YAML's block nor as JSON (its keys unquoted), so a
    Secret's values went out whole; another document's flow map (a ConfigMap's) is kept."""
    config, auths, uri = SECRET_VALUES
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata: {name: app-secrets, namespace: prod}\n"
        f"data: {{config.json: {config}, .dockerconfigjson: '{auths}'}}\n"
        f"stringData: {{\n  uri: {uri}\n}}\n---\nkind: ConfigMap\ndata: {{color: blue}}\n"
    )
    out = Scrubber().text(text)
    for value in SECRET_VALUES:
        assert_scrubbed(out, value, "kubernetes_secret")
    for kept in ("metadata: {name: app-secrets, namespace: prod}", "config.json: [", "uri: ["):
        assert kept in out
    assert out.endswith("kind: ConfigMap\ndata: {color: blue}\n")
    assert Scrubber().text(out) == out


# --- a settings line whose password is letters alone -----------------------------------------
@pytest.mark.parametrize(
    ("text", "password"),
    [
        (
            "services:\n  db:\n    environment:\n"
            "      POSTGRES_PASSWORD: example\n      POSTGRES_DB: app\n",
            "example",
        ),  # a compose file, as Docker's own example writes it
        ("spring:\n  datasource:\n    username: app\n    password: swordfish\n", "swordfish"),
        ("Username: bob\nPassword: letmein\n", "letmein"),  # a form a tool printed
        ("  - db_pass: hunter  # rotated monthly\n", "hunter"),
        ("redis:\n  auth_token: opensesame", "opensesame"),
    ],
)
def test_a_password_of_letters_alone_on_a_settings_line_is_replaced(
    text: str, password: str
) -> None:
    """``name: value`` unquoted was read as a password only with a letter and a digit (else
    ``password: must be 8 chars`` is prose), so a compose file's ``POSTGRES_PASSWORD: example``
    or a ``password: swordfish`` in a config a tool read went out whole. A secret's name that
    starts its line and one word that ends it is a setting, whatever its letters."""
    out = Scrubber().text(text)
    assert_scrubbed(out, password, "key_value")
    assert out == text.replace(f": {password}", f": [REDACTED:key_value len={len(password)}]")
    assert Scrubber().text(out) == out


@pytest.mark.parametrize(
    "text",
    [
        "password: str\napi_key: SecretStr\ntoken: Optional[str]\n",  # a class's annotations
        "Password: required\nToken: expired\nsecret: none\n",  # a status, YAML's null
        "  password: process.env.DB_PASSWORD,\n  secret: settings.SECRET,\n",  # code
        "password: ${DB_PASSWORD}\nclient_secret: $CLIENT_SECRET\n",  # where the value is
        "password: ********\npassword: string;\n",
        "the password: see below\nmax_tokens: 1000\n",
        "    has_password: bool\n    uses_bearer: float\n    secrets: dict\n",  # annotations
        "      input_cost_per_token: 0.0000025\n",  # LiteLLM's price of a token: a number
    ],
)
def test_a_settings_line_that_holds_no_password_is_kept(text: str) -> None:
    assert Scrubber().text(text) == text


# --- a login's user and a password before a server -------------------------------------------
@pytest.mark.parametrize(
    ("text", "password"),
    [
        ("log in as user:swordfish@10.0.0.5 and retry", "swordfish"),
        ("login:letmein@localhost failed", "letmein"),
        ("connect user:opensesame@[::1] now", "opensesame"),
        ("try user:hunter@db-primary now", "hunter"),
    ],
)
def test_a_login_word_and_a_password_before_a_server_lose_the_password(
    text: str, password: str
) -> None:
    """``user:PASSWORD@host`` was kept as a label and an address whatever the host: ``user``
    names an address in prose (``see user:alice@example.com``). An IP address, ``localhost``
    or a host of one label is no address's domain (RFC 5321's has a dot, its address literal
    brackets): there the word after ``user:`` is a password."""
    out = Scrubber().text(text)
    assert_scrubbed(out, password, "url_credentials")
    assert f":[REDACTED:url_credentials len={len(password)}]@" in out
    assert Scrubber().text(out) == out


def test_an_address_at_a_local_or_dotted_host_is_kept() -> None:
    text = "mailto:root@localhost From:root@localhost see user:alice@example.com owner:ops@team"
    assert Scrubber().text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        "TOKEN {} set",
        "https://api.telegram.org/bot{}/getMe",
        'bot = Bot("{}")',
    ],
)
@pytest.mark.parametrize("secret", ["AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "AAF" + "x1Yz" * 8])
def test_a_telegram_bot_token_alone_or_as_its_docs_write_it_is_replaced(
    text: str, secret: str
) -> None:
    """A bot's token (``<bot id>:AA…``, as BotFather gives it) was found only in the API's URL
    after ``bot``, and only 35 characters long: Telegram's docs show 34
    (``110201543:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw``), which went out whole anywhere."""
    token = f"110201543:{secret}"
    out = Scrubber().text(text.format(token))
    assert_scrubbed(out, secret, "telegram_bot_token")
    assert "110201543:[REDACTED" in out


# --- a user and a password as an HTTP client takes them; bytes; cookies ----------------------
@pytest.mark.parametrize(
    "text",
    [
        "requests.get(url, auth=('bob', '{}'))",  # a traceback's line of code, a tool's call
        'Elasticsearch(hosts, basic_auth=("elastic", "{}"))',
        "client = httpx.Client(auth=['bob', '{}'])",
        'session.auth = HTTPBasicAuth("bob", "{}")',
        '{{"http_auth": ["bob", "{}"], "timeout": 5}}',
    ],
)
def test_a_user_and_password_pair_under_an_auth_name_loses_the_password(text: str) -> None:
    """``auth=("bob", "PASSWORD")`` is how ``requests``, ``httpx`` and Elasticsearch's client
    take a login: no name said ``password``, so the password went out whole, in text (a
    traceback's line) and in content (``{"auth": ["bob", "PASSWORD"]}``). The pair's second
    item is now replaced, the user kept; ``oauth`` scopes are no login."""
    out = Scrubber().text(text.format("letmein"))
    assert_scrubbed(out, "letmein", "key_value")
    assert "bob" in out or "elastic" in out
    assert Scrubber().text(out) == out
    for name in ("auth", "basic_auth", "http_auth"):
        content = {name: ("bob", "letmein"), "oauth": ["read", "write"]}
        expected = {name: ["bob", "[REDACTED:key_name len=7]"], "oauth": ["read", "write"]}
        assert Scrubber().value(content) == expected
        assert Scrubber().tree(content) == expected
    assert Scrubber().text('oauth=("read", "write")') == 'oauth=("read", "write")'


def test_bytes_and_values_that_are_not_json_are_scrubbed_by_value() -> None:
    """``Scrubber().value()`` (documented for use in one's own processors) kept a bytes value
    whole (a raw body or header: ``b"Authorization: Bearer ..."``) and raised ``TypeError``
    on bytes or any value JSON cannot write under a secret key (``{"password": b"..."}``).
    Bytes are read as their text and given back as bytes; under a secret key anything is
    replaced."""
    bearer = "Bearer " + F["github_token"]
    out = Scrubber().value(
        {
            "raw": f"Authorization: {bearer}".encode(),
            "body": bytearray(b"password=letmein&user=bob"),
            "password": b"letmein",
            "api_key": {1, 2, 3},
            "cookies": {"sessionid": "Zq9xk2PmW7vLr4"},
        }
    )
    assert out["raw"] == b"Authorization: Bearer [REDACTED:github_token len=40]"
    assert out["body"] == bytearray(b"password=[REDACTED:key_value len=7]&user=bob")
    assert out["password"] == "[REDACTED:key_name len=7]"
    assert out["api_key"].startswith("[REDACTED:key_name")
    assert out["cookies"] == {"sessionid": "[REDACTED:key_name len=14]"}
    clean = {"raw": b"\xff\xfe not text", "n": 3}
    assert Scrubber().value(clean)["raw"] is clean["raw"]


@pytest.mark.parametrize(
    ("text", "secret", "detector"),
    [
        ("token {} ok", "xoxc-7123456789-7123456789-7123456789-" + "a1b2c3d4" * 8, "slack_token"),
        ("d={} ok", "xoxd-Zq9x%2BHunter2Abc%2FZq9xHunter2Abc%3D", "slack_token"),
        ("PAT {} ok", "glpat-Zq9xHunter2AbcZq9xHunter2Abc4.01.1a2b3c4d5", "gitlab_token"),
        ("deploy {} ok", "gldt-Zq9xHunter2AbcZq9xHunter2.01.0a1b2c3d4", "gitlab_token"),
    ],
)
def test_slacks_session_tokens_and_gitlabs_routable_tokens_are_replaced_whole(
    text: str, secret: str, detector: str
) -> None:
    """Slack's ``xoxc-`` token and ``xoxd-`` cookie (a browser session's, which scripts and
    agents driving Slack reuse) matched no form of ``xox?-``, and GitLab's routable tokens
    (``glpat-….01.<checksum>``, GitLab 17's) lost their head only, the rest left after it."""
    out = Scrubber().text(text.format(secret))
    assert out == text.format(f"[REDACTED:{detector} len={len(secret)}]")
