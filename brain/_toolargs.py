"""Tool arguments that fail their schema, said in one plain line (as the CLI says its errors)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

SHOWN = 40  # characters of a refused value worth echoing back


def plain(exc: ValidationError, schema: Mapping[str, Any]) -> str:
    """What is wrong with the arguments, one line: "k must be between 1 and 20, not 99".

    `schema` is the tool's JSON schema: it gives both bounds of a range and the allowed names.
    """
    said = [_one(error, schema) for error in exc.errors(include_url=False)]
    return "; ".join(dict.fromkeys(said))  # the same complaint once


def _one(error: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    loc = [str(part) for part in error.get("loc", ())]
    name = loc[0] if loc else "arguments"
    where = name + "".join(f"[{p}]" for p in loc[1:])
    kind = str(error.get("type", ""))
    if kind == "missing":
        return f"{where} is required"
    if kind == "extra_forbidden":
        allowed = ", ".join(schema.get("properties") or {}) or "none"
        return f"unknown argument {name!r}; allowed: {allowed}"
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    prop: Mapping[str, Any] = (schema.get("properties") or {}).get(name, {})
    value = error.get("input")
    got = f", not {_shown(value)}" if _echoable(value) else ""
    said = _limit(where, kind, ctx, prop, value, got)
    if said is None:
        said = _wrong_type(where, kind, got)
    if said is not None:
        return said
    message = str(error.get("msg", "is not valid"))
    return f"{where}: {message[0].lower() + message[1:]}"


def _limit(
    where: str, kind: str, ctx: Mapping[str, Any], prop: Mapping[str, Any], value: Any, got: str
) -> str | None:
    """A value past a bound (a range, a length, a count) or not among those allowed."""
    if kind in ("greater_than_equal", "less_than_equal", "greater_than", "less_than"):
        low, high = _bound(prop, "minimum"), _bound(prop, "maximum")
        if low is not None and high is not None:
            return f"{where} must be between {low} and {high}{got}"
        if "ge" in ctx:
            return f"{where} must be at least {ctx['ge']}{got}"
        if "le" in ctx:
            return f"{where} must be at most {ctx['le']}{got}"
    if kind == "string_too_short":
        least = ctx.get("min_length", 1)
        return f"{where} must not be empty" if least == 1 else f"{where} needs {least}+ characters"
    if kind == "string_too_long":
        return f"{where} must be at most {ctx.get('max_length')} characters (got {_size(value)})"
    if kind == "too_long":
        return f"{where} takes at most {ctx.get('max_length')} items (got {_size(value)})"
    if kind == "literal_error":
        # pydantic says "'titled', 'dated' or 'thread'": its words, without the quotes
        return f"{where} must be {str(ctx.get('expected', '')).replace(chr(39), '')}{got}"
    return None


def _wrong_type(where: str, kind: str, got: str) -> str | None:
    """A value of the wrong type, said in the words a person uses."""
    if kind.startswith(("int_", "float_")) or kind == "finite_number":  # NaN, 1e400
        return f"{where} must be a whole number{got}"
    if kind in ("string_type", "string_unicode"):
        return f"{where} must be text{got}"
    if kind == "list_type":
        return f"{where} must be a list{got}"
    if kind.startswith("bool_"):
        return f"{where} must be true or false{got}"
    return None


def _bound(prop: Mapping[str, Any], key: str) -> Any:
    if key in prop:
        return prop[key]
    for option in prop.get("anyOf", ()):  # an optional value: int | None
        if key in option:
            return option[key]
    return None


def _echoable(value: Any) -> bool:
    return isinstance(value, int | float | bool) or (isinstance(value, str) and len(value) <= SHOWN)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, str) else str(value)


def _size(value: Any) -> int | str:
    return len(value) if isinstance(value, str | list | tuple | dict) else "?"
