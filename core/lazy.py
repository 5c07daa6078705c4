"""Names of a package imported on first use (PEP 562), so that importing the package stays
cheap: the command line reads light modules (defaults, records) of packages whose jobs import
Beam, pyarrow or torch."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping


def lazy_names(package: str, table: Mapping[str, str]
               ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``, whose names ``table`` maps to
    ``"module:attribute"`` (or ``"module"`` for an attribute of the same name). A name is
    imported at its first look-up and then kept in the package, so later look-ups skip this."""

    def __getattr__(name: str):
        try:
            module, _, attribute = table[name].partition(":")
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
