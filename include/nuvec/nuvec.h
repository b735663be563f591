// Everything public in one include.
#pragma once

#include "nuvec/buffer.h"
#include "nuvec/device.h"
#include "nuvec/error.h"
#include "nuvec/mapped_file.h"
#include "nuvec/memory.h"
#include "nuvec/memory_stats.h"
#include "nuvec/trace_tag.h"
