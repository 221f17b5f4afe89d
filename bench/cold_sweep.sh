# Sourced phase for bench/user_stream_on_device.sh: knobs of the O_DIRECT route, cold, each in a process of
# its own (settings are read once per process), alternating with KvikIO: what the defaults should be.
sweep() {
  local config
  for config in "64 4194304 {}" "64 4194304 {\"staging_bytes\":1073741824}" "32 16777216 {}" \
                "128 4194304 {\"staging_bytes\":1073741824}"; do
    read -r qd task options <<< "$config"
    echo "-- HEADRACE_QUEUE_DEPTH=$qd HEADRACE_TASK_SIZE_BYTES=$task options $options"
    HEADRACE_QUEUE_DEPTH=$qd HEADRACE_TASK_SIZE_BYTES=$task within 100 python3 -m headrace.bench.cases.user_stream \
      "$work/particles.hrc" --rounds "${ROUNDS:-4}" --states cold --options "$options" \
      --out "$OUT/sweep-$qd-$task-$(echo "$options" | tr -dc '0-9')" | grep -E "round|x_kvikio|median_gbps\"|posix\"|cufile\""
  done
}
