"""The wire format of the AMQP 0-10 draft (99-0), as Apache Qpid put it on the wire.

The generated package :mod:`amqp_codec.v0_10_draft` holds the method and struct classes; this
package holds what its generated code calls and the frame layer. The generated package hands
its registries over when it is imported (:func:`register_structs`, :func:`register_table_types`):
this package never imports it.

* :mod:`.values`: uuid, rfc1982-long-set, content and the string codecs;
* :mod:`.table`: field tables, sequences and arrays, driven by the spec's type-code constants;
* :mod:`.structs`: the struct base class, long-structs and header segments;
* :mod:`.frames`: the 12-byte frame header, the frame classes and their codecs;
* :mod:`.assembly`: framesets (command, header structs, body frames) into messages.
"""

from .assembly import DraftMessage, DraftMessageAssembler
from .frames import (
    DraftBodyFrame,
    DraftFrame,
    DraftHeaderFrame,
    DraftHeartbeatFrame,
    DraftMethodFrame,
    encode_draft_frame,
    encode_draft_message,
)
from .structs import (
    PackedStruct,
    decode_header_structs,
    decode_long_struct,
    encode_failure,
    encode_long_struct,
    register_structs,
)
from .table import (
    EMPTY_ARRAY,
    EMPTY_TABLE,
    Array,
    FieldTable,
    Timestamp,
    Typed,
    decode_array,
    decode_table,
    encode_array,
    encode_table,
    register_table_types,
)
from .values import (
    EMPTY_CONTENT,
    NIL_UUID,
    UUID,
    Content,
    RangeSet,
    decode_content,
    decode_longstr,
    decode_rfc1982_long_set,
    decode_shortstr,
    decode_uuid,
    encode_content,
    encode_longstr,
    encode_rfc1982_long_set,
    encode_shortstr,
    encode_uuid,
)

__all__ = [
    "EMPTY_ARRAY",
    "EMPTY_CONTENT",
    "EMPTY_TABLE",
    "NIL_UUID",
    "UUID",
    "Array",
    "Content",
    "DraftBodyFrame",
    "DraftFrame",
    "DraftHeaderFrame",
    "DraftHeartbeatFrame",
    "DraftMessage",
    "DraftMessageAssembler",
    "DraftMethodFrame",
    "FieldTable",
    "RangeSet",
    "PackedStruct",
    "Timestamp",
    "Typed",
    "decode_array",
    "decode_content",
    "decode_header_structs",
    "decode_long_struct",
    "decode_longstr",
    "decode_rfc1982_long_set",
    "decode_shortstr",
    "decode_table",
    "decode_uuid",
    "encode_array",
    "encode_content",
    "encode_draft_frame",
    "encode_draft_message",
    "encode_long_struct",
    "encode_longstr",
    "encode_rfc1982_long_set",
    "encode_shortstr",
    "encode_table",
    "encode_uuid",
    "encode_failure",
    "register_structs",
    "register_table_types",
]
