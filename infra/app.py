"""Entry point of the CDK app (`cdk.json` runs `python -m infra.app`).

Settings come from CDK context; cdk-nag's AwsSolutions pack runs as a validation plugin, so a finding
that is not acknowledged (with a reason, next to the construct it concerns) stops the synth.
"""

from __future__ import annotations

import os
import sys

# jsii warns loudly when Node.js is past its end of life; the CDK still works, and the warning would
# bury the real output of every synth on machines whose Node the project does not control.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,20")

from aws_cdk import App, Validations
from cdk_nag import AwsSolutionsChecks

from infra.config import ContextError, Settings
from infra.stack import NodewrightStack


def build_app(app: App) -> NodewrightStack:
    """Add the stack to `app` and register the checks; raises ContextError for bad context values."""
    settings = Settings.from_context(app.node.try_get_context)
    stack = NodewrightStack(app, settings.stack_name, settings=settings)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return stack


def main() -> int:
    """Synthesize the app into the CDK's output directory; exits 2 with a readable message on bad context."""
    app = App()
    try:
        build_app(app)
    except ContextError as exc:
        print(f"nodewright: {exc}", file=sys.stderr)
        return 2
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
