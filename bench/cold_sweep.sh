# Sourced phases for bench/user_stream_on_device.sh: the disk's queue as the guest sees it, and knobs of
# the O_DIRECT route, cold and half cached, each in a process of its own (settings are read once per
# process), KvikIO in the same rounds with the order turned each round: what the defaults should be.
diskinfo() {
  local q
  for q in /sys/block/vd*/queue; do
    echo "$q: scheduler $(cat "$q/scheduler"), nr_requests $(cat "$q/nr_requests"), max_sectors_kb $(cat "$q/max_sectors_kb")," \
      "max_hw_sectors_kb $(cat "$q/max_hw_sectors_kb"), read_ahead_kb $(cat "$q/read_ahead_kb"), hw queues $(ls "$q/../mq" | wc -l)"
  done
}

sweep() {
  local config
  for config in "64 4194304 {}" "16 16777216 {}" "64 8388608 {\"staging_bytes\":536870912}" \
                "128 4194304 {\"staging_bytes\":1073741824}"; do
    read -r qd task options <<< "$config"
    echo "-- HEADRACE_QUEUE_DEPTH=$qd HEADRACE_TASK_SIZE_BYTES=$task options $options"
    HEADRACE_QUEUE_DEPTH=$qd HEADRACE_TASK_SIZE_BYTES=$task within 110 python3 -m headrace.bench.cases.user_stream \
      "$work/particles.hrc" --rounds "${ROUNDS:-4}" --states "${SWEEP_STATES:-cold,half}" --options "$options" \
      --out "$OUT/sweep-$qd-$task-$(echo "$options" | tr -dc '0-9')" |
      grep -E "round|x_kvikio\"|paired_median|median_gbps\"|posix\"|cufile\"|position_effect" -A0
  done
}

parity() {
  # The defaults against KvikIO where the disk sets the pace, with enough rounds to see a few per cent
  # through the disk's drift (ROUNDS, default 12).
  within 500 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-12}" \
    --states cold,half --out "$OUT/parity" | grep -E "round|x_kvikio|paired_median|median_gbps\"|posix\"|cufile\"|position_effect" -A0
}

unpinned() {
  # A hot file that is not page-locked (pin_files off, or over the pin budget): the page cache's lane
  # reads it buffered into its ring (a quarter of staging_bytes), against KvikIO on the same hot file.
  local options
  for options in '{"pin_files": "off"}' '{"pin_files": "off", "staging_bytes": 536870912}' \
                 '{"pin_files": "off", "staging_bytes": 1073741824}'; do
    echo "-- $options"
    within 120 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-4}" --states hot \
      --kvikio-modes posix --options "$options" --out "$OUT/unpinned-$(echo "$options" | tr -dc '0-9')" |
      grep -E "round|x_kvikio\"|paired_median" -A0
  done
}

unpinnedsweep() {
  # A hot file not page-locked under settings of the page cache's lane (checksums, read threads, task
  # size, checksum threads): which one moves its rate against KvikIO POSIX on the same hot file?
  local config
  for config in "" "HEADRACE_VERIFY_CHECKSUMS=off" "HEADRACE_THREADS=32" "HEADRACE_THREADS=8" \
                "HEADRACE_TASK_SIZE_BYTES=1048576" "HEADRACE_TASK_SIZE_BYTES=16777216" "HEADRACE_DECODE_THREADS=4"; do
    echo "-- ${config:-defaults}"
    (for assignment in $config; do export "${assignment?}"; done; within 100 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-4}" \
      --states hot --kvikio-modes posix --options '{"pin_files": "off"}' \
      --out "$OUT/unpinnedsweep-$(echo "${config:-defaults}" | tr -dc 'A-Z0-9')" | grep -E "x_kvikio\"|paired_median\"|median_gbps\"" -A0)
  done
}

halfsweep() {
  # The half-cached state under settings that take CPU from the page cache's lane (its read threads,
  # the checksum threads): does the disk's lane slow down when every core copies or hashes?
  local config
  for config in "" "HEADRACE_THREADS=8" "HEADRACE_DECODE_THREADS=8" "HEADRACE_THREADS=8 HEADRACE_DECODE_THREADS=8" \
                "HEADRACE_VERIFY_CHECKSUMS=off"; do
    echo "-- ${config:-defaults}"
    (for assignment in $config; do export "${assignment?}"; done; within 100 python3 -m headrace.bench.cases.user_stream "$work/particles.hrc" --rounds "${ROUNDS:-5}" \
      --states half --kvikio-modes posix --out "$OUT/halfsweep-$(echo "${config:-defaults}" | tr -dc 'A-Z0-9')" |
      grep -E "x_kvikio\"|paired_median|median_gbps\"" -A0)
  done
}
