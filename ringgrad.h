// Umbrella header: everything a user of ringgrad needs.
#pragma once
#include "autograd/autocast_mode.h"
#include "autograd/grad_mode.h"
#include "autograd/hooks.h"
#include "core/device_interface.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "nn/nn.h"
#include "ops/autocast.h"
#include "ops/gradcheck.h"
#include "ops/ops.h"
