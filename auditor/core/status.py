"""The status vocabulary: every cell's verdict (`Status`, with the descriptions the reports and the
docs show), whose fault a status is where nothing more is known, and `Failure`, the status,
message, signature and fault every failed row carries.

The one exception -> status rule is auditor.core.classifier.classify; how a failure is written
(its message, its signature) is auditor.core.messages.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from auditor.core.fault import Fault
from auditor.core.messages import signature_of


class Status(str, Enum):
    """The shared status vocabulary; the values are the exact strings in every output."""

    BUILD = "build"
    REFUSED = "refused"
    CHECK_ERROR = "check-error"
    DECORATE_ERROR = "decorate-error"
    ERROR = "error"
    CONFIG_ERROR = "config-error"
    MISSING_DEPENDENCY = "missing-dependency"
    NEEDS_HUB = "needs-hub"
    TIMEOUT = "timeout"
    CRASH = "crash"
    OOM = "oom"
    SKIPPED = "skipped"
    # The auditor's own code failed: a bug of ours, never the model's (the message says where).
    AUDITOR_ERROR = "auditor-error"
    # The backend check: a serving engine would stop at this gate.
    UNSUPPORTED = "unsupported"
    # This machine cannot decide: a limit of the meta device (copying out of a meta tensor), or a
    # kernel the installed wheel lacks on this hardware. Never a verdict on the model or engine.
    UNDECIDED = "undecided"
    # The accelerator failed with an error that leaves its process's context unusable (a
    # device-side assert, an illegal address): the row of the type that met it; its worker takes
    # no further type, and the types that ran in the broken context are rerun in a fresh one.
    DEVICE_ERROR = "device-error"
    # Outcomes of the compile check (a failed build there keeps the statuses above).
    COMPILED = "compiled"
    GRAPH_BREAK = "graph-break"
    RECOMPILED = "recompiled"
    SPECIALIZED = "specialized"
    MISMATCH = "mismatch"
    EAGER_ERROR = "eager-error"
    COMPILE_ERROR = "compile-error"
    # Outcomes of the weights check (auditor/checks/weights.py): a checkpoint saved and loaded again.
    SAME = "same"
    LOADED = "loaded"
    DIFFERENT_OUTPUTS = "different-outputs"
    KEYS = "keys"
    CONFIG_REFUSED = "config-refused"
    TYPE_REMOVED = "type-removed"
    LOAD_ERROR = "load-error"
    FORWARD_ERROR = "forward-error"
    # Outcomes of the tokenizer check (auditor/checks/tokenizer.py): a tokenizer saved by one
    # release and loaded by another (same, load-error and type-removed are shared with weights).
    DIFFERENT_IDS = "different-ids"
    DIFFERENT_DECODE = "different-decode"
    DIFFERENT_TEMPLATE = "different-template"
    CLASS_REMOVED = "class-removed"
    NEEDS_PACKAGE = "needs-package"

    def __str__(self) -> str:
        return self.value

    @property
    def ok(self) -> bool:
        """`build`, `compiled` and the weights check's `same` and `loaded` are passes; every other
        status is a finding."""
        return self in (Status.BUILD, Status.COMPILED, Status.SAME, Status.LOADED)

    @property
    def description(self) -> str:
        return DESCRIPTIONS[self]


DESCRIPTIONS: dict[Status, str] = {
    Status.BUILD: "built (for non-build checks: passed)",
    Status.REFUSED: "the compile decorator refused the build with its own `TypeError`",
    Status.CHECK_ERROR: "the decorator's own positional check crashed",
    Status.DECORATE_ERROR: "the class could not be decorated at all",
    Status.ERROR: "the model itself failed to build",
    Status.CONFIG_ERROR: "the default config cannot be made",
    Status.MISSING_DEPENDENCY: "an `ImportError`, e.g. timm, natten, detectron2, torchaudio, pillow",
    Status.NEEDS_HUB: "it wanted the Hugging Face hub while offline",
    Status.TIMEOUT: "no result within `--timeout`",
    Status.CRASH: "the worker process died (segfault, `os._exit`); the message says how",
    Status.OOM: "`MemoryError`, or the worker went over `--max-memory`",
    Status.SKIPPED: "the check does not apply; the message says why",
    Status.AUDITOR_ERROR: "the auditor's own code or its executor failed (not the model's): the message names the auditor line, or says `ExecutorError` (a Ray cluster or node that died under the worker)",
    Status.UNSUPPORTED: "backend check: a serving engine's gate refused the model, with the engine's own message",
    Status.UNDECIDED: "this machine cannot decide: a limit of the meta device (a tensor copied out of it) or a "
                      "kernel the installed wheel lacks here; the message names it",
    Status.DEVICE_ERROR: "the accelerator failed with a sticky error (a device-side assert, an illegal address, a launch "
                         "failure): the type that met it; its worker was retired and no other type's row carries it",
    Status.COMPILED: "compile check: one graph for every sequence length, output equal to eager (OK, like `build`)",
    Status.GRAPH_BREAK: "compile check: `torch.compile(fullgraph=True)` hit a graph break; extras say why and where",
    Status.RECOMPILED: "compile check (plain semantics): the second sequence length needed another graph",
    Status.SPECIALIZED: "compile check (engine semantics): the graph compiled at the first length crashed, or gave "
                        "another output, at a later length (the message says which), or the first compile "
                        "specialized a dim marked dynamic",
    Status.MISMATCH: "compile check: compiled and eager outputs differ beyond the dtype's tolerance",
    Status.EAGER_ERROR: "compile check: the forward fails even without compiling",
    Status.COMPILE_ERROR: "compile check: tracing or the backend failed in another way (a dynamo or inductor error)",
    Status.SAME: "weights check: the saved checkpoint loaded with every key and gave the saved outputs within the "
                 "tolerance the row names (OK, like `build`)",
    Status.LOADED: "weights check on a checkpoint's safetensors headers: every tensor mapped onto the model built on "
                   "the meta device, none missing, unexpected or of another shape (OK, like `build`)",
    Status.DIFFERENT_OUTPUTS: "weights check: every key loaded, but the outputs on the saved input differ beyond the "
                              "tolerance (max abs and relative difference on the row)",
    Status.KEYS: "weights check: keys missing, unexpected or of another shape when loading (each named)",
    Status.CONFIG_REFUSED: "weights check: the saved config.json is refused by this release's config class",
    Status.TYPE_REMOVED: "weights check: this release no longer has the saved model type or its class",
    Status.LOAD_ERROR: "weights check: `from_pretrained` (or the header mapping) raised",
    Status.FORWARD_ERROR: "weights check: the loaded model's forward on the saved input raised",
    Status.DIFFERENT_IDS: "tokenizer check: the saved tokenizer gives other ids, tokens or offsets on the corpus (or other "
                          "special-token ids, another padding side); one example on the row",
    Status.DIFFERENT_DECODE: "tokenizer check: the same ids, but decoding them gives other text",
    Status.DIFFERENT_TEMPLATE: "tokenizer check: ids and decode agree, but the chat template renders another prompt "
                               "or other ids",
    Status.CLASS_REMOVED: "tokenizer check: this release no longer has the saved tokenizer class",
    Status.NEEDS_PACKAGE: "tokenizer check: loading the saved files needs a package this machine lacks "
                          "(sentencepiece, protobuf, tiktoken: named on the row, whatever transformers said)",
}

# The machine's fault, not the model's and not the phase's: kept whatever phase raised them
# (a missing package is not a graph break), and no other tiny size would help.
ENVIRONMENTAL = frozenset({Status.OOM, Status.MISSING_DEPENDENCY, Status.NEEDS_HUB, Status.UNDECIDED,
                           Status.DEVICE_ERROR, Status.NEEDS_PACKAGE})

# Whose fault a row of each status is, where nothing more is known (a death row, a row written
# without an exception): the start of the one fault rule, which `classify` refines from the
# traceback (auditor.core.fault). The compile decorator is the engine's: its refusal of a valid
# class is the bug this tool exists to show, and its refusing to decorate one (no `input_ids` in
# the forward) is raised in its own code, as the backend check's decorate gate says. A dead worker leaves no traceback: the machine's, counted apart, rerun.
DEFAULT_FAULT: dict[Status, Fault] = {
    Status.BUILD: Fault.NONE, Status.COMPILED: Fault.NONE, Status.SKIPPED: Fault.NONE,
    Status.REFUSED: Fault.ENGINE, Status.CHECK_ERROR: Fault.ENGINE, Status.DECORATE_ERROR: Fault.ENGINE,
    Status.UNSUPPORTED: Fault.ENGINE,
    Status.ERROR: Fault.MODEL, Status.CONFIG_ERROR: Fault.MODEL, Status.EAGER_ERROR: Fault.MODEL,
    Status.GRAPH_BREAK: Fault.MODEL, Status.RECOMPILED: Fault.MODEL, Status.SPECIALIZED: Fault.MODEL,
    Status.MISMATCH: Fault.MODEL, Status.COMPILE_ERROR: Fault.MODEL,
    Status.MISSING_DEPENDENCY: Fault.ENVIRONMENT, Status.NEEDS_HUB: Fault.ENVIRONMENT,
    Status.TIMEOUT: Fault.ENVIRONMENT, Status.OOM: Fault.ENVIRONMENT, Status.CRASH: Fault.ENVIRONMENT,
    Status.UNDECIDED: Fault.ENVIRONMENT, Status.DEVICE_ERROR: Fault.ENVIRONMENT,
    Status.AUDITOR_ERROR: Fault.AUDITOR,
    Status.SAME: Fault.NONE, Status.LOADED: Fault.NONE,
    Status.DIFFERENT_OUTPUTS: Fault.MODEL, Status.KEYS: Fault.MODEL, Status.CONFIG_REFUSED: Fault.MODEL,
    Status.TYPE_REMOVED: Fault.MODEL, Status.LOAD_ERROR: Fault.MODEL, Status.FORWARD_ERROR: Fault.MODEL,
    Status.DIFFERENT_IDS: Fault.MODEL, Status.DIFFERENT_DECODE: Fault.MODEL, Status.DIFFERENT_TEMPLATE: Fault.MODEL,
    Status.CLASS_REMOVED: Fault.MODEL, Status.NEEDS_PACKAGE: Fault.ENVIRONMENT,
}


def default_fault(status: Status) -> Fault:
    return DEFAULT_FAULT[status]


@dataclass(frozen=True)
class Failure:
    """Why something did not pass, as a row says it: its status, message, signature, whose
    fault it is (the status's default unless `classify` knew better) and what else the row
    records of it (`extras`: where it was raised, the per-layer attribute read)."""

    status: Status
    message: str
    signature: str
    fault: Fault | None = None
    extras: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.fault is None:
            object.__setattr__(self, "fault", default_fault(self.status))

    @classmethod
    def because(cls, status: Status, message: str) -> Failure:
        """A failure the auditor states itself (a death, a skip), its signature derived."""
        return cls(status, message, signature_of(message))

    @property
    def environmental(self) -> bool:
        return self.status in ENVIRONMENTAL


class StatusError(Exception):
    """An exception that already knows its row: the far side's report, a decorator's refusal
    to decorate. `classify` takes its failure as it is (then applies the phase's rules)."""

    def __init__(self, failure: Failure, text: str = "") -> None:
        super().__init__(text or failure.message)
        self.failure = failure

    @property
    def status(self) -> Status:
        return self.failure.status

    @property
    def message(self) -> str:
        return self.failure.message

    @property
    def signature(self) -> str:
        return self.failure.signature
