"""ember wire protocol, version 1 (docs/protocol.md is the normative text).

Every message is four ZeroMQ frames: b"EMBER" + version byte, one command
byte, an 8-byte little-endian request id, and a msgpack body (a map with
string keys). Vectors come back as one msgpack bin of little-endian float32.
"""

import array
import struct
import sys

import msgpack

from .errors import InternalError

TAG = b"EMBER"
VERSION = 1
PROTOCOL_FRAME = TAG + bytes([VERSION])

REQUEST = 1
REPLY = 2
ERROR = 3
READY = 4
HEARTBEAT = 5
DISCONNECT = 6
CONTROL = 7

_COMMANDS = {REQUEST, REPLY, ERROR, READY, HEARTBEAT, DISCONNECT, CONTROL}


def encode(command, request_id, body=b""):
    """The four frames of one message."""
    return [PROTOCOL_FRAME, bytes([command]), struct.pack("<Q", request_id), body]


def decode(frames):
    """(command, request_id, body) of a received message; raises
    InternalError when the frames break the protocol."""
    if len(frames) != 4:
        raise InternalError("malformed reply: %d frames, expected 4" % len(frames))
    tag, command, request_id, body = frames
    if len(tag) != len(PROTOCOL_FRAME) or tag[:len(TAG)] != TAG:
        raise InternalError("malformed reply: not an ember message")
    if tag[len(TAG)] != VERSION:
        raise InternalError("malformed reply: protocol version %d, this client speaks %d"
                            % (tag[len(TAG)], VERSION))
    if len(command) != 1 or command[0] not in _COMMANDS:
        raise InternalError("malformed reply: bad command frame")
    if len(request_id) != 8:
        raise InternalError("malformed reply: request id must be 8 bytes")
    return command[0], struct.unpack("<Q", request_id)[0], body


def pack(body):
    return msgpack.packb(body, use_bin_type=True)


def unpack(body):
    """A msgpack map with string keys; InternalError otherwise."""
    try:
        value = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as e:  # msgpack raises several types
        raise InternalError("malformed reply body: %s" % e) from None
    if not isinstance(value, dict):
        raise InternalError("malformed reply body: not a map")
    return value


def embed_request(model, inputs, version=0, timeout_ms=0, truncate=True, dimensions=0,
                  prompt_name="", pairs=None, raw_scores=None, task=None,
                  skip_special_tokens=True):
    """An EmbedRequest; with raw_scores not None, a score (task "score") of the inputs, each
    paired with pairs[i] when pairs is given; with task="tokenize", a tokenization."""
    body = {"model": model, "version": version, "inputs": list(inputs),
            "timeout_ms": timeout_ms, "truncate": truncate}
    if dimensions:
        body["dimensions"] = dimensions
    if prompt_name:
        body["prompt_name"] = prompt_name
    if task is not None:
        body["task"] = task
    if not skip_special_tokens:
        body["skip_special_tokens"] = False
    if raw_scores is not None:
        body["task"] = "score"
        body["raw_scores"] = bool(raw_scores)
        if pairs is not None:
            body["text_pairs"] = list(pairs)
    return pack(body)


def vectors(reply):
    """The float32 rows of an EmbedReply map, as array.array('f') each: one per input, or, for a
    reply with "rows" (task "sparse" or "multi_vector"), each input's rows x dim floats."""
    dim, count, data = reply.get("dim"), reply.get("count"), reply.get("data")
    if not isinstance(dim, int) or not isinstance(count, int) or not isinstance(data, bytes):
        raise InternalError("malformed embedding reply: needs dim, count and bin data")
    rows = reply.get("rows")
    if rows is not None and (not isinstance(rows, list) or len(rows) != count):
        raise InternalError("malformed embedding reply: 'rows' must count each input's rows")
    sizes = [dim * r for r in rows] if rows is not None else [dim] * count
    if len(data) != sum(sizes) * 4:
        raise InternalError("malformed embedding reply: %d bytes of data for %d float32"
                            % (len(data), sum(sizes)))
    flat = array.array("f")
    flat.frombytes(data)
    if sys.byteorder != "little":
        flat.byteswap()
    out, at = [], 0
    for size in sizes:
        out.append(flat[at:at + size])
        at += size
    return out
