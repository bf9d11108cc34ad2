"""Names for the numbers in io_stats keys, as recordings and reports show them."""
from __future__ import annotations

from ioattr.collectors.abi import Api, Kind, Layer, Op

LAYER_NAMES = {int(v): v.name.lower() for v in Layer}
OP_NAMES = {int(v): v.name.lower() for v in Op}
API_NAMES = {
    int(Api.SYNC): "sync",
    int(Api.VECTOR): "vector",
    int(Api.SYNCCALL): "sync",
    int(Api.LIBAIO): "libaio",
    int(Api.IO_URING): "io_uring",
    int(Api.DIRECT): "direct",
    int(Api.BUFFERED): "buffered",
    int(Api.READAHEAD): "readahead",
    int(Api.OTHER): "other",
}
KIND_NAMES = {int(v): v.name.lower() for v in Kind}

# What the `file` column says for block IO that is not a tracked file's data.
KIND_FILE_LABELS = {
    int(Kind.JOURNAL): "[journal]",
    int(Kind.METADATA): "[metadata]",
    int(Kind.SWAP): "[swap]",
    int(Kind.UNKNOWN): "[unknown]",
    int(Kind.UNTRACKED): "[untracked files]",
    int(Kind.DISCARD): "[discard]",
    int(Kind.FLUSH): "[cache flush]",
}
