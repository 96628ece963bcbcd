"""No secret leaves: redirects to another origin, encoded forms in error bodies, and asset print()."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from enginekit import history, spawn, step_log
from httpserver import serve

pytestmark = pytest.mark.processes

SECRET = "s3cr3t-Value-42!"
USER = "apiuser"


def everything_under(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def base64_forms(secret: str, user: str) -> list[str]:
    """The whole Basic credential and the secret's own base64 at each of the three alignments."""
    forms = [base64.b64encode(f"{user}:{secret}".encode()).decode()]
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret.encode()).decode()
        forms.append(encoded[4 if offset else 0 : 4 * ((offset + len(secret)) // 3)])
    return forms


def run(root: Path, *args: str) -> tuple[int, dict, str]:
    child = spawn(root, *args, env={"CROFT_RETRY_DELAYS": "0"})
    out, err = child.communicate(timeout=60)
    return child.returncode, json.loads(out), err


def test_a_redirect_to_another_origin_carries_no_secret_header(make_project):
    with serve() as first, serve() as second:
        second.route("GET", "/items", lambda *a: (200, {}, [{"id": 1}]))
        first.route("GET", "/items", lambda *a: (302, {"Location": second.url("/items")}, b""))
        root = make_project(
            {
                "assets/items.py": f"""
                from croft import ingest


                @ingest(key="id", secrets=["API_KEY"])
                def rows(ctx):
                    key = ctx.secret("API_KEY")
                    headers = {{"X-Api-Key": key, "X-Custom": "v=" + key, "Authorization": "Bearer " + key,
                               "X-Plain": "hello"}}
                    yield ctx.http.get("{first.url("/items")}", headers=headers).json()
                """,
                ".env": f"API_KEY={SECRET}\n",
            }
        )
        code, envelope, _ = run(root, "run")
        assert code == 0, envelope
        [sent] = first.requests_to("/items")
        [received] = second.requests_to("/items")
    assert sent.headers["x-api-key"] == SECRET  # the origin it was meant for gets it
    assert received.headers.get("x-plain") == "hello"
    for name in ("x-api-key", "x-custom", "authorization"):
        assert name not in received.headers, received.headers
    assert SECRET not in json.dumps(received.headers)
    line = next(x for x in step_log(root, "items").splitlines() if "another origin" in x)
    assert "x-api-key" in line and "authorization" in line and "x-custom" in line and "x-plain" not in line


def test_basic_auth_echoed_in_a_403_leaves_no_base64_of_the_secret_anywhere(make_project):
    def echo(method, path, query, headers, body):
        return 403, {}, {"error": "forbidden", "you_sent": headers.get("authorization")}

    with serve() as server:
        server.route("GET", "/items", echo)
        root = make_project(
            {
                "assets/items.py": f"""
                from croft import ingest


                @ingest(key="id", secrets=["API_PASS"])
                def rows(ctx):
                    yield ctx.http.get("{server.url("/items")}", auth=("{USER}", ctx.secret("API_PASS"))).json()
                """,
                ".env": f"API_PASS={SECRET}\n",
            }
        )
        code, envelope, err = run(root, "run")
        _, logs, _ = run(root, "logs", "items")
        _, runs, _ = run(root, "logs", "--runs")
        assert server.requests_to("/items")[0].headers["authorization"].startswith("Basic ")
    assert code == 1 and envelope["problems"][0]["code"] == "HTTP_ERROR"
    assert "redacted:API_PASS" in envelope["problems"][0]["details"]["body"]  # it was echoed, and hidden
    outputs = (json.dumps(envelope) + json.dumps(logs) + json.dumps(runs) + err).encode()
    stored = everything_under(root / ".croft")
    for form in [SECRET, *base64_forms(SECRET, USER)]:
        assert form.encode() not in stored, form
        assert form.encode() not in outputs, form


def test_asset_print_goes_to_the_step_log_redacted_and_stdout_stays_one_envelope(make_project):
    root = make_project(
        {
            "assets/chatty.py": """
            import os
            import sys

            from croft import ingest

            print("importing, key", os.environ.get("NOPE"))


            @ingest(key="id", secrets=["API_KEY"])
            def rows(ctx):
                key = ctx.secret("API_KEY")
                print("the key is", key)
                print("to stderr", key, file=sys.stderr)
                os.write(1, ("raw fd write " + key + "\\n").encode())
                yield {"id": 1}
            """,
            ".env": f"API_KEY={SECRET}\n",
        }
    )
    code, envelope, err = run(root, "run")  # json.loads of the whole stdout: exactly one document
    assert code == 0 and envelope["ok"] is True
    assert SECRET not in json.dumps(envelope) and SECRET not in err and "the key is" not in err
    text = step_log(root, "chatty")
    assert "stdout: the key is [redacted:API_KEY]" in text
    assert "stderr: to stderr [redacted:API_KEY]" in text
    assert "output: raw fd write [redacted:API_KEY]" in text
    assert "stdout: importing, key None" in text
    assert SECRET.encode() not in everything_under(root / ".croft")


def test_an_asset_calling_os_exit_fails_its_step_and_croft_still_reports(make_project):
    root = make_project(
        {
            "assets/quitter.py": """
            import os

            from croft import ingest


            @ingest(key="id")
            def rows(ctx):
                yield {"id": 1}
                os._exit(0)
            """,
            "assets/fine.py": """
            from croft import ingest


            @ingest(key="id")
            def rows(ctx):
                yield {"id": 1}
            """,
        }
    )
    code, envelope, _ = run(root, "run")
    assert code == 1 and envelope["ok"] is False
    [problem] = envelope["problems"]
    assert problem["code"] == "ASSET_CODE_ERROR" and "os._exit(0)" in problem["message"]
    steps = {s["asset"]: s["status"] for s in envelope["data"]["steps"]}
    assert steps == {"fine": "ok", "quitter": "failed"}
    assert history(root, "SELECT status FROM runs") == [{"status": "failed"}]


def test_a_thread_left_behind_by_a_step_never_writes_to_croft_stdout(capsys):
    import threading

    from croft.engine.sandbox import output_routing, step_guard

    lines: list[str] = []

    def leftover(text: str) -> None:
        worker = threading.Thread(target=lambda: print(text))
        worker.start()
        worker.join()

    with output_routing():
        print("croft's own line")
        with step_guard(lines.append):
            print("asset line")
            leftover("asset thread line")
        leftover(f"after the step {SECRET}")  # a generator still running after its TIMEOUT
    out = capsys.readouterr().out
    assert out == "croft's own line\n"
    assert lines == ["stdout: asset line", "stdout: asset thread line"]
