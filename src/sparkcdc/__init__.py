"""sparkcdc: PostgreSQL change data capture with Debezium-format events, on Apache Spark."""

from .native import COMPILED_MODULES, compiled_modules

__version__ = "0.1.0"

__all__ = ["__version__", "compiled"]


def __getattr__(name: str) -> object:
    # ``sparkcdc.compiled``: True when every module of COMPILED_MODULES runs as mypyc-compiled code
    # (see sparkcdc.native); computed on first use, since it looks at the installed files.
    if name == "compiled":
        return compiled_modules() == COMPILED_MODULES
    raise AttributeError(f"module 'sparkcdc' has no attribute {name!r}")
