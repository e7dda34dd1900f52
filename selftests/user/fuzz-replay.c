// SPDX-License-Identifier: GPL-2.0
/*
 * Plain driver for the fuzz targets, for builds without libFuzzer (gcc):
 * runs every input file (or every file of a directory) once, then, with
 * --mutate N, up to N seeded random mutations of each (byte flips,
 * overwrites, appended records, truncation) as a small stand-in for a
 * fuzzer, one file after the other in rounds, so that a --max-time run
 * spreads over every input. Calls the target's LLVMFuzzerInitialize()
 * first, as libFuzzer does.
 *
 *   fuzz-replay [--mutate N] [--seed S] [--max-time SECONDS] PATH...
 *
 * Prints the executions done and ends with "P passed, F failed", one per
 * PATH argument (a failing input aborts the process, as under libFuzzer).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include <linux/types.h>

int LLVMFuzzerTestOneInput(const u8 *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static u64 rs = 0x9e3779b97f4a7c15ULL;
static unsigned long execs;

static u64 rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void run(const u8 *d, size_t n)
{
	LLVMFuzzerTestOneInput(d, n);
	execs++;
}

static void mutate_and_run(const u8 *d, size_t n)
{
	u8 buf[4096];
	size_t len = n < sizeof(buf) ? n : sizeof(buf), i, k;

	memcpy(buf, d, len);
	if (!len)
		buf[len++] = 0;
	for (k = 0; k <= rnd() % 4; k++) {
		switch (rnd() % 4) {
		case 0:		/* flip a bit */
			buf[rnd() % len] ^= 1 << (rnd() % 8);
			break;
		case 1:		/* overwrite a byte */
			buf[rnd() % len] = rnd();
			break;
		case 2:		/* append a random record */
			for (i = 0; i < 1 + rnd() % 14 && len < sizeof(buf); i++)
				buf[len++] = rnd();
			break;
		case 3:		/* truncate */
			if (len > 1)
				len = 1 + rnd() % len;
			break;
		}
	}
	run(buf, len);
}

/* The inputs, run once when loaded, mutated in rounds at the end. */
static struct input {
	u8	*data;
	size_t	n;
} *inputs;
static unsigned long ninputs;

static int one_file(const char *path)
{
	static u8 data[1 << 16];
	struct input *in;
	FILE *f = fopen(path, "rb");
	size_t n;

	if (!f) {
		perror(path);
		return -1;
	}
	n = fread(data, 1, sizeof(data), f);
	fclose(f);
	run(data, n);
	in = realloc(inputs, (ninputs + 1) * sizeof(*inputs));
	if (!in) {
		perror("realloc");
		exit(1);
	}
	inputs = in;
	in[ninputs].data = malloc(n ? n : 1);
	if (!in[ninputs].data) {
		perror("malloc");
		exit(1);
	}
	memcpy(in[ninputs].data, data, n);
	in[ninputs++].n = n;
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long rounds = 0, files = 0, failed = 0, paths = 0, bad_paths = 0;
	double t0 = now(), deadline = 1e30;
	unsigned long r, k;
	int i;

	LLVMFuzzerInitialize(&argc, &argv);

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mutate") && i + 1 < argc) {
			rounds = strtoul(argv[++i], NULL, 0);
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			rs = strtoull(argv[++i], NULL, 0) | 1;
		} else if (!strcmp(argv[i], "--max-time") && i + 1 < argc) {
			deadline = t0 + strtod(argv[++i], NULL);
		} else {
			unsigned long failed_before = failed;
			struct stat st;

			paths++;
			if (stat(argv[i], &st)) {
				perror(argv[i]);
				failed++;
				bad_paths++;
				continue;
			}
			if (S_ISDIR(st.st_mode)) {
				struct dirent **ents;
				int n = scandir(argv[i], &ents, NULL, alphasort), k;

				for (k = 0; k < n; k++) {
					char p[4096];

					/* subfolders are not inputs */
					if (ents[k]->d_name[0] != '.' &&
					    ents[k]->d_type != DT_DIR) {
						snprintf(p, sizeof(p), "%s/%s", argv[i],
							 ents[k]->d_name);
						if (one_file(p))
							failed++;
						else
							files++;
					}
					free(ents[k]);
				}
				free(ents);
			} else if (one_file(argv[i])) {
				failed++;
			} else {
				files++;
			}
			bad_paths += failed != failed_before;
		}
	}
	for (r = 0; r < rounds && now() < deadline; r++)
		for (k = 0; k < ninputs && now() < deadline; k++)
			mutate_and_run(inputs[k].data, inputs[k].n);
	printf("# fuzz-replay: %lu inputs, %lu executions (%lu mutations each, seed %#llx), %.1fs\n",
	       files, execs, rounds, (unsigned long long)rs, now() - t0);
	printf("%lu passed, %lu failed\n", paths - bad_paths, bad_paths);
	return failed ? 1 : 0;
}
