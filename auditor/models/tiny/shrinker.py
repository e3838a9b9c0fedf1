"""Walking a config tree and rebuilding each config, smaller, through its own constructor."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from auditor.models.tiny import fields, repairs


@dataclass(frozen=True)
class Sizes:
    """The target of each kind of field; a field is never grown, only shrunk to its target."""

    layers: int = 2
    max_layers: int = 4  # when more distinct kinds of layers must be kept
    hidden: int = 64
    heads: int = 4
    intermediate: int = 128
    experts: int = 4
    experts_per_token: int = 2
    vocab: int = 1024
    positions: int = 2048
    audio_positions: int = 64
    filters: int = 8  # base channel counts that double at every stage (audio codecs)
    base_channels: int = 32  # the same for image VQ models, which group-normalize by 32
    frames: int = 4
    coefficient: float = 1.0  # efficientnet-style width and depth multipliers
    # The narrow variant also divides per-stage channel lists (and base widths that double at
    # every stage) so that the widest stage has at most this many channels; None leaves them.
    stage_width: int | None = None


SIZES = Sizes()


class ShrinkError(ValueError):
    """The config cannot be shrunk: its constructor rejects the tiny values."""


def shrink(config, sizes: Sizes = SIZES):
    """A tiny copy of `config` made by its classes' constructors; `config` is not changed.

    Raises ShrinkError when a constructor rejects the tiny values.
    """
    shrinker = _Shrinker(sizes)
    try:
        shrinker.collect_widths(config)
        return shrinker.config(config)
    except ShrinkError:
        raise
    except Exception as exc:
        root = exc
        while root.__cause__ is not None:  # the validator's own error, not the dataclass wrapper
            root = root.__cause__
        message = " ".join(str(root).split())
        raise ShrinkError(f"{type(config).__name__} rejects its tiny values: {type(root).__name__}: {message}") from exc


@dataclass
class _Node:
    """One config of the tree while it is shrunk."""

    values: dict[str, Any]  # what its constructor is given
    keep: list[int] | None  # the old indices of the layers kept, when it has layers
    old_layers: int | None
    stages: set[int] = dataclasses.field(default_factory=set)  # lengths of its per-stage lists


class _Shrinker:
    def __init__(self, sizes: Sizes) -> None:
        self.sizes = sizes
        self.token_ids: dict[int, int] = {}  # old id -> new id, shared by the whole tree
        self.widths: dict[int, int] = {}  # old width -> new width, shared by the whole tree

    def config(self, config):
        values = _constructor_values(config)
        node = _Node(values, None, None, _stage_counts(values))
        node.old_layers = _layer_count(values)
        if node.old_layers:
            node.keep = _kept_layers(config, values, node.old_layers, self.sizes)
        new = {name: self.value(name, value, node) for name, value in values.items()}
        repairs.heads(new)
        repairs.state_spaces(new)
        repairs.sums(new, values)
        repairs.rope(new, type(config))
        repairs.backbone(new, values)
        overrides = _per_layer_overrides(config)
        if overrides and node.keep is not None:
            new["per_layer_config"] = {
                i: {k: self.scalar(k, v, node) if fields.is_int(v) else v for k, v in overrides[old].items()}
                for i, old in enumerate(node.keep) if old in overrides
            }
        return type(config)(**new)

    def collect_widths(self, config) -> None:
        """Old width -> new width over the whole tree, for fields that must equal some width."""
        from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

        for name, value in config.__dict__.items():
            if isinstance(value, PreTrainedConfig):
                self.collect_widths(value)
            elif fields.is_int(value) and value >= fields.MIN_MATCHED_WIDTH and fields.WIDTH.fullmatch(name):
                self.widths.setdefault(value, min(value, self.sizes.hidden))

    def value(self, name: str, value: Any, node: _Node) -> Any:
        from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

        if isinstance(value, PreTrainedConfig):
            return self.config(value)
        if value is None or isinstance(value, bool) or name in fields.KEEP:
            return value
        if isinstance(value, int):
            return self.scalar(name, value, node)
        if isinstance(value, float) and fields.COEFFICIENTS.fullmatch(name):
            return min(value, self.sizes.coefficient)
        if isinstance(value, (list, tuple)):
            return self.sequence(name, value, node)
        if isinstance(value, str) and fields.PER_LAYER_STRINGS.fullmatch(name) and len(value) == node.old_layers:
            return "".join(value[i] for i in node.keep or ())
        if isinstance(value, dict) and name == "rope_parameters":
            return dict(value)  # sections are fixed by _repair_rope once the head dims are known
        return value

    def scalar(self, name: str, value: int, node: _Node) -> int:
        s = self.sizes
        new_layers = len(node.keep) if node.keep is not None else s.layers
        if fields.TOKEN_ID.fullmatch(name):
            return self.token_id(value, node.values)
        if fields.LAYER_INDICES.fullmatch(name):
            return _layer_index(value, node.old_layers, node.keep)
        if fields.LAYER_FRACTIONS.fullmatch(name):
            return value * new_layers // node.old_layers if node.old_layers else min(value, new_layers - 1)
        if value <= 0:
            return value
        if fields.LAYERS.fullmatch(name):
            if node.old_layers and value == node.old_layers:
                return new_layers
            return value if value in node.stages else min(value, s.layers)
        if s.stage_width and fields.BASE_WIDTHS.fullmatch(name) and value > 1:
            doublings = max((len(v) for k, v in node.values.items()
                             if fields.RATIOS.fullmatch(k) and isinstance(v, (list, tuple))), default=0)
            if doublings:
                return max(1, min(value, s.stage_width >> doublings))
        classified = any(p.fullmatch(name) for p in fields.NAMED)
        if (not classified or fields.INTERMEDIATE.fullmatch(name)) and value in self.widths:
            return self.widths[value]  # e.g. mimi's upsample_groups, an adaptor's size
        for pattern, target in (
            (fields.EXPERTS_PER_TOKEN, s.experts_per_token), (fields.EXPERTS, s.experts), (fields.EXPERT_GROUPS, 1),
            (fields.KV_HEADS, s.heads), (fields.HEADS, s.heads), (fields.LINEAR_HEADS, s.heads),
            (fields.ROPE_HEAD_DIMS, s.hidden // s.heads // 2), (fields.HEAD_DIMS, s.hidden // s.heads),
            (fields.LORA_RANKS, s.hidden // 2), (fields.INTERMEDIATE, s.intermediate), (fields.WIDTH, s.hidden),
            (fields.VOCAB, s.vocab), (fields.POSITIONS, s.positions), (fields.AUDIO_POSITIONS, s.audio_positions),
            (fields.FILTERS, s.filters), (fields.BASE_CHANNELS, s.base_channels), (fields.FRAMES, s.frames),
            (fields.CYCLES, 1),
        ):
            if pattern.fullmatch(name):
                return min(value, target)
        return value

    def sequence(self, name: str, value, node: _Node):
        items = list(value)
        kind = type(value)
        ints = bool(items) and all(fields.is_int(i) for i in items)
        if fields.TOKEN_ID.fullmatch(name) and ints:
            return kind(self.token_id(i, node.values) for i in items)
        if fields.LAYER_INDICES.fullmatch(name) and ints:
            if name.endswith("out_indices") and node.old_layers and node.keep is not None:
                new = len(node.keep)  # stage numbers, the stem being 0: spread them over the new stages
                return kind(min(new, max(1, round(i * new / node.old_layers))) if i > 0 else i for i in items)
            return kind(_layer_index(i, node.old_layers, node.keep) for i in items)
        if name == "attention_types" and node.keep is not None and items:  # gpt-neo: [[pattern, repeats]]
            pattern = items[0][0]
            return [[pattern, max(1, len(node.keep) // len(pattern))]]
        if node.keep is not None and _per_layer(name, value, node.old_layers) and len(node.keep) < node.old_layers:
            kept = [items[i] for i in node.keep]
            if ints and name == "kv_source_layers":  # one layer index per layer
                return kind(_layer_index(i, node.old_layers, node.keep) for i in kept)
            if ints and fields.INTERMEDIATE.fullmatch(name):
                return kind(min(i, self.sizes.intermediate) for i in kept)
            return kind(kept)
        if not ints:
            return value
        if fields.STAGE_DEPTHS.fullmatch(name):
            # cvt reads drop-path rate i of stage i from a list as long as the stage's depth.
            return kind(min(d, i + 1 if name == "depth" else 1) for i, d in enumerate(items))
        if fields.HEADS.fullmatch(name) or name == "num_attention_heads_per_stage":
            least = min((i for i in items if i > 0), default=1)
            return kind(max(1, i // least) if i > 0 else i for i in items)
        if fields.INTERMEDIATE.fullmatch(name):
            return kind(min(i, self.sizes.intermediate) for i in items)
        if self.sizes.stage_width and (fields.STAGE_WIDTHS.fullmatch(name) or name == "num_groups"):
            if name == "num_groups":
                least = min((i for i in items if i > 0), default=1)
                return kind(max(1, i // least) for i in items)
            factor = repairs.stage_factor(node.values, self.sizes.stage_width)
            return kind(max(1, i // factor) if i > 3 else i for i in items)  # 3: image channels
        return value

    def token_id(self, value: int, values: dict[str, Any]) -> int:
        """An id outside the tiny vocabulary moves to its top; the same old id to the same new one."""
        limit = self.sizes.vocab
        if value < limit:
            return value
        vocab = values.get("vocab_size")
        if fields.is_int(vocab) and 0 <= value - vocab < 16:
            return limit + value - vocab  # an id just past the vocabulary on purpose (musicgen's pad)
        if value not in self.token_ids:
            self.token_ids[value] = limit - 1 - len(self.token_ids)
        return self.token_ids[value]


# -- reading a config back into constructor arguments -------------------------------------------

def _constructor_values(config) -> dict[str, Any]:
    """What the config's constructor takes, read back from the instance, less what it derives."""
    from transformers import PretrainedConfig as PreTrainedConfig  # the name 4.x and 5.x both have

    cls = type(config)
    raw = config.__dict__  # not getattr: heterogeneous configs refuse per-layer attributes
    aliases = getattr(cls, "attribute_map", {})  # field -> where the instance keeps it
    if dataclasses.is_dataclass(cls):
        taken = {f.name: f for f in dataclasses.fields(cls) if f.init}
    else:  # a config with a hand-written __init__ (remote code)
        import inspect

        params = inspect.signature(cls.__init__).parameters
        taken = {n: None for n, p in params.items() if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                   p.KEYWORD_ONLY)}
    values = {name: raw[name] for name in taken if name in raw}
    for name in list(taken):
        if aliases.get(name) in raw:  # an alias: give the value once, under the alias
            values[name] = raw[aliases[name]]
            if aliases[name] in taken:
                del values[name]
    kept_as = set(aliases.values())
    extras = {k: v for k, v in raw.items()
              if not k.startswith("_") and k not in values and k not in fields.NOT_PASSED and k not in kept_as}
    layers = _layer_count(values)
    candidates = {k for k, f in taken.items()
                  if f is not None and f.default is None and values.get(k) is not None
                  and not isinstance(values[k], PreTrainedConfig) and k not in fields.ALWAYS_PASSED
                  and not _per_layer(k, values[k], layers)}
    try:  # the probe: which of these does the constructor derive by itself?
        probe = cls(**{k: v for k, v in values.items() if k not in candidates}).__dict__
    except Exception:
        return {**values, **extras}
    for name in candidates:
        if _same(probe.get(name), values[name]):
            del values[name]
    values.update({k: v for k, v in extras.items() if k not in probe})
    for name in ("out_features", "out_indices"):  # backbones store them privately, take them publicly
        if "_" + name in values:
            values[name] = values.pop("_" + name)
    return values


def _per_layer(name: str, value: Any, layers: int | None) -> bool:
    """A list with one entry per layer (by its length and name). Passed on, shortened, even when the
    constructor could derive it, so the kept layers keep their kinds (gemma3's full-attention layer)."""
    return (bool(layers) and isinstance(value, (list, tuple)) and len(value) == layers
            and fields.PER_LAYER_NAMES.fullmatch(name) is not None)


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def _stage_counts(values: dict[str, Any]) -> set[int]:
    return {len(v) for k, v in values.items() if fields.STAGE_DEPTHS.fullmatch(k) and isinstance(v, (list, tuple))}


def _layer_count(values: dict[str, Any]) -> int | None:
    """The config's number of layers, unless that number counts stages (swin's num_layers)."""
    stages = _stage_counts(values)
    for name in ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "depth", "encoder_layers",
                 "num_encoder_layers", "layers"):
        value = values.get(name)
        if fields.is_int(value) and value > 0:
            return None if value in stages else value
    for name in ("layers_block_type", "layer_types", "hybrid_override_pattern"):  # the list is the count
        value = values.get(name)
        if isinstance(value, (list, tuple, str)) and len(value) > 1:
            return len(value)
    return None


def _kept_layers(config, values: dict[str, Any], old: int, sizes: Sizes) -> list[int]:
    """Which layers survive: the first occurrence of every distinct kind of layer, then the first ones."""
    per_layer = [v for k, v in values.items() if _per_layer(k, v, old)
                 or (isinstance(v, str) and fields.PER_LAYER_STRINGS.fullmatch(k) and len(v) == old)]
    overrides = _per_layer_overrides(config)
    kinds = [tuple(str(v[i]) for v in per_layer) + (str(sorted(overrides.get(i, {}).items())),)
             for i in range(old)]
    firsts = sorted({kind: i for i, kind in reversed(list(enumerate(kinds)))}.values())
    count = min(old, max(sizes.layers, min(len(firsts), sizes.max_layers)))
    chosen = set(firsts[:count])
    for i in range(old):
        if len(chosen) >= count:
            break
        chosen.add(i)
    return sorted(chosen)


def _per_layer_overrides(config) -> dict[int, dict[str, Any]]:
    spec = config.__dict__.get("_heterogeneity_spec")
    return dict(spec.per_layer_overrides) if spec is not None else {}


def _layer_index(index: int, old: int | None, keep: list[int] | None) -> int:
    """Where old layer `index` lands: its new position if kept, else the nearest kept layer below."""
    if not old or keep is None or len(keep) >= old:
        return index
    new = len(keep)
    if index < 0:
        return max(index, -new)
    if index >= old:  # past the last layer (backbone stage numbering counts the stem)
        return new + index - old
    return max((position for position, layer in enumerate(keep) if layer <= index), default=0)
