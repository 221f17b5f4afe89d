# A/B of the render loop (call 24): this tree (new), then cpp/ python/ tests/ of aa73a93 (old, the
# session's start), then this tree again, three runs each. ab/old and ab/new were made on the CPU
# machine with `git archive <commit> cpp python tests | tar -x -C ab/<name>` and carried as untracked files.
source bench/device_session.sh
work=/var/tmp/headrace-bench
render3() {
  local tag=$1 i
  for i in 1 2 3; do
    python3 -m headrace bench particles "$work/p100m.hrc" --device 0 --grid --methods auto,ram-pinned,pread \
      --batches 1000000 --segments 16 --cache hot --wall-seconds 0.5 --out "$OUT/render-$tag-$i.csv" > /dev/null
    python3 -c "
import csv
for r in csv.DictReader(open('$OUT/render-$tag-$i.csv')): print('$tag $i', r['method'], round(float(r['frame_seconds'])*1e3, 1), 'ms; h2d', round(float(r['h2d_s_per_frame'])*1e3, 1))"
  done
}
ab() {
  mkdir -p "$work"
  [[ -f $work/p100m.hrc ]] || python3 -m headrace generate particles "$work/p100m.hrc" --particles 100000000 --frames 1 --chunk-size 128000 > /dev/null
  render3 new
  cp -r ab/old/* . && build > /dev/null
  render3 old
  cp -r ab/new/* . && build > /dev/null
  render3 new-again
}
run_phases setup build ab
