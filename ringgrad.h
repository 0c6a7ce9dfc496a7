// Umbrella header: everything a user of ringgrad needs.
#pragma once
#include "core/device_interface.h"
#include "core/tensor.h"
