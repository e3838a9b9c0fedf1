"""A tiny config changed so that one input of `length` tokens reaches the code a full-size checkpoint
runs (`exercised`), and kept so through a save and load (`as_saved`): what the checks that save a
tiny checkpoint and run it elsewhere share (weights: another release; outputs: an engine)."""

from __future__ import annotations


def exercised(config, length: int, prefix: str = "") -> tuple[object, dict]:
    """`config` changed so that the one input reaches the code a full-size checkpoint runs: every
    integer window (a field whose name holds "window": sliding, local, attention, keep windows)
    longer than half the input cut to a quarter of it, in the config and its sub-configs; and a
    repeating `block_types` pattern whose blocks the shrunk layers do not all reach given a layer
    for each (recurrent_gemma's attention block, third of three). Returns the config and
    {field: (before, after)}."""
    from transformers import PretrainedConfig

    changed = {}
    for name, value in list(vars(config).items()):
        if isinstance(value, PretrainedConfig):
            changed.update(exercised(value, length, f"{prefix}{name}.")[1])
        elif "window" in name and isinstance(value, int) and not isinstance(value, bool) and value > length // 2:
            setattr(config, name, length // 4)
            changed[prefix + name] = (value, length // 4)
    blocks = getattr(config, "block_types", None)
    layers = getattr(config, "num_hidden_layers", None)
    if isinstance(blocks, list) and blocks and isinstance(layers, int) and len(blocks) <= 8 \
            and {blocks[i % len(blocks)] for i in range(layers)} != set(blocks):
        config.num_hidden_layers = len(blocks)
        changed[prefix + "num_hidden_layers"] = (layers, len(blocks))
    return config, changed


def as_saved(config, changed: dict) -> tuple[object, dict]:
    """`config` as `from_pretrained` will read it back (made again from its own dict), and the
    changes that survive that: a field its class derives from another in `__init__`
    (modernbert-decoder's `sliding_window`, from `local_attention`) is made again from the one it
    derives from, so the model saved and the model loaded run the same config."""
    if not changed:
        return config, changed
    try:
        again = type(config).from_dict(config.to_dict())
    except Exception:
        return config, {}
    kept = {}
    for path, (before, after) in changed.items():
        value = again
        for part in path.split("."):
            value = getattr(value, part, None)
        if value == after:
            kept[path] = (before, after)
    return again, kept
