// Memory policy of the one-shot analysis commands (commands.h, KeepFreedMemory).
#include <malloc.h>

#include <climits>

#include "src/cli/commands.h"

namespace teller::cli {

// The analysis builds large tables stage after stage (import, reconstruction, families,
// scores) and frees many of them between stages. By default glibc hands freed chunks above
// its (adaptive) thresholds back to the kernel, and the next stage's tables are fresh pages
// that the kernel faults in and zeroes again. Keeping freed memory in the process (every
// chunk from the heap, no trimming of its top) faults each page in once: `teller diagnose`
// of the paper preset's SGLang setting takes 131k page faults instead of 166k, about 10%
// less time, for a few percent more peak memory (bench/README.md, after "Diagnosis cost").
// Memory is not returned before exit, which a command that ends after its report does not
// need; the long-running commands (eval, train, simulate) keep glibc's defaults.
void KeepFreedMemory() {
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

}  // namespace teller::cli
