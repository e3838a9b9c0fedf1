"""The worker protocol: what a worker sends is what the driver reads, for both executors."""

from auditor.core.results import Result
from auditor.core.status import Status
from auditor.executors import protocol
from auditor.executors.protocol import MessageKind, TypeProgress


def test_a_model_type_s_messages_become_its_rows_and_the_check_that_ran():
    row = Result("bert", "build", Status.BUILD, message="BertModel", worker="w1")
    progress = TypeProgress()
    kinds = [progress.take(m)[0] for m in (protocol.check_started("build"), protocol.row(row),
                                           protocol.check_started("decorate"), protocol.done("bert"))]
    assert kinds == [MessageKind.CHECK, MessageKind.RESULT, MessageKind.CHECK, MessageKind.DONE]
    assert progress.results == [row]
    assert progress.check == "decorate"


def test_the_executors_own_messages_are_passed_through_with_their_payload():
    progress = TypeProgress()
    assert progress.take(protocol.ready(42)) == (MessageKind.READY, 42)
    assert progress.take(protocol.started("127.0.0.1:7")) == (MessageKind.STARTED, "127.0.0.1:7")
    assert progress.take(protocol.error("gone")) == (MessageKind.ERROR, "gone")
    assert progress == TypeProgress()


def test_messages_are_plain_tuples_of_strings_and_json():
    """What crosses a pipe or Ray's object store: nothing that needs the auditor to unpickle."""
    kind, payload = protocol.row(Result("bert", "build", Status.BUILD))
    assert type(kind) is str and isinstance(payload, dict)
