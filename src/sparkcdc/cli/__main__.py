"""``python -m sparkcdc.cli``: the same as the ``sparkcdc`` console script (handy before it is installed)."""

from .app import main

main()
