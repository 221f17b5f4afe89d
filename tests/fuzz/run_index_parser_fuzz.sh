#!/usr/bin/env bash
# Builds the index-parser fuzz target with clang (libFuzzer + ASan + UBSan) and runs it for a bounded
# time from a seed that is a real container's index. Usage: run_index_parser_fuzz.sh SOURCE_DIR BUILD_DIR [SECONDS]
set -euo pipefail
source_dir=$1
build_dir=$2/fuzz
seconds=${3:-20}
mkdir -p "$build_dir/corpus"
binary=$build_dir/index_parser_fuzz
sources=("$source_dir"/tests/fuzz/index_parser_fuzz.cpp "$source_dir"/cpp/src/error.cpp "$source_dir"/cpp/src/format/*.cpp)
xxh3_dir=$source_dir/cpp/src/format/xxh3  # each built for its instruction set, as CMakeLists.txt does
if [[ ! -x $binary ]] || [[ -n $(find "${sources[@]}" "$xxh3_dir" "$source_dir/cpp/include" -newer "$binary" -print -quit) ]]; then
  flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$source_dir/cpp/include")
  clang++ "${flags[@]}" -mavx2 -c "$xxh3_dir/avx2.cpp" -o "$build_dir/xxh3_avx2.o"
  clang++ "${flags[@]}" -mavx512f -c "$xxh3_dir/avx512.cpp" -o "$build_dir/xxh3_avx512.o"
  clang++ "${flags[@]}" "${sources[@]}" "$build_dir/xxh3_avx2.o" "$build_dir/xxh3_avx512.o" -o "$binary"
fi
HEADRACE_FUZZ_WRITE_SEED=$build_dir/corpus/seed "$binary"
"$binary" -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 -artifact_prefix="$build_dir/" "$build_dir/corpus"
