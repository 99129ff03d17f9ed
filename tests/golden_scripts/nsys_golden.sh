#!/bin/sh
# Expected values of the Nsight Systems importer's golden tests
# (tests/ingest/nsys_importer_test.cc) and of RealTracesTest.NsightExportReconstructs,
# derived with the sqlite3 command-line tool on the gunzipped real exports, independently
# of the importer.
#
# Usage: sh tests/golden_scripts/nsys_golden.sh [REAL_DATA_DIR]
# REAL_DATA_DIR defaults to ../shared/data/real beside the repository (the default of the
# CMake variable TELLER_REAL_DATA_DIR).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
real=${1:-$here/../../../shared/data/real}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gunzip -c "$real/nsys_pipit/perlmutter-cloverleaf-cuda.sqlite.gz" > "$tmp/cloverleaf.sqlite"
gunzip -c "$real/nsys_pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite.gz" > "$tmp/saxpy.sqlite"

q() {  # q FILE LABEL SQL
  printf '%s: ' "$2"
  sqlite3 "$1" "$3" | tr '\n' ' '
  echo
}
linked='SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k WHERE EXISTS
  (SELECT 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME r WHERE r.eventClass IN (0,1) AND
   r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24))'

f=$tmp/cloverleaf.sqlite
echo "== CloverleafCountsPerKind"
q "$f" "kernels" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL'
q "$f" "runtime rows by eventClass (0 runtime, 1 driver)" 'SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1'
q "$f" "memcpy" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY'
q "$f" "memcpy by copyKind (1 Host-to-Device, 2 Device-to-Host)" 'SELECT copyKind, COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1'
q "$f" "copyKind labels" 'SELECT id, label FROM ENUM_CUDA_MEMCPY_OPER WHERE id IN (1, 2)'
q "$f" "MEMSET and NVTX_EVENTS tables present" "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name IN ('CUPTI_ACTIVITY_KIND_MEMSET', 'NVTX_EVENTS')"
q "$f" "synchronizations by syncType" 'SELECT syncType, COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION GROUP BY 1'
q "$f" "syncType label" 'SELECT label FROM ENUM_CUPTI_SYNC_TYPE WHERE id = 1'
q "$f" "memcpy bytes" 'SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY'
q "$f" "kernels linked to a runtime/driver call" "$linked"
echo "== CloverleafProcessHostAndTime"
q "$f" "pids of host calls" 'SELECT DISTINCT (globalTid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_RUNTIME'
q "$f" "pids of kernels" 'SELECT DISTINCT (globalPid >> 24) & 16777215 FROM CUPTI_ACTIVITY_KIND_KERNEL'
q "$f" "process name" 'SELECT pid, name FROM PROCESSES WHERE pid = 1701896'
q "$f" "host" "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"
q "$f" "host-call threads" 'SELECT COUNT(DISTINCT globalTid), MIN(globalTid & 16777215) FROM CUPTI_ACTIVITY_KIND_RUNTIME'
q "$f" "first kernel (start, correlation, stream, device)" 'SELECT start, correlationId, streamId, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 1'
q "$f" "first kernel UTC ns" 'SELECT s.utcEpochNs + k.start FROM TARGET_INFO_SESSION_START_TIME s, (SELECT MIN(start) AS start FROM CUPTI_ACTIVITY_KIND_KERNEL) k'
q "$f" "its demangled name starts" "SELECT substr(d.value, 1, 23) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds d ON d.id = k.demangledName WHERE k.correlationId = 452"
q "$f" "kernel busy ns" 'SELECT SUM("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL'

f=$tmp/saxpy.sqlite
echo "== SaxpyNvtxRuntimeAndBacktraces (and NsightExportReconstructs)"
q "$f" "kernels" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL'
q "$f" "runtime rows by eventClass (0 runtime, 1 driver, 67 backtrace)" 'SELECT eventClass, COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME GROUP BY 1'
q "$f" "memcpy" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY'
q "$f" "memset, synchronizations" 'SELECT (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMSET), (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)'
q "$f" "NVTX rows by eventType (39 thread name, 59 push/pop range, 75 domain)" 'SELECT eventType, COUNT(*) FROM NVTX_EVENTS GROUP BY 1'
q "$f" "ranges without an end" 'SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59 AND "end" IS NULL'
q "$f" "ranges by domainId" 'SELECT domainId, COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59 GROUP BY 1'
q "$f" "domain 1" 'SELECT text FROM NVTX_EVENTS WHERE eventType = 75 AND domainId = 1'
q "$f" "saxpy ranges" "SELECT COUNT(*) FROM NVTX_EVENTS WHERE text = 'saxpy'"
q "$f" "MPI_Init ranges" "SELECT COUNT(*) FROM NVTX_EVENTS e JOIN StringIds s ON s.id = e.textId WHERE s.value = 'MPI_Init'"
q "$f" "kernels linked to a runtime/driver call" "$linked"
q "$f" "memcpy bytes" 'SELECT SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY'
q "$f" "process" 'SELECT pid, name FROM PROCESSES WHERE globalPid = 302119223558144'
q "$f" "host" "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname'"
q "$f" "first kernel UTC ns" 'SELECT s.utcEpochNs + k.start FROM TARGET_INFO_SESSION_START_TIME s, (SELECT MIN(start) AS start FROM CUPTI_ACTIVITY_KIND_KERNEL) k'

f=$tmp/cloverleaf.sqlite
echo "== CloverleafKernelSignatures (docs/signature.md)"
q "$f" "distinct kernel signatures" "SELECT COUNT(DISTINCT 'grid=' || gridX || ',' || gridY || ',' || gridZ || ' block=' || blockX || ',' || blockY || ',' || blockZ || CASE WHEN staticSharedMemory + dynamicSharedMemory > 0 THEN ' smem=' || (staticSharedMemory + dynamicSharedMemory) ELSE '' END) FROM CUPTI_ACTIVITY_KIND_KERNEL"
q "$f" "kernels with a NULL dimension" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE gridX IS NULL OR gridY IS NULL OR gridZ IS NULL OR blockX IS NULL OR blockY IS NULL OR blockZ IS NULL'
q "$f" "kernels with grid 31,1,1 block 256,1,1 and no shared memory" 'SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE gridX = 31 AND gridY = 1 AND gridZ = 1 AND blockX = 256 AND blockY = 1 AND blockZ = 1 AND staticSharedMemory + dynamicSharedMemory = 0'
q "$f" "kernels by shared memory (static + dynamic)" 'SELECT staticSharedMemory + dynamicSharedMemory, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1'

echo "== TruncatedExportDoesNotCrashAndReports (first half of the cloverleaf export)"
size=$(wc -c < "$tmp/cloverleaf.sqlite")
head -c $((size / 2)) "$tmp/cloverleaf.sqlite" > "$tmp/cut.sqlite"
for t in StringIds TARGET_INFO_SESSION_START_TIME PROCESSES CUPTI_ACTIVITY_KIND_RUNTIME \
         CUPTI_ACTIVITY_KIND_KERNEL CUPTI_ACTIVITY_KIND_MEMCPY CUPTI_ACTIVITY_KIND_SYNCHRONIZATION; do
  printf '%s: ' "$t"
  sqlite3 "file:$tmp/cut.sqlite?immutable=1" "PRAGMA writable_schema=ON; SELECT COUNT(*) FROM $t" 2>&1 | tr '\n' ' '
  echo
done
