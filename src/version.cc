// nuvec::version(): the version this library was built as (see version.h).
#include "nuvec/version.h"

namespace nuvec {

const char* version() noexcept { return NUVEC_VERSION_STRING; }

}  // namespace nuvec
