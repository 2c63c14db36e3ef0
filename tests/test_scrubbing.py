"""The default scrubber, detector by detector: realistic credentials (fakes made here, by
concatenation, so no secret scanner trips on the repository) are replaced by a marker that
names the detector and the length and repeats nothing of them; near misses (prose, hashes,
UUIDs, base64 blobs, token counts) pass unchanged; hostile inputs stay linear."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import random
import re
import string
import time
import urllib.parse
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_otel import Scrubber
from agent_otel.scrubbing import DETECTORS
from agent_otel.scrubbing._keys import SECRET_PAIRS, SECRET_WORDS

RNG = random.Random(27)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"
MARKER = re.compile(r"\[REDACTED:([a-z0-9_]+) len=(\d+)\]")


def chars(n: int, alphabet: str = ALNUM) -> str:
    """``n`` random characters with, for letters-and-digits alphabets, every class present."""
    body = [RNG.choice(alphabet) for _ in range(n)]
    if alphabet == ALNUM and n >= 3:
        body[:3] = [RNG.choice(string.ascii_uppercase), RNG.choice(string.ascii_lowercase), "7"]
        RNG.shuffle(body)
    return "".join(body)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def fake_jwt() -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {"sub": str(RNG.randrange(10**9)), "exp": 1_900_000_000, "scope": "admin"}
    return header + "." + b64url(json.dumps(claims).encode()) + "." + b64url(RNG.randbytes(32))


def fake_private_key() -> str:
    body = base64.b64encode(RNG.randbytes(600)).decode()
    lines = "\n".join(body[i : i + 64] for i in range(0, len(body), 64))
    kind = "RSA " + "PRIVATE KEY"
    return f"-----BEGIN {kind}-----\n{lines}\n-----END {kind}-----"


def fakes() -> dict[str, str]:
    """One realistic fake per credential family: detector -> the secret as it appears."""
    b32 = string.ascii_uppercase + "234567"
    return {
        "openai_api_key": "sk-" + "proj-" + chars(74) + "T3Blbk" + "FJ" + chars(74),
        "anthropic_api_key": "sk-" + "ant-" + "api03-" + chars(93) + "AA",
        "groq_api_key": "gs" + "k_" + chars(52),
        "xai_api_key": "xa" + "i-" + chars(80),
        "google_api_key": "AI" + "za" + "Sy" + chars(33),
        "huggingface_token": "hf" + "_" + chars(32, string.ascii_letters) + "Zq",
        "aws_access_key_id": "AK" + "IA" + "".join(RNG.choice(b32) for _ in range(16)),
        "cloud_access_key_id": "LT" + "AI" + chars(20),
        "cloud_access_key_id/tencent": "AK" + "ID" + chars(32),
        "cloud_access_key_id/gcs_hmac": "GO"
        + "OG1"
        + "".join(RNG.choice(string.ascii_uppercase + "0123456789") for _ in range(56)),
        "github_token": "gh" + "p_" + chars(36),
        "gitlab_token": "gl" + "pat-" + chars(20),
        # GitLab's other tokens, by the prefixes its docs give them
        "gitlab_token/deploy": "gl" + "dt-" + chars(20, ALNUM + "_-"),
        "gitlab_token/runner": "gl" + "rt-" + chars(20, ALNUM + "_-"),
        "gitlab_token/runner_registration": "gl" + "rtr-" + chars(20, ALNUM + "_-"),
        "gitlab_token/oauth_secret": "gl" + "oas-" + chars(64, HEX),
        "gitlab_token/job": "gl" + "cbt-" + chars(30, ALNUM + "_-"),
        "gitlab_token/trigger": "gl" + "ptt-" + chars(40, HEX),
        "gitlab_token/feed": "gl" + "ft-" + chars(20, ALNUM + "_-"),
        "gitlab_token/agent": "gl" + "agent-" + chars(50, ALNUM + "_-"),
        "slack_token": "xo" + "xb-" + "1234567890" + "-" + "2345678901234" + "-" + chars(24),
        "stripe_key": "sk" + "_live_" + chars(24),
        "jwt": fake_jwt(),
        "private_key": fake_private_key(),
        # after "/": another format of the same family, or a provider of the AI stack
        "openai_api_key/deepseek": "sk-" + chars(32, HEX),
        "openai_api_key/openrouter": "sk-" + "or-v1-" + chars(64, HEX),
        "openai_api_key/langfuse": "sk-" + "lf-" + str(uuid.UUID(int=RNG.getrandbits(128))),
        "elevenlabs_api_key": "sk" + "_" + chars(48, HEX),
        "langsmith_api_key": "lsv2" + "_pt_" + chars(32, HEX) + "_" + chars(10, HEX),
        "tavily_api_key": "tv" + "ly-dev-" + chars(32),
        "perplexity_api_key": "pp" + "lx-" + chars(48),
        "perplexity_api_key/hex": "pp" + "lx-" + chars(48, HEX),
        "replicate_api_token": "r8" + "_" + chars(37),
        "pinecone_api_key": "pc" + "sk_" + chars(6) + "_" + chars(64),
        "google_oauth_token": "ya" + "29." + chars(160, ALNUM + "_-"),
        "google_oauth_token/client_secret": "GOC" + "SPX-" + chars(28),
        "sendgrid_api_key": "S" + "G." + chars(22) + "." + chars(43),
        "npm_token": "np" + "m_" + chars(36),
        "databricks_token": "da" + "pi" + chars(32, HEX),
        "digitalocean_token": "do" + "p_v1_" + chars(64, HEX),
        "shopify_token": "sh" + "pat_" + chars(32, HEX),
        "slack_token/app": "xa" + "pp-1-A" + chars(10) + "-1234567890-" + chars(64, HEX),
        "google_oauth_token/refresh": "1/" + "/0g" + chars(100, ALNUM + "_-"),
        "fireworks_api_key": "f" + "w_" + chars(24),
        "nvidia_api_key": "nv" + "api-" + chars(64, ALNUM + "_-"),
        "pypi_token": "py" + "pi-AgEIcHlwaS5vcmc" + chars(150, ALNUM + "_-"),
        "docker_token": "dc" + "kr_pat_" + chars(27, ALNUM + "_-"),
        "grafana_token": "gl" + "sa_" + chars(32) + "_" + chars(8, HEX),
        "grafana_token/cloud": "gl" + "c_eyJ" + chars(120, ALNUM + "+/"),
        "linear_api_key": "li" + "n_api_" + chars(40),
        "notion_token": "nt" + "n_" + chars(11, "0123456789") + chars(35),
        "notion_token/secret": "se" + "cret_" + chars(43),
        "age_secret_key": "AGE-" + "SECRET-KEY-1" + chars(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"),
        "vault_token": "hv" + "s.CAESI" + chars(90, ALNUM + "_-"),
        "vault_token/batch": "hv" + "b.AAAAAQ" + chars(120, ALNUM + "_-"),
        "azure_client_secret": chars(3) + "8" + "Q~" + chars(34, ALNUM + "_~.-"),
        "atlassian_api_token": "ATA" + "TT3xFfGF0" + chars(170, ALNUM + "_-") + "=" + chars(8, HEX),
        "new_relic_key": "NR" + "AK-" + chars(27, string.ascii_uppercase + "0123456789"),
        "private_key/putty": "Private-"
        + "Lines: 2\n"
        + chars(64, ALNUM + "+/")
        + "\n"
        + chars(22, ALNUM + "+/")
        + "==",
        "langsmith_api_key/legacy": "ls" + "__" + chars(32, HEX),
        # the services an agent's tools call, each key as its vendor's docs show it
        "mailgun_api_key": "ke" + "y-" + chars(30, string.ascii_lowercase + "0123456789") + "7a",
        "mailgun_api_key/signing": chars(32, HEX) + "-" + chars(8, HEX) + "-" + chars(8, HEX),
        "mailchimp_api_key": chars(32, HEX) + "-us" + "21",
        "sentry_token": "sn" + "tryu_" + chars(64, HEX),
        "sentry_token/org": "sn"
        + "trys_"
        + "eyJpYXQiOjE3NDc4MTI2NDAuNjE5NzE0LCJ1cmwiOiJodHRwcz"
        + "ovL3NlbnRyeS5pbyJ9_"
        + chars(43, ALNUM + "+/"),
        "cerebras_api_key": "cs" + "k-" + chars(46, string.ascii_lowercase + "0123456789") + "7a",
        "firecrawl_api_key": "f" + "c-" + chars(32, HEX),
        "e2b_api_key": "e2" + "b_" + chars(40, HEX),
        "jina_api_key": "ji" + "na_" + chars(32, HEX) + chars(30),
        "voyage_api_key": "p" + "a-" + chars(43),
        "together_api_key": "tg" + "p_v1_" + chars(43),
        "browserbase_api_key": "bb" + "_live_" + chars(27),
        "wandb_api_key": "wa" + "ndb_v1_" + chars(77),
        "anyscale_api_key": "es"
        + "ecret_"
        + chars(28, string.ascii_lowercase + "0123456789")
        + "7a",
        "supabase_token": "sb" + "p_" + chars(40, HEX),
        "supabase_token/secret": "sb" + "_secret_" + chars(31, ALNUM + "_-"),
        "neon_api_key": "na" + "pi_" + chars(62, string.ascii_lowercase + "0123456789") + "7a",
        "planetscale_token": "ps" + "cale_tkn_" + chars(43, ALNUM + "_"),
        "doppler_token": "dp" + ".st.prd." + chars(43),
        "pulumi_token": "pu" + "l-" + chars(40, HEX),
        "terraform_token": chars(14) + ".atl" + "asv1." + chars(67, ALNUM + "_-"),
        "postman_api_key": "PM" + "AK-" + chars(24, HEX) + "-" + chars(34, HEX),
        "figma_token": "fi" + "gd_" + chars(40),
        "heroku_api_key": "HR" + "KU-" + chars(60),
        "airtable_token": "pa" + "t" + chars(14) + "." + chars(64, HEX),
        "netlify_token": "nf" + "p_" + chars(36),
        "resend_api_key": "r" + "e_" + chars(8) + "_" + chars(24),
        "typeform_token": "tf" + "p_" + chars(44),
        "contentful_token": "CF" + "PAT-" + chars(43, ALNUM + "_-"),
        "square_token": "sq" + "0csp-" + chars(43, ALNUM + "_-"),
        "mapbox_token": "s"
        + "k.eyJ1IjoiZXhhbXBsZSIsImEiOiJjbGFiY2RlZmcwMDAwM2xw"
        + "In0."
        + chars(22, ALNUM + "_-"),
    }


HEX_KEY = re.compile(r"sk[-_](?:[a-z0-9]{1,8}-){0,2}[0-9a-f-]{32,}")
"""Hex keys after ``sk-``/``sk_`` (DeepSeek's): glued to a word they read as an id, as
``task-<uuid>`` is."""


def glued(before: str, secret: str) -> str:
    """``before + secret``, a space between where a hex key would be glued to a word."""
    hex_key = HEX_KEY.fullmatch(secret) is not None
    return before + (" " if hex_key and before[-1:].isalnum() else "") + secret


def context_fakes() -> dict[str, tuple[str, str]]:
    """Secrets recognised by what surrounds them: detector -> (text, the secret in it)."""
    password = "Tr0ub4dor&3x"
    bearer = chars(40)
    basic = base64.b64encode(b"deploy:" + chars(16).encode()).decode()
    aws_secret = chars(40, ALNUM + "/+")
    hook = "T" + chars(8) + "/B" + chars(8) + "/" + chars(24)
    github_url = "x-access-token:" + chars(20)
    azure_key = chars(31, "0123456789abcdef") + "9"
    account_key = chars(86, ALNUM + "/+") + "=="
    sas = chars(40, ALNUM) + "%3D"
    signature = hashlib.sha256(RNG.randbytes(8)).hexdigest()
    session = "IQoJb3JpZ2luX2VjE" + chars(120) + "%2F" + chars(40)
    secret_data = base64.b64encode(chars(12).encode()).decode()
    teams_id = str(uuid.UUID(int=RNG.getrandbits(128)))
    teams_key = chars(32, HEX)
    zap = chars(7, string.ascii_lowercase + "0123456789")
    telegram = chars(35, ALNUM + "_-")
    at = "Zq@" + chars(10)  # a password written into a URL with its "@" unescaped
    legacy = str(uuid.UUID(int=RNG.getrandbits(128)))
    lower = chars(30, string.ascii_lowercase + "0123456789") + "7q"
    return {
        "url_credentials": (f"postgres://app:{password}@db.internal:5432/prod", f"app:{password}"),
        "authorization_header": (f"Authorization: Bearer {bearer}", bearer),
        "bearer_token": (f"curl -H 'X-Auth: Bearer {bearer}'", bearer),
        "basic_auth": (f"sent Basic {basic} to the proxy", basic),
        "aws_secret_access_key": (f"aws_secret_access_key = {aws_secret}", aws_secret),
        "key_value": (f"DB_PASSWORD={password} ./run.sh", password),
        "slack_webhook": ("https://hooks.slack.com/services/" + hook, hook),
        "discord_webhook": (
            f"https://discord.com/api/webhooks/{'7' * 18}/{telegram * 2}",
            telegram * 2,
        ),
        # a Teams incoming webhook's key and a Zapier catch hook's: the URL is the credential
        "teams_webhook": (
            f"https://contoso.webhook.office.com/webhookb2/{teams_id}@{teams_id}"
            f"/IncomingWebhook/{teams_key}/{teams_id}",
            f"{teams_key}/{teams_id}",
        ),
        "teams_webhook/outlook": (
            f"POST https://outlook.office.com/webhook/{teams_id}/IncomingWebhook/{teams_key}/x",
            teams_key,
        ),
        "zapier_webhook": (f"https://hooks.zapier.com/hooks/catch/1234567/{zap}/", zap),
        "basic_auth/docker_config": (f'{{"auths": {{"ghcr.io": {{"auth": "{basic}"}}}}}}', basic),
        # an .npmrc's login: base64 of user:password under _auth (quoted in YAML too)
        "basic_auth/npmrc": (f"registry=https://npm.example.com/\n_auth={basic}", basic),
        "basic_auth/yaml": (f"registries:\n  ghcr.io:\n    auth: '{basic}'", basic),
        # a Slack Workflow Builder's webhook trigger: whoever holds the URL starts the workflow
        "slack_webhook/trigger": (
            "POST https://hooks.slack.com/triggers/" + hook + " failed",
            hook,
        ),
        # a .pgpass file's line, as a tool that read it shows it: the password ends the line
        "key_value/pgpass": (
            f"$ cat ~/.pgpass\ndb.internal:5432:prod:app:{password}\r\n$ ls",
            password,
        ),
        "key_value/pgpass_any": (f"read:\n*:*:*:postgres:{password} a", f"{password} a"),
        "key_value/netrc": (
            f"machine api.example.com\n  login bob\n  password {password}",
            password,
        ),
        "url_credentials/git": (f"https://{github_url}@github.com/o/r.git", github_url),
        "api_key_header": (f"POST /openai/deployments/gpt-4o api-key: {azure_key}", azure_key),
        "api_key_header/apim": (f"Ocp-Apim-Subscription-Key: {azure_key}", azure_key),
        "api_key_header/quoted": (f'api-key: "{azure_key}"', azure_key),
        "key_value/apim_query": (f"GET /weather?subscription-key={azure_key}", azure_key),
        "azure_account_key": (f"AccountName=acct;AccountKey={account_key};Suffix=x", account_key),
        "sas_signature": (f"https://acct.blob.core.windows.net/c/b?sv=2024&sig={sas}&sp=r", sas),
        "url_credentials/at_sign": (f"mongodb+srv://ops:{at}@c0.example.net/db", f"ops:{at}"),
        "url_credentials/at_and_hash": (
            f"mongodb+srv://ops:Zq@{password}#1@c0.example.net/db?retryWrites=true",
            f"ops:Zq@{password}#1",
        ),
        "url_credentials/token_user": (f"https://{signature[:40]}@github.com/o/r", signature[:40]),
        "url_credentials/no_user": (f"redis://:{password}@cache:6379/0", f":{password}"),
        "key_value/env_token": (f"export GITHUB_TOKEN={bearer} && make", bearer),
        "key_value/dict_token": (f"{{'slack_bot_token': '{bearer}'}}", bearer),
        "key_value/yaml": (f"database:\n  password: {password}\n  pool: 5", password),
        "key_value/yaml_quoted": (f'db:\n  password: "{password}"\n  pool: 5', password),
        "key_value/yaml_single": (f"auth:\n  api_key : '{bearer}'", bearer),
        "key_value/env_entry": (f"env:\n- name: DB_PASSWORD\n  value: {bearer}", bearer),
        "key_value/env_json": (f'[{{"name": "OPENAI_API_KEY", "value": "{bearer}"}}]', bearer),
        "key_value/pydantic": (
            f"db.db_password\n  String should have at least 16 characters [type=string_too_short, "
            f"input_value='{password}', input_type=str]",
            password,
        ),
        "key_value/header": (f"X-Auth-Token: {bearer}", bearer),
        "key_value/query_key": (f"for url 'https://maps.example.com/geo?q=x&key={bearer}'", bearer),
        "key_value/oauth_code": (f"GET /callback?code={signature[:20]}&state=af0i", signature[:20]),
        "key_value/bytes": (f"{{'password': b'{password}'}}", password),
        "key_value/query": (f"GET /v1/chat?api_key={bearer}&model=gpt-4o", bearer),
        "key_value/cookie_json": (f'{{"cookie": "sid={bearer}"}}', f"sid={bearer}"),
        "cookie_header": (
            f"Cookie: sessionid={bearer}; csrf={sas}",
            f"sessionid={bearer}; csrf={sas}",
        ),
        "cookie_header/set": (
            f"Set-Cookie: session={bearer}; HttpOnly",
            f"session={bearer}; HttpOnly",
        ),
        "signed_url": (
            f"https://b.s3.amazonaws.com/k?X-Amz-Expires=900&X-Amz-Signature={signature}&x-id=Get",
            signature,
        ),
        "signed_url/session": (
            f"s3.amazonaws.com/k?X-Amz-Security-Token={session}&X-Amz-Date=1",
            session,
        ),
        "signed_url/gcs": (f"storage.googleapis.com/b/o?X-Goog-Signature={signature}", signature),
        "command_line": (f"mytool --password {bearer} --verbose", bearer),
        "command_line/quoted": (f"az login --client-secret '{password}' --tenant t", password),
        "command_line/curl": (f"curl -u deploy:{aws_secret} https://ci", f"deploy:{aws_secret}"),
        "command_line/sshpass": (f"sshpass -p {bearer} ssh ops@host", bearer),
        "command_line/docker": (f"docker login -u bob -p {bearer} registry", bearer),
        "command_line/argv": (f"Command '['mytool', '--api-key', '{bearer}']' failed", bearer),
        # a query parameter the protocols name as a credential, whatever its value
        "key_value/query_pass": (f"GET /cgi-bin/status?user=admin&pass={password}&n=1", password),
        "key_value/pkce": (f"POST /token?grant_type=x&code_verifier={bearer}&n=1", bearer),
        "key_value/saml": (f"/acs?SAMLResponse={session}&RelayState=r", session),
        "key_value/jsessionid": (
            f"GET /shop;jsessionid={signature[:32].upper()}?item=3",
            signature[:32].upper(),
        ),
        "signed_url/oauth1": (f"/1.1/statuses?oauth_nonce=ab&oauth_signature={sas}&x=1", sas),
        "telegram_bot_token": (
            f"POST https://api.telegram.org/bot7123456789:{telegram}/send",
            telegram,
        ),
        # a key with no prefix of its own after a label written as prose or a header writes
        # it, its words apart: a UUID (Pinecone's earlier keys), hex, letters and digits
        "key_value/prose_uuid": (f"my pinecone api key is {legacy} thanks", legacy),
        "key_value/prose_colon": (f"The Mistral API key: {bearer[:32]}", bearer[:32]),
        "key_value/prose_header": (f"-H 'Api-Key {signature[:32]}' https://x", signature[:32]),
        "key_value/prose_set_to": (f"the access token was set to {lower}.", lower),
        "key_value/prose_is_colon": (f"Your Cohere API Key is: `{bearer}`", bearer),
        # a connection string with no scheme, its password of letters only, where a DSN is
        # written: a variable's or a field's value, or before a database's path
        "url_credentials/env_dsn": ("DATABASE_URL=app:hunter@db.internal/prod", "hunter"),
        "url_credentials/json_dsn": ('{"dsn": "app:letmein@db"}', "letmein"),
        "url_credentials/path_dsn": ("connecting to app:swordfish@db/prod failed", "swordfish"),
        "key_value/jwk": (
            f'{{"kty": "oct", "k": "{telegram[:22]}", "alg": "HS256"}}',
            telegram[:22],
        ),
        # a short password named in prose: a generated one's both cases, digit and symbol
        "key_value/prose_password": ("the database password is Xy7!pq2 (rotate it)", "Xy7!pq2"),
        "key_value/prose_passphrase": ("my passphrase was 'k9#Lm2xQ' today", "k9#Lm2xQ"),
        "key_value/short_pass": (f"DB_HOST=db\nDB_PASS={password}\nDB_PORT=5432", password),
        # Oracle's login, user/password[@connect identifier], to its tools and drivers
        "command_line/sqlplus": ("sqlplus -s scott/tiger@//db:1521/orcl @report.sql", "tiger"),
        "command_line/expdp": ("expdp system/Manag3r directory=dp dumpfile=x.dmp", "Manag3r"),
        # the same login as a setting whose name says it is one
        "command_line/login_setting": (f"DB_LOGIN=scott/{password}@db.internal", password),
        "command_line/dsn_field": ('{"dsn": "hr/swordfish@orclpdb", "pool": 4}', "swordfish"),
        # a Kubernetes Secret's data, whatever its keys' names: base64 as YAML writes it
        "kubernetes_secret": (
            f"kind: Secret\ntype: Opaque\ndata:\n  config: {secret_data}",
            secret_data,
        ),
        "command_line/oracle_connect": (
            f"oracledb.connect('scott/{password}@db.example.com/orclpdb1')",
            password,
        ),
    }


def assert_scrubbed(out: str, secret: str, detector: str | None = None) -> None:
    """Nothing of ``secret`` (no 4-character piece not also in the rest) is left in ``out``."""
    rest = MARKER.sub("", out)
    assert secret not in out
    for i in range(len(secret) - 3):
        piece = secret[i : i + 4]
        assert piece not in rest or piece in out.replace(secret, ""), piece
    names = MARKER.findall(out)
    assert names, out
    if detector is not None:
        assert detector in [name for name, _ in names]


@pytest.mark.parametrize("detector", sorted(fakes()))
def test_each_format_detector_replaces_the_whole_key_and_keeps_the_text_around(
    detector: str,
) -> None:
    secret = fakes()[detector]
    text = f"config loaded, key {secret} (do not share)"
    out = Scrubber().text(text)
    name = detector.partition("/")[0]
    assert out == f"config loaded, key [REDACTED:{name} len={len(secret)}] (do not share)"


@pytest.mark.parametrize("detector", sorted(context_fakes()))
def test_each_context_detector_redacts_the_credential_and_keeps_its_label(detector: str) -> None:
    text, secret = context_fakes()[detector]
    out = Scrubber().text(text)
    name = detector.partition("/")[0]  # after "/": another form of the same family
    assert out == text.replace(secret, f"[REDACTED:{name} len={len(secret)}]")


_LETTERS = "QwErTyUiOpAsDfGhJkLzXcVbNm"  # a random key's body may hold no digit


def _letters(n: int) -> str:
    return (_LETTERS * (n // len(_LETTERS) + 1))[:n]


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"dckr_pat_{_letters(27)}", f"dckr_pat_{_letters(27)}"),
        (f"nvapi-{_letters(64)}", f"nvapi-{_letters(64)}"),
        (f"SG.{_letters(22)}.{_letters(43)}", f"SG.{_letters(22)}.{_letters(43)}"),
        (f"https://api.telegram.org/bot7123456789:{_letters(35)}/send", _letters(35)),
        (f"Authorization: Bearer {_letters(32)}", _letters(32)),
    ],
)
def test_a_key_whose_random_body_drew_no_digit_is_still_replaced(text: str, secret: str) -> None:
    """27 random characters of a Docker token hold no digit about once in a hundred keys:
    letters of both cases are as random."""
    out = Scrubber().text(f"sent {text} here")
    assert secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "text", ["dckr_pat_the_name_of_a_setting", "nvapi-" + "a_lower_case_identifier_" * 3]
)
def test_a_name_after_a_keys_prefix_is_kept(text: str) -> None:
    assert Scrubber().text(f"see {text} here") == f"see {text} here"


def test_every_built_in_detector_has_a_positive_here() -> None:
    covered = {name.partition("/")[0] for name in [*fakes(), *context_fakes()]}
    assert covered == set(DETECTORS)


@pytest.mark.parametrize(
    "text",
    ["--password ab12", "sshpass -p hunter2", "<pwd>abc12</pwd>", "('pwd', 'abc12')",
     "login -p Xyz12345", "['-u', 'a:b123']"],
)  # fmt: skip
def test_a_short_labelled_secret_is_not_passed_as_too_short(text: str) -> None:
    """Under 20 characters a text skips the detectors unless it holds what a labelled
    value needs: a command's flag, an XML element and a pair are labels too."""
    assert len(text) < 20
    assert "[REDACTED:" in Scrubber().text(text)


def test_a_cut_private_key_block_is_redacted_to_its_end() -> None:
    block = fake_private_key()
    cut = block[: len(block) // 2]
    assert Scrubber().text("key: " + cut) == f"key: [REDACTED:private_key len={len(cut)}]"


def test_json_escaped_secrets_are_found_in_json_text() -> None:
    block, token = fake_private_key(), fakes()["github_token"]
    text = json.dumps({"pem": block, "note": f"token {token}"})
    out = Scrubber().text(text)
    assert "BEGIN" not in out and token not in out
    assert json.loads(out)["note"].startswith("token [REDACTED:github_token")


# --- encoded: URL-encoded and backslash-escaped secrets ---------------------------------------
def encoded_cases() -> dict[str, tuple[str, str, str]]:
    """Secrets as error texts carry them encoded: case -> (text, the encoded secret in it,
    the detector that finds it decoded)."""
    google, openai = fakes()["google_api_key"], fakes()["openai_api_key"]
    password = "Tr0ub4dor%263x"  # Tr0ub4dor&3x, percent-encoded
    inner = json.dumps({"api_key": "zq81Kd0aPPx", "q": 1})
    inner_b64 = base64.b64encode(json.dumps({"user": "bob", "password": "Zk39a"}).encode()).decode()
    pretty_login = pretty({"user": "bob", "password": "Zk39a"})
    pretty_tab = pretty({"k": google}, indent="\t")
    pretty_crlf = pretty({"k": openai}, crlf=True)
    pem = base64.b64encode((fake_private_key() + "\n").encode()).decode()
    wrapped = "\n".join(pem[i : i + 76] for i in range(0, len(pem), 76))  # as `base64` writes
    return {
        "redirect_uri": (
            f"GET /authorize?redirect_uri=https%3A%2F%2Fdeploy%3A{password}%40h.example%2Fcb&s=1",
            f"deploy%3A{password}",
            "url_credentials",
        ),
        "next_query": (f"login?next=%2Fcb%3Fapi_key%3D{google}", google, "google_api_key"),
        "form_separator": ("body: user=bob&password%3Dhunter2%21&x=1", "hunter2%21", "key_value"),
        "twice_encoded": (
            "x=https%253A%252F%252Fu%253Ap4ss%2540host",
            "u%253Ap4ss",
            "url_credentials",
        ),
        "lower_hex": ("n=%2fcb%3fapi_key%3dZk39aPqL0x&s=1", "Zk39aPqL0x", "key_value"),
        "unicode_escape": (
            "key " + "\\u0073" + openai[1:] + " rejected",
            "\\u0073" + openai[1:],
            "openai_api_key",
        ),
        "escaped_json_in_json": (
            json.dumps({"error": inner}),
            "zq81Kd0aPPx",
            "key_value",
        ),
        "twice_escaped_json": (
            json.dumps({"e": json.dumps({"body": json.dumps({"password": "hunter22"})})}),
            "hunter22",
            "key_value",
        ),
        "escaped_slashes": (
            '{"url": "https:\\/\\/app:s3cret@db.internal\\/prod"}',
            "app:s3cret",
            "url_credentials",
        ),
        "short": ("pwd%3DZk39a", "Zk39a", "key_value"),  # shorter than any key, encoded
        "python_bytes_repr": (
            "b'token\\x3d" + "Zk39aPqL0x" + "'",
            "Zk39aPqL0x",
            "key_value",
        ),
        "html_quot": (
            "<pre>{&quot;api_key&quot;: &quot;zq81Kd0aPPx&quot;}</pre>",
            "zq81Kd0aPPx",
            "key_value",
        ),
        "html_numeric": (
            "href=&#34;https&#x3a;&#x2f;&#x2f;deploy&#58;Tr0ub4dor&#64;h.example&#34;",
            "deploy&#58;Tr0ub4dor",
            "url_credentials",
        ),
        "html_in_url": (
            "next=%26quot%3Bpassword%26quot%3B%3A%26quot%3Bh4ck%26quot%3B",
            "h4ck",
            "key_value",
        ),
        "xml_element": (
            "<soap:Fault><ns:password>hunter2xyz</ns:password>",
            "hunter2xyz",
            "key_value",
        ),
        "xml_escaped": (
            "&lt;clientSecret&gt;Zk39aPqL0x&lt;/clientSecret&gt;",
            "Zk39aPqL0x",
            "key_value",
        ),
        "base64_json": (
            "config=" + inner_b64 + " rejected",
            inner_b64,
            "key_value",
        ),
        "base64url_json_key": (
            "state=" + b64url(json.dumps({"k": google}).encode()) + "&x=1",
            b64url(json.dumps({"k": google}).encode()),
            "google_api_key",
        ),
        # A JSON object pretty-printed before it was encoded (`base64 key.json`, a Kubernetes
        # secret's data): after `{` a newline and an indent of spaces or a tab, or CRLF.
        "base64_pretty_json": (f"CREDENTIALS_B64 {pretty_login} set", pretty_login, "key_value"),
        "base64_pretty_tab": (f"creds {pretty_tab} loaded", pretty_tab, "google_api_key"),
        "base64_pretty_crlf": (f"creds {pretty_crlf} loaded", pretty_crlf, "openai_api_key"),
        # A PEM private key block as base64: a kubeconfig's client-key-data, a Kubernetes
        # secret's tls.key, `base64 key.pem` (wrapped at 76 characters)
        "base64_pem": (f"    client-key-data: {pem}\n    token: x", pem, "private_key"),
        "base64_pem_wrapped": (f"$ base64 key.pem\n{wrapped}\n$ ls", wrapped, "private_key"),
    }


def pretty(value: dict[str, str], indent: str | int = 2, crlf: bool = False) -> str:
    """Base64 of ``value`` as JSON pretty-printed, as a key file is written."""
    text = json.dumps(value, indent=indent)
    return base64.b64encode((text.replace("\n", "\r\n") if crlf else text).encode()).decode()


@pytest.mark.parametrize("case", sorted(encoded_cases()))
def test_an_encoded_secret_is_found_decoded_and_redacted_as_it_was_encoded(case: str) -> None:
    text, secret, detector = encoded_cases()[case]
    assert secret in text
    found: list[str] = []
    out = Scrubber().text(text, found.append)
    assert out == text.replace(secret, f"[REDACTED:{detector} len={len(secret)}]")
    assert found == [detector]
    assert Scrubber().text(out) == out  # scrubbing twice changes nothing more


ENCODED_NEAR_MISSES = [
    "https://example.com/a%20b/docs%2Fguide.md?q=hello%20world&page=2",
    "GET /files/reports%2F2024%2Fq1.pdf?download=1 -> 404",
    "50% done, 100% of 3 files; 0x%02x format",
    '{"msg": "line\\nnext \\"quoted\\" \\u00e9t\\u00e9 C:\\\\tmp\\/x"}',
    json.dumps({"error": json.dumps({"input_tokens": 12, "note": "the password must change"})}),
    "redirect_uri=https%3A%2F%2Fapp.example%2Fcallback%3Fstate%3Dabc&scope=openid%20email",
    "C:\\Users\\agent\\AppData\\Local\\secret_store\\cache",
    "Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt;&nbsp;&copy; 2024 &#169; &#x26; &quot;secret&quot;",
    "<max_tokens>512</max_tokens><input_tokens>12</input_tokens><secret>the plan</secret>",
    "a=1&b=2; c=3&d=4;",
    "ctx=" + base64.b64encode(json.dumps({"user": "bob", "input_tokens": 12}).encode()).decode(),
    "ctx=" + base64.b64encode(json.dumps({"user": "bob", "n": 12}, indent=2).encode()).decode(),
    # a certificate's PEM block as base64 (a kubeconfig's certificate-authority-data): public
    "certificate-authority-data: "
    + base64.b64encode(
        b"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----\n"
    ).decode(),
]


@pytest.mark.parametrize("text", ENCODED_NEAR_MISSES, ids=range(len(ENCODED_NEAR_MISSES)))
def test_ordinary_encoded_text_passes_unchanged(text: str) -> None:
    assert Scrubber().text(text) == text


@settings(max_examples=100, deadline=None)
@given(
    st.text(max_size=40),
    st.sampled_from(sorted(fakes().values())),
    st.sampled_from(["url", "json", "both", "html", "html_numeric", "base64_json"]),
    st.text(max_size=40),
)
def test_any_secret_url_encoded_or_json_escaped_leaves_nothing_of_itself(
    before: str, secret: str, how: str, after: str
) -> None:
    shown = "api_key=" + secret
    if how in ("url", "both"):
        shown = urllib.parse.quote(shown, safe="")
    if how in ("json", "both"):
        shown = json.dumps(shown)[1:-1]
    if how.startswith("html"):  # a JSON body quoted in an error page
        shown = html.escape(json.dumps({"api_key": secret}))
        if how == "html_numeric":
            shown = "".join(f"&#{ord(c)};" if c in ':"/' else c for c in json.dumps([secret]))
    if how == "base64_json":  # a credentials blob passed as one string
        shown = " " + base64.b64encode(json.dumps({"auth": {"api_key": secret}}).encode()).decode()
    out = Scrubber().text(before + shown + after)
    assert "[REDACTED:" in out
    body = urllib.parse.quote(secret, safe="")
    pieces = {secret, body, json.dumps(body)[1:-1], json.dumps(secret)[1:-1]}
    if how == "base64_json":
        pieces.add(shown.strip()[24:])  # the token's part that holds the secret's bytes
    for piece in pieces:
        assert piece[:24] not in out or piece[:24] in before + after


# --- near misses: left exactly as they are ---------------------------------------------------
NEAR_MISSES = [
    "The password must be at least 12 characters; rotate the secret every 90 days.",
    "password: must contain a digit",
    "Use a bearer of good news and basic information about the authorization flow.",
    "Basic information about the API: send a token in the header.",
    "input_tokens=1532 output_tokens=211 max_tokens=4096 total_tokens=1743",
    '{"input_tokens": 1532, "output_tokens": 211, "max_tokens": 4096, "token_count": 9}',
    "sha256:" + hashlib.sha256(b"agent").hexdigest(),
    hashlib.sha1(b"commit").hexdigest() + " fix: typo",
    str(uuid.UUID(int=RNG.getrandbits(128))) + " " + str(uuid.UUID(int=RNG.getrandbits(128))),
    base64.b64encode(RNG.randbytes(300)).decode(),
    "data:image/png;base64," + base64.b64encode(RNG.randbytes(120)).decode(),
    "https://example.com/search?q=agents&page=2 and mailto:ops@example.com",
    "git@github.com:org/repo.git, https://user@example.com/x (no password)",
    "https://api.example.com:8443/users/bob@example.com?cc=ann@example.com",
    "sk-learn-compatible-transformer-pipeline and risk-assessment-framework-v2",
    "task_test_something_long_enough and desk_live_stream_of_things",
    "AKIAEXAMPLE is too short; ASIA is a continent.",
    "eyJhbGciOiJIUzI1NiJ9 alone is base64 JSON, not a token",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIU\n-----END CERTIFICATE-----",
    "gpt-4o-mini, claude-3-5-sonnet-20241022, chatcmpl-9fJ2kQ1, call_Xk29aB7cD",
    "Traceback (most recent call last):\n  File \"agent.py\", line 3, in run\nKeyError: 'x'",
    "ghp_ is GitHub's prefix; xoxb- is Slack's; hf_ is Hugging Face's.",
    "send the api-key: header-is-required-here, see /docs?design=blue&signature=on",
    "SELECT * FROM f JOIN dim_account a ON f.account_key = a.account_key AND f.account_key=1042",
    '{"account_key": 1042, "customer_key": 7, "surrogate_key": "k-19"}',
    "?sig=short&sig2=abcdefghij",
    "Invalid token: expired, sign in again; secret: rotate it monthly",
    "Client(api_key=None, credentials=None, token=null, password=False)",
    "Cookie: must be enabled. max_new_tokens=512, pad_token_id=0, eos_token_ids: [2]",
    "https://example.com/?page_size=20&signature=on&x-amz-date=20240101T000000Z",
    # hex ids after a word ending in sk, a hex digest in a name: ids, not keys
    "task-" + str(uuid.UUID(int=RNG.getrandbits(128))) + " and desk_" + "ab12" * 12,
    "mask-" + hashlib.md5(b"x").hexdigest() + " sk-" + "0" * 32 + " sk-" + "deadbeef" * 2,
    "SG.value, npm_modules, dapi docs, ya29. is a prefix, the robot42: said hi",
    "run --api-key $OPENAI_API_KEY --max-tokens 100 --token-limit 4096; mkdir -p /tmp/x",
    'limits: {max_tokens: "100", token_count: "3"}, input_tokens: "12"',
    "docker login --password-stdin; app --password-file /etc/pw --secret-name db-secret",
    "required fields: ['password', 'email'] or [\"token\", \"usage\"]; ('api_key', None)",
    # the prefixes of the AI stack and its tools, in names, paths and prose
    "accounts/fireworks/models/llama-v3p1-70b-instruct, fw_model_v2, nvapi- docs, pypi-simple",
    "grok-2-1212, pplx-7b-online, r8_ models, gpt-4o-2024-08-06, mistral-large-2411",
    "secret_key_base and secret_santa_list_for_the_whole_team_of_2024, ntn_ prefix, lin_api_ x",
    "https://cdn.example.com/1//0/assets/app.js and see 1//comment, glsa_ and glc_ prefixes",
    "https://maps.example.com/api?key=products-list&code=US&session=2&sid=abc&auth=none",
    "/search?key=user_profile_2024&session=" + str(uuid.UUID(int=RNG.getrandbits(128))),
    "https://api.example.com:8443?cc=ann@example.com#x:y@z, ftp://anonymous@ftp.example.com",
    "https://first.last@example.com/ and https://build-bot-2024@ci.example.com/",
    "pk-lf-" + str(uuid.UUID(int=RNG.getrandbits(128))) + " (Langfuse's public key)",
    # the prefixes of the services an agent's tools call, in words, code and query strings
    "a key-value store, key-" + "abcdefgh" * 4 + ", a pa-system, the spa-and-resort-guide",
    "re_compile_pattern_for_urls, pattern.matches_all_the_things, os.path.join, re_2_x",
    "dp.st is Doppler's prefix; csk-, fc-, pul-, sbp_, napi_, figd_ and HRKU- are others",
    "/r?pass_rate=0.93&passes=3&oauth_signature=on&jsessionid=none&sessid=abc&jwt_alg=HS256",
    "Private-Lines: 14 is what a PuTTY key file says before its key's lines",
    "git describe: v2.1.0-14-g" + "0a1b2c3" + ", build " + chars(32, HEX) + " done -us",
    # a credential's label in prose before a word, a name, an id it does not name, a hash
    "the api key is missing; the API key was rotated; set your api key via AgentSettings",
    "secret: AzureKeyVaultSecretName, password: PasswordFromEnvironment, token: my_app_token",
    "api key id "
    + str(uuid.UUID(int=RNG.getrandbits(128)))
    + ", request id "
    + str(uuid.UUID(int=RNG.getrandbits(128)))
    + ", commit "
    + chars(40, HEX),
    "the access token expired at 2024-05-06T12:00:00Z; token count 123456789012345678901234",
    # GitLab's prefixes before a name, "auth" over what is no user:password, host:port lines
    "gldt- and glrt- are GitLab's; glft-rollout-plan-for-the-team, glagent-config-reference",
    "auth=none auth: oauth2 _auth=dXNlcm5hbWU= x-auth: required",
    "db.internal:5432:prod is up; localhost:5432:app:ready\n  at 10:5432:1:2:3 and a:b:c:d:e",
    # a short word after a password's name in prose: no generated password's mix
    "the password is required! The password is 8+chars, was SHA256-hashed or is v2.1-rc",
    "Password was: Changed, password is #1 priority, the passcode is 4-digit",
    # a path or a package with an "@" under a setting's name that is no login
    "IMAGE=library/python@sha256:abc, connect=react/jsx-runtime@18, last_login=2024/05@home",
    "uses: actions/checkout@v4 and the login with scott/tiger@orcl failed",
    # a name before a host, without a scheme, where no DSN is written
    "see user:alice@example.com for access, at 12:30@home/kitchen, From:bob@example.com",
]


@pytest.mark.parametrize("text", NEAR_MISSES, ids=range(len(NEAR_MISSES)))
def test_near_misses_pass_unchanged(text: str) -> None:
    assert Scrubber().text(text) == text


# --- structured content: by key name -----------------------------------------------------------
def test_values_under_secret_key_names_are_replaced_counts_and_ids_are_not() -> None:
    found: list[str] = []
    value = {
        "city": "Paris",
        "password": "hunter2",
        "apiKey": "abc123",
        "X-API-Key": 12345678,
        "access_token": "zz9",
        "client_secret": ["a1", "b2"],
        "credentials": {"user": "bob", "pin": 1234, "active": True},
        "input_tokens": 12,
        "max_tokens": 4096,
        "token_count": 3,
        "tokenizer": "cl100k",
        "session_id": "s-1",
        "id": "call_1",
        "key": "primary",
    }
    out = Scrubber().value(value, found.append)
    assert out == {
        "city": "Paris",
        "password": "[REDACTED:key_name len=7]",
        "apiKey": "[REDACTED:key_name len=6]",
        "X-API-Key": "[REDACTED:key_name len=8]",
        "access_token": "[REDACTED:key_name len=3]",
        "client_secret": ["[REDACTED:key_name len=2]", "[REDACTED:key_name len=2]"],
        "credentials": {
            "user": "[REDACTED:key_name len=3]",
            "pin": "[REDACTED:key_name len=4]",
            "active": True,
        },
        "input_tokens": 12,
        "max_tokens": 4096,
        "token_count": 3,
        "tokenizer": "cl100k",
        "session_id": "s-1",
        "id": "call_1",
        "key": "primary",
    }
    assert found == ["key_name"] * 8
    assert value["password"] == "hunter2"  # the input is never edited


_SINGLE = sorted(SECRET_WORDS - {a + b for a, b in SECRET_PAIRS} - {"authorization"})
_NAMED = [[word] for word in _SINGLE] + [list(pair) for pair in sorted(SECRET_PAIRS)]
_STYLES = {
    "snake": lambda ws: "_".join(ws),
    "kebab": lambda ws: "-".join(ws),
    "upper": lambda ws: "_".join(ws).upper(),
    "camel": lambda ws: ws[0] + "".join(w.title() for w in ws[1:]),
    "pascal": lambda ws: "".join(w.title() for w in ws),
}


def test_a_json_web_keys_private_members_are_replaced_and_its_public_ones_kept() -> None:
    """A JWK (a JWKS file a tool read, a signing key in an error) holds its private key in
    members named by RFC 7518 (``d``, ``p``, ``q``, ``dp``, ``dq``, ``qi``, ``k``), which
    name nothing elsewhere: replaced in an object that has a ``kty``, in content and text."""
    private = {name: b64url(RNG.randbytes(32)) for name in ("d", "p", "q", "dp", "dq", "qi")}
    rsa = {"kty": "RSA", "kid": "2024-01", "n": b64url(RNG.randbytes(64)), "e": "AQAB", **private}
    symmetric = {"kty": "oct", "alg": "HS256", "k": b64url(RNG.randbytes(16))}
    keys = {"keys": [rsa, symmetric]}
    public = {key: value for key, value in rsa.items() if key not in private}
    for way in (Scrubber().value, Scrubber().tree):
        out = way(keys)
        assert out["keys"][0] == {**public, **dict.fromkeys(private, "[REDACTED:key_name len=43]")}
        assert out["keys"][1] == {**symmetric, "k": "[REDACTED:key_name len=22]"}
    for text in (json.dumps(keys), str(keys), json.dumps(json.dumps(keys))):
        out = Scrubber().text(text)
        for secret in [*private.values(), symmetric["k"]]:
            assert_scrubbed(out, secret, "key_value")
        assert public["n"] in out and "2024-01" in out and "HS256" in out  # the public ones
    plain = {"d": rsa["d"], "k": symmetric["k"], "p": "page 2", "q": "what is a JWK?"}
    assert Scrubber().value(plain) == plain  # no kty: the letters name nothing
    assert Scrubber().text(json.dumps(plain)) == json.dumps(plain)


def test_a_password_under_its_short_name_pass_is_replaced_in_content_and_text() -> None:
    """``pass`` is a password's short name (an env file's ``SMTP_PASS``, nodemailer's
    ``auth: {user, pass}``); a count of passes, a pass rate and a bypass are not."""
    value = {
        "auth": {"user": "ops", "pass": "hunter2x"},
        "SMTP_PASS": "Tr0ub4dor",
        "passes": 3,
        "pass_rate": 0.9,
        "bypass": "cache",
    }
    assert Scrubber().value(value) == {
        "auth": {"user": "ops", "pass": "[REDACTED:key_name len=8]"},
        "SMTP_PASS": "[REDACTED:key_name len=9]",
        "passes": 3,
        "pass_rate": 0.9,
        "bypass": "cache",
    }
    text = "SMTP_PASS=Tr0ub4dor bypass=cache passes=3 pass_rate=0.9"
    assert Scrubber().text(text) == text.replace("Tr0ub4dor", "[REDACTED:key_value len=9]")


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(["", "aws", "db", "app", "stripe", "x"]),
    st.sampled_from(_NAMED),
    st.sampled_from(sorted(_STYLES)),
    st.sampled_from(
        ["{k}={v}", '{{"{k}": "{v}"}}', "{{'{k}': '{v}'}}", "{k}: {v}", "<{k}>{v}</{k}>"]
    ),
)
def test_a_key_name_that_hides_a_value_in_content_hides_it_in_text(
    prefix: str, named: list[str], style: str, form: str
) -> None:
    """One vocabulary: every name the structured-content rule reads as a secret's
    (``secret_key``, ``subscriptionKey``, ``SIGNING_KEY``) also hides its value in an error
    text, an env dump or a repr (Django's ``SECRET_KEY=...``, boto's ``secret_key='...'``)."""
    key = _STYLES[style]([prefix, *named] if prefix else named)
    value = "Zq81Kd0aPPxw93Lm"
    assert Scrubber().value({key: value}) == {key: "[REDACTED:key_name len=16]"}
    assert_scrubbed(Scrubber().text(form.format(k=key, v=value)), value)


def test_values_under_the_protocols_credential_names_are_replaced_in_content_and_text() -> None:
    """PKCE's ``code_verifier``, a client's ``client_assertion``, a ``device_code``, OAuth
    1.0's ``oauth_verifier``, a ``SAMLResponse`` and a ``passcode`` are credentials by their
    protocols' definitions (RFC 7636, RFC 7523, RFC 8628, RFC 5849, SAML 2.0 bindings): their
    values went out as they were, in a tool's arguments and in text."""
    values = {
        "code_verifier": chars(43, ALNUM + "-._~"),
        "client_assertion": "a" + chars(60),
        "device_code": chars(40, ALNUM + "_-"),
        "oauth_verifier": chars(16, string.ascii_lowercase + "0123456789"),
        "SAMLResponse": base64.b64encode(
            b"<samlp:Response ID='" + RNG.randbytes(40) + b"'>"
        ).decode(),
        "passcode": "493021",
    }
    content = Scrubber().value({**values, "state": "af0ifjsldkj", "device_name": "kiosk-2"})
    assert content["state"] == "af0ifjsldkj" and content["device_name"] == "kiosk-2"
    for name, value in values.items():
        assert content[name] == f"[REDACTED:key_name len={len(value)}]"
        text = f"exchange failed: {name}={value} state=af0"
        assert Scrubber().text(text) == text.replace(
            value, f"[REDACTED:key_value len={len(value)}]"
        )


def test_a_boto_credentials_repr_loses_its_secret_key() -> None:
    aws_secret = chars(40, ALNUM + "/+")
    text = f"Credentials(access_key='AKIA{'Q' * 16}', secret_key='{aws_secret}', token=None)"
    out = Scrubber().text(text)
    assert_scrubbed(out, aws_secret)
    assert "token=None" in out


def _auth_forms() -> dict[str, tuple[str, str, str]]:
    """An ``Authorization`` header of each scheme: name -> (the text, its scheme, the value
    after the scheme, which is the credential: a token, or every parameter of the scheme)."""
    sig = hashlib.sha256(RNG.randbytes(8)).hexdigest()
    digest = f'username="ops", realm="api", nonce="{chars(16)}", uri="/v1", response="{sig[:32]}"'
    oauth = (
        f'oauth_consumer_key="{chars(22)}", oauth_signature="{chars(27)}%3D", '
        f'oauth_token="{chars(9, "0123456789")}-{chars(40)}", oauth_version="1.0"'
    )
    key_id = "AK" + "IA" + chars(16, string.ascii_uppercase)
    sigv4 = (
        f"Credential={key_id}/20260101/us-east-1/s3/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={sig}"
    )
    shared = f"myaccount:{chars(43, ALNUM + '+/')}="
    forms = {
        "digest": ("Digest", digest),
        "oauth1": ("OAuth", oauth),
        "aws_sigv4": ("AWS4-HMAC-SHA256", sigv4),
        "azure_shared_key": ("SharedKey", shared),
        "google_login": ("GoogleLogin", f"auth={chars(24)}"),
        "splunk_hec": ("Splunk", str(uuid.UUID(int=RNG.getrandbits(128)))),
    }
    return {
        name: (f"Authorization: {scheme} {value}", scheme, value)
        for name, (scheme, value) in forms.items()
    }


@pytest.mark.parametrize("form", sorted(_auth_forms()))
@pytest.mark.parametrize(
    "wrap", ["{}", "{{'headers': {{'{}'}}}}", "sent\n{}\nHost: api"], ids=["line", "repr", "dump"]
)
def test_an_authorization_header_loses_its_whole_value_whatever_its_scheme(
    form: str, wrap: str
) -> None:
    """The scheme of an ``Authorization`` header is kept and all that follows it is its
    credential. A scheme the detector did not list (``AWS4-HMAC-SHA256``, ``SharedKey``,
    ``Splunk``) was itself redacted and the credential after it exported, and a scheme's
    parameters after the first (Digest's ``response``, OAuth 1.0's ``oauth_signature``, SigV4's
    ``Signature``) were exported."""
    header, scheme, value = _auth_forms()[form]
    text = wrap.format(header.replace(": ", "': '", 1) if wrap.startswith("{{") else header)
    out = Scrubber().text(text)
    expected = f"{scheme} [REDACTED:authorization_header len={len(value)}]"
    assert expected in out and value not in out, out
    assert Scrubber().text(out) == out  # scrubbing twice changes nothing


def test_headers_as_name_value_pairs_hide_the_values_of_secret_names() -> None:
    """Headers are often a list of pairs (``httpx``'s raw headers, an ASGI scope's,
    ``dict.items()``): the name is the key, in content and in a repr alike."""
    token = chars(40)
    value = {"headers": [("Authorization", f"Bearer {token}"), ("Accept", "json")], "n": 1}
    assert Scrubber().value(value) == {
        "headers": [["Authorization", "[REDACTED:key_name len=47]"], ("Accept", "json")],
        "n": 1,
    }
    plain = {"rows": [("a", 1), ("b", 2)], "names": ["password", "email"]}
    assert Scrubber().value(plain) is plain
    texts = [
        f"scope={{'headers': [(b'host', b'api'), (b'authorization', b'Bearer {token}')]}}",
        f"Headers.raw=[('x-api-key', '{token}'), ('set-cookie', 'sid={token}; Path=/')]",
        f'{{"headers": [["accept", "json"], ["X-Auth-Token", "{token}"]]}}',
    ]
    for text in texts:
        out = Scrubber().text(text)
        assert_scrubbed(out, token, "key_value")
        assert Scrubber().text(out) == out


def test_an_environment_variable_listed_as_name_and_value_hides_its_value() -> None:
    """A deployment a tool reads (Kubernetes' ``env``, ECS' ``environment``, app settings)
    lists variables as {name, value} entries: a secret's name hides its value."""
    value = {
        "env": [
            {"name": "OPENAI_API_KEY", "value": "abc123"},
            {"name": "LOG_LEVEL", "value": "debug"},
            {"Name": "DB_PASSWORD", "Value": 918273},
        ]
    }
    assert Scrubber().value(value) == {
        "env": [
            {"name": "OPENAI_API_KEY", "value": "[REDACTED:key_name len=6]"},
            {"name": "LOG_LEVEL", "value": "debug"},
            {"Name": "DB_PASSWORD", "Value": "[REDACTED:key_name len=6]"},
        ]
    }
    plain = {"name": "max_tokens", "value": 100}
    assert Scrubber().value(plain) is plain


def test_a_connection_string_in_content_is_found_under_its_key_as_in_text() -> None:
    """Text finds a password of letters alone, or a user/password login, by the label before it
    (``"dsn": "app:PASSWORD@db"``, ``DB_LOGIN=scott/tiger@db``); in structured content that
    label is the key: tool arguments, a parsed JSON string and an attribute's map lose it the
    same, and an address, a URL without a password and an image digest are kept."""
    content = {
        "dsn": "app:swordfish@db.internal",
        "db_login": "scott/tiger@orclpdb",
        "email": "bob@example.com",
        "image": "library/python@sha256:" + "ab" * 32,
        "repo": "https://github.com/o/r@main",
    }
    kept = {k: content[k] for k in ("email", "image", "repo")}
    for out in (
        Scrubber().value(content),
        json.loads(Scrubber().value(json.dumps(content))),
        Scrubber().tree(content),
        Scrubber().value({"call": {"arguments": [content]}})["call"]["arguments"][0],
    ):
        assert out["dsn"] == "app:[REDACTED:url_credentials len=9]@db.internal"
        assert out["db_login"] == "scott/[REDACTED:command_line len=5]@orclpdb"
        assert {k: out[k] for k in kept} == kept
        assert Scrubber().text(json.dumps(content)) == json.dumps(out)  # as its text reads


def test_a_json_string_of_tool_arguments_is_read_as_the_object_it_holds() -> None:
    text = json.dumps({"query": "weather", "api_key": "k-123456"})
    assert json.loads(Scrubber().value(text)) == {
        "query": "weather",
        "api_key": "[REDACTED:key_name len=8]",
    }
    assert Scrubber().value('{"query": "weather"}') == '{"query": "weather"}'  # as it was


@pytest.mark.parametrize(
    "form",
    ['{{"query": "x", "password": "{v}', "{{'api_key': '{v}", 'DB_PASSWORD="{v}',
     'token: "{v}', '{{\\"password\\": \\"{v}', "run --password '{v}",
     "[('x-api-key', '{v}", '<add key="DbPassword" value="{v}',
     '- name: DB_PASSWORD\n  value: "{v}'],
)  # fmt: skip
def test_a_quoted_value_cut_before_its_closing_quote_is_hidden(form: str) -> None:
    """A text cut inside a quoted value (a model's tool call stopped by its token limit mid
    arguments, a body cut to a bound) has no closing quote: the value runs to the text's end.
    A quote left open on a line before other lines (code in a traceback) is no value."""
    value = "Zq9 xTr44pp"
    out = Scrubber().text(form.format(v=value))
    assert_scrubbed(out, "Zq9")
    assert "xTr44pp" not in out
    assert Scrubber().text(out) == out
    arguments = json.dumps({"query": "x", "password": value})[:-2]  # '{..."password": "Zq9 xTr44p'
    assert "Zq9" not in json.dumps(Scrubber().value({"arguments": arguments}))
    code = '    print("password: " + pw)\nValueError: no such user'
    assert Scrubber().text(code) == code


def test_a_registry_login_under_auth_is_hidden_and_other_values_there_are_kept() -> None:
    """A Docker or Podman ``config.json`` (a tool that read it) keeps a registry's login as
    ``"auth": base64(user:password)``: hidden in content as in text. ``auth`` alone names no
    secret: a value that is no such credential stays."""
    login = base64.b64encode(b"bob:" + chars(16).encode()).decode()
    config = {"auths": {"ghcr.io": {"auth": login}}, "credsStore": "desktop"}
    assert Scrubber().value(config) == {
        "auths": {"ghcr.io": {"auth": f"[REDACTED:key_name len={len(login)}]"}},
        "credsStore": "desktop",
    }
    assert_scrubbed(Scrubber().text(json.dumps(config, indent=2)), login, "basic_auth")
    plain = {"auth": "oauth2", "mode": {"auth": base64.b64encode(b"no colon").decode()}}
    assert Scrubber().value(plain) is plain
    assert Scrubber().text(json.dumps(plain)) == json.dumps(plain)


def test_an_npmrc_login_under_auth_is_hidden_in_content_as_in_text() -> None:
    """An ``.npmrc``'s ``_auth`` (``npm config list --json``, a tool's settings) holds base64 of
    ``user:password`` as Docker's ``auth`` does: under any key that ends in ``auth`` it is
    replaced, in content and in text; a value that is no such credential stays."""
    login = base64.b64encode(b"deploy:" + chars(16).encode()).decode()
    for key in ("_auth", "//npm.example.com/:_auth", "npm_config__auth", "registryAuth"):
        assert Scrubber().value({key: login}) == {key: f"[REDACTED:key_name len={len(login)}]"}
        assert_scrubbed(Scrubber().text(f"{key}={login}"), login, "basic_auth")
    plain = {"_auth": "none", "oauth": base64.b64encode(b"no colon").decode()}
    assert Scrubber().value(plain) is plain


def test_an_unchanged_value_is_the_same_object() -> None:
    value = {"a": ["x", {"b": 1}], "input_tokens": 3}
    assert Scrubber().value(value) is value


# --- the user's controls ---------------------------------------------------------------------
def test_added_patterns_keys_and_callback_run_with_the_built_in_detectors() -> None:
    found: list[str] = []
    scrubber = Scrubber(
        patterns={"employee_id": r"EMP-\d{6}", "ticket": re.compile(r"ticket=(?P<secret>\w+)")},
        keys=["pin_code"],
        callback=lambda text: text.replace("Project Falcon", "Project ***"),
    )
    key = fakes()["github_token"]
    out = scrubber.text(f"EMP-123456 on Project Falcon, ticket=abc9, {key}", found.append)
    assert out == (
        "[REDACTED:employee_id len=10] on Project ***, ticket=[REDACTED:ticket len=4], "
        f"[REDACTED:github_token len={len(key)}]"
    )
    assert sorted(found) == ["callback", "employee_id", "github_token", "ticket"]
    assert scrubber.value({"PinCode": 42}) == {"PinCode": "[REDACTED:key_name len=2]"}


@pytest.mark.parametrize(
    "form",
    ["PIN_CODE={v}", '{{"pinCode": "{v}"}}', "pin-code: {v}", "<pin_code>{v}</pin_code>",
     "run --pin-code {v}", "pin_code: '{v}'", "[('Pin-Code', '{v}')]", "pin_code%3D{v}"],
)  # fmt: skip
def test_an_added_key_name_hides_its_value_in_text_as_in_content(form: str) -> None:
    """``Scrubber(keys=[...])`` adds to the one table of names: the value a tool argument
    hides under ``pinCode`` is hidden in an error text, an env dump or a command too."""
    scrubber = Scrubber(keys=["pin_code", "(x)"])  # a name's words only: no regex from it
    value = "91827x3q"
    assert_scrubbed(scrubber.text(form.format(v=value)), value)
    assert Scrubber().text(form.format(v=value)) == form.format(v=value)  # added, not built in
    assert scrubber.text("spin code=1, pin_codes=2") == "spin code=1, pin_codes=2"


def test_an_added_key_name_is_read_in_prose_as_the_built_in_names_are() -> None:
    """The prose form (``your license key is ...``) reads the added names too: one table."""
    value = chars(24)
    text = f"your Acme license key is {value}."
    out = Scrubber(keys=["license_key"]).text(text)
    assert out == text.replace(value, f"[REDACTED:key_value len={len(value)}]")
    assert Scrubber().text(text) == text  # added, not built in


def test_a_built_in_detector_can_be_disabled_and_an_unknown_name_is_refused() -> None:
    text = "DB_PASSWORD=hunter22"
    assert Scrubber(disable=["key_value"]).text(text) == text
    with pytest.raises(ValueError, match="unknown detectors"):
        Scrubber(disable=["no_such_detector"])


# --- linear on hostile input -------------------------------------------------------------------
HOSTILE = [
    "eyJ", ".eyJ", ".eyJaaaaaaaa", "sk-", "sk-a", "AKIA", "password=", "'password':", "://a:",
    "-----BEGIN PRIVATE KEY-----", "-----BEGIN PRIVATE KEY-----\nAAAA", "authorization:",
    "bearer ", "Basic ", "x" * 7 + "=", "hooks.slack.com/services/", "ghp_", "a", "@:/",
    "cookie: a=", "cookie:", "?x-amz-signature=", "token=a&", "token=a&b", "_token: a1",
    "password=b'", "://:", "&signature=" + "a" * 15,
    # encoded: every character an escape, escapes that decode to anchors, to more escapes
    "%41", "%3D", "%25", "%2525", "%", "\\", "\\\\", "\\u0073k-", "\\\"", "password%3D",
    "https%3A%2F%2Fa%3A", "%3A%2F%2F%3A", "\\\"api_key\\\": \\\"", "\\x3d", "://a%3A",
    # HTML character references, XML elements, base64 JSON (one token, or many)
    "&quot;", "&#58;", "&#x3a;", "&amp;", "&nbsp;", "&lt;password&gt;", "<password>", "<token>a1 ",
    "eyJhcGlfa2V5Ijoi", "eyJhcGlfa2V5Ijoi ", "eyJ" + "A" * 12 + " ",
    # the AI stack's prefixes: hex bodies, a bot's id, segments that almost close
    "sk-0", "sk-a-", "sk-" + "0a" * 20 + " ", "sk_0", "0-", "bot1234567:", "lsv2_pt_", "pcsk_aaaa_",
    "ya29.", "SG." + "a" * 22, "pplx-", "r8_", "dapi", "xapp-1-", "('token', '", "[['cookie', 'a",
    "(b'", "[[", "--password ", "-- ", "--a",
    "sshpass -p ", "login -u a", "-u a:", "login -p a", "sshpass -p '", 'mysql -p"a ',
    "redis-cli -a 'a ", "smbclient -U 'a%", "&sig=[REDACTED:sas_signature len=9]",
    "name: token\n", "name: password, value", "password\n  input_value", "token\n ",
    "password: '", 'token : "a', '"password": "' + "a" * 40, "[('token', '" + "a" * 40,
    # every separator and punctuation a labelled value may hold; a flag glued to a word
    "-", "x--api-key", "x--password a", "://a:b/", "://a:1/", "password: str", "password: a[",
    "password: |\n ", 'password="\\', "password:a1<", "password=a<", "password => ",
    "password := ", "password=a>", 'key="password" value="', "mysql -p", "redis-cli -a ",
    "a_key=", "aKey: '", "a_key=0a", "key=" + "0a" * 16,
    "\u0430", "\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44\uff1d", "\u043f\u0430: \u0441 ",
    "\u5bc6\u7801\uff1a",
    # a client's flag, a positional password, a config command, a URL's query and userinfo
    "htpasswd -b ", "htpasswd -nb a ", "rabbitmqctl -n a ", "rabbitmqctl add_user a ",
    "config set token ", "configure -a ", "mongo -p ", "login -p 1 ", "-pass pass:",
    "smbclient -U a", "sqlcmd -P ", "?key=", "&code=a1", "1//0", "://a@", "://a:b#c@",
    "://a:b?@", "://" + "0a" * 20 + "@", "machine a login b ", "machine a login b password",
    "default login a ", "machine a ", "/api/webhooks/1", "discord.com/api/webhooks/1/", "hvs.",
    "hvs.a", '"auth": "', '"auth":"YWI6', '{"auth": "YWI6YQ==',
    # an Authorization scheme's parameters: quoted, escaped, never closed, a long list
    'authorization: digest a="', 'authorization: a a=\\"b', "authorization: a a=b, ",
    "authorization: a-b ", "authorization: " + "a" * 40 + " ",
    # a user and password before a host without a scheme: hosts that never end, never close
    "a:b@a", "a:b@a.", "a:" + "b" * 300, "x:y@" + "a." * 30, "a:b@[::", "a:1@a:",
    "aaa8Q~", "aaa8Q~" + "a" * 30, "ATATT3", "NRAK-",
    # the prefixed keys of an agent's services, a query's named credentials
    "key-", "-us1", "0a" * 16 + "-", "0a" * 16 + "-0a0a0a0a-", "a" * 32 + "-us", "sntrys_eyJ",
    "pat" + "a" * 14 + ".", "dp.st.", ".atlasv1.", "ls__", "?pass=", "&pass=a", ";jsessionid=a1",
    "&oauth_signature=", "?code_verifier=", "sk.eyJ", "re_" + "a" * 8 + "_",
    "Private-Lines: 1", "Private-Lines: 1\n", "Private-Lines: 1\\n" + "A" * 300, "\nA",
    # a label in prose before a value that never ends or is never random; a DSN's forms
    "api key ", "api key is ", "the api key is set to ", "token " + "a" * 15,
    "apikey: '" + "a" * 20, "=a:b@a", "=a:", "=a:b@a.", '"dsn": "a:b@', "a:b@a/",
    "a:b@" + "a." * 30 + "/", "sqlplus ", "sqlplus a/", "sqlplus -s -s -s -s a/b", "connect('a/",
    "rman target ", "expdp a/b@", "pass=", "_pass ", "pass is ", '"kty" "d": "', "'k':'" + "a" * 16,
    # GitLab's prefixes, a webhook trigger, an .npmrc login, .pgpass lines, a PEM's base64, a
    # short password in prose, a login under a setting's name
    "glrt-", "glagent-a", "hooks.slack.com/triggers/", "_auth=", "auth: 'YWI6",
    "_auth=YWI6" + "a" * 30, "a:5432:a:a:", "\na:*:a:a:a", "a:5432:", "LS0tLS1CRUdJTi",
    "LS0tLS1CRUdJTiA\n", "LS0tLS1CRUdJTiA\r\n\n",
    "password is A1!", "password was a", "db_login=a/", "dsn: a/b@", "login=a/b@1", "conn=a/b@a",
    # a Kubernetes Secret's data: blocks, documents, values folded on, objects never closed
    "kind: Secret\ndata:\n", "kind: Secret\n---\ndata:\n a: b\n", " data:\n  a: |\n   b\n",
    'kind: Secret "data": {"a": "', "kind: Secret\n  " + "a" * 300 + "\n",
    # a user and a letters-only password before a host, in prose
    " a:b@a.", " a" * 40 + ":b@c ",
    # a Teams webhook's path, a Zapier catch hook's
    "webhook.office.com/webhookb2/a/incomingwebhook/", "/incomingwebhook/" + "a" * 16 + "/",
    "hooks.zapier.com/hooks/catch/1/",
    # characters drawn as nothing, alone and between a key's
    "\u200b", "sk-a\u200b\u00ad", "password\u200d=",
    # a settings line, a Secret's flow map, a bot's token alone, a login before a server
    "\npassword: ", "\n" + "a_" * 30 + "password: a", "x: yyy\n", "a" * 130 + "_token: abc\n",
    "\n  - token: " + "a" * 600 + " ",
    "kind: Secret\ndata: {", "kind: Secret data: {a: b, ", " data: {a" + ":" * 40, "1234567:AA",
    " user:a@1.1.1.1", " user:a@" + "a" * 70 + "-", " user:a@db",
    # a user and a password under an auth name
    "auth=('a', '", "basicauth(\"a\", \"" + "b" * 600,
]  # fmt: skip


def _scrub_cost(unit: str, size: int, tries: int = 3) -> float:
    """The least CPU time of ``tries`` scrubbings of ``unit`` repeated to ``size`` chars."""
    scrubber = Scrubber()
    text = unit * (size // len(unit))
    best = float("inf")
    for _ in range(tries):
        start = time.process_time()
        scrubber.text(text)
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.heavy  # megabytes scrubbed twice each, timed: run by the heavy suite
@pytest.mark.parametrize("unit", HOSTILE)
def test_hostile_repetitions_cost_time_linear_in_their_length(unit: str) -> None:
    small, large = _scrub_cost(unit, 20_000), _scrub_cost(unit, 160_000)
    # 8x the input: linear is ~8x; quadratic would be ~64x. Generous for a shared machine.
    assert large < 24 * small + 0.05, (small, large)


@pytest.mark.heavy  # megabytes scrubbed twice each, timed: run by the heavy suite
@pytest.mark.parametrize(
    "unit",
    [
        "redis-cli -a ",
        "[REDACTED:x len=1] token=abc123 ",
        "api key is 1234abcd-5678-90ef-1234-567890abcdef ",
        "DSN=app:pw@db/x ",
    ],
)
def test_a_text_of_many_finds_costs_time_linear_in_its_length(unit: str) -> None:
    """Each find was cut around the markers with a copy of every marker after its first one:
    quadratic in a text of many finds that meets markers, as every pass after the first does
    (a megabyte of ``redis-cli -a`` took seconds, twice as much took four times as long)."""
    small, large = _scrub_cost(unit, 64_000, 2), _scrub_cost(unit, 1_024_000, 2)
    # 16x the input: linear is ~16x; quadratic ~256x. Generous for a shared machine.
    assert large < 40 * small + 0.1, (small, large)


# Labelled values in the forms the detectors read (key=value, flags, pairs, elements), each
# flag and prefixed key after a space: a marker before one changes no detector's left context.
_LABELLED = (
    "password", "api_key", "token", "=", ": ", " = ", "'", '"', "b'", ", ", "&", ",", "\n  ",
    "abc123XYZ", "hunter2", " --api-key ", " --password=", " --token ", "', '", " login -p ",
    " sshpass -p ", " -u ", "a:b", "<secret>", "</secret>", "input_value=", "value: ", "(",
    "[", ")", "]", " ://u:p@h", " Basic dXNlcjpwYXNzd29yZDE=", " sk-" + "0123456789abcdef" * 2,
    "name: DB_PASSWORD\n",
)  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "mytool --token =&x9Pq2",  # the flag's value read from the "=" before key_value's marker
        "value: (&--api-key =,&b'sk-",
        "--password '=&hunter2' --api-key =&abc123",
    ],
)
def test_a_find_that_runs_into_a_marker_leaves_it_whole(text: str) -> None:
    """A detector whose value starts before a marker (a flag's value from the ``=`` that
    key_value's marker follows) took the marker's head with it: scrubbing again garbled it
    (``[REDACTED:command_line len=20] len=7]``), and a marker said a wrong length."""
    once = Scrubber().text(text)
    assert Scrubber().text(once) == once
    assert re.sub(r"\[REDACTED:[a-z_]+ len=[0-9]+\]", "", once).count("REDACTED") == 0


def test_a_value_glued_to_a_marker_is_redacted_apart_from_it() -> None:
    """A value that runs on into a marker (text scrubbed before, then joined) is redacted up
    to the marker, which stays as it was."""
    out = Scrubber().text("password=hunter2x9[REDACTED:openai_api_key len=51] ok")
    assert out == "password=[REDACTED:key_value len=9][REDACTED:openai_api_key len=51] ok"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_LABELLED), max_size=12))
def test_labelled_values_scrubbed_twice_change_nothing_more(parts: list[str]) -> None:
    once = Scrubber().text("".join(parts))
    assert Scrubber().text(once) == once


def test_an_oracle_login_as_an_argv_list_loses_its_password() -> None:
    """``["sqlplus", "scott/tiger@orcl"]`` has no flag: the list is read as its command's
    text because its command is one of Oracle's, which take the login as an argument."""
    scrubber = Scrubber()
    for way in (scrubber.value, scrubber.tree):
        out = way(["sqlplus", "scott/tiger@orcl", "@report.sql"])
        assert out == ["sqlplus", "scott/[REDACTED:command_line len=5]@orcl", "@report.sql"]
    assert scrubber.value(["sqlplus", "/nolog"]) == ["sqlplus", "/nolog"]


@pytest.mark.parametrize(
    ("argv", "kept"),
    [
        (["mytool", "--api-key", "s3cretPW9x", "-v"], ["mytool", "--api-key", "-v"]),
        (["curl", "-u", "deploy:hunter2x", "https://ci"], ["curl", "-u", "https://ci"]),
        (("sshpass", "-p", "hunter2x", "ssh", "ops@h"), ["sshpass", "-p", "ssh", "ops@h"]),
        (["docker", "login", "-u", "me", "-p", "hunter2x"], ["docker", "login", "-u", "me", "-p"]),
    ],
    ids=["flag", "curl", "sshpass", "docker"],
)
def test_a_command_as_an_argv_list_is_scrubbed_as_its_text_is(
    argv: list[str] | tuple[str, ...], kept: list[str]
) -> None:
    """In structured content (a tool's arguments, ``process.command_args`` in the resource)
    each item was scrubbed alone: a flag's value, the next item, was never seen beside its
    flag. The command_line detectors read the list as they read its repr."""
    secret = next(item for item in argv if item not in kept)
    scrubber = Scrubber()
    for way, value in ((scrubber.value, argv), (scrubber.tree, list(argv))):  # tree: lists
        out = way(value)
        assert secret not in str(out)
        assert [item for item in out if not item.startswith("[REDACTED:")] == kept
        assert way(out) == out  # twice: nothing more
    assert Scrubber().value({"process.command_args": argv})["process.command_args"] != argv
    assert Scrubber().tree(["ls", "-la", "/tmp"]) == ["ls", "-la", "/tmp"]


# --- any secret, anywhere in any text ------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=60),
    st.sampled_from(sorted(fakes().items()) + sorted(context_fakes().values())),
    st.text(max_size=60),
)
def test_a_secret_embedded_in_any_text_leaves_nothing_of_itself(
    before: str, case: tuple[str, str], after: str
) -> None:
    shown, secret = case
    if secret not in shown:
        shown = secret
    out = Scrubber().text(glued(before, shown) + after)
    assert_scrubbed(out, secret)


@settings(max_examples=150, deadline=None)
@given(
    st.text(max_size=40),
    st.sampled_from(sorted(fakes().values()) + sorted(t for t, _ in context_fakes().values())),
    st.text(max_size=40),
)
def test_scrubbing_twice_changes_nothing_more(before: str, secret: str, after: str) -> None:
    """A marker is never scrubbed again, whichever detector would read it as a value: the
    signature of a URL (``sig=[REDACTED:...]&``), a quoted flag value."""
    once = Scrubber().text(glued(before, secret) + after)
    assert Scrubber().text(once) == once
    assert Scrubber().value({"password": once, "q": once}) == Scrubber().value(
        Scrubber().value({"password": once, "q": once})
    )
