# Sourced by the bench scripts: machine_rows prints the rows every result
# file's machine table starts with (header, date, nproc, CPU, kernel); each
# script adds its own rows after it.
machine_rows() {
  echo "| | |"
  echo "|---|---|"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  echo "| nproc | $(nproc) |"
  echo "| CPU | $({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//') |"
  echo "| kernel | $(uname -srm) |"
}
