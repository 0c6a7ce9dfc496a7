"""ringgrad.utils: data loading (ringgrad.utils.data), as torch.utils."""
from ringgrad.utils import data

__all__ = ["data"]
