"""vcopt's decisions and judgements: the engines, the verifier, the metrics and the CLI."""

__version__ = "0.1.0"
