#pragma once
// Progress of long work on stderr: on a terminal a bar redrawn in place with the time
// left (from the pace so far); elsewhere (a log) one line as each stage ends.
#include "geopt/geopt.h"

namespace geopt::cli {

// An empty Progress when not `enabled` (--no-progress, --json).
api::Progress progress_bar(bool enabled);

}  // namespace geopt::cli
