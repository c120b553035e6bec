// Everything a plugin author includes.
#pragma once

#include "graft/backend.hpp"
#include "graft/config.hpp"
#include "graft/drafter.hpp"
#include "graft/extension.hpp"
#include "graft/host.hpp"
#include "graft/kernel_library.hpp"
#include "graft/kv_store.hpp"
#include "graft/model_view.hpp"
#include "graft/plugin.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"
#include "graft/version.hpp"
#include "graft/weight_file.hpp"
#include "graft/weight_format.hpp"
