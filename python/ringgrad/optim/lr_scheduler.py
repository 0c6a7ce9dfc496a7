"""Learning-rate schedules as torch.optim.lr_scheduler: a scheduler sets optimizer.lr from
the optimizer's initial lr and a step count; step() moves to the next step (call it after
optimizer.step(), as in PyTorch)."""
import math


class LambdaLR:
    """lr = initial_lr * lr_lambda(step)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        self.optimizer = optimizer
        self.lr_lambda = lr_lambda
        self.base_lr = optimizer.lr
        self.last_epoch = last_epoch
        self.step()

    def get_last_lr(self):
        return [self.optimizer.lr]

    def step(self):
        self.last_epoch += 1
        self.optimizer.lr = self.base_lr * self.lr_lambda(self.last_epoch)

    def state_dict(self):
        return {"last_epoch": self.last_epoch, "base_lr": self.base_lr}

    def load_state_dict(self, state):
        self.last_epoch, self.base_lr = state["last_epoch"], state["base_lr"]
        self.optimizer.lr = self.base_lr * self.lr_lambda(self.last_epoch)


class CosineAnnealingLR(LambdaLR):
    """lr from the initial lr down to eta_min along half a cosine over T_max steps."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        base = optimizer.lr

        def factor(step):
            progress = min(step, T_max) / T_max
            return (eta_min + (base - eta_min) * (1 + math.cos(math.pi * progress)) / 2) / base

        super().__init__(optimizer, factor, last_epoch)


def cosine_with_warmup(optimizer, warmup_steps, total_steps, min_lr_ratio=0.0):
    """Linear warmup from 0 over warmup_steps, then a cosine down to min_lr_ratio * lr at
    total_steps (nanoGPT's and rgtrain's schedule), as a LambdaLR."""

    def factor(step):
        if step < warmup_steps:
            return (step + 1) / (warmup_steps + 1)
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        return min_lr_ratio + (1 - min_lr_ratio) * (1 + math.cos(math.pi * progress)) / 2

    return LambdaLR(optimizer, factor)


__all__ = ["LambdaLR", "CosineAnnealingLR", "cosine_with_warmup"]
