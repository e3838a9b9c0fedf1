"""A plugin that fails to import: `auditor sweep --plugin` must refuse it before any work."""

raise RuntimeError("auditor test: this plugin is broken on purpose")
