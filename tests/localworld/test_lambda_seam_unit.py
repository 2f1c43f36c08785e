"""The Lambda seam's code resolution and handler loading (no moto server needed)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from nodewright.localworld.lambda_seam import (
    SOURCE_TAG,
    HandlerRef,
    LambdaContext,
    error_payload,
    load_handler,
    resolve_code_dir,
)


def test_handler_strings_resolve_like_the_python_runtime() -> None:
    assert HandlerRef.parse("handler.handler") == HandlerRef("handler.py", "handler")
    assert HandlerRef.parse("pkg.app.main") == HandlerRef("pkg/app.py", "main")
    with pytest.raises(ValueError):
        HandlerRef.parse("handler")


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


def test_a_deployed_zip_is_unpacked_once_and_its_handler_runs(tmp_path: Path) -> None:
    code = _zip(
        {
            "handler.py": "from helper import double\ndef handler(event, context):\n    return double(event['x'])\n",
            "helper.py": "def double(x):\n    return 2 * x\n",
        }
    )
    first = resolve_code_dir({}, code, tmp_path, tmp_path / "unpacked")
    assert resolve_code_dir({}, code, tmp_path, tmp_path / "unpacked") == first
    fn = load_handler(first, "handler.handler")
    assert fn({"x": 21}, None) == 42


def test_the_source_tag_points_at_a_repository_folder(tmp_path: Path) -> None:
    folder = tmp_path / "functions" / "echo"
    folder.mkdir(parents=True)
    (folder / "app.py").write_text("def main(event, context):\n    return {'echo': event}\n")
    code_dir = resolve_code_dir({SOURCE_TAG: "functions/echo"}, b"", tmp_path, tmp_path / "unpacked")
    assert code_dir == folder.resolve()
    assert load_handler(code_dir, "app.main")({"a": 1}, None) == {"echo": {"a": 1}}
    with pytest.raises(FileNotFoundError):
        resolve_code_dir({SOURCE_TAG: "functions/missing"}, b"", tmp_path, tmp_path / "unpacked")
    with pytest.raises(FileNotFoundError):
        resolve_code_dir({}, b"", tmp_path, tmp_path / "unpacked")
    with pytest.raises(AttributeError):
        load_handler(code_dir, "app.missing")


def test_errors_and_context_look_like_lambdas() -> None:
    try:
        raise KeyError("nope")
    except KeyError as exc:
        payload = error_payload(exc)
    assert payload["errorType"] == "KeyError"
    assert payload["stackTrace"]
    context = LambdaContext("fn", "arn:aws:lambda:us-east-1:1:function:fn", 256, 3.0)
    assert 0 < context.get_remaining_time_in_millis() <= 3000
