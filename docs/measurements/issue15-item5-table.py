#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Tabulate issue 15 item 5's VM runs: i15-TAG-DIST-WORKLOAD-ENGINE.json
(pmidx-bench --json) under build/measure/, averaged over the repeats of a
TAG prefix (old1, old2 -> old). Prints ops/s of each path and the ratios
the issue asks for: against the single-op ioctl and the in-kernel API."""
import collections, glob, json, re, sys

d = sys.argv[1] if len(sys.argv) > 1 else 'build/measure'
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for f in glob.glob(f'{d}/i15-*-*-*-*.json'):
    m = re.match(r'i15-([a-z]+)\d*-(\w+)-(\w+)-(\w+)\.json', f.split('/')[-1])
    if not m:
        continue
    ver, dist, wl, eng = m.groups()
    for r in json.load(open(f))['runs']:
        res = [x for x in r['results'] if x['workload'] != 'load'][0]
        runs[(dist, wl, eng, ver)][r['label']].append(res['ops_per_s'])

mean = lambda v: sum(v) / len(v)
for key in sorted(runs):
    dist, wl, eng, ver = key
    by = {k: mean(v) for k, v in runs[key].items()}
    base, kern = by.get('path=ioctl'), by.get('path=kernel')
    # the single-op ioctl that reads the clock for 1 op in 1000 (newer runs)
    fair = by.get('path=ioctl,sample=1000')
    print(f'## {eng} {wl} ({dist} keys) {ver}, n={len(runs[key]["path=ioctl"])}')
    for label, ops in by.items():
        print(f'  {label:36s} {ops/1e3:8.1f}k  {ops/base:5.2f}x ioctl'
              + (f'  {ops/fair:5.2f}x ioctl,sample=1000' if fair else '')
              + f'  {ops/kern:5.2f}x kernel')
