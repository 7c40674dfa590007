"""One base class for every error a user can cause, so the CLI and the bot can answer in one line."""

from __future__ import annotations


class FabricbotError(Exception):
    """An error caused by input or configuration; its message names the input and the value."""

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as it is, whatever its class's constructor takes: an answer made in a worker process may be one."""
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(kind: type[FabricbotError], args: tuple[object, ...], state: dict[str, object]) -> FabricbotError:
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(state)
    return error


SHOWN_CHARS = 120  # of a value too long to echo whole (a 5,000-character node name pasted by mistake)


def shown_value(value: object) -> str:
    """A value as an error echoes it: its repr, or its first characters and how long it is."""
    text = str(value)
    if isinstance(value, str) and len(text) > 2 * SHOWN_CHARS:  # a reader's detail (a field's path) stays whole
        return f"{text[:SHOWN_CHARS]!r}... ({len(text):,} characters)"
    return repr(value)


class InputError(FabricbotError):
    """Bad input: names the file (or case), the line or field, and the offending value."""

    def __init__(
        self,
        message: str,
        *,
        source: str | None = None,
        line: int | None = None,
        field: str | None = None,
        value: object = None,
    ) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.value = value
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        parts = [where] if where else []
        if self.field:
            parts.append(f"field '{self.field}'")
        head = ", ".join(parts)
        text = f"{head}: {self.reason}" if head else self.reason
        if self.value is not None:
            text += f" (got {shown_value(self.value)})"
        return text


class ConfigError(FabricbotError):
    """A data file (thresholds, platforms, catalog) or a setting that cannot be used."""
