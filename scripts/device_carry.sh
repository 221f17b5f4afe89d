#!/usr/bin/env bash
# What a GPU machine's image lacks, made here for the device tool's carry [".carry", ".whl"] (both git-ignored
# through .git/info/exclude): .carry, the -dev packages the build there links (Debian's, unpacked), and
# .whl, the wheels its Python 3.12 lacks (nvCOMP; KvikIO, the peer the engine's benchmarks compare with).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.carry/' .git/info/exclude 2>/dev/null || echo /.carry/ >> .git/info/exclude
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
if [[ ! -d .carry/deps ]]; then
  mkdir -p .carry/debs
  (cd .carry/debs && apt-get download liburing-dev liburing2 libzstd-dev libzstd1 liblz4-dev liblz4-1 libsnappy-dev \
    libsnappy1v5 zlib1g-dev zlib1g libxxhash-dev)
  for deb in .carry/debs/*.deb; do dpkg -x "$deb" .carry/deps; done
  rm -rf .carry/debs
  rm -f .carry/deps/usr/lib/x86_64-linux-gnu/{libzstd.a,libsnappy.a,libsnappy-shared.a,libz.a}  # not PIC: the shared ones link
  ln -sf ../../../lib/x86_64-linux-gnu/libz.so.1.2.13 .carry/deps/usr/lib/x86_64-linux-gnu/libz.so  # Debian's is absolute
fi
if ! ls .whl/nvidia_libnvcomp_cu13-*.whl > /dev/null 2>&1; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl nvidia-libnvcomp-cu13==6.0.0.12 kvikio-cu13==26.10.0 \
    libkvikio-cu13==26.10.0 rapids-logger==0.3.0
fi
# fio, the disk's referee (bench/memory_tier_on_device.sh fioceiling): the image has none and Debian's links Ceph,
# Gluster and RDMA; built from fio's own source (FIO_SOURCE: a tree of its tag fio-3.42) with the engines the
# benchmarks use (io_uring, psync), linking only libc, libm and zlib.
if [[ ! -x .carry/bin/fio && -n ${FIO_SOURCE:-} ]]; then
  build=$(mktemp -d)
  cp -r "$FIO_SOURCE"/. "$build"
  (cd "$build" && ./configure --disable-native --disable-numa --disable-rdma --disable-rados --disable-rbd --disable-gfapi \
    --disable-pmem --disable-http --disable-xnvme --disable-libblkio --disable-libzbc --disable-dfs --disable-libnfs \
    --disable-tcmalloc --disable-isal --disable-isal64 > /dev/null && make -j "$(nproc)" fio > /dev/null)
  mkdir -p .carry/bin && cp "$build/fio" .carry/bin/fio && rm -rf "$build"
fi
du -sh .carry .whl
