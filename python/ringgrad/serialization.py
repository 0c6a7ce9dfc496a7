"""rg.save and rg.load: a dict of tensors (a state dict) in one safetensors file, the format
rgtrain's checkpoints and --init use and Hugging Face's safetensors library reads. The file is
written atomically: an interrupted save leaves the previous file as it was."""
from ringgrad import _C


def save(obj, path, metadata=None):
    if not isinstance(obj, dict) or not all(isinstance(t, _C.Tensor) for t in obj.values()):
        raise TypeError("save: expected a dict of name -> Tensor (a state dict)")
    _C.save_safetensors(str(path), list(obj.items()), dict(metadata or {}))


def load(path):
    """The dict of tensors in the file (on the cpu), in the file's order."""
    tensors, _metadata = _C.load_safetensors(str(path))
    return dict(tensors)
