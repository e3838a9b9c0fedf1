"""vLLM's own encoder lookup (transformers/multimodal.py:857-869), which decides the classes its
decorator sees beside the decoder: multimodal configs only, `type(model.get_encoder(modality=m))`
for image, video and audio, catching only TypeError and ValueError, leaving out only the model's
own class."""

from __future__ import annotations

from auditor.models.components import MODALITIES, encoder_lookup_by_modality


def vllm_encoders(model) -> dict[str, type] | None:
    """Modality -> encoder class as vLLM finds them, or None for a config that is not
    multimodal (vLLM's text-only classes look for none). Exceptions other than TypeError and
    ValueError propagate: in vLLM they stop the model."""
    from auditor.engines.vllm.gates import is_multimodal

    if not is_multimodal(model.config):
        return None
    if not encoder_lookup_by_modality(model):
        return {}
    encoders: dict[str, type] = {}
    for modality in MODALITIES:  # multimodal.py:66, _MODALITY_TO_TOKEN_TYPE_ID's order
        try:
            cls = type(model.get_encoder(modality=modality))
        except (TypeError, ValueError):
            continue
        if cls is not type(model):
            encoders[modality] = cls
    return encoders
