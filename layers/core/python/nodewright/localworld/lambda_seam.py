"""The one seam between moto's Lambda service and our handler code.

moto runs Lambda functions in Docker, which the local world does not have. `install()` replaces
moto's `LambdaFunction._invoke_lambda` (inside the moto server process) with an in-process call of
the function's real handler, and runs `Event` invocations after answering them, as Lambda does.
Everything else about Lambda stays moto's: CreateFunction, Invoke, Step Functions' lambda tasks,
EventBridge and SQS targets all reach the handler through this seam.

Where the code comes from, in order:
1. the function tag `nodewright:source` = a directory relative to the repository (the CDK app tags
   each function with its `functions/<name>` folder), or
2. the deployed zip itself, unpacked once per code hash into the world's state directory.
The handler string (`handler.handler`, `pkg.mod.fn`) then names a file and a function in that
directory, exactly as the Lambda runtime resolves it.

Each invocation runs with the function's environment, `AWS_ENDPOINT_URL` pointing back at this
moto server, and credentials obtained by assuming the function's execution role in moto's STS, so
the identity the handler presents (for example inside an EKS token) is the role's, as in AWS.
Environment variables are process-wide, so invocations are serialized by a lock.

Kill rules (`faults.KillRule`) stop an invocation at a named step: every AWS call a handler makes goes through
botocore's `BaseClient._make_api_call`, every Kubernetes request through the adapter's `ApiServer.request` and
every watch through its `ApiServer.stream` (step `k8s:WATCH <path>`, "after" checked on each line received). All
are wrapped once, and consult the rules only inside an invocation (a context variable, carried into the handler's
thread pools), so moto's own clients (Step Functions calling Lambda) are never stopped. Once killed, every later
call of the invocation is refused too: a dead container sends nothing more.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import importlib.util
import io
import json
import os
import sys
import threading
import time
import traceback
import uuid
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from nodewright.localworld.faults import Faults, InvocationKilled

SOURCE_TAG = "nodewright:source"

_LOCK = threading.RLock()
_MODULES: dict[tuple[str, str], ModuleType] = {}


class Invocation:
    """One running invocation, as the kill hooks see it: the function's name and whether it is dead."""

    def __init__(self, function: str, faults: Faults | None) -> None:
        self.function = function
        self.faults = faults
        self.killed: InvocationKilled | None = None

    def step(self, phase: str, step: str) -> None:
        """Raise InvocationKilled when a kill rule stops this invocation at `step`, or it was already killed."""
        if self.killed is not None:
            raise InvocationKilled(self.function, self.killed.phase, self.killed.step, str(self.killed))
        if self.faults is None:
            return
        rule = self.faults.take_kill(self.function, phase, step)
        if rule is not None:
            self.killed = InvocationKilled(self.function, phase, step, rule.error)
            raise self.killed


_CURRENT: contextvars.ContextVar[Invocation | None] = contextvars.ContextVar("nodewright_invocation", default=None)


def current() -> Invocation | None:
    """The invocation the calling code runs in (None outside handlers)."""
    return _CURRENT.get()


@contextlib.contextmanager
def running(function: str, faults: Faults | None) -> Iterator[Invocation]:
    """Run the body as an invocation of `function`: the kill hooks apply `faults` to its steps."""
    invocation = Invocation(function, faults)
    token = _CURRENT.set(invocation)
    try:
        yield invocation
    finally:
        _CURRENT.reset(token)


def install_step_hooks() -> None:
    """Wrap botocore's API calls, the Kubernetes adapter's requests and thread-pool submission (once per
    process) so kill rules see every step an invocation takes, in any of its threads."""
    from concurrent.futures import Future, ThreadPoolExecutor

    from botocore.client import BaseClient
    from botocore.exceptions import ClientError

    from nodewright.adapters.apiserver import ApiServer

    # Private to botocore and absent from its stubs, but the one place every client's every call passes.
    make_api_call = getattr(BaseClient, "_make_api_call")  # noqa: B009
    if getattr(make_api_call, "_nodewright_hooked", False):
        return

    def api_call(self: Any, operation_name: str, api_params: Any) -> Any:
        invocation = _CURRENT.get()
        if invocation is None:
            return make_api_call(self, operation_name, api_params)
        step = f"{self.meta.service_model.signing_name}:{operation_name}"
        invocation.step("before", step)
        try:
            result = make_api_call(self, operation_name, api_params)
        except ClientError:
            # An error answer is an answer: the call went out and came back.
            invocation.step("after", step)
            raise
        invocation.step("after", step)
        return result

    api_call._nodewright_hooked = True  # type: ignore[attr-defined]
    setattr(BaseClient, "_make_api_call", api_call)  # noqa: B010

    request = ApiServer.request

    def kubernetes_request(self: Any, method: str, path: str, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        invocation = _CURRENT.get()
        if invocation is None:
            return request(self, method, path, *args, **kwargs)
        step = f"k8s:{method.upper()} {path}"
        invocation.step("before", step)
        answer = request(self, method, path, *args, **kwargs)
        invocation.step("after", step)
        return answer

    setattr(ApiServer, "request", kubernetes_request)  # noqa: B010

    stream = ApiServer.stream

    def kubernetes_watch(self: Any, path: str, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        # A watch is its own verb (as in the API server's audit log), so a rule on a list's GET does not fire on it.
        invocation = _CURRENT.get()
        if invocation is None:
            yield from stream(self, path, *args, **kwargs)
            return
        step = f"k8s:WATCH {path}"
        invocation.step("before", step)
        for line in stream(self, path, *args, **kwargs):
            # Each line is an answer that arrived: a kill "after" one stops the container mid-watch.
            invocation.step("after", step)
            yield line

    setattr(ApiServer, "stream", kubernetes_watch)  # noqa: B010

    submit = ThreadPoolExecutor.submit
    add_done_callback = Future.add_done_callback

    def submit_in_context(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        # Worker threads start with an empty context; a handler's pool must still count as the invocation.
        if _CURRENT.get() is None:
            return submit(self, fn, *args, **kwargs)
        return submit(self, contextvars.copy_context().run, fn, *args, **kwargs)

    def add_done_callback_in_context(self: Any, fn: Any) -> None:
        # A done callback runs in whichever thread finished the future, outside the work's context; a handler's
        # callback that submits more work (the provisioner's create-then-launch pipeline) must carry it along.
        if _CURRENT.get() is None:
            add_done_callback(self, fn)
            return
        context = contextvars.copy_context()
        add_done_callback(self, lambda future: context.run(fn, future))

    setattr(Future, "add_done_callback", add_done_callback_in_context)  # noqa: B010
    setattr(ThreadPoolExecutor, "submit", submit_in_context)  # noqa: B010


@dataclass(frozen=True)
class HandlerRef:
    """A handler string split into the module file (relative to the code root) and function name."""

    module_path: str
    function: str

    @classmethod
    def parse(cls, handler: str) -> HandlerRef:
        """Parse `a.b.fn` into file `a/b.py` and function `fn`, as the Python runtime does."""
        module, sep, function = handler.rpartition(".")
        if not sep or not module or not function:
            raise ValueError(f"handler {handler!r} is not of the form module.function")
        return cls(module_path=module.replace(".", "/") + ".py", function=function)


def resolve_code_dir(tags: dict[str, str], code_bytes: bytes, repo_root: Path, unpack_root: Path) -> Path:
    """Directory holding the function's code: the tagged source folder, else the unpacked zip."""
    source = tags.get(SOURCE_TAG)
    if source:
        path = (repo_root / source).resolve()
        if not path.is_dir():
            raise FileNotFoundError(f"{SOURCE_TAG} tag points at {path}, which is not a directory")
        return path
    if not code_bytes:
        raise FileNotFoundError(f"function has neither a {SOURCE_TAG} tag nor a code package")
    data = code_bytes
    if not zipfile.is_zipfile(io.BytesIO(data)):
        data = base64.b64decode(code_bytes)
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = unpack_root / digest
    if not target.is_dir():
        tmp = unpack_root / f".{digest}.{uuid.uuid4().hex[:6]}"
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.extractall(tmp)
        tmp.rename(target)
    return target


def load_handler(code_dir: Path, handler: str) -> Callable[[Any, Any], Any]:
    """Import the handler's module from `code_dir` (once per directory, like a warm container)."""
    ref = HandlerRef.parse(handler)
    key = (str(code_dir), ref.module_path)
    module = _MODULES.get(key)
    if module is None:
        file = code_dir / ref.module_path
        if not file.is_file():
            raise FileNotFoundError(f"handler module {file} does not exist")
        name = "_nodewright_fn_" + hashlib.sha256(str(file).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, file)
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot load {file}")
        module = importlib.util.module_from_spec(spec)
        # Siblings of the handler (helpers in the same folder) import as top-level modules in Lambda.
        sys.path.insert(0, str(code_dir))
        try:
            spec.loader.exec_module(module)
        finally:
            with contextlib.suppress(ValueError):
                sys.path.remove(str(code_dir))
        _MODULES[key] = module
    fn = getattr(module, ref.function, None)
    if not callable(fn):
        raise AttributeError(f"{ref.module_path} has no callable {ref.function!r}")
    return fn  # type: ignore[no-any-return]


class LambdaContext:
    """The subset of the Lambda context object handlers and Powertools read."""

    def __init__(self, function_name: str, function_arn: str, memory_mb: int, timeout_s: float) -> None:
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.invoked_function_arn = function_arn
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = time.strftime("%Y/%m/%d/[$LATEST]") + uuid.uuid4().hex
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's configured timeout."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The payload the Python runtime returns for an unhandled exception; Step Functions matches
    Retry/Catch `ErrorEquals` against its `errorType`."""
    return {
        "errorMessage": str(exc),
        "errorType": type(exc).__name__,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


def killed_payload(exc: InvocationKilled, request_id: str) -> dict[str, Any]:
    """What Lambda answers when the runtime process died mid-invocation (`Runtime.ExitError`)."""
    return {
        "errorMessage": f"RequestId: {request_id} Error: Runtime exited with error: signal: killed ({exc})",
        "errorType": "Runtime.ExitError",
    }


def install(repo_root: Path, unpack_root: Path, endpoint_url: str, faults: Faults | None = None) -> None:
    """Replace moto's Docker-based Lambda execution with an in-process call (moto server only); with `faults`,
    its kill rules can stop invocations at a named step."""
    import boto3
    from moto.awslambda import models as lambda_models
    from moto.sts.models import sts_backends

    from nodewright.adapters import aws_sdk

    install_step_hooks()
    unpack_root.mkdir(parents=True, exist_ok=True)
    # A function's layers are this interpreter's packages here, so the trimmed AWS models its dependencies
    # layer carries are built from the installed botocore and replace the layer path in its environment.
    aws_models = str(aws_sdk.cached_models())

    def credentials_for(fn: Any) -> dict[str, str]:
        # The execution role's session, so downstream identity checks see the role like in AWS.
        backend = sts_backends[fn.account_id]["aws"]
        role = backend.assume_role(
            region_name=fn.region,
            role_session_name=fn.function_name[:64],
            role_arn=fn.role,
            policy="",
            duration=3600,
            external_id="",
        )
        return {
            "AWS_ACCESS_KEY_ID": role.access_key_id,
            "AWS_SECRET_ACCESS_KEY": role.secret_access_key,
            "AWS_SESSION_TOKEN": role.session_token,
        }

    def invoke(fn: Any, event: Any = None) -> tuple[str, bool, str]:
        if event is None:
            event = {}
        with _LOCK:
            log_buffer = io.StringIO()
            env = {
                "AWS_REGION": fn.region,
                "AWS_DEFAULT_REGION": fn.region,
                "AWS_ENDPOINT_URL": endpoint_url,
                "AWS_LAMBDA_FUNCTION_NAME": fn.function_name,
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(fn.memory_size),
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "_HANDLER": fn.handler,
                **credentials_for(fn),
                **{str(k): str(v) for k, v in (fn.environment_vars or {}).items()},
            }
            if aws_sdk.MODELS_ENV in env:
                env[aws_sdk.MODELS_ENV] = aws_models
            request_id = ""
            try:
                code_dir = resolve_code_dir(dict(fn.tags or {}), fn.code_bytes, repo_root, unpack_root)
                # boto3's default session caches the first credentials it finds; each function must
                # see its own role's, as it would in its own Lambda sandbox.
                boto3.DEFAULT_SESSION = None
                with (
                    running(fn.function_name, faults),
                    _environment(env),
                    contextlib.redirect_stdout(log_buffer),
                    contextlib.redirect_stderr(log_buffer),
                ):
                    handler = load_handler(code_dir, fn.handler)
                    context = LambdaContext(fn.function_name, fn.function_arn, int(fn.memory_size), float(fn.timeout))
                    request_id = context.aws_request_id
                    result = handler(event, context)
                output, errored = json.dumps(result, default=str), False
            except InvocationKilled as exc:
                log_buffer.write(f"nodewright local world: invocation killed {exc.phase} {exc.step}\n")
                output, errored = json.dumps(killed_payload(exc, request_id)), True
            except Exception as exc:
                traceback.print_exc(file=log_buffer)
                output, errored = json.dumps(error_payload(exc)), True
            finally:
                boto3.DEFAULT_SESSION = None
            logs = log_buffer.getvalue()
            if logs:
                sys.stderr.write(f"[lambda {fn.function_name}]\n{logs}")
            with contextlib.suppress(Exception):
                fn.save_logs(logs + output)
            return output, errored, logs

    # A plain function assigned on the class becomes the method moto calls for every invocation.
    setattr(lambda_models.LambdaFunction, "_invoke_lambda", invoke)  # noqa: B010
    synchronous = lambda_models.LambdaFunction.invoke

    def invoke_async_events(fn: Any, body: str, request_headers: Any, response_headers: Any) -> str | bytes:
        """An `Event` invocation is accepted at once and run afterwards, as Lambda does (moto runs it inside the
        Invoke call). A function that asks another for work without waiting (the planner asking the provisioner
        for a CapacityBuffer's capacity) would otherwise wait on the lock its own invocation holds."""
        if request_headers.get("x-amz-invocation-type") != "Event":
            return synchronous(fn, body, request_headers, response_headers)
        event = json.loads(body) if body else {}
        threading.Thread(target=fn._invoke_lambda, kwargs={"event": event}, daemon=True).start()
        return ""

    setattr(lambda_models.LambdaFunction, "invoke", invoke_async_events)  # noqa: B010
