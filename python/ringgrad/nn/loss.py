"""Loss layers with torch.nn's names over nn.functional: CrossEntropyLoss, NLLLoss, MSELoss,
L1Loss, BCEWithLogitsLoss."""
from ringgrad.nn import functional as F
from ringgrad.nn.module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction '{reduction}' is not one of "
                             "'mean', 'sum', 'none'")
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(reduction=reduction)
        if weight is not None:
            raise NotImplementedError("CrossEntropyLoss: weight= is not supported yet")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(reduction=reduction)
        if weight is not None:
            raise NotImplementedError("NLLLoss: weight= is not supported yet")
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class MSELoss(_Loss):
    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, reduction=self.reduction)
