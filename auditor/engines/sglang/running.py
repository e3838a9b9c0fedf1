"""SGLang running a checkpoint for real: the `outputs` check's rows `outputs/sglang`, which say why
SGLang runs no forward here rather than leave the engine out.

A forward of SGLang's needs its kernel package, sgl-kernel. The sgl-kernel wheels on the package
index are CUDA builds; its CPU build is made from source (sgl-kernel's own CPU setup), which this
project's index does not carry. So on a CPU machine each row is `undecided`, this machine's limit.
On a GPU, SGLang's CUDA build would run it; that path has not run on a GPU with SGLang's wheels
(the GPU machine lent to this project has no package index), so it is not built, and the row says
so (`skipped`) instead of claiming an answer.
"""

from __future__ import annotations

from auditor.core.fault import Fault
from auditor.core.messages import signature_of
from auditor.core.status import Failure, Status, StatusError

PATHS = (("", "auto"),)
CPU_LIMIT = ("environment limit (SGLang's forward needs its kernel package built for CPUs: the sgl-kernel wheels "
             "on the package index are CUDA builds, and its CPU build, made from source, is not on it)")
NOT_BUILT = ("not run: the auditor's SGLang forward on a GPU is not built (it has not run on a GPU with SGLang's "
             "wheels); its CPU build's kernels are not on the package index")


def _why() -> StatusError:
    import torch

    if torch.cuda.is_available():
        return StatusError(Failure(Status.SKIPPED, NOT_BUILT, signature_of(NOT_BUILT), Fault.NONE))
    return StatusError(Failure(Status.UNDECIDED, CPU_LIMIT, signature_of(CPU_LIMIT), Fault.ENVIRONMENT))


def head_size(dtype: str) -> int:
    raise _why()


def run(folder, prompt, impl, dtype, greedy, vocab, task="generate", tokenizer=False, classes=()):
    raise _why()
