#!/usr/bin/env bash
# trivial.sh WAREHOUSE KEYS_FILE MODE
# The floor for an hourly job of one-row partitions: one sqlite3 process,
# one transaction per key of KEYS_FILE (YYYY-MM-DDTHH, one a line).
#   MODE insert   BEGIN IMMEDIATE; DELETE the key's row; INSERT it; COMMIT
#                 (the bench's hourly job, a commit each)
#   MODE select   one SELECT per key (autocommit: a read transaction each)
#   MODE process  the insert transaction, one sqlite3 process per key
# The warehouse holds: CREATE TABLE hourly (hour TEXT PRIMARY KEY, n INTEGER).
set -euo pipefail
if [ "$#" -ne 3 ] || [ ! -f "$1" ] || [ ! -f "$2" ]; then
  echo "usage: $(basename "$0") WAREHOUSE.db KEYS_FILE insert|select|process" >&2
  exit 2
fi
case $3 in
  insert)
    sed "s/.*/BEGIN IMMEDIATE; DELETE FROM hourly WHERE hour = '&'; INSERT INTO hourly (hour, n) VALUES ('&', 1); COMMIT;/" "$2" \
      | sqlite3 -bail "$1" ;;
  select)
    sed "s/.*/SELECT n FROM hourly WHERE hour = '&';/" "$2" | sqlite3 -bail "$1" > /dev/null ;;
  process)
    while read -r k; do
      sqlite3 -bail "$1" "BEGIN IMMEDIATE; DELETE FROM hourly WHERE hour = '$k'; INSERT INTO hourly (hour, n) VALUES ('$k', 1); COMMIT;"
    done < "$2" ;;
  *) echo "trivial.sh: MODE is insert, select or process" >&2; exit 2 ;;
esac
