# Sourced by the bench scripts: machine_rows prints the rows every result
# file's machine table starts with (header, date, nproc, CPU, kernel); each
# script adds its own rows after it. command_and_machine_rows COMMAND prints
# the fenced command line, then those rows; thp_row is the transparent huge
# pages row the memory-bound benchmarks add.
machine_rows() {
  echo "| | |"
  echo "|---|---|"
  echo "| date | $(date -u '+%Y-%m-%d %H:%M UTC') |"
  echo "| nproc | $(nproc) |"
  echo "| CPU | $({ grep -m 1 '^model name' /proc/cpuinfo || true; } | cut -d: -f2- | sed 's/^ *//') |"
  echo "| kernel | $(uname -srm) |"
}
command_and_machine_rows() {
  echo
  echo '```'
  echo "$1"
  echo '```'
  echo
  machine_rows
}
thp_row() {
  echo "| transparent huge pages | $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown) |"
}
