#!/usr/bin/env bash
# The concurrent layers (io backends, staging, request queue, block cache, resident rounds) and the format parser under AddressSanitizer
# + UBSan and under ThreadSanitizer: cancelling or destroying a queue with reads in flight must leave no
# DMA into freed memory and no data race. Run by scripts/test.sh; build trees are cached in build/
# (without the CUDA kernels: nothing runs them here).
set -euo pipefail
cd "$(dirname "$0")/.."
filter='*Queue*:SlotStream*:*Book*:RequestBook*:*ReadPath*:PageCache*:ChunkChecker*:*Staging*:*Backend*:*Io*:Container*:ContainerWriter*:ChunkCodec*:BlockCache*:BlockedField*:HilbertField*:MappedUnits*:StreamlineTracer*:TraceContainer*:Resident*:SphereGlyphs*:ParticleBatches*:*SegmentedRender*'
cmake -S . -B build/asan -G Ninja -DHEADRACE_BUILD_TESTS=ON -DHEADRACE_SANITIZE=ON -DHEADRACE_GPU_KERNELS=OFF -DCMAKE_BUILD_TYPE=Debug > /dev/null
cmake --build build/asan --target headrace_tests > /dev/null
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 ./build/asan/headrace_tests --gtest_filter="$filter" --gtest_brief=1
cmake -S . -B build/tsan -G Ninja -DHEADRACE_BUILD_TESTS=ON -DHEADRACE_GPU_KERNELS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS=-fsanitize=thread -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread > /dev/null
cmake --build build/tsan --target headrace_tests > /dev/null
TSAN_OPTIONS=halt_on_error=1 ./build/tsan/headrace_tests --gtest_filter="$filter" --gtest_brief=1
echo "sanitize: ASan+UBSan and TSan clean"
