// The CPU backend: anonymous mappings for page-sized and larger buffers,
// 64-byte-aligned heap memory below a page, read-only shared file mappings,
// mlock/munlock for wiring.
#pragma once

#include <memory>

#include "memory/backend.h"
#include "cpu/system_calls.h"

namespace nuvec::cpu {

std::unique_ptr<detail::Backend> make_backend(std::shared_ptr<SystemCalls> calls = SystemCalls::real());

}  // namespace nuvec::cpu
