"""`ioattr top`: the live, top(1)-style view of a live session's intervals."""
