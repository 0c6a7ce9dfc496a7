// Umbrella header of the nn layer: modules, GPT, losses, accumulation, optimizers.
#pragma once
#include "nn/accumulation.h"
#include "nn/attention.h"
#include "nn/gpt.h"
#include "nn/init.h"
#include "nn/layers.h"
#include "nn/module.h"
#include "nn/optim/adamw.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/decay_groups.h"
#include "nn/optim/lr_schedule.h"
#include "nn/optim/sgd.h"
#include "nn/state_dict.h"
