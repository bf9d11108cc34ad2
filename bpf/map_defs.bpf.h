/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A map in one line: libbpf's BTF-defined map
 *
 *	struct {
 *		__uint(type, TYPE);
 *		__uint(max_entries, MAX);
 *		__type(key, KEY);
 *		__type(value, VALUE);
 *	} name SEC(".maps");
 *
 * written once, for the maps that give only these four. A map with more
 * (map_flags, a ring buffer's size alone) is written out where it is declared.
 * Arrays' keys are __u32.
 */
#ifndef IOATTR_MAP_DEFS_BPF_H
#define IOATTR_MAP_DEFS_BPF_H

#define BPF_MAP(_name, _type, _key, _value, _max_entries)	\
	struct {						\
		__uint(type, _type);				\
		__uint(max_entries, _max_entries);		\
		__type(key, _key);				\
		__type(value, _value);				\
	} _name SEC(".maps")

#define BPF_HASH(_name, _key, _value, _max_entries) \
	BPF_MAP(_name, BPF_MAP_TYPE_HASH, _key, _value, _max_entries)
#define BPF_LRU_HASH(_name, _key, _value, _max_entries) \
	BPF_MAP(_name, BPF_MAP_TYPE_LRU_HASH, _key, _value, _max_entries)
#define BPF_ARRAY(_name, _value, _max_entries) \
	BPF_MAP(_name, BPF_MAP_TYPE_ARRAY, __u32, _value, _max_entries)
#define BPF_PERCPU_ARRAY(_name, _value, _max_entries) \
	BPF_MAP(_name, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, _value, _max_entries)

#endif /* IOATTR_MAP_DEFS_BPF_H */
