"""Validation errors that name the file, the object and the field.

Every error renders as `<file>: <kind>/<name>: <field path>: <what is wrong and how to fix it>`, so a user
can jump straight to the line they got wrong. Parsers collect errors instead of raising, so one run reports
every mistake in a document, not only the first.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class ValidationError:
    """One problem found while loading or validating an object."""

    source: str
    kind: str
    name: str
    path: str
    message: str

    def __str__(self) -> str:
        parts = [self.source or "<input>"]
        if self.kind:
            parts.append(f"{self.kind}/{self.name or '<unnamed>'}")
        if self.path:
            parts.append(self.path)
        parts.append(self.message)
        return ": ".join(parts)


@dataclass(slots=True)
class Collector:
    """Collects the errors of one document; parsers report through it and carry on."""

    source: str
    kind: str
    name: str
    errors: list[ValidationError] = field(default_factory=list)

    def error(self, path: str, message: str) -> None:
        """Record that the field at `path` is wrong, with a message that says how to fix it."""
        self.errors.append(ValidationError(self.source, self.kind, self.name, path, message))

    @property
    def ok(self) -> bool:
        return not self.errors
