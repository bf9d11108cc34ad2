"""Names of PostgreSQL's relations: (tablespace, database, relfilenode) -> database.schema.relation
(the PostgreSQL adapter's "objects").

A relation's files are named by its relfilenode, which changes under TRUNCATE, VACUUM FULL,
CLUSTER, REINDEX and some ALTER TABLEs, so the map is re-read (after an unknown file shows up,
and at the end of every recording). pg_class is per database: one connection per database
that accepts connections; shared catalogs (global/) are read once. pg_relation_filenode() is
used rather than relfilenode, which is 0 for mapped catalogs. Unknown files stay unknown.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ioattr.engines.postgres.files import DEFAULT_TABLESPACE, GLOBAL_TABLESPACE, RelationFile, parse_relation_path

RELKINDS = {"r": "table", "i": "index", "t": "toast", "m": "materialized_view", "S": "sequence",
            "p": "partitioned_table", "I": "partitioned_index", "f": "foreign_table", "v": "view",
            "c": "composite_type"}

DATABASES_QUERY = "SELECT oid, datname, dattablespace FROM pg_database WHERE datallowconn ORDER BY oid"
RELATIONS_QUERY = (
    "SELECT pg_relation_filenode(c.oid), c.reltablespace, n.nspname, c.relname, c.relkind, c.relpersistence, "
    "a.amname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_am a ON a.oid = c.relam "
    "WHERE pg_relation_filenode(c.oid) IS NOT NULL")


@dataclass(frozen=True)
class Relation:
    name: str      # database.schema.relation (shared catalogs: pg_global.schema.relation)
    kind: str      # table, index, toast, materialized_view, sequence, ...
    temporary: bool = False
    am: str | None = None  # access method (pg_am.amname: heap, btree, hash, gist, ...), None: none


class RelationNames:
    """The relation map of one cluster, read over connections `connect(dbname)` makes."""

    def __init__(self) -> None:
        self.relations: dict[tuple[int, int, int], Relation] = {}
        self.databases: dict[int, str] = {}
        self.error: str | None = None

    def load(self, database_oid: int, database: str, default_tablespace: int, rows: list[tuple]) -> None:
        """Rows of RELATIONS_QUERY read in one database."""
        for node, spc, schema, relname, relkind, persistence, *rest in rows:
            spc = int(spc)
            shared = spc == GLOBAL_TABLESPACE
            key = (GLOBAL_TABLESPACE, 0, int(node)) if shared else (spc or default_tablespace, database_oid, int(node))
            db = "pg_global" if shared else database
            self.relations[key] = Relation(f"{db}.{schema}.{relname}", RELKINDS.get(str(relkind), str(relkind)),
                                           temporary=str(persistence) == "t",
                                           am=str(rest[0]) if rest and rest[0] is not None else None)

    def refresh(self, connect: Callable[[str], Any]) -> bool:
        """Re-read every database's relations. connect(dbname) -> an open psycopg connection
        (the caller keeps and reuses them). False (and `error`) when something could not be read."""
        errors: list[str] = []
        try:
            dbs = connect("postgres").execute(DATABASES_QUERY).fetchall()
        except Exception as e:  # noqa: BLE001 - psycopg errors, a server gone: names stay as they were
            self.error = f"relation names unavailable: {str(e).strip().splitlines()[0] if str(e) else e}"
            return False
        fresh = RelationNames()
        for oid, name, spc in dbs:
            try:
                rows = connect(str(name)).execute(RELATIONS_QUERY).fetchall()
            except Exception as e:  # noqa: BLE001 - one database refusing us does not hide the others
                errors.append(f"{name}: {str(e).strip().splitlines()[0] if str(e) else e}")
                continue
            fresh.load(int(oid), str(name), int(spc) or DEFAULT_TABLESPACE, rows)
            fresh.databases[int(oid)] = str(name)
        # a relation dropped since keeps its last name (its files' IO was recorded under it)
        self.relations.update(fresh.relations)
        self.databases.update(fresh.databases)
        self.error = f"relation names incomplete: {'; '.join(errors)}" if errors else None
        return not errors

    def lookup(self, rel: RelationFile) -> Relation | None:
        if rel.tablespace == GLOBAL_TABLESPACE:
            return self.relations.get((GLOBAL_TABLESPACE, 0, rel.relfilenode))
        if rel.tablespace is None:  # some non-default tablespace: the one holding that relfilenode
            found = {r for (spc, db, node), r in self.relations.items()
                     if db == rel.database and node == rel.relfilenode and spc not in (DEFAULT_TABLESPACE,)}
            return next(iter(found)) if len(found) == 1 else None
        return self.relations.get((rel.tablespace, rel.database, rel.relfilenode))

    def kind_of(self, rel: RelationFile) -> tuple[str | None, str | None]:
        """(kind, access method) of the relation a file holds, (None, None) when unknown."""
        r = self.lookup(rel)
        return (r.kind, r.am) if r is not None else (None, None)

    def describe_path(self, path: str) -> dict[str, Any] | None:
        """What meta.json "relations" says of one file: None if the path is no relation file."""
        rel = parse_relation_path(path)
        if rel is None:
            return None
        r = self.lookup(rel)
        return {"relation": r.name if r else None, "kind": r.kind if r else None,
                "fork": rel.fork, "segment": rel.segment, "relfilenode": rel.relfilenode,
                "database_oid": rel.database}
