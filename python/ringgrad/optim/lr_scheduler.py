"""Learning-rate schedules as torch.optim.lr_scheduler: a scheduler sets each parameter
group's "lr" (optimizer.param_groups[i]["lr"]) from the group's initial lr and a step count;
step() moves to the next step (call it after optimizer.step(), as in PyTorch). The first
value is set at construction (step 0)."""
import math


class LRScheduler:
    def __init__(self, optimizer, last_epoch=-1):
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError("param 'initial_lr' is not specified in param_groups when "
                               "resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self):
        raise NotImplementedError

    def get_last_lr(self):
        return list(self._last_lr)

    def step(self, epoch=None):
        self.last_epoch = self.last_epoch + 1 if epoch is None else epoch
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambda",
                                                                    "lr_lambdas")}

    def load_state_dict(self, state):
        self.__dict__.update(state)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(step) (one function, or one per group)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        groups = len(optimizer.param_groups)
        self.lr_lambdas = list(lr_lambda) if isinstance(lr_lambda, (list, tuple)) \
            else [lr_lambda] * groups
        if len(self.lr_lambdas) != groups:
            raise ValueError(f"LambdaLR: expected {groups} lr_lambdas, got "
                             f"{len(self.lr_lambdas)}")
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base * f(self.last_epoch) for base, f in zip(self.base_lrs, self.lr_lambdas)]


class StepLR(LRScheduler):
    """lr multiplied by gamma every step_size steps."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class MultiStepLR(LRScheduler):
    """lr multiplied by gamma at each of the milestones (steps)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        times = self.milestones.count(self.last_epoch)
        return [group["lr"] * self.gamma ** times for group in self.optimizer.param_groups]


class ExponentialLR(LRScheduler):
    """lr multiplied by gamma every step."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """lr from the initial lr down to eta_min along half a cosine over T_max steps (then back
    up, a cosine of period 2 T_max), by PyTorch's recursive form: each lr from the previous
    one, so a schedule chained after another follows it (and the values are PyTorch's)."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        epoch, t_max, low = self.last_epoch, self.T_max, self.eta_min
        groups = self.optimizer.param_groups
        if epoch == 0:
            return [group["lr"] for group in groups]
        if (epoch - 1 - t_max) % (2 * t_max) == 0:
            return [group["lr"] + (base - low) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * epoch / t_max)) /
                (1 + math.cos(math.pi * (epoch - 1) / t_max)) * (group["lr"] - low) + low
                for group in groups]


class OneCycleLR(LRScheduler):
    """The 1cycle policy: lr from max_lr / div_factor up to max_lr over pct_start of the
    steps, then down to initial_lr / final_div_factor (cosine or linear annealing); the
    momentum (or Adam's beta1) cycles the other way between max_ and base_momentum."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if total_steps is None:
            if epochs is None or steps_per_epoch is None:
                raise ValueError("OneCycleLR: you must define either total_steps OR "
                                 "(epochs AND steps_per_epoch)")
            total_steps = epochs * steps_per_epoch
        if total_steps <= 0:
            raise ValueError(f"OneCycleLR: expected a positive total_steps, got {total_steps}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got "
                             f"{anneal_strategy}")
        self.total_steps = total_steps
        self._anneal = self._cos if anneal_strategy == "cos" else self._linear
        first = float(pct_start * total_steps) - 1
        if three_phase:
            self._phases = [(first, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (float(2 * pct_start * total_steps) - 2, "max_lr", "initial_lr",
                             "base_momentum", "max_momentum"),
                            (total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                             "max_momentum")]
        else:
            self._phases = [(first, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                            (total_steps - 1, "max_lr", "min_lr", "base_momentum",
                             "max_momentum")]
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        self.cycle_momentum = cycle_momentum
        self._betas = cycle_momentum and "betas" in optimizer.defaults
        if cycle_momentum and not self._betas and "momentum" not in optimizer.defaults:
            raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                             "option enabled")
        for group, top in zip(groups, max_lrs):
            if last_epoch == -1:
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
            if cycle_momentum:
                self._set_momentum(group, max_momentum)
                group["max_momentum"], group["base_momentum"] = max_momentum, base_momentum
        super().__init__(optimizer, last_epoch)

    def _set_momentum(self, group, value):
        if self._betas:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    @staticmethod
    def _cos(start, end, pct):
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _linear(start, end, pct):
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps "
                             f"is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs


def cosine_with_warmup(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    """Linear warmup from 0 over warmup_steps, then a cosine down to min_lr_ratio * lr at
    total_steps (nanoGPT's and rgtrain's schedule), as a LambdaLR."""

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * (1 + math.cos(math.pi * progress)) / 2

    return LambdaLR(optimizer, factor)


__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "OneCycleLR",
           "cosine_with_warmup"]
