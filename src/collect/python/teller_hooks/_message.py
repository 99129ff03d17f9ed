"""The range/mark message grammar (docs/python-hooks.md, "Message grammar").

    message = name *( " " key "=" value )
    value   = *vchar            ; printable ASCII except space, "%", ",", "="
                                ; everything else as %XX of its UTF-8 bytes
    list    = value *( "," value )

Messages are pure ASCII so that NVTX's ASCII message type carries them unchanged and a
reader can split on spaces and commas before unescaping.
"""
import re

# The recorder keeps at most 4096 bytes of a message (recorder.h kMaxStringBytes); stay
# below it with room for the NUL and a margin.
DEFAULT_LIMIT = 4000

_SAFE = frozenset(c for c in range(0x21, 0x7F) if chr(c) not in "%,=")
_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NAME_RE = re.compile(r"^[\x21-\x7e]+$")


def escape(value):
    """Escapes one value (str or anything str() accepts) to the grammar's vchar set."""
    if not isinstance(value, str):
        value = str(value)
    try:
        if all(ord(ch) in _SAFE for ch in value):
            return value  # the common case: request ids are plain ASCII
    except TypeError:
        pass
    out = []
    for b in value.encode("utf-8", "surrogatepass"):
        out.append(chr(b) if b in _SAFE else "%%%02X" % b)
    return "".join(out)


def unescape(text):
    """Inverse of escape(); used by tests and documented for readers."""
    raw = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%" and i + 3 <= len(text):
            raw.append(int(text[i + 1:i + 3], 16))
            i += 3
        else:
            raw.extend(text[i].encode("ascii"))
            i += 1
    return raw.decode("utf-8", "surrogatepass")


def valid_key(key):
    return bool(_KEY_RE.match(key))


def valid_head(head):
    """A spec's static range text: a name, then optional key=value fields."""
    parts = head.split(" ")
    if not parts or not _NAME_RE.match(parts[0]) or "=" in parts[0]:
        return False
    for p in parts[1:]:
        k, sep, v = p.partition("=")
        if not sep or not valid_key(k) or escape(v) != v:
            return False
    return True


def parse(message):
    """Splits a message into (name, {key: raw value}); values stay escaped."""
    parts = message.split(" ")
    fields = {}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        fields[k] = v
    return parts[0], fields


def build(head, fields, ids=None, ids_key="reqs", limit=DEFAULT_LIMIT, cont_name="teller.reqs",
          cont_fields=()):
    """Returns (message, continuation messages).

    `fields` is a list of (key, already escaped value). `ids` (escaped strings) go last
    under `ids_key`; those that do not fit in `limit` bytes move to continuation marks
    `<cont_name> <cont_fields> reqs=...`, and the message then says cont=<count>.
    """
    text = head
    for k, v in fields:
        text += " %s=%s" % (k, v)
    if ids is None:
        return text[:limit], []
    joined = ",".join(ids)
    if len(text) + len(ids_key) + 2 + len(joined) <= limit:
        return "%s %s=%s" % (text, ids_key, joined), []
    # Too long: fill the range message, then as many marks as needed. " cont=NNNNN"
    # is reserved up front so adding it later cannot overflow.
    budget = limit - len(text) - len(ids_key) - 2 - 12
    first, rest = _take(ids, budget)
    cont_head = cont_name + "".join(" %s=%s" % kv for kv in cont_fields)
    chunks = []
    while rest:
        # A single id longer than a whole mark is cut; ids that long are not ids.
        chunk, rest = _take(rest, limit - len(cont_head) - len(ids_key) - 2)
        if not chunk:
            chunk, rest = [rest[0][:limit - len(cont_head) - len(ids_key) - 2]], rest[1:]
        chunks.append("%s %s=%s" % (cont_head, ids_key, ",".join(chunk)))
    message = "%s %s=%s cont=%d" % (text, ids_key, ",".join(first), len(chunks))
    return message, chunks


def _take(ids, budget):
    used = 0
    n = 0
    for s in ids:
        extra = len(s) + (1 if n else 0)
        if used + extra > budget:
            break
        used += extra
        n += 1
    return ids[:n], ids[n:]
