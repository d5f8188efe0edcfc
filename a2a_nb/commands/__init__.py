"""The sub-commands of ``python -m a2a_nb``, one module per group.

Each module has ``register(subparsers)``, which adds its sub-parsers and sets ``func`` on them (the
argparse idiom); :mod:`a2a_nb.cli` builds the parser from them and runs ``args.func(args)``.
``common`` holds what they share. Heavy imports (paho, pandas) happen inside the commands, so
``--help`` stays quick.
"""
