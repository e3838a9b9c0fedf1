"""model-sweep-auditor: audit every transformers model type under a serving engine's compile decorator."""

__version__ = "0.1.0"
