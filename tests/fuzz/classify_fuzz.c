// SPDX-License-Identifier: GPL-2.0
/*
 * Fuzz the InnoDB page classifier the IO probes run (bpf/innodb_page.h),
 * compiled here as plain C with AddressSanitizer and UBSan.
 *
 *   classify_fuzz [--seed N] [--iterations N] [--corpus FILE] [--sample-every K] [--sample-out FILE]
 *
 * Every iteration makes one IO buffer of whole or partial pages (1 << shift
 * bytes each, shift 9..16, sometimes out of range) from one of: random
 * bytes, a synthesized valid page of a known type (INDEX leaf/non-leaf,
 * RTREE, INSTANT, UNDO, FSP_HDR, BLOB, page_compressed, encrypted, ...), or
 * a real page from --corpus (raw 16 KiB pages, e.g. from a MariaDB
 * datadir); then mutates it (byte flips, boundary values, truncation) and
 * runs the probes' loop over it exactly as classify_pages does: the buffer is
 * allocated with exactly the IO's length, so a read past it is an ASan error.
 * Separately the header decoder gets headers of 0..16383 bytes allocated
 * exactly, as a failed or short read would give it.
 *
 * Checked: outputs stay within their domains (level and index id only for
 * index pages, level <= 254, flags known, the caller's key fields untouched,
 * file class only ever turned into doublewrite), synthesized pages decode to
 * what was put in them; every K-th classification is written to
 * --sample-out for an independent decoder to compare (tests/fuzz_reference.py).
 * Pages are made with a seeded PRNG; a failure prints the seed and
 * iteration: rerun with --seed to reproduce.
 */
#include <linux/types.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "innodb_page.h"

#define BIG_PAGE 65536

static uint64_t rng_state;
static uint64_t seed;
static unsigned long long iter;

static uint64_t rnd(void)
{
	/* splitmix64 */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t below(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

static void fail(const char *what)
{
	fprintf(stderr, "classify_fuzz: FAIL seed=%llu iteration=%llu: %s\n",
		(unsigned long long)seed, iter, what);
	exit(1);
}

#define CHECK(cond, what) do { if (!(cond)) fail(what); } while (0)

static void put16(uint8_t *p, uint16_t v) { p[0] = v >> 8; p[1] = v; }
static void put32(uint8_t *p, uint32_t v) { put16(p, v >> 16); put16(p + 2, v); }
static void put64(uint8_t *p, uint64_t v) { put32(p, v >> 32); put32(p + 4, v); }

/* A random pool the page bodies are copied from: 16 KiB of fresh PRNG output per page
 * would cost more than the classifier; the header bytes are always fresh. */
static uint8_t pool[1 << 20];

static void fill_random(uint8_t *p, size_t n)
{
	size_t head = n < 128 ? n : 128;

	for (size_t i = 0; i < head; i += 8) {
		uint64_t r = rnd();
		size_t m = head - i < 8 ? head - i : 8;

		memcpy(p + i, &r, m);
	}
	if (n > head) {
		size_t off = below(sizeof(pool) - BIG_PAGE);

		memcpy(p + head, pool + off, n - head);
	}
}

static const uint16_t known_types[] = {
	0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
	26, 27, 28, 29, 17853, 17854, 17855, 34354, 37401,
};
#define N_KNOWN (sizeof(known_types) / sizeof(known_types[0]))

struct made {
	int valid;          /* a synthesized, unmutated page: expected values are known */
	uint16_t type;
	uint16_t level;
	uint64_t index_id;
	uint32_t space_id;
	uint32_t page_no;
};

/* A valid page of a known type at page_no of space_id (whole psize bytes). */
static void synth_page(uint8_t *p, uint32_t psize, uint32_t space_id, uint32_t page_no, struct made *m)
{
	uint16_t type = known_types[below(N_KNOWN)];
	uint16_t level = 0;
	uint64_t iid = 0;

	memset(p, 0, psize);
	if (below(3) == 0)
		type = (uint16_t[]){17855, 17855, 17854, 18, 2, 8, 10, 34354, 37401}[below(9)];
	put32(p + 0, rnd());                 /* checksum */
	put32(p + 4, page_no);
	put32(p + 8, below(4) ? page_no - 1 : 0xFFFFFFFF);
	put32(p + 12, below(4) ? page_no + 1 : 0xFFFFFFFF);
	put64(p + 16, rnd() >> 8);           /* LSN */
	put16(p + 24, type);
	put64(p + 26, below(8) ? 0 : rnd()); /* flush LSN or key version */
	put32(p + 34, space_id);
	if (type == FIL_PAGE_INDEX || type == FIL_PAGE_RTREE || type == FIL_PAGE_TYPE_INSTANT) {
		level = below(4) ? 0 : below(6);
		iid = below(10) ? 1 + below(100000) : 0xFFFFFFFF00000000ULL;
		put16(p + 38, 2 + below(100));   /* PAGE_N_DIR_SLOTS */
		put16(p + 54, below(500));       /* PAGE_N_RECS */
		put64(p + 56, level ? 0 : rnd() >> 16); /* PAGE_MAX_TRX_ID */
		put16(p + 64, level);
		put64(p + 66, iid);
		memcpy(p + 94, "infimum\0", 8);
		memcpy(p + 107, "supremum", 8);
	} else if (type == 8) {              /* FSP_HDR: space id and flags */
		put32(p + 38, space_id);
		put32(p + 54, 0x15);
	} else if (type == 34354 || type == 37401) {
		put16(p + 26, 1);                /* compressed payload from the body on */
		fill_random(p + 38, psize - 38);
	} else if (type == 10 || type == 2) {
		fill_random(p + 38, psize > 1024 ? 1024 : psize - 38);
	}
	put32(p + psize - 8, rnd());         /* FIL trailer */
	m->valid = 1;
	m->type = type;
	m->level = level;
	m->index_id = iid;
	m->space_id = space_id;
	m->page_no = page_no;
}

static void mutate(uint8_t *p, uint32_t psize, struct made *m)
{
	switch (below(8)) {
	case 0: case 1: {                    /* flip bits in the header */
		int n = 1 + below(8);

		for (int i = 0; i < n; i++)
			p[below(PAGE_HDR_BYTES + 8)] ^= 1u << below(8);
		break;
	}
	case 2: {                            /* flip bytes anywhere */
		int n = 1 + below(32);

		for (int i = 0; i < n; i++)
			p[below(psize)] = rnd();
		break;
	}
	case 3:                              /* boundary values in the fields read */
		put16(p + 64, (uint16_t[]){0xFFFF, 0x00FF, 0x00FE, 0x0100, 254, 255, 256, 0}[below(8)]);
		put64(p + 66, (uint64_t[]){0, ~0ULL, 0xFFFFFFFF00000000ULL, 1, 0x8000000000000000ULL}[below(5)]);
		break;
	case 4:
		put16(p + 24, (uint16_t[]){0xFFFF, 0, 17855, 17854, 17856, 18, 19, 34354, 37401, 0x8000}[below(10)]);
		break;
	case 5:
		put32(p + 4, (uint32_t[]){0, 0xFFFFFFFF, 1, 0x80000000}[below(4)]);
		put32(p + 34, (uint32_t[]){0, 0xFFFFFFFF, 1, 0xFFFFFFFE}[below(4)]);
		break;
	case 6:                              /* zeroed or 0xFF header */
		memset(p, below(2) ? 0 : 0xFF, PAGE_HDR_BYTES);
		break;
	default:                             /* a random header on a valid body */
		fill_random(p, PAGE_HDR_BYTES);
		break;
	}
	m->valid = 0;
}

static FILE *sample_out;
static unsigned sample_every = 50;
static unsigned long long classified, sampled, pages_16k;

static void sample(const struct innodb_file *f, uint64_t page_no, const uint8_t *hdr, uint32_t len,
		   const struct page_key *k)
{
	uint32_t n = len < 80 ? len : 80;

	if (!sample_out || ++sampled % sample_every)
		return;
	fprintf(sample_out, "P %u %u %u %u %u %llu %u ", f->space_id, f->file_class, f->encrypted,
		f->dblwr_lo, f->dblwr_hi, (unsigned long long)page_no, len);
	for (uint32_t i = 0; i < n; i++)
		fprintf(sample_out, "%02x", hdr[i]);
	if (!n)
		fputc('-', sample_out);
	fprintf(sample_out, " %u %u %u %llu %u %u\n", k->page_type, k->space_id, k->level,
		(unsigned long long)k->index_id, k->flags, k->file_class);
}

/* Domain checks that hold for any input. */
static void check_key(const struct innodb_file *f, uint64_t page_no, uint32_t len, const struct page_key *k)
{
	int dblwr = f->file_class == IOA_FC_SYSTEM_TABLESPACE && page_no >= f->dblwr_lo && page_no < f->dblwr_hi;

	/* the caller's template survives */
	CHECK(k->tgid == 0x1234 && k->tid == 0x5678 && k->digest == 0xdeadbeefcafeULL, "template clobbered");
	CHECK(k->op == 1 && k->api == 4 && k->stage == 3, "template clobbered");
	CHECK(k->file_class == (dblwr ? IOA_FC_DOUBLEWRITE : f->file_class), "file class");
	CHECK(!(k->flags & ~(IOA_PAGE_F_MISMATCH | IOA_PAGE_F_UNREADABLE | IOA_PAGE_F_ENCRYPTED)), "unknown flag");
	if (f->encrypted) {
		CHECK(k->flags == IOA_PAGE_F_ENCRYPTED, "encrypted file, not counted as encrypted");
	} else if (len < PAGE_HDR_BYTES) {
		CHECK(k->flags == IOA_PAGE_F_UNREADABLE, "short header, not counted as unreadable");
	} else {
		CHECK(!(k->flags & (IOA_PAGE_F_UNREADABLE | IOA_PAGE_F_ENCRYPTED)), "readable page flagged");
		if (dblwr)
			CHECK(!(k->flags & IOA_PAGE_F_MISMATCH), "doublewrite copy flagged as mismatch");
	}
	if (k->flags & (IOA_PAGE_F_UNREADABLE | IOA_PAGE_F_ENCRYPTED)) {
		CHECK(k->page_type == 0 && k->index_id == 0 && k->level == IOA_LEVEL_NONE, "guessed an unread page");
		CHECK(k->space_id == f->space_id, "space of an unread page");
		return;
	}
	if (ioa_is_index_page(k->page_type))
		CHECK(k->level <= IOA_LEVEL_MAX, "index page without a level");
	else
		CHECK(k->level == IOA_LEVEL_NONE && k->index_id == 0, "level or index id on a non-index page");
}

static void check_made(const struct innodb_file *f, const struct made *m, const struct page_key *k)
{
	if (!m->valid || f->encrypted)
		return;
	CHECK(k->page_type == m->type, "synthesized page: type");
	CHECK(k->space_id == m->space_id, "synthesized page: space id");
	if (ioa_is_index_page(m->type)) {
		CHECK(k->level == m->level, "synthesized page: level");
		CHECK(k->index_id == m->index_id, "synthesized page: index id");
	}
	if (k->file_class != IOA_FC_DOUBLEWRITE)
		CHECK(!!(k->flags & IOA_PAGE_F_MISMATCH) == (m->space_id != f->space_id),
		      "synthesized page: mismatch flag");
}

static struct page_key template_key(void)
{
	struct page_key k;

	memset(&k, 0xA5, sizeof(k));  /* the decoder must set every page field itself */
	k.tgid = 0x1234;
	k.tid = 0x5678;
	k.digest = 0xdeadbeefcafeULL;
	k.op = 1;
	k.api = 4;
	k.stage = 3;
	return k;
}

static uint8_t *corpus;
static size_t corpus_pages;

static void load_corpus(const char *path)
{
	FILE *fp = fopen(path, "rb");
	long size;

	if (!fp) {
		perror(path);
		exit(2);
	}
	fseek(fp, 0, SEEK_END);
	size = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	corpus_pages = size / 16384;
	corpus = malloc(corpus_pages * 16384 + 1);
	if (!corpus || fread(corpus, 16384, corpus_pages, fp) != corpus_pages) {
		fprintf(stderr, "%s: cannot read\n", path);
		exit(2);
	}
	fclose(fp);
}

static struct innodb_file random_file(uint32_t shift)
{
	struct innodb_file f;

	memset(&f, 0, sizeof(f));
	f.space_id = below(4) ? below(100) : (uint32_t)rnd();
	f.page_shift = shift;
	f.file_class = below(10) ? below(IOA_FC_TMP + 1) : (uint8_t)rnd();
	if (below(3) == 0)
		f.file_class = IOA_FC_SYSTEM_TABLESPACE;
	f.encrypted = below(20) == 0;
	if (below(2)) {
		f.dblwr_lo = below(200);
		f.dblwr_hi = f.dblwr_lo + below(200);
	} else if (below(4) == 0) {
		f.dblwr_lo = (uint32_t)rnd();
		f.dblwr_hi = (uint32_t)rnd();
	}
	return f;
}

/* One IO: npages pages (some synthesized, real or random, maybe mutated), maybe truncated,
 * classified the way classify_pages and classify_one do it. Returns the pages made. */
static unsigned one_io(void)
{
	static const uint32_t shifts[] = {14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 14, 12, 13, 15, 16, 9, 10, 11};
	uint32_t shift = shifts[below(sizeof(shifts) / sizeof(shifts[0]))];
	uint32_t psize, npages, nbytes, got, n;
	uint64_t pos_page;
	struct innodb_file f;
	struct made made[8];
	uint8_t *buf;
	int cut;

	if (below(50) == 0)
		shift = below(2) ? below(IOA_PAGE_SHIFT_MIN) : IOA_PAGE_SHIFT_MAX + 1 + below(16);
	psize = shift >= IOA_PAGE_SHIFT_MIN && shift <= IOA_PAGE_SHIFT_MAX ? 1u << shift : 16384;
	npages = below(8) ? 1 : 1 + below(8);
	if (shift == 9 && below(20) == 0)
		npages = 300;                /* more than one probe call classifies */
	f = random_file(shift);
	pos_page = below(4) ? below(1000) : (uint64_t)below(1u << 31);
	nbytes = npages * psize;
	buf = malloc(nbytes ? nbytes : 1);
	if (!buf)
		fail("out of memory");
	for (uint32_t i = 0; i < npages; i++) {
		uint8_t *p = buf + (size_t)i * psize;
		struct made *m = &made[i < 8 ? i : 7];
		uint32_t space = below(8) ? f.space_id : (uint32_t)rnd();
		uint32_t pno = below(8) ? (uint32_t)(pos_page + i) : (uint32_t)rnd();

		memset(m, 0, sizeof(*m));
		switch (below(3)) {
		case 0:
			fill_random(p, psize);
			break;
		case 1:
			if (corpus_pages && psize <= 16384) {
				memcpy(p, corpus + (size_t)below(corpus_pages) * 16384, psize);
				break;
			}
			/* fall through */
		default:
			synth_page(p, psize, space, pno, m);
			break;
		}
		if (below(2))
			mutate(p, psize, m);
		if (npages > 8)
			m->valid = 0;
	}
	/* a partial read or write: anything from nothing to one byte short */
	got = below(4) ? nbytes : below(nbytes);
	if (got != nbytes) {
		uint8_t *exact = malloc(got ? got : 1);

		memcpy(exact, buf, got);
		free(buf);
		buf = exact;
		if (!got) {
			free(buf);
			buf = malloc(0);         /* a zero-length allocation: nothing may be read */
		}
	}
	n = ioa_io_pages(got, shift, &cut);
	CHECK(n <= MAX_PAGES_PER_IO, "more pages than one probe classifies");
	if (shift < IOA_PAGE_SHIFT_MIN || shift > IOA_PAGE_SHIFT_MAX)
		CHECK(n == 0 && !cut, "pages of an impossible size");
	else
		CHECK(n == ((got >> shift) > MAX_PAGES_PER_IO ? MAX_PAGES_PER_IO : (got >> shift)) &&
		      cut == ((got >> shift) > MAX_PAGES_PER_IO), "page count");
	if (sample_out && (iter % sample_every) == 0)
		fprintf(sample_out, "N %u %u %u %d\n", got, shift, n, cut);
	for (uint32_t i = 0; i < n; i++) {
		size_t off = (size_t)i << shift;
		uint32_t len = PAGE_HDR_BYTES;
		struct page_key k = template_key();

		CHECK(off + PAGE_HDR_BYTES <= got, "a page header past the end of the IO");
		if (below(100) == 0)
			len = 0;                 /* bpf_probe_read_user failed */
		ioa_classify_page(&k, &f, pos_page + i, buf + off, len);
		classified++;
		check_key(&f, pos_page + i, len, &k);
		if (len && i < 8 && made[i].valid && (uint32_t)(pos_page + i) == made[i].page_no)
			check_made(&f, &made[i], &k);
		sample(&f, pos_page + i, buf + off, len, &k);
	}
	free(buf);
	if (psize == 16384 && shift == 14)
		pages_16k += npages;
	return npages;
}

/* The header decoder alone on a header of 0..16383 bytes (a short read), allocated exactly. */
static void one_short_header(void)
{
	uint32_t len = below(4) ? below(PAGE_HDR_BYTES + 8) : below(16384);
	uint8_t *h = malloc(len ? len : 1);
	struct innodb_file f = random_file(14);
	struct page_key k = template_key();
	uint64_t page_no = below(1000);
	uint8_t full[16384];
	struct made m = {0};

	synth_page(full, 16384, f.space_id, (uint32_t)page_no, &m);
	if (below(2))
		mutate(full, 16384, &m);
	memcpy(h, full, len);
	if (!len) {
		free(h);
		h = malloc(0);
	}
	ioa_classify_page(&k, &f, page_no, h, len);
	classified++;
	pages_16k++;
	check_key(&f, page_no, len, &k);
	if (len >= PAGE_HDR_BYTES)
		check_made(&f, &m, &k);
	sample(&f, page_no, h, len, &k);
	free(h);
}

int main(int argc, char **argv)
{
	unsigned long long iterations = 1000000, pages = 0;
	const char *corpus_path = NULL, *sample_path = NULL;

	seed = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--iterations") && i + 1 < argc)
			iterations = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--corpus") && i + 1 < argc)
			corpus_path = argv[++i];
		else if (!strcmp(argv[i], "--sample-every") && i + 1 < argc)
			sample_every = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--sample-out") && i + 1 < argc)
			sample_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--seed N] [--iterations N] [--corpus FILE] "
				"[--sample-every K] [--sample-out FILE]\n", argv[0]);
			return 2;
		}
	}
	if (!sample_every)
		sample_every = 1;
	rng_state = seed;
	for (size_t i = 0; i < sizeof(pool); i += 8) {
		uint64_t r = rnd();

		memcpy(pool + i, &r, 8);
	}
	if (corpus_path)
		load_corpus(corpus_path);
	if (sample_path) {
		sample_out = fopen(sample_path, "w");
		if (!sample_out) {
			perror(sample_path);
			return 2;
		}
	}
	for (iter = 0; iter < iterations; iter++) {
		if (iter % 8 == 7) {
			one_short_header();
			pages++;
		} else {
			pages += one_io();
		}
	}
	if (sample_out && fclose(sample_out)) {
		perror(sample_path);
		return 2;
	}
	printf("ok seed=%llu iterations=%llu pages=%llu pages_16k=%llu classified=%llu sampled=%llu corpus=%zu\n",
	       (unsigned long long)seed, iterations, pages, pages_16k, classified, sampled / sample_every,
	       corpus_pages);
	return 0;
}
