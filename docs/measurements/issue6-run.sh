set -e
build/bin/pmidxctl format --force /dev/pmem0 >/dev/null
build/bin/pmidxctl attach /dev/pmem0 >/dev/null
insmod samples/pmidx_dentry/pmidx_dentry.ko
for w in C update; do
 for e in ccl utree; do
  echo "### workload $w engine $e"
  build/bin/pmidx-bench --engine $e --workload $w --keys 100000 --ops 100000 --json build/measure/i6-$w-$e.json \
   --compare path=ioctl path=uring,qd=1 path=uring,qd=16 path=uring,qd=64 path=uring,qd=64,batch=16 path=ioctl,batch=16 path=kernel path=inproc:/tmp/b.pool
 done
done
rmmod pmidx_dentry
