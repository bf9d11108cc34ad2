/* SPDX-License-Identifier: GPL-2.0 */
/* Generated from collectors/file_classes.py (FILE_CLASSES), the one table of file
 * classes: do not edit. python3 collectors/file_classes.py > bpf/file_classes.h
 * (bpf/Makefile redoes it when the table changes). */
#ifndef IOATTR_FILE_CLASSES_H
#define IOATTR_FILE_CLASSES_H

/* File classes of every engine (report dimension file_class). */
enum ioattr_file_class {
	IOA_FC_OTHER = 0, /* any other file (Aria system tables, error log, ...) */
	IOA_FC_TABLESPACE = 1, /* InnoDB: a file-per-table tablespace (.ibd) */
	IOA_FC_SYSTEM_TABLESPACE = 2, /* InnoDB: the system tablespace (ibdata*) */
	IOA_FC_UNDO = 3, /* InnoDB: an undo tablespace */
	IOA_FC_REDO_LOG = 4, /* InnoDB: the redo log (ib_logfile*) */
	IOA_FC_BINLOG = 5, /* the server's logs: a binary log file */
	IOA_FC_RELAY_LOG = 6, /* the server's logs: a relay log file */
	IOA_FC_DOUBLEWRITE = 7, /* InnoDB: the doublewrite area (of the system tablespace, or its own file) */
	IOA_FC_TMP = 8, /* any engine's temporary files: temporary tablespace, temporary tables, PostgreSQL's pgsql_tmp */
	IOA_FC_SST = 9, /* MyRocks: a RocksDB table file NNNNNN.sst */
	IOA_FC_WAL = 10, /* MyRocks: a write-ahead log: RocksDB's NNNNNN.log, PostgreSQL's pg_wal/ */
	IOA_FC_MANIFEST = 11, /* MyRocks: the LSM's own metadata: MANIFEST-NNNNNN, CURRENT, IDENTITY, LOCK */
	IOA_FC_OPTIONS = 12, /* MyRocks: OPTIONS-NNNNNN (written once at open) */
	IOA_FC_INFO_LOG = 13, /* MyRocks: RocksDB's text log LOG, LOG.old.* */
	IOA_FC_TRASH = 14, /* MyRocks: *.trash: deleted SSTs the delete scheduler removes later */
	IOA_FC_RELATION = 15, /* PostgreSQL: a relation's main fork: base/<db>/<relfilenode>[.<seg>], global/ */
	IOA_FC_FSM = 16, /* PostgreSQL: a free space map fork <relfilenode>_fsm */
	IOA_FC_VM = 17, /* PostgreSQL: a visibility map fork <relfilenode>_vm */
	IOA_FC_INIT_FORK = 18, /* PostgreSQL: the init fork of an unlogged relation */
	IOA_FC_SLRU = 19, /* PostgreSQL: pg_xact, pg_multixact, pg_subtrans, pg_commit_ts, pg_serial, pg_notify */
	IOA_FC_ARCHIVE = 20, /* the Archive engine: an Archive table's data file <table>.ARZ */
};

#endif
